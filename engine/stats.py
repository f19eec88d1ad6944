"""Statistics for Compile Lab measurements, kept apart from measuring and from drawing.

The measuring child (engine/ child process) only records raw times; this module turns them into
the numbers people read: robust location and spread of the per-call times, the speedup of a
compiled variant over eager with a bootstrap confidence interval, and the number of calls after
which paying for compilation has paid off.  Pure numpy: no torch import, so it is cheap to import
from the dashboard, the worker and the tests alike.

Method notes
------------
* Location is the **median** (robust to the occasional preempted call), spread the **IQR**
  (p75 - p25).  A series is flagged *noisy* when IQR / median > 10 %.
* Speedup is ``median(eager) / median(compiled)`` over the steady-state per-call times.
* Its confidence interval is a **paired percentile bootstrap**: eager and compiled samples come
  from the same interleaved rounds (round *i* holds one eager and one compiled measurement taken
  back to back), so we resample *round indices* and take both samples of each drawn round.  Slow
  drift of the machine (clocks, thermals, other tenants) then moves both medians of a replicate
  together and cancels in their ratio, giving an honest and narrower interval than resampling the
  two series independently.
* Percentiles use numpy's default (linear interpolation), as ``torch.utils.benchmark`` does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

NOISE_THRESHOLD = 0.10
"""IQR / median above which a series is flagged noisy."""

# Bootstrap replicates are computed in chunks so that memory stays bounded (about 32 MB of float64
# per array) however many samples a long run collected.
_BOOT_CHUNK_ELEMENTS = 4_000_000

STATS_KEYS = (
    "median_ms",
    "mean_ms",
    "p10_ms",
    "p90_ms",
    "iqr_ms",
    "n",
    "noisy",
    "pipelined_median_ms",
    "eager_median_ms",
    "eager_pipelined_median_ms",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "break_even_calls",
)
"""Keys of a VariantResult's ``stats`` block, as named in docs/CONTRACTS.md."""


