"""Statistics for Compile Lab measurements, kept apart from measuring and from drawing.

The measuring children only record raw times; this module turns them into the numbers people
read: robust location and spread of per-call times, the speedup of a compiled variant over eager
with a confidence interval that survives a rerun, the spread between measuring processes, and the
number of calls after which compiling has paid off.  numpy and scipy only (no torch), so it is
cheap to import from the dashboard, the worker and the tests alike.  ``engine.analysis.variant_stats``
applies these methods to one stored result (its ``stats`` block).

Method
------
* A series is summarised by its **median** (robust to a preempted call) and **IQR**; it is flagged
  *noisy* when IQR / median > 10 %.
* **Unit of replication: the process** (the kernel draw where processes drew their autotuned
  kernels anew: see "Kernel draws" below).  Each compiled variant is measured in several fresh
  processes (``processes`` in the spec, default 3), started one after another and interleaved in
  time with the other variants' processes.  Inside each process eager and compiled are timed in
  alternating *rounds*; a round holds a block of consecutive per-call samples of each.  A
  launch-bound eager follows the host CPU, whose speed moves over seconds and minutes, so the
  speedup moves **between** processes far more than between the rounds of one process: an
  interval built from rounds alone is far too narrow (docs/measurements/).
* **Per-process estimate**: ``r_p = log(median(eager_p) / median(compiled_p))`` over that
  process's paired rounds.  **Point estimate**: ``exp(mean_p r_p)``, the geometric mean of the
  per-process speedups.  How the run's figures are built from it (one eager for every variant,
  the compiled figure as that eager ÷ the speedup) is ``engine.analysis.variant_stats``'s business.
* **Interval: t on the per-process log speedups, with a shared variance where it is honest.**
  ``exp(mean ± t(df, 0.975) · s / sqrt(k))``.  The per-process spread ``s²`` already holds the
  noise inside each process, so nothing is added for the rounds (the earlier hierarchical
  bootstrap resampled them once more and was too wide when processes agreed).  With two or three
  processes, ``s²`` rests on one or two degrees of freedom and the t quantile (12.7, 4.3) makes
  the interval useless, so ``s²`` is moderated with a **prior** variance ``s0²`` of ``d0``
  degrees of freedom, empirical-Bayes style (limma's moderated t):
  ``s̃² = (d0·s0² + d·s²) / (d0 + d)`` with ``d0 + d`` degrees of freedom.  The prior is this
  host's earlier runs of the same configuration and variant where the caller has them, else the
  other compiled variants of the same run (they share the host and the time).  Variants differ
  in how much the host moves them (a CUDA-graph replay barely follows the host CPU, a
  launch-bound variant does), and plain pooling then lends a noisy variant its neighbours' calm:
  in simulation its coverage fell to 70-85 %.  So the prior's weight is capped
  (``PRIOR_DF_CAP``) and it is left out when an F test of ``s²/s0²`` falls in its upper 30 % or
  lower 10 % tail (``PRIOR_GUARD``).  ``tests/test_stats_calibration.py`` checks 90-98 %
  coverage with homogeneous and heterogeneous variants, with and without a history prior, and
  with process effects that come in episodes.
* **Kernel draws**: where some of a variant's processes drew their autotuned kernels anew, the
  processes that measured one compile's draw (the cold one and the replaying one) are averaged
  into one unit before the interval (``units``, ``unit_log_ratios``): counted apart they would
  leave the draw outside it (docs/METHOD.md §2).
* **Disagreement**: Cochran's Q of the per-process log ratios against their within-process
  standard errors (each process's round-to-round spread); when p < 0.01 the processes disagree
  beyond their own noise, and the tools say so with the likely cause.
* **Variance components** (``variance_components``): call-to-call, round-to-round and
  process-to-process spread, and each one's share of the estimate's variance, so a run says
  where its uncertainty comes from.
* **Adaptive stopping**: after ``processes`` processes, more are added until the interval lies
  wholly beyond 1 ± 2 % (decided), or its relative half-width is at most ``target_halfwidth``
  (default 5 %), up to ``max_processes`` or the time budget; the reason sampling stopped is
  stored (``stop_reason``).
* With one process only (``processes: 1``) the interval is a t interval over that process's
  rounds and is marked as not covering between-process variance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import special  # not scipy.stats: same t quantile and chi-square tail, 0.3 s not 0.9 s

NOISE_THRESHOLD = 0.10
"""IQR / median above which a series is flagged noisy."""

DISAGREE_P = 0.01
"""Cochran's Q p-value below which the processes are said to disagree."""

