"""Statistics for Compile Lab measurements, kept apart from measuring and from drawing.

The measuring children only record raw times; this module turns them into the numbers people
read: robust location and spread of per-call times, the speedup of a compiled variant over eager
with a confidence interval that survives a rerun, the spread between measuring processes, and the
number of calls after which compiling has paid off.  numpy and scipy only (no torch), so it is
cheap to import from the dashboard, the worker and the tests alike.  ``engine.variant_stats``
applies these methods to one stored result (its ``stats`` block).

Method
------
* A series is summarised by its **median** (robust to a preempted call) and **IQR**; it is flagged
  *noisy* when IQR / median > 10 %.
* **Unit of replication: the process.**  Each compiled variant is measured in several fresh
  processes (``processes`` in the spec, default 3), started one after another and interleaved in
  time with the other variants' processes.  Inside each process eager and compiled are timed in
  alternating *rounds*; a round holds a block of consecutive per-call samples of each.  On the
  H200 the speedup moved by up to 50 % **between** processes (a launch-bound eager follows the
  host CPU, which drifts over minutes) while rounds inside one process agreed within 2 %: an
  interval built from rounds alone is far too narrow.
* **Per-process estimate**: ``r_p = log(median(eager_p) / median(compiled_p))`` over that
  process's paired rounds.  **Point estimate**: ``exp(mean_p r_p)``, the geometric mean of the
  per-process speedups.  The variant's ``median_ms`` and ``eager_median_ms`` are the geometric
  means of the per-process medians, so ``eager_median_ms / median_ms`` equals the speedup exactly.
* **Interval: hierarchical bootstrap with a small-sample correction.**  Each replicate draws
  ``k`` processes with replacement, then inside each drawn process its rounds with replacement
  (whole rounds, as blocks, so correlation inside a block is kept), and takes the mean of the
  drawn processes' log ratios.  With few processes the bootstrap's spread underestimates the
  sampling spread by ``(k-1)/k`` and its percentiles are far too short (with 3 processes a
  percentile interval covered the truth 60-70 % of the time in simulation), so the interval is
  ``mean ± t(k-1, 0.975) · sqrt(k/(k-1)) · sd(replicates)`` on the log scale: a Student-t
  interval whose standard error comes from the bootstrap.  Resampling the rounds too adds the
  within-process noise once more (it is already in the per-process spread): the interval is
  slightly conservative when processes agree and within-process noise dominates.
  ``tests/test_stats_calibration.py`` checks coverage on simulated runs with 15 % process
  offsets and 2 % autocorrelated noise: 90-98 % required.
* **Disagreement**: Cochran's Q of the per-process log ratios against their within-process
  standard errors; when p < 0.01 the processes disagree beyond their own noise, and the tools say
  so with the likely cause.
* **Adaptive stopping**: after ``processes`` processes, more are added while the interval's
  relative half-width exceeds ``target_halfwidth`` (default 5 %), up to ``max_processes`` or the
  time budget; the reason sampling stopped is stored (``stop_reason``).
* With one process only (``processes: 1``) the interval is the within-process bootstrap's
  percentile interval and is marked as not covering between-process variance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import special  # not scipy.stats: same t quantile and chi-square tail, 0.3 s not 0.9 s

from engine import stats_cache

NOISE_THRESHOLD = 0.10
"""IQR / median above which a series is flagged noisy."""

DISAGREE_P = 0.01
"""Cochran's Q p-value below which the processes are said to disagree."""

# Bootstrap replicates are computed in chunks so that memory stays bounded (about 32 MB of float64
# per array) however many samples a long run collected.
_BOOT_CHUNK_ELEMENTS = 4_000_000

STOP_REASONS = ("interval tight enough", "process limit", "time budget", "one process asked")


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


