"""The regression gate: is a candidate run (or set of runs) worse than its baseline?

A change is called a **regression** only when it is both *real* and *large*:

* **Speedup** (eager ÷ compiled per-call median).  *Real* where both runs stored each
  process's eager: the candidate's compiled time against the baseline's **at one host speed**,
  eager as the covariate (engine/analysis/host_adjust.py: a launch-bound eager moves with the
  host between runs, a CUDA-graph replay does not), one-sided t at α; *large*: that ratio below
  the threshold.  Otherwise *real*: a one-sided **Welch t-test on the
  log per-process speedups** (``process_speedups`` of engine/analysis/stats.py: the process is the unit of
  replication, so the test's n is the number of measuring processes, never the number of
  samples; where processes drew their autotuned kernels anew, the kernel draw is) at
  **α = 0.05** (``--alpha``), with each side's standard error and degrees of freedom
  as its stored interval used them (``speedup_log_se``, ``speedup_df``: the variance shared with
  the run's other variants or the host's history where it agreed), so the gate and the shown
  interval judge alike; results stored before those figures use the per-process spread alone.
  With a tag as baseline and three or more of its runs of the config, their run-to-run spread
  beyond their own intervals is added once for each run (engine/analysis/between_runs.py).  Each side's variance is floored at the squared
  within-process spread (``within_process_spread``): two processes that happen to agree cannot
  make a difference look more certain than the noise inside each process allows.  A side without
  per-process speedups (one process, or results from an older Compile Lab) enters the test with
  the standard error read off its stored 95 % interval (normal on the log scale: that interval
  saw only the noise inside one process, so such tests are labelled).  *Large*: the candidate's
  speedup is below **0.95 ×** the baseline's (``--speedup``).
* **Compile time** (cold first call, seconds).  Measured once per run (one cold process), so
  the replicates are the baseline's *runs*: with a tag as baseline, its last runs of the config
  (up to ``HISTORY_RUNS``).  *Real*: the candidate lies beyond the one-sided (1 − α)
  **prediction interval** of those runs' log compile times (a t-interval for one new
  observation).  *Large*: above **1.15 ×** the baseline (``--compile-time``) and longer by more
  than **0.5 s** (``--compile-floor``).  With fewer than two baseline runs there is no test and
  compile time is reported, never failed: one cold compile is one sample, and identical runs
  differ by a quarter and more (docs/measurements/2026-12-03-repeatability-h200.md).
* **Memory compression ratio** (eager peak ÷ compiled peak, same run).  Peak allocation of a
  given program is repeatable to the byte on the caching allocator, so the threshold alone:
  below **0.95 ×** the baseline (``--memory``).
* **Pass** (ok and correct).  A variant that passed in the baseline and fails, is incorrect or
  is missing in the candidate is always a regression: a failure is not noise.  Over all compared
  configs the **pass rate** per mode regresses below **0.9 ×** the baseline (``--pass-rate``).

Improvements are the mirror image (significant and beyond the inverse threshold) and are
reported, never failed on.  Inputs are runs as ``storage.records.load_run`` returns them; the
pairing of candidate and baseline runs is done by the caller (engine/cli/gate.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from contract.config_key import config_label
from contract.fmt import positive
from engine.analysis import between_runs, host_adjust, repeat
from engine.analysis.headline import Headline, cells, eager_row, headline, memory_ratio, passes

Run = Mapping[str, Any]
TEST_NAME = "one-sided Welch t-test on log per-process speedups"
ADJUSTED_TEST = ("one-sided t-test on log compiled time at one host speed (eager as covariate, "
                 "engine/analysis/host_adjust.py)")
SPEEDUP_TESTS = (f"{ADJUSTED_TEST} where both runs stored each process's eager, else a "
                 f"{TEST_NAME} (with a tag as baseline and 3 or more of its runs of the config, "
                 "their run-to-run spread beyond their intervals added for each run)")
HISTORY_RUNS = 5  # baseline runs of a config whose compile times form its prediction interval
ENV_KEYS = ("gpu", "gpu_count", "driver", "cuda", "torch", "triton", "python", "commit", "host",
            "cpu", "os")


def _sps() -> Any:
    """scipy.stats, imported when a test runs (1.5 s): every ``python -m engine`` command builds
    the gate's parser, and only ``gate`` needs it."""
    from scipy import stats

    return stats