# Bootstrap replicates are computed in chunks so that memory stays bounded (about 32 MB of float64
# per array) however many samples a long run collected.
_BOOT_CHUNK_ELEMENTS = 4_000_000

STOP_REASONS = ("interval excludes 1.0", "interval tight enough", "process limit", "time budget",
                "one process asked", "a measuring process failed")

DECISION_MARGIN = 0.02
"""An interval decides "faster" or "slower" only when it lies wholly beyond 1 ± 2 %: a smaller
difference is below what identical runs on one host reproduce, so it decides nothing."""

PRIOR_DF_CAP = 8.0
"""Most degrees of freedom a shared variance may lend a variant (module notes)."""

PRIOR_GUARD = (0.3, 0.1)
"""F-test tails (upper, lower) beyond which a variant's own spread is taken to differ from the
shared one, which it then does not borrow (module notes)."""


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

    def round_log_ratios(self) -> np.ndarray:
        """Each round's log ratio of block medians (eager ÷ compiled)."""
        return np.log(np.median(self.eager, axis=1) / np.median(self.compiled, axis=1))

    def within_se(self) -> float:
        """Standard error of this process's log ratio from its rounds' spread (NaN with one
        round): the noise inside the process, which the per-process spread must exceed before
        processes are said to disagree."""
        rounds = self.round_log_ratios()
        if rounds.size < 2:
            return math.nan
        return float(rounds.std(ddof=1)) / math.sqrt(rounds.size)


def rel_halfwidth(low: float | None, high: float | None) -> float | None:
    """Relative half-width of an interval symmetric on the log scale: sqrt(high/low) - 1
    (0.05: the interval is the estimate ×/÷ 1.05). None without a positive interval."""
    if not low or not high or low <= 0 or high <= 0:
        return None
    return math.sqrt(high / low) - 1.0


@dataclass(frozen=True)
class VariancePrior:
    """What is known, before this variant's own processes, about the variance of one process's
    log speedup: an estimate ``var`` with ``df`` degrees of freedom and where it came from."""

    var: float
    df: float
    source: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.var) and self.var > 0 and math.isfinite(self.df)
                and self.df > 0):
            raise ValueError(f"a variance prior needs a positive variance and df, got {self}")


def pooled_prior(variances: Sequence[tuple[float, int]], source: str) -> VariancePrior | None:
    """Pool sample variances ``(var, df)`` into one prior (df-weighted), None without any."""
    usable = [(v, d) for v, d in variances if d >= 1 and math.isfinite(v) and v > 0]
    df = sum(d for _, d in usable)
    if not usable:
        return None
    return VariancePrior(sum(v * d for v, d in usable) / df, float(df), source)