@dataclass(frozen=True)
class Summary:
    """Robust summary of one series of per-call times, all in milliseconds."""

    median: float
    mean: float
    p10: float
    p90: float
    iqr: float
    n: int
    noisy: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _as_samples(samples_ms: Sequence[float] | np.ndarray, name: str = "samples_ms") -> np.ndarray:
    arr = np.asarray(samples_ms, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def summarize(samples_ms: Sequence[float] | np.ndarray) -> Summary:
    """Summarise per-call times (ms): median, mean, p10, p90, IQR, count and the noise flag.

    ``noisy`` is true when IQR / median > 10 % (a zero median, only possible with a broken
    timer, counts as noisy when there is any spread at all).  Raises ``ValueError`` on an empty
    series or one with NaN/inf, rather than returning numbers that look real.
    """
    arr = _as_samples(samples_ms)
    p10, p25, p50, p75, p90 = np.percentile(arr, [10, 25, 50, 75, 90])
    iqr = float(p75 - p25)
    median = float(p50)
    noisy = iqr / median > NOISE_THRESHOLD if median > 0 else iqr > 0
    return Summary(
        median=median,
        mean=float(arr.mean()),
        p10=float(p10),
        p90=float(p90),
        iqr=iqr,
        n=int(arr.size),
        noisy=bool(noisy),
    )


def _median_rows(x: np.ndarray) -> np.ndarray:
    """Row-wise median of a 2-D array, via one partial sort (faster than np.median here)."""
    m = x.shape[1]
    half = m // 2
    if m % 2:
        return np.partition(x, half, axis=1)[:, half]
    # One partition at `half` puts the smaller half on its left; the lower middle element is
    # that half's maximum.  Twice as fast as partitioning at (half - 1, half).
    part = np.partition(x, half, axis=1)
    return 0.5 * (part[:, :half].max(axis=1) + part[:, half])


def speedup_ci(
    eager_ms: Sequence[float] | np.ndarray,
    compiled_ms: Sequence[float] | np.ndarray,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Speedup of compiled over eager with a paired percentile-bootstrap confidence interval.

    ``speedup = median(eager_ms) / median(compiled_ms)``; above 1 means compiled is faster.

    ``eager_ms[i]`` and ``compiled_ms[i]`` must come from the same interleaved round *i*.  Each
    bootstrap replicate draws ``n`` round indices with replacement and recomputes the ratio of
    medians on those rounds (both series indexed by the *same* draw, so drift shared by a round
    cancels).  The interval is the ``(1-ci)/2`` and ``(1+ci)/2`` percentiles of the replicates.
    Deterministic for a given ``seed``.

    Returns ``(speedup, low, high)``.  Raises ``ValueError`` when the series are empty, hold
    non-finite values, differ in length (they would not be paired rounds) or when a compiled
    median is not positive.
    """
    eager = _as_samples(eager_ms, "eager_ms")
    compiled = _as_samples(compiled_ms, "compiled_ms")
    if eager.size != compiled.size:
        raise ValueError(
            f"paired bootstrap needs one eager and one compiled sample per round; got "
            f"{eager.size} eager and {compiled.size} compiled samples"
        )
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    compiled_median = float(np.median(compiled))
    if compiled_median <= 0:
        raise ValueError("compiled median is not positive: speedup undefined")
    speedup = float(np.median(eager)) / compiled_median

    n = eager.size
    rng = np.random.default_rng(seed)
    ratios = np.empty(n_boot, dtype=np.float64)
    rows_per_chunk = max(1, _BOOT_CHUNK_ELEMENTS // n)
    for start in range(0, n_boot, rows_per_chunk):
        rows = min(rows_per_chunk, n_boot - start)
        # One draw of round indices per replicate, shared by both series: the pairing.
        idx = rng.integers(0, n, size=(rows, n), dtype=np.intp)
        ratios[start : start + rows] = _median_rows(eager[idx]) / _median_rows(compiled[idx])
    alpha = (1.0 - ci) / 2.0
    low, high = np.percentile(ratios, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    # Guard against the interval not containing the point estimate through float rounding.
    return speedup, float(min(low, speedup)), float(max(high, speedup))


def break_even_calls(
    eager_first_call_ms: float,
    compiled_first_call_ms: float,
    eager_per_call_ms: float,
    compiled_per_call_ms: float,
) -> int | None:
    """Smallest number of calls n >= 1 after which compiling has paid for itself.

    Total time of n calls, counting the first call (compile + one call for the compiled model)::

        eager(n)    = eager_first_call_ms    + (n - 1) * eager_per_call_ms
        compiled(n) = compiled_first_call_ms + (n - 1) * compiled_per_call_ms

    We return the smallest n with ``compiled(n) <= eager(n)``:

    * ``1`` ("immediately") when the compiled first call is already no slower than eager's;
    * otherwise, with ``extra = compiled_first - eager_first`` and
      ``saving = eager_per_call - compiled_per_call``::

          n = 1 + ceil(extra / saving)          if saving > 0

    * ``None`` ("never") when ``saving <= 0``: compiled is not faster per call, so the extra
      first-call cost is never recovered.

    Example: eager 10 ms first / 1 ms per call, compiled 3010 ms first / 0.5 ms per call:
    extra = 3000 ms, saving = 0.5 ms, n = 1 + 6000 = 6001 calls.
    """
    values = (eager_first_call_ms, compiled_first_call_ms, eager_per_call_ms, compiled_per_call_ms)
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"break_even_calls needs finite times, got {values}")
    extra = compiled_first_call_ms - eager_first_call_ms
    if extra <= 0:
        return 1
    saving = eager_per_call_ms - compiled_per_call_ms
    if saving <= 0:
        return None
    k = math.ceil(extra / saving)  # calls after the first needed to recover `extra`
    # Float division can land a hair above an exact integer (2.0 / 0.19999999999999998 =
    # 10.000000000000002): step back when k - 1 further calls already suffice up to rounding.
    tol = 1e-9 * max(abs(extra), abs(saving) * k)
    if k >= 1 and (k - 1) * saving >= extra - tol:
        k -= 1
    return 1 + k


def _empty_stats() -> dict[str, Any]:
    return dict.fromkeys(STATS_KEYS)


def _median_or_none(values: Sequence[float] | None) -> float | None:
    if values is None or len(values) == 0:
        return None
    return float(np.median(_as_samples(values)))


def add_stats(
    result: dict[str, Any],
    eager_first_call_ms: float | None = None,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Fill ``result["stats"]`` of a VariantResult (docs/CONTRACTS.md) and return ``result``.

    The dict is updated in place and also returned, so both ``add_stats(r)`` and
    ``r = add_stats(r)`` work.  Every key of the contract's ``stats`` block is always present:

    * summary of ``samples_ms`` (median/mean/p10/p90/IQR/n/noisy);
    * medians of ``pipelined_ms``, ``eager_samples_ms`` and ``eager_pipelined_ms``;
    * speedup and its paired-bootstrap CI from ``eager_samples_ms`` vs ``samples_ms``
      (see :func:`speedup_ci`);
    * break-even calls (see :func:`break_even_calls`): the compiled first call is
      ``first_call_cold_s`` (converted to ms), the eager first call is ``eager_first_call_ms``
      (the caller takes it from the eager variant's warm-up call 1) or, when that is not given,
      the median eager sample; per-call times are the per-call medians.

    Results whose ``status`` is not ``"ok"`` get every key set to ``None`` and no exception;
    likewise each figure whose inputs are missing is ``None``.  For the ``eager`` variant itself
    speedup is 1 by construction and ``break_even_calls`` is ``None`` (not applicable).
    """
    stats = _empty_stats()
    result["stats"] = stats
    if result.get("status") != "ok":
        return result

    samples = result.get("samples_ms") or []
    eager_samples = result.get("eager_samples_ms") or []
    if len(samples) > 0:
        s = summarize(samples)
        stats.update(
            median_ms=s.median,
            mean_ms=s.mean,
            p10_ms=s.p10,
            p90_ms=s.p90,
            iqr_ms=s.iqr,
            n=s.n,
            noisy=s.noisy,
        )
    stats["pipelined_median_ms"] = _median_or_none(result.get("pipelined_ms"))
    stats["eager_median_ms"] = _median_or_none(eager_samples)
    stats["eager_pipelined_median_ms"] = _median_or_none(result.get("eager_pipelined_ms"))

    if len(samples) == 0 or len(eager_samples) == 0:
        return result
    if len(samples) == len(eager_samples):
        speedup, low, high = speedup_ci(eager_samples, samples, n_boot=n_boot, ci=ci, seed=seed)
        stats.update(speedup=speedup, speedup_ci_low=low, speedup_ci_high=high)
    elif stats["median_ms"] > 0:
        # Not paired rounds (should not happen with the runner): give the point estimate only
        # rather than an interval that would claim a pairing that is not there.
        stats["speedup"] = stats["eager_median_ms"] / stats["median_ms"]

    if result.get("variant") == "eager":
        return result
    cold_s = result.get("first_call_cold_s")
    if cold_s is None:
        return result
    eager_first = (
        float(eager_first_call_ms) if eager_first_call_ms is not None else stats["eager_median_ms"]
    )
    stats["break_even_calls"] = break_even_calls(
        eager_first, float(cold_s) * 1000.0, stats["eager_median_ms"], stats["median_ms"]
    )
    return result