@dataclass(frozen=True)
class Thresholds:
    """When a change is large enough to matter (ratios candidate ÷ baseline) and the test level."""

    speedup: float = 0.95
    compile_time: float = 1.15
    memory: float = 0.95
    pass_rate: float = 0.9
    alpha: float = 0.05
    compile_floor_s: float = 0.5

    def __post_init__(self) -> None:
        for name in ("speedup", "memory", "pass_rate"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 < value <= 1):
                raise ValueError(f"--{name.replace('_', '-')} must be in (0, 1], got {value}")
        if not (math.isfinite(self.compile_time) and self.compile_time >= 1):
            raise ValueError(f"--compile-time must be at least 1, got {self.compile_time}")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"--alpha must be in (0, 0.5), got {self.alpha}")
        if not (math.isfinite(self.compile_floor_s) and self.compile_floor_s >= 0):
            raise ValueError(f"--compile-floor must be >= 0 seconds, got {self.compile_floor_s}")


@dataclass(frozen=True)
class LogEstimate:
    """A speedup on the log scale: mean, standard error and degrees of freedom (inf: normal)."""

    mean: float
    se: float
    df: float
    source: str
    """"processes" (per-process speedups) or "interval" (read off the stored interval)."""


def log_estimate(row: Mapping[str, Any]) -> LogEstimate | None:
    """The log speedup of a variant with its standard error, or None when it has no spread to
    test with (a point estimate only)."""
    speeds = row.get("process_speedups")
    logs = [math.log(s) for s in map(positive, speeds if isinstance(speeds, list) else [])
            if s is not None]
    se, df, sp = positive(row.get("speedup_log_se")), positive(row.get("speedup_df")), positive(
        row.get("speedup"))
    if len(logs) >= 2 and se is not None and df is not None and sp is not None:
        # the interval's own standard error and degrees of freedom (engine/analysis/stats.py, with the
        # variance it shared where that held): the gate judges with what the run shows
        return LogEstimate(math.log(sp), se, df, "processes")
    if len(logs) >= 2:
        k = len(logs)
        mean = sum(logs) / k
        var = sum((x - mean) ** 2 for x in logs) / (k - 1)
        within = positive(row.get("within_process_spread"))  # a database's: hostile
        if within is not None:
            var = max(var, within ** 2)  # the floor: see the module notes
        return LogEstimate(mean, math.sqrt(var / k), k - 1, "processes")
    sp, lo, hi = (positive(row.get(k)) for k in ("speedup", "speedup_ci_low", "speedup_ci_high"))
    if sp is None or lo is None or hi is None or hi <= lo:
        return None
    k = int(row.get("n_processes") or 1)
    q = float(_sps().t.ppf(0.975, k - 1)) if k >= 2 else float(_sps().norm.ppf(0.975))
    return LogEstimate(math.log(sp), math.log(hi / lo) / (2 * q),
                       float(k - 1) if k >= 2 else math.inf, "interval")


def welch_lower_p(baseline: LogEstimate, candidate: LogEstimate,
                  between: between_runs.BetweenRuns | None = None) -> float | None:
    """One-sided p-value of "candidate's log speedup is lower than baseline's" (Welch's t with
    Welch–Satterthwaite degrees of freedom); None when neither side has any spread. ``between``:
    the baseline's between-run variance, added once for each run, its own degrees of freedom
    (runs - 1) in the Satterthwaite sum."""
    ok = between is not None and between.runs > 1 and 0 < between.tau2 < math.inf
    extra = 2 * between.tau2 if ok else 0.0
    var = baseline.se ** 2 + candidate.se ** 2 + extra
    if var <= 0:
        return None
    t = (candidate.mean - baseline.mean) / math.sqrt(var)
    denom = sum(e.se ** 4 / e.df for e in (baseline, candidate) if math.isfinite(e.df) and e.df > 0)
    if extra > 0 and between is not None:
        denom += extra ** 2 / (between.runs - 1)
    df = var ** 2 / denom if denom > 0 else math.inf
    p = float(_sps().norm.cdf(t) if math.isinf(df) else _sps().t.cdf(t, df))
    return p if math.isfinite(p) else None  # rows whose figures overflow: not tested


@dataclass
class Change:
    """One figure of one variant (or of one mode over all configs), baseline against candidate."""

    config: str
    variant: str
    figure: str
    baseline: Any
    candidate: Any
    verdict: str
    """regression | improvement | unchanged | not significant | still failing | untested"""
    ratio: float | None = None
    baseline_interval: tuple[float, float] | None = None
    candidate_interval: tuple[float, float] | None = None
    p_value: float | None = None
    test: str | None = None
    baseline_run: int | None = None
    candidate_run: int | None = None
    note: str = ""
    host_adjusted_ratio: float | None = None
    """Speedups only: the candidate's over the baseline's at one host speed, where the verdict
    was judged so (engine/analysis/host_adjust.py); ``ratio`` stays the shown speedups' ratio."""

    @property
    def is_regression(self) -> bool:
        return self.verdict == "regression"

    def magnitude(self) -> float:
        """How big the change is, for sorting "biggest first": |log ratio| (failures first)."""
        if self.figure in ("passes", "config"):
            return math.inf
        ratio = self.host_adjusted_ratio or self.ratio  # the figure the verdict was judged on
        return abs(math.log(ratio)) if ratio and ratio > 0 else 0.0