def moderated_variance(var: float, df: int, prior: VariancePrior | None
                       ) -> tuple[float, float, str | None]:
    """The variance of one process's log speedup, shrunk toward ``prior`` where the two agree.

    Returns ``(variance, degrees of freedom, the prior's source or None)``.  The empirical-Bayes
    (moderated) estimate ``(d0·s0² + d·s²) / (d0 + d)`` with ``d0 + d`` degrees of freedom, with
    the prior's weight capped at ``PRIOR_DF_CAP`` and the prior left out when an F test says the
    variant's own spread differs from it (``PRIOR_GUARD``): a variant noisier than its
    neighbours must not borrow their calm.  See the module notes for the simulations."""
    if prior is None or df < 1:
        return var, float(df), None
    d0 = min(prior.df, PRIOR_DF_CAP)
    f = var / prior.var
    hi = float(special.fdtri(df, d0, 1.0 - PRIOR_GUARD[0]))
    lo = float(special.fdtri(df, d0, PRIOR_GUARD[1]))
    if f > hi or f < lo:
        return var, float(df), None
    return (d0 * prior.var + df * var) / (d0 + df), d0 + df, prior.source


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
    within_spread: float | None
    """Root-mean-square within-process standard error of the log speedup (from its rounds)."""
    disagree_p: float | None
    """Cochran's Q p-value: small when processes disagree beyond their own noise."""
    log_se: float | None = None
    """Standard error of the log speedup the interval used."""
    df: float | None = None
    """Degrees of freedom of its t quantile."""
    prior: str | None = None
    """Where the shared variance came from, or None: this variant's processes alone."""
    between_processes: bool = True
    """False with one process: the interval then sees only noise inside that process."""
    method: str = field(default="t interval on per-process log speedups")

    @property
    def rel_halfwidth(self) -> float:
        return rel_halfwidth(self.low, self.high)  # type: ignore[return-value]

    @property
    def disagree(self) -> bool:
        return self.disagree_p is not None and self.disagree_p < DISAGREE_P


def _cochran_p(r: np.ndarray, within_se: np.ndarray) -> float | None:
    """Cochran's Q p-value of per-process estimates ``r`` against their standard errors."""
    if r.size < 2 or not np.all(np.isfinite(within_se)):
        return None
    wts = 1.0 / np.maximum(within_se, 1e-6) ** 2
    pooled = float((wts * r).sum() / wts.sum())
    q = float((wts * (r - pooled) ** 2).sum())
    return float(special.chdtrc(r.size - 1, q))


def draw_units(draws: Sequence[Any]) -> list[int] | None:
    """Which kernel draw each process measured, from the processes' stored ``autotune_draw``
    (hostile: anything but the three words counts as a process of its own), as unit ids for
    the interval, or None where every process counts on its own.

    Where some processes drew their autotuned kernels anew ("redrawn",
    engine/measure/autotune_draw.py), the cold compile's process ("drawn") and those that
    replayed its choice ("replayed") measured one draw, and counting them apart would put the
    draw outside the interval (docs/METHOD.md §2): they share one id.  Without a redraw no
    process's draw differs from another's, and the processes stay the units."""
    shared = [i for i, d in enumerate(draws) if d in ("drawn", "replayed")]
    if "redrawn" not in draws or len(shared) < 2:
        return None
    return [shared[0] if d in ("drawn", "replayed") else i for i, d in enumerate(draws)]


def unit_log_ratios(log_ratios: Sequence[float], units: Sequence[int] | None
                    ) -> np.ndarray:
    """The log speedup of each independent unit: processes that share a unit id (they measured
    one compile's kernel draw) are averaged into one, in order of first appearance; without
    ``units`` every process is its own.  Raises ``ValueError`` when the lengths differ."""
    r = np.asarray(log_ratios, dtype=np.float64)
    if units is None:
        return r
    if len(units) != r.size:
        raise ValueError(f"{len(units)} unit ids for {r.size} processes")
    return np.array([r[g].mean() for g in _unit_groups(units)])


def _unit_groups(units: Sequence[int]) -> list[list[int]]:
    """The process indices of each unit, units in order of first appearance."""
    return [[i for i, u in enumerate(units) if u == g] for g in dict.fromkeys(units)]


def _unit_within(within: np.ndarray, units: Sequence[int] | None) -> np.ndarray:
    """Each unit's within-process standard error (that of the mean of its processes)."""
    if units is None:
        return within
    return np.array([math.sqrt(float((within[g] ** 2).sum())) / len(g)
                     for g in _unit_groups(units)])