def as_samples(samples_ms: Sequence[float] | np.ndarray, name: str = "samples_ms") -> np.ndarray:
    """Timings (ms) as a float64 array, refused with a ValueError naming ``name`` when they are
    not one-dimensional, empty, or hold NaN or infinity: every statistic here starts from this
    check."""
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
    arr = as_samples(samples_ms)
    p10, p25, p50, p75, p90 = np.percentile(arr, [10, 25, 50, 75, 90])
    iqr = float(p75 - p25)
    median = float(p50)
    noisy = iqr / median > NOISE_THRESHOLD if median > 0 else iqr > 0
    return Summary(median=median, mean=float(arr.mean()), p10=float(p10), p90=float(p90),
                   iqr=iqr, n=int(arr.size), noisy=bool(noisy))


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


def as_rounds(samples_ms: Sequence[float] | np.ndarray, block: int, name: str) -> np.ndarray:
    """Per-call samples as a (rounds, block) array: row i is round i's block of calls."""
    arr = as_samples(samples_ms, name)
    block = max(int(block), 1)
    if arr.size % block:
        raise ValueError(f"{name}: {arr.size} samples are not whole rounds of {block}")
    return arr.reshape(-1, block)


@dataclass(frozen=True)
class ProcessRounds:
    """One measuring process's paired rounds: ``eager[i]`` and ``compiled[i]`` are the blocks of
    per-call times (ms) that round i took of each function, back to back."""

    eager: np.ndarray
    compiled: np.ndarray

    def __post_init__(self) -> None:
        if self.eager.shape != self.compiled.shape or self.eager.ndim != 2:
            raise ValueError(f"paired rounds need equal (rounds, block) shapes, got "
                             f"{self.eager.shape} and {self.compiled.shape}")
        if self.eager.size == 0:
            raise ValueError("a process without rounds")
        if not (np.all(self.eager > 0) and np.all(self.compiled > 0)):
            raise ValueError("per-call times must be positive")

    @classmethod
    def from_samples(cls, eager_ms: Sequence[float], compiled_ms: Sequence[float],
                     block: int) -> ProcessRounds:
        return cls(as_rounds(eager_ms, block, "eager_samples_ms"),
                   as_rounds(compiled_ms, block, "samples_ms"))

    def log_ratio(self) -> float:
        return math.log(float(np.median(self.eager)) / float(np.median(self.compiled)))

    def boot_log_ratios(self, n_boot: int, rng: np.random.Generator) -> np.ndarray:
        """``n_boot`` bootstrap replicates of the log ratio, resampling whole rounds."""
        rounds, block = self.eager.shape
        out = np.empty(n_boot, dtype=np.float64)
        rows_per_chunk = max(1, _BOOT_CHUNK_ELEMENTS // (rounds * block))
        for start in range(0, n_boot, rows_per_chunk):
            rows = min(rows_per_chunk, n_boot - start)
            # One draw of round indices per replicate, shared by both series: the pairing.
            idx = rng.integers(0, rounds, size=(rows, rounds), dtype=np.intp)
            e = _median_rows(self.eager[idx].reshape(rows, -1))
            c = _median_rows(self.compiled[idx].reshape(rows, -1))
            out[start:start + rows] = np.log(e / c)
        return out


def rel_halfwidth(low: float | None, high: float | None) -> float | None:
    """Relative half-width of an interval symmetric on the log scale: sqrt(high/low) - 1
    (0.05: the interval is the estimate ×/÷ 1.05). None without a positive interval."""
    if not low or not high or low <= 0 or high <= 0:
        return None
    return math.sqrt(high / low) - 1.0


@dataclass(frozen=True)
class SpeedupEstimate:
    """Speedup of compiled over eager across processes, with its interval and the evidence."""

    speedup: float
    low: float
    high: float
    n_processes: int
    process_speedups: tuple[float, ...]
    spread: float | None
    """Standard deviation of the per-process log speedups (≈ relative spread, 0.1 = 10 %)."""
    within_spread: float
    """Root-mean-square within-process standard error of the log speedup."""
    disagree_p: float | None
    """Cochran's Q p-value: small when processes disagree beyond their own noise."""
    between_processes: bool = True
    """False with one process: the interval then sees only noise inside that process."""
    method: str = field(default="hierarchical bootstrap (processes, then rounds), t-corrected")

    @property
    def rel_halfwidth(self) -> float:
        return rel_halfwidth(self.low, self.high)  # type: ignore[return-value]

    @property
    def disagree(self) -> bool:
        return self.disagree_p is not None and self.disagree_p < DISAGREE_P


def hierarchical_speedup(processes: Sequence[ProcessRounds], *, ci: float = 0.95,
                         n_boot: int = 2000, seed: int = 0) -> SpeedupEstimate:
    """Speedup (eager ÷ compiled per-call time) over several processes; see the module notes.

    Deterministic for a given ``seed``.  Raises ``ValueError`` without processes or with a bad
    ``ci``/``n_boot``."""
    if not processes:
        raise ValueError("no processes to estimate from")
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2, got {n_boot}")
    rng = np.random.default_rng(seed)
    k = len(processes)
    r = np.array([p.log_ratio() for p in processes])
    within = stats_cache.within_rows(processes, n_boot, rng, seed)  # (k, n_boot)
    w_sd = within.std(axis=1, ddof=1)
    est = float(r.mean())
    alpha = (1.0 - ci) / 2.0
    if k == 1:
        lo, hi = np.percentile(within[0], [100 * alpha, 100 * (1 - alpha)])
        lo, hi = min(float(lo), est), max(float(hi), est)
        return SpeedupEstimate(math.exp(est), math.exp(lo), math.exp(hi), 1,
                               (math.exp(est),), None, float(w_sd[0]), None,
                               between_processes=False,
                               method="bootstrap of rounds in one process (no between-process "
                                      "variance)")
    # Two-stage replicate b: k processes drawn with replacement; each drawn process contributes
    # one of its own round-resampled replicates, picked at random (an independent second stage).
    pick = rng.integers(0, k, size=(n_boot, k))
    inner = rng.integers(0, n_boot, size=(n_boot, k))
    reps = within[pick, inner].mean(axis=1)
    se = float(reps.std(ddof=1)) * math.sqrt(k / (k - 1))
    h = float(special.stdtrit(k - 1, 1 - alpha)) * se
    # Cochran's Q: are the per-process estimates further apart than their own noise allows?
    var = np.maximum(w_sd, 1e-12) ** 2
    wts = 1.0 / var
    pooled = float((wts * r).sum() / wts.sum())
    q = float((wts * (r - pooled) ** 2).sum())
    p_q = float(special.chdtrc(k - 1, q))
    return SpeedupEstimate(math.exp(est), math.exp(est - h), math.exp(est + h), k,
                           tuple(float(x) for x in np.exp(r)), float(r.std(ddof=1)),
                           float(np.sqrt(np.mean(w_sd ** 2))), p_q)


def stop_reason(rel_halfwidth: float | None, n_processes: int, *, min_processes: int,
                max_processes: int, target_halfwidth: float) -> str | None:
    """Why to stop adding measuring processes for a variant, or None to add another.

    The rule: at least ``min_processes``; then stop once the interval's relative half-width
    (``SpeedupEstimate.rel_halfwidth``; None when there is no interval) is at most
    ``target_halfwidth``, or at ``max_processes``.  (The runner adds "time budget".)"""
    if n_processes < min_processes:
        return None
    if min_processes == 1 and max_processes == 1:
        return "one process asked"
    if rel_halfwidth is not None and rel_halfwidth <= target_halfwidth:
        return "interval tight enough"
    if n_processes >= max_processes:
        return "process limit"
    return None


def speedup_ci(
    eager_ms: Sequence[float] | np.ndarray,
    compiled_ms: Sequence[float] | np.ndarray,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Speedup of compiled over eager from ONE process's paired samples (percentile bootstrap).

    The estimator Compile Lab used before it measured several processes; it sees only noise
    inside one process, so on the H200 its intervals excluded each other from run to run.  Kept
    for comparison (tests/test_stats_calibration.py shows it failing the calibration) and for
    the quick checks that ask for one process; run figures come from
    :func:`hierarchical_speedup`.

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
    eager = as_samples(eager_ms, "eager_ms")
    compiled = as_samples(compiled_ms, "compiled_ms")
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
