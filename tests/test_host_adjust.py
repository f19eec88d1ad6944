"""The gate's comparison at one host speed (engine/analysis/host_adjust.py): eager as the
covariate of the compiled time, so a host that moved between two runs is not read as a change
of the compiled code, and a real slowdown is not hidden by it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from engine.analysis import host_adjust
from engine.analysis.gate import ADJUSTED_TEST, TEST_NAME, Thresholds, compare_speedup

THR = Thresholds()
WHERE = {"config": "c", "variant": "reduce-overhead"}


def row(eager_ms: list[float], compiled_ms: list[float], *, within: float = 0.01,
        draws: list[str] | None = None) -> dict:
    """A stored variant row with per-process eager and speedups, as load_run gives it."""
    speeds = [e / c for e, c in zip(eager_ms, compiled_ms, strict=True)]
    out = {"variant": "reduce-overhead", "status": "ok", "correct": True,
           "speedup": float(np.exp(np.mean(np.log(speeds)))), "process_speedups": speeds,
           "process_eager_ms": list(eager_ms), "n_processes": len(speeds),
           "within_process_spread": within}
    if draws is not None:
        out["processes"] = [{"phase": "x", "autotune_draw": d} for d in draws]
    return out


def simulated(rng: np.random.Generator, theta: float, host: float, factor: float = 1.0,
              k: int = 4) -> dict:
    """One run: the host's speed (log) moves by ``host`` for the run and 5 % between its
    processes; eager follows it fully, compiled by ``theta``; 1 % noise on each."""
    h = host + rng.normal(0, 0.05, k)
    e = np.exp(math.log(4.5) + h + rng.normal(0, 0.01, k))
    c = np.exp(math.log(1.25) + theta * h + rng.normal(0, 0.01, k)) * factor
    return row(list(e), list(c))


def test_eager_moved_compiled_held_is_no_change() -> None:
    """The H200 case: eager 5.01 -> 4.23 ms between identical runs, the CUDA-graph call held."""
    base = row([5.0, 4.7, 5.3, 5.05], [1.26, 1.25, 1.27, 1.265])
    cand = row([4.2, 4.0, 4.45, 4.25], [1.235, 1.23, 1.24, 1.238])
    ch = compare_speedup(base, cand, THR, **WHERE)
    assert ch.ratio == pytest.approx(cand["speedup"] / base["speedup"])
    assert ch.ratio < 0.9  # the shown speedups fell by more than 10 % ...
    assert ch.test == ADJUSTED_TEST and ch.verdict == "unchanged"  # ... the compiled code did not
    assert ch.host_adjusted_ratio == pytest.approx(1.0, abs=0.03)
    assert "at one host speed" in ch.note and "eager moved" in ch.note


def test_slower_compiled_is_caught_when_eager_moved_the_other_way() -> None:
    base = row([4.2, 4.0, 4.45, 4.25], [1.235, 1.23, 1.24, 1.238])
    cand = row([5.0, 4.7, 5.3, 5.05], [1.39, 1.37, 1.4, 1.385])  # compiled x1.12, eager +19 %
    ch = compare_speedup(base, cand, THR, **WHERE)
    assert ch.ratio > 1.0  # the shown speedup even rose
    assert ch.verdict == "regression" and ch.p_value < 0.05
    assert ch.host_adjusted_ratio < 0.95


def test_without_process_eager_the_welch_test_stays() -> None:
    base = row([4.5] * 4, [1.25, 1.26, 1.24, 1.25])
    cand = row([4.5] * 4, [1.5, 1.52, 1.49, 1.5])
    for r in (base, cand):
        r.pop("process_eager_ms")
    ch = compare_speedup(base, cand, THR, **WHERE)
    assert ch.test == TEST_NAME and ch.host_adjusted_ratio is None
    assert ch.verdict == "regression"


@pytest.mark.parametrize("bad", ["4.5", None, -1.0, 0.0, float("nan"), float("inf"), True,
                                 [4.5], {"ms": 4.5}])
def test_hostile_process_eager_falls_back(bad: object) -> None:
    base = row([4.5, 4.6, 4.4, 4.5], [1.25, 1.26, 1.24, 1.25])
    cand = row([4.5, 4.6, 4.4, 4.5], [1.25, 1.26, 1.24, 1.25])
    cand["process_eager_ms"][1] = bad
    assert host_adjust.units(cand) is None
    ch = compare_speedup(base, cand, THR, **WHERE)
    assert ch.test == TEST_NAME


def test_lengths_that_differ_fall_back() -> None:
    r = row([4.5, 4.6, 4.4], [1.25, 1.26, 1.24])
    r["process_eager_ms"] = r["process_eager_ms"][:2]
    assert host_adjust.units(r) is None


def test_draw_units_average_the_processes_of_one_draw() -> None:
    r = row([4.0, 4.4, 4.2, 4.6], [1.0, 1.2, 1.1, 1.3],
            draws=["drawn", "replayed", "redrawn", "redrawn"])
    e, c = host_adjust.units(r)
    assert e.size == 3 and c.size == 3
    assert e[0] == pytest.approx((math.log(4.0) + math.log(4.4)) / 2)


def test_theta_is_kept_between_zero_and_one() -> None:
    # compiled moves against eager inside each run: the slope is kept at 0
    base = row([4.0, 4.5, 5.0], [1.3, 1.25, 1.2])
    cand = row([4.0, 4.5, 5.0], [1.3, 1.25, 1.2])
    adj = host_adjust.compare(base, cand)
    assert adj.theta == 0.0 and adj.df == 3 and adj.shift == pytest.approx(0.0)
    # compiled moves twice as far as eager: kept at 1 (the speedup itself), and the spread is
    # read about that line, not the fitted one (two runs of two processes each, old bundle
    # positions 21 and 23, read p = 0.03 the other way)
    base = row([4.0, 4.5, 5.0], [1.0, 1.27, 1.5])
    cand = row([3.6, 4.05, 4.5], [0.9, 1.14, 1.35])
    adj = host_adjust.compare(base, cand)
    assert adj.theta == 1.0
    # about the line of slope 1, each run's log speedups: their pooled spread, not the fitted
    # line's (near 0 here)
    res = np.log([1.0, 1.27, 1.5]) - np.log([4.0, 4.5, 5.0])
    pooled = math.sqrt(2 * float(((res - res.mean()) ** 2).sum()) / adj.df)
    assert adj.se >= pooled * math.sqrt(2 / 3) * 0.999


def test_a_slope_not_seen_leaves_the_speedup_test() -> None:
    """Eager hardly moves inside the runs (0.2 %) while its noise is larger: the slope's
    standard error is far above SLOPE_SE, so no comparison at one host speed is made."""
    base = row([4.50, 4.51, 4.49, 4.505], [1.25, 1.27, 1.24, 1.26])
    cand = row([4.0, 4.01, 3.99, 4.005], [1.10, 1.13, 1.12, 1.11])
    assert host_adjust.compare(base, cand) is None
    assert compare_speedup(base, cand, THR, **WHERE).test == TEST_NAME


def test_floor_keeps_agreeing_processes_from_looking_certain() -> None:
    eager = [4.0, 4.5, 5.0, 4.5]
    base = row(eager, [e / 3.6 for e in eager])  # compiled follows exactly
    cand = row(eager, [e / 3.5 for e in eager])
    assert host_adjust.compare(base, cand).se < 1e-6
    assert host_adjust.compare(base, cand, floor=0.02).se > 0.014


@pytest.mark.parametrize("bad", [{"process_speedups": [5e-324] * 4},
                                 {"process_eager_ms": [10 ** 400] * 4},
                                 {"within_process_spread": 10 ** 400}])
def test_rows_beyond_a_float_do_not_crash_the_gate(bad: dict) -> None:
    base = row([4.5, 4.6, 4.4, 4.5], [1.25, 1.27, 1.22, 1.25])
    cand = row([4.5, 4.6, 4.4, 4.5], [1.25, 1.27, 1.22, 1.25])
    base.update(bad)
    ch = compare_speedup(base, cand, THR, **WHERE)  # raised OverflowError before the mend
    assert ch.verdict in ("unchanged", "not significant", "untested", "improvement",
                          "regression")
    if "within_process_spread" not in bad:  # no per-unit figures: the speedup test
        assert host_adjust.units(base) is None or host_adjust.compare(base, cand) is None
        assert ch.test == TEST_NAME


def test_identical_figures_read_p_one_half_not_zero() -> None:
    adj = host_adjust.HostAdjusted(0.0, 0.0, 3.0, 0.5, 0.0)
    assert host_adjust.slower_p(adj) == 0.5 == host_adjust.faster_p(adj)


def test_identical_pair_of_one_process_each_is_not_tested_so() -> None:
    base = row([4.5], [1.25])
    assert host_adjust.compare(base, base) is None


def test_host_drift_between_runs_no_longer_fails_the_gate() -> None:
    """Simulated pairs of runs whose host moved 7 % (sd) between them: identical code is
    called a regression far less often than with the speedup's Welch test, and a 10 % slower
    compiled call far more often; the Welch test's figures on the same runs are the contrast."""
    rng = np.random.default_rng(7)
    counts = {"adjusted": [0, 0], "welch": [0, 0]}
    n = 200
    for _ in range(n):
        for i, factor in enumerate((1.0, 1.10)):
            base = simulated(rng, 0.3, rng.normal(0, 0.07))
            cand = simulated(rng, 0.3, rng.normal(0, 0.07), factor)
            counts["adjusted"][i] += compare_speedup(base, cand, THR, **WHERE).is_regression
            for r in (base, cand):
                r.pop("process_eager_ms")
            counts["welch"][i] += compare_speedup(base, cand, THR, **WHERE).is_regression
    false_adj, power_adj = (x / n for x in counts["adjusted"])
    false_welch, power_welch = (x / n for x in counts["welch"])
    assert false_adj <= 0.05 < false_welch
    assert power_adj >= 0.95 > power_welch