def paired_speedup(processes: Sequence[ProcessRounds], *, prior: VariancePrior | None = None,
                   ci: float = 0.95, units: Sequence[int] | None = None) -> SpeedupEstimate:
    """Speedup (eager ÷ compiled per-call time) over several processes; see the module notes.

    ``prior``: the shared variance (``pooled_prior``) that may moderate this variant's own.
    ``units``: an id per process; processes with one id measured one kernel draw and count
    once (``unit_log_ratios``); None: every process is independent.  Raises ``ValueError``
    without processes, with a bad ``ci`` or with fewer than two units for several processes."""
    if not processes:
        raise ValueError("no processes to estimate from")
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    alpha = (1.0 - ci) / 2.0
    per_process = np.array([p.log_ratio() for p in processes])
    r = unit_log_ratios(per_process, units)
    if len(processes) > 1 and r.size < 2:
        raise ValueError("several processes of one kernel draw: no between-draw variance")
    k = r.size
    within = _unit_within(np.array([p.within_se() for p in processes]), units)
    within_rms = float(np.sqrt(np.mean(within ** 2))) if np.all(np.isfinite(within)) else None
    est = float(r.mean())
    if len(processes) == 1:
        rounds = processes[0].round_log_ratios()
        if rounds.size < 2:
            raise ValueError("one process with one round has no interval")
        se = float(rounds.std(ddof=1)) / math.sqrt(rounds.size)
        h = float(special.stdtrit(rounds.size - 1, 1 - alpha)) * se
        return SpeedupEstimate(math.exp(est), math.exp(est - h), math.exp(est + h), 1,
                               (math.exp(est),), None, within_rms, None, se,
                               float(rounds.size - 1), None, between_processes=False,
                               method="t interval on the rounds of one process (no "
                                      "between-process variance)")
    own = float(r.var(ddof=1))
    var, df, used = moderated_variance(own, k - 1, prior)
    se = math.sqrt(var / k)
    h = float(special.stdtrit(df, 1 - alpha)) * se
    method = ("t interval on per-process log speedups" if units is None else
              f"t interval on the log speedups of {k} kernel draws ({len(processes)} processes; "
              "those that replayed one compile's draw averaged into one)")
    if used is not None:
        method += f", variance shared with {used}"
    spread = float(per_process.std(ddof=1))
    return SpeedupEstimate(math.exp(est), math.exp(est - h), math.exp(est + h),
                           len(processes), tuple(float(x) for x in np.exp(per_process)),
                           spread, within_rms, _cochran_p(r, within), se, df, used,
                           method=method)


def variance_components(processes: Sequence[ProcessRounds]) -> dict[str, float] | None:
    """Where a speedup's uncertainty comes from, as standard deviations on the log scale
    (≈ relative, 0.05 = 5 %) by the method of moments on log per-call times:

    * ``within_round_sd``: call to call inside one block of consecutive calls;
    * ``between_round_sd``: round to round inside one process, beyond the calls' own noise;
    * ``between_process_sd``: process to process, beyond what its rounds explain;

    and each one's ``*_share`` of the variance of the variant's speedup estimate (summing to 1).
    None with fewer than two rounds in a process or fewer than two calls in a block."""
    if not processes or any(p.eager.shape[0] < 2 or p.eager.shape[1] < 2 for p in processes):
        return None
    le = [np.log(p.eager) for p in processes]
    lc = [np.log(p.compiled) for p in processes]
    within = float(np.mean(np.concatenate([np.concatenate([a.var(axis=1, ddof=1),
                                                           b.var(axis=1, ddof=1)])
                                           for a, b in zip(le, lc, strict=True)])))
    block = processes[0].eager.shape[1]
    rr = [a.mean(axis=1) - b.mean(axis=1) for a, b in zip(le, lc, strict=True)]
    v_round = float(np.mean([x.var(ddof=1) for x in rr]))
    between_round = max(v_round - 2 * within / block, 0.0)
    n_rounds = float(np.mean([x.size for x in rr]))
    between_process = 0.0
    if len(rr) >= 2:
        v_proc = float(np.var([x.mean() for x in rr], ddof=1))
        between_process = max(v_proc - v_round / n_rounds, 0.0)
    parts = {"between_process": between_process, "between_round": between_round / n_rounds,
             "within_round": 2 * within / (block * n_rounds)}
    total = sum(parts.values()) or 1.0
    out = {"between_process_sd": math.sqrt(between_process),
           "between_round_sd": math.sqrt(between_round), "within_round_sd": math.sqrt(within)}
    out.update({f"{k}_share": v / total for k, v in parts.items()})
    return out