@dataclass
class GateReport:
    thresholds: Thresholds
    changes: list[Change] = field(default_factory=list)
    environment: list[dict[str, Any]] = field(default_factory=list)
    modes: list[dict[str, Any]] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    """Candidate configs without a baseline (reported, not judged)."""

    @property
    def regressions(self) -> list[Change]:
        return sorted((c for c in self.changes if c.is_regression), key=lambda c: -c.magnitude())

    @property
    def improvements(self) -> list[Change]:
        return sorted((c for c in self.changes if c.verdict == "improvement"),
                      key=lambda c: -c.magnitude())

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": "regressed" if self.regressions else "passed",
            "exit_code": self.exit_code, "test": TEST_NAME,
            "adjusted_test": ADJUSTED_TEST, "alpha": self.thresholds.alpha,
            "thresholds": asdict(self.thresholds), "environment_differences": self.environment,
            "regressions": [asdict(c) for c in self.regressions],
            "improvements": [asdict(c) for c in self.improvements],
            "changes": [asdict(c) for c in self.changes], "modes": self.modes,
            "unmatched_candidate_configs": self.unmatched,
        }


def _interval(row: Mapping[str, Any]) -> tuple[float, float] | None:
    lo, hi = positive(row.get("speedup_ci_low")), positive(row.get("speedup_ci_high"))
    return (lo, hi) if lo is not None and hi is not None else None


def _directional(ratio: float, low_limit: float, worse_if_low: bool) -> str:
    """"worse", "better" or "same" against a threshold and its inverse."""
    low, high = ratio < low_limit, ratio > 1 / low_limit
    if not (low or high):
        return "same"
    return "worse" if low == worse_if_low else "better"


def compare_speedup(base: Mapping[str, Any], cand: Mapping[str, Any], thr: Thresholds,
                    history: Sequence[Mapping[str, Any]] = (), **where: Any) -> Change:
    """The speedup: at one host speed where both runs allow it (host_adjust.py), else Welch's
    test, which counts the run-to-run spread of ``history`` (this variant's rows in the
    baseline's runs of the config, between_runs.py) where there is one."""
    b, c = positive(base.get("speedup")), positive(cand.get("speedup"))
    change = Change(figure="speedup", baseline=b, candidate=c, verdict="untested",
                    baseline_interval=_interval(base), candidate_interval=_interval(cand),
                    test=TEST_NAME, **where)
    if b is None or c is None:
        change.note = "no speedup on one side"
        return change
    change.ratio = c / b
    if (adj := host_adjust.compare(base, cand, _floor(base, cand))) is not None:
        # both runs stored each process's eager: judged at one host speed (host_adjust.py)
        change.host_adjusted_ratio, change.test = adj.ratio, ADJUSTED_TEST
        change.note = host_adjust.words(adj)
        side = _directional(adj.ratio, thr.speedup, worse_if_low=True)
        change.p_value = (host_adjust.slower_p(adj) if adj.ratio < 1
                          else host_adjust.faster_p(adj))
        return _judged(change, side, thr, base, cand)
    eb, ec = log_estimate(base), log_estimate(cand)
    between = between_runs.estimate(history, log_estimate)
    p_low = welch_lower_p(eb, ec, between) if eb and ec else None
    if eb and ec and "interval" in (eb.source, ec.source):
        change.note = "one side has no per-process speedups: tested with its interval, which " \
                      "sees only the noise inside one process"
    if p_low is not None and between is not None and between.tau2 > 0:
        change.test = f"{TEST_NAME}, with the run-to-run spread of {between.runs} baseline runs"
        said = (f"identical runs of this config moved {between.percent:.1f} % (sd) beyond "
                f"their intervals over {between.runs} baseline runs: counted for each run")
        change.note = f"{change.note}; {said}" if change.note else said
    side = _directional(change.ratio, thr.speedup, worse_if_low=True)
    if p_low is None:
        change.note = "no interval on one side: not tested"
        change.verdict = "unchanged" if side == "same" else "untested"
        return change
    change.p_value = p_low if change.ratio < 1 else 1.0 - p_low
    return _judged(change, side, thr, base, cand)