def test_markdown_and_json_carry_the_figure_judged() -> None:
    from engine.analysis.gate import gate
    from engine.analysis.gate_report import to_json, to_markdown

    base = {"run_id": 1, "spec": {"model": "bert_base"}, "status": "done", "variants": [
        {**row([5.0, 4.7, 5.3, 5.05], [5.0, 4.7, 5.3, 5.05]), "variant": "eager"},
        row([5.0, 4.7, 5.3, 5.05], [1.26, 1.25, 1.27, 1.265])]}
    cand = {"run_id": 2, "spec": {"model": "bert_base"}, "status": "done", "variants": [
        {**row([4.2, 4.0, 4.45, 4.25], [4.2, 4.0, 4.45, 4.25]), "variant": "eager"},
        row([4.2, 4.0, 4.45, 4.25], [1.235, 1.23, 1.24, 1.238])]}
    report = gate([(base, cand)], THR)
    assert report.exit_code == 0
    md = to_markdown(report)
    assert "at one host speed" in md and "eager as covariate" in md
    doc = json.loads(to_json(report))
    speed = next(c for c in doc["changes"] if c["figure"] == "speedup")
    assert 0.97 < speed["host_adjusted_ratio"] < 1.03 and speed["test"] == ADJUSTED_TEST
    assert doc["adjusted_test"] == ADJUSTED_TEST