def decision(low: float | None, high: float | None, margin: float = DECISION_MARGIN
             ) -> str | None:
    """"faster" or "slower" when the interval lies wholly beyond 1 ± ``margin``, else None."""
    if not low or not high:
        return None
    if low > 1.0 + margin:
        return "faster"
    if high < 1.0 / (1.0 + margin):
        return "slower"
    return None


def stop_reason(rel_halfwidth: float | None, n_processes: int, *, min_processes: int,
                max_processes: int, target_halfwidth: float, low: float | None = None,
                high: float | None = None) -> str | None:
    """Why to stop adding measuring processes for a variant, or None to add another.

    The rule: at least ``min_processes``; then stop once the interval (``low``, ``high``) lies
    wholly beyond 1 ± ``DECISION_MARGIN`` (the answer is decided), or its relative half-width
    (None when there is no interval) is at most ``target_halfwidth``, or at ``max_processes``.
    (The runner adds "time budget".)"""
    if n_processes < min_processes:
        return None
    if min_processes == 1 and max_processes == 1:
        return "one process asked"
    if decision(low, high) is not None:
        return "interval excludes 1.0"
    if rel_halfwidth is not None and rel_halfwidth <= target_halfwidth:
        return "interval tight enough"
    if n_processes >= max_processes:
        return "process limit"
    return None


def processes_to_target(rel_halfwidth: float | None, n_processes: int,
                        target_halfwidth: float) -> int | None:
    """About how many more processes would bring the interval to ``target_halfwidth``: the
    half-width shrinks as one over the square root of the processes (a lower bound: the t
    quantile shrinks too, which this ignores)."""
    if rel_halfwidth is None or target_halfwidth <= 0 or n_processes < 1:
        return None
    if rel_halfwidth <= target_halfwidth:
        return 0
    need = n_processes * (math.log1p(rel_halfwidth) / math.log1p(target_halfwidth)) ** 2
    return max(1, math.ceil(need) - n_processes)


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
    inside one process, so its intervals excluded each other from run to run
    (docs/measurements/2026-12-03-repeatability-h200.md).  Kept
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


def history_prior(runs: Sequence[Any], source: str = "this host's earlier runs of this "
                  "configuration") -> VariancePrior | None:
    """The variance prior from earlier runs' per-process speedups: one list per run, or a
    ``(speeds, draws)`` pair whose stored kernel draws group the processes into independent
    units as a run's own interval does (``draw_units``).  As stored, hostile: anything but a
    list of 2 to 64 positive finite numbers is skipped, draws that do not line up are ignored."""
    found: list[tuple[float, int]] = []
    for entry in runs:
        speeds, draws = entry if isinstance(entry, tuple) and len(entry) == 2 else (entry, None)
        if not isinstance(speeds, list) or not 2 <= len(speeds) <= 64:
            continue
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                   and math.isfinite(x) and 0 < x < 1e6 for x in speeds):
            continue
        ok = isinstance(draws, list) and len(draws) == len(speeds)
        logs = unit_log_ratios(np.log(np.asarray(speeds, dtype=np.float64)),
                               draw_units(draws) if ok else None)
        if logs.size >= 2:
            found.append((float(logs.var(ddof=1)), logs.size - 1))
    return pooled_prior(found, source)