def _floor(base: Mapping[str, Any], cand: Mapping[str, Any]) -> float | None:
    """The larger of the two rows' spreads inside one process (log scale), if any (rows
    come from a database: anything but a positive finite number is none)."""
    spreads = [s for s in (positive(r.get("within_process_spread")) for r in (base, cand))
               if s is not None]
    return max(spreads) if spreads else None


def _judged(change: Change, side: str, thr: Thresholds, base: Mapping[str, Any],
            cand: Mapping[str, Any]) -> Change:
    """The verdict from the direction against the threshold and the p-value set on ``change``."""
    assert change.p_value is not None
    significant = change.p_value < thr.alpha
    if side == "same":
        change.verdict = "unchanged"
    elif not significant:
        change.verdict = "not significant"
    else:
        change.verdict = "regression" if side == "worse" else "improvement"
    if change.verdict in ("regression", "improvement", "not significant"):
        why = repeat.cause(base, cand)  # e.g. eager moved with the host while compiled held
        if why:
            change.note = f"{change.note}; {why}" if change.note else why
    return change


def compare_compile(base: Mapping[str, Any], cand: Mapping[str, Any], thr: Thresholds,
                    history: Sequence[float] = (), **where: Any) -> Change:
    """Cold compile time: beyond the threshold and the floor, and outside the one-sided
    (1 - α) prediction interval of the baseline's run history (``history``: the cold compile
    of this variant in the baseline's earlier runs of the config, the baseline's own included)
    on the log scale.  Fewer than two baseline runs: no test, so never a regression."""
    b, c = positive(base.get("first_call_cold_s")), positive(cand.get("first_call_cold_s"))
    change = Change(figure="compile time s", baseline=b, candidate=c, verdict="untested",
                    **where)
    if b is None or c is None:
        return change
    change.ratio = c / b
    beyond = abs(c - b) > thr.compile_floor_s
    side = ("worse" if change.ratio > thr.compile_time and beyond else
            "better" if change.ratio < 1 / thr.compile_time and beyond else "same")
    logs = [math.log(v) for v in map(positive, history) if v is not None]
    if side == "same":
        change.verdict = "unchanged"
        return change
    if len(logs) < 2:
        change.verdict = "not significant"
        change.note = "one cold compile per run and fewer than 2 baseline runs: no test"
        return change
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    t = (math.log(c) - mean) / (sd * math.sqrt(1 + 1 / n)) if sd > 0 else \
        math.copysign(math.inf, math.log(c) - mean)
    p_high = float(_sps().t.sf(t, n - 1))
    change.p_value = p_high if side == "worse" else 1.0 - p_high
    change.test = f"prediction interval of {n} baseline runs (log scale)"
    significant = change.p_value < thr.alpha
    change.verdict = ("not significant" if not significant else
                      "regression" if side == "worse" else "improvement")
    return change


def compare_memory(b: float | None, c: float | None, thr: Thresholds, **where: Any) -> Change:
    change = Change(figure="memory ratio", baseline=b, candidate=c, verdict="untested",
                    note="eager peak / compiled peak: threshold only", **where)
    if b is None or c is None:
        return change
    change.ratio = c / b
    side = _directional(change.ratio, thr.memory, worse_if_low=True)
    change.verdict = {"same": "unchanged", "worse": "regression", "better": "improvement"}[side]
    return change


def _state(row: Mapping[str, Any] | None) -> str:
    if row is None:
        return "missing"
    if row.get("status") == "ok":
        return "passed" if row.get("correct") is not False else "incorrect"
    reason = row.get("failure_kind") or row.get("status") or "failed"
    return f"failed ({reason})"


def _same_setup(run: Run, base: Run) -> bool:
    """Whether ``run`` is a replicate of ``base``: the same code and host by every
    ``ENV_KEYS`` value. A run at another commit or torch may differ for a real reason, and its
    move must not widen the spread the next change is judged against."""
    env, ref = run.get("environment"), base.get("environment")
    if not isinstance(env, Mapping) or not isinstance(ref, Mapping) \
            or not all(isinstance(ref.get(k), str) and ref.get(k) for k in ("host", "torch")):
        return False  # without a host and a torch named, nothing says it is the same setup
    return all(str(env.get(k)) == str(ref.get(k)) for k in ENV_KEYS)


def compare_runs(base: Run, cand: Run, thr: Thresholds, label: str | None = None,
                 history: Sequence[Run] = ()) -> list[Change]:
    """Every variant the baseline ran that the candidate asked for, against the candidate's
    (a config pair); ``history``: the baseline's runs of this config (for compile time)."""
    label = label or config_label(cand.get("spec") or base.get("spec") or {})
    out: list[Change] = []
    b_cells, c_cells = cells(base), cells(cand)
    b_eager, c_eager = eager_row(base), eager_row(cand)
    past_cells = [(cells(h), _same_setup(h, base)) for h in history]
    for variant, brow in b_cells.items():
        if variant not in c_cells:
            continue  # the candidate did not ask for it: nothing to judge
        crow = c_cells.get(variant)
        where = {"config": label, "variant": variant, "baseline_run": base.get("run_id"),
                 "candidate_run": cand.get("run_id")}
        b_ok, c_ok = passes(brow), passes(crow)
        if b_ok != c_ok or not b_ok:
            verdict = ("regression" if b_ok else "improvement" if c_ok else "still failing")
            out.append(Change(figure="passes", baseline=_state(brow), candidate=_state(crow),
                              verdict=verdict, **where))
        if not (b_ok and c_ok):
            continue
        assert brow is not None and crow is not None
        rows = [(cs.get(variant) or {}, same) for cs, same in past_cells]
        out.append(compare_speedup(brow, crow, thr, history=[r for r, same in rows if same],
                                   **where))
        past = [r.get("first_call_cold_s") for r, _ in rows]
        out.append(compare_compile(brow, crow, thr, history=past, **where))
        out.append(compare_memory(memory_ratio(b_eager, brow), memory_ratio(c_eager, crow), thr,
                                  **where))
    return out


def environment_differences(baseline: Sequence[Run], candidate: Sequence[Run]
                            ) -> list[dict[str, Any]]:
    """Environment keys whose values differ between the two sides (each side: sorted distinct
    values over its runs), in ``ENV_KEYS`` order: the usual cause of a change."""
    out = []
    for key in ENV_KEYS:
        values = [sorted({str((r.get("environment") or {}).get(key)) for r in side})
                  for side in (baseline, candidate)]
        if values[0] != values[1]:
            out.append({"key": key, "baseline": values[0], "candidate": values[1]})
    return out


def _mode_rows(base: list[Headline], cand: list[Headline], thr: Thresholds
               ) -> tuple[list[dict[str, Any]], list[Change]]:
    by_mode = {h.mode: h for h in base}
    rows, changes = [], []
    for c in cand:
        b = by_mode.get(c.mode)
        rows.append({"mode": c.mode, "baseline": b.as_dict() if b else None,
                     "candidate": c.as_dict()})
        if b is None or not b.pass_rate or c.pass_rate is None:
            continue
        ratio = c.pass_rate / b.pass_rate
        verdict = ("regression" if ratio < thr.pass_rate else
                   "improvement" if ratio > 1 / thr.pass_rate else "unchanged")
        changes.append(Change(config="(all compared configs)", variant=c.mode, figure="pass rate",
                              baseline=b.pass_rate, candidate=c.pass_rate, verdict=verdict,
                              ratio=ratio, note=f"{b.passing}/{b.cells} -> {c.passing}/{c.cells}"))
    return rows, changes


def gate(pairs: Sequence[tuple[Run, Run]], thr: Thresholds, *,
         missing: Sequence[Run] = (), unmatched: Sequence[Run] = (),
         history: Mapping[int, Sequence[Run]] | None = None) -> GateReport:
    """Judge each (baseline, candidate) pair; ``missing``: baseline runs whose config the
    candidate side lacks (each a regression); ``unmatched``: candidate runs without a baseline;
    ``history``: by baseline run id, that side's runs of the same config (itself included)."""
    report = GateReport(thr)
    report.environment = environment_differences([b for b, _ in pairs] + list(missing),
                                                  [c for _, c in pairs])
    for base, cand in pairs:
        if (base.get("spec") or {}) and cand.get("spec") and \
                config_label(base["spec"]) != config_label(cand["spec"]):
            report.environment.insert(0, {"key": "config",
                                          "baseline": [config_label(base["spec"])],
                                          "candidate": [config_label(cand["spec"])]})
        run_id = base.get("run_id")
        past = (history or {}).get(run_id, [base]) if isinstance(run_id, int) else [base]
        report.changes.extend(compare_runs(base, cand, thr, history=past))
    for base in missing:
        report.changes.append(Change(config=config_label(base.get("spec") or {}), variant="-",
                                     figure="config", baseline="measured", candidate="missing",
                                     verdict="regression", baseline_run=base.get("run_id")))
    report.unmatched = [config_label(c.get("spec") or {}) for c in unmatched]
    report.modes, mode_changes = _mode_rows(headline([b for b, _ in pairs]),
                                            headline([c for _, c in pairs]), thr)
    report.changes.extend(mode_changes)
    return report
