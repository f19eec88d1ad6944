"""The gate's statistics on synthetic runs (engine/analysis/gate.py): a change is a regression only when
it is both statistically real and beyond its threshold."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from engine.analysis.gate import (
    Thresholds,
    compare_compile,
    compare_speedup,
    gate,
    log_estimate,
    welch_lower_p,
)
from engine.analysis.gate_report import to_json, to_markdown
from engine.analysis.headline import headline

THR = Thresholds()


def variant(speedups: list[float], *, name: str = "default", within: float = 0.005,
            compile_s: float = 3.0, peak: int = 100, status: str = "ok",
            correct: bool | None = True) -> dict:
    """A variant row as storage.records.load_run gives it, from per-process speedups."""
    logs = np.log(speedups)
    k = len(speedups)
    est = float(np.exp(logs.mean()))
    half = (float(np.std(logs, ddof=1)) / math.sqrt(k) * 4.3) if k > 1 else 0.01
    return {"variant": name, "status": status, "correct": correct, "speedup": est,
            "speedup_ci_low": est * math.exp(-half), "speedup_ci_high": est * math.exp(half),
            "process_speedups": list(speedups), "n_processes": k,
            "within_process_spread": within, "first_call_cold_s": compile_s,
            "peak_allocated_bytes": peak}


def run(run_id: int, *variants: dict, model: str = "mlp", env: dict | None = None) -> dict:
    eager = {"variant": "eager", "status": "ok", "correct": True, "speedup": 1.0,
             "peak_allocated_bytes": 100}
    return {"run_id": run_id, "status": "done", "created_at": f"2026-12-0{run_id}T00:00:00+00:00",
            "spec": {"model": model, "dims": {"batch": 8}, "dtype": "float32", "device": "cuda",
                     "variants": ["eager", *(v["variant"] for v in variants)]},
            "environment": env or {"gpu": "NVIDIA H200", "torch": "2.11.0"},
            "variants": [eager, *variants]}


def around(center: float, rel_spread: float, k: int = 4, seed: int = 0) -> list[float]:
    """k per-process speedups log-normally scattered around ``center`` (exact mean on logs)."""
    z = np.random.default_rng(seed).standard_normal(k)
    z = (z - z.mean()) / z.std(ddof=1)
    return list(center * np.exp(rel_spread * z))


def test_one_percent_change_with_overlapping_intervals_passes():
    base, cand = variant(around(2.0, 0.02)), variant(around(1.98, 0.02, seed=1))
    assert base["speedup_ci_low"] < cand["speedup_ci_high"]  # the intervals overlap
    change = compare_speedup(base, cand, THR, config="c", variant="default")
    assert change.verdict == "unchanged" and not change.is_regression


def test_thirty_percent_slowdown_fails():
    base, cand = variant(around(2.0, 0.03)), variant(around(1.4, 0.03, seed=1))
    change = compare_speedup(base, cand, THR, config="c", variant="default")
    assert change.verdict == "regression"
    assert change.p_value < 1e-4 and change.ratio == pytest.approx(0.7)


def test_change_beyond_threshold_but_not_significant_passes():
    # 10 % slower, but the processes scatter by 25 %: not distinguishable from noise
    base, cand = variant(around(2.0, 0.25)), variant(around(1.8, 0.25, seed=1))
    change = compare_speedup(base, cand, THR, config="c", variant="default")
    assert change.ratio < THR.speedup
    assert change.verdict == "not significant" and change.p_value > THR.alpha


def test_significant_but_within_threshold_passes():
    base, cand = variant(around(2.0, 0.005, k=8)), variant(around(1.94, 0.005, k=8, seed=1))
    change = compare_speedup(base, cand, THR, config="c", variant="default")
    assert change.p_value < 1e-6  # real, yet only 3 % slower
    assert change.verdict == "unchanged"


def test_improvement_is_reported_not_failed():
    report = gate([(run(1, variant(around(1.0, 0.02))), run(2, variant(around(1.5, 0.02))))], THR)
    assert report.exit_code == 0
    assert [c.figure for c in report.improvements] == ["speedup"]


def test_within_process_noise_floors_the_variance():
    """Two processes that happen to agree exactly cannot make a 6 % change significant when
    each process alone is 10 % noisy."""
    base = variant([2.0, 2.0], within=0.10)
    cand = variant([1.88, 1.88], within=0.10)
    assert log_estimate(base).se == pytest.approx(0.10 / math.sqrt(2))
    assert compare_speedup(base, cand, THR, config="c", variant="v").verdict == "not significant"


def test_welch_p_value_matches_scipy():
    from scipy import stats

    a, b = around(2.0, 0.05, k=5), around(1.8, 0.1, k=3, seed=2)
    ea = log_estimate(variant(a, within=0.0))
    eb = log_estimate(variant(b, within=0.0))
    res = stats.ttest_ind(np.log(b), np.log(a), equal_var=False, alternative="less")
    assert welch_lower_p(ea, eb) == pytest.approx(res.pvalue, rel=1e-9)


def test_one_process_side_falls_back_to_its_interval_and_says_so():
    base = variant([2.0])
    base.update(process_speedups=None, speedup_ci_low=1.98, speedup_ci_high=2.02)
    cand = variant(around(1.5, 0.02))
    change = compare_speedup(base, cand, THR, config="c", variant="v")
    assert change.verdict == "regression" and "interval" in change.note


def test_no_interval_on_either_side_is_not_a_regression():
    base = {"speedup": 2.0}
    change = compare_speedup(base, {"speedup": 1.0}, THR, config="c", variant="v")
    assert change.verdict == "untested" and not change.is_regression


def test_compile_time_needs_baseline_history_to_fail():
    base, cand = {"first_call_cold_s": 3.0}, {"first_call_cold_s": 4.5}
    alone = compare_compile(base, cand, THR, history=[3.0], config="c", variant="v")
    assert alone.verdict == "not significant"
    steady = compare_compile(base, cand, THR, history=[2.9, 3.0, 3.1, 3.0], config="c",
                             variant="v")
    assert steady.verdict == "regression" and steady.p_value < 0.01
    noisy = compare_compile(base, cand, THR, history=[2.0, 4.4, 3.0], config="c", variant="v")
    assert noisy.verdict == "not significant"
    small = compare_compile({"first_call_cold_s": 0.2}, {"first_call_cold_s": 0.4}, THR,
                            history=[0.2, 0.2, 0.21], config="c", variant="v")
    assert small.verdict == "unchanged"  # doubled, but 0.2 s is under the floor


def test_memory_ratio_below_threshold_is_a_regression():
    base = run(1, variant(around(2.0, 0.02), peak=50))  # eager 100 / 50: ratio 2
    cand = run(2, variant(around(2.0, 0.02), peak=80))  # 1.25: 0.625x of baseline
    report = gate([(base, cand)], THR)
    assert [(c.figure, c.verdict) for c in report.regressions] == [("memory ratio", "regression")]


def test_variant_that_stops_passing_is_a_regression_and_pass_rate_drops():
    base = run(1, variant(around(2.0, 0.02)), variant(around(3.0, 0.02), name="max-autotune"))
    cand = run(2, variant(around(2.0, 0.02)),
               {"variant": "max-autotune", "status": "failed", "failure_kind": "compile_error"})
    report = gate([(base, cand)], THR)
    figures = {(c.variant, c.figure) for c in report.regressions}
    assert ("max-autotune", "passes") in figures and ("max-autotune", "pass rate") in figures
    assert report.exit_code == 1
    # an incorrect output counts as not passing
    wrong = run(2, variant(around(2.0, 0.02)), variant(around(3.0, 0.02), name="max-autotune",
                                                         correct=False))
    assert gate([(base, wrong)], THR).exit_code == 1


def test_missing_config_is_a_regression_and_unmatched_is_only_listed():
    base = run(1, variant(around(2.0, 0.02)))
    other = run(3, variant(around(2.0, 0.02)), model="bert")
    report = gate([(base, run(2, variant(around(2.0, 0.02))))], THR, missing=[other],
                  unmatched=[run(4, variant([1.0, 1.0]), model="resnet")])
    assert [c.figure for c in report.regressions] == ["config"]
    assert report.unmatched and "resnet" in report.unmatched[0]


def test_environment_differences_come_first_in_markdown():
    base = run(1, variant(around(2.0, 0.03)))
    cand = run(2, variant(around(1.4, 0.03)), env={"gpu": "NVIDIA H200", "torch": "2.12.0"})
    report = gate([(base, cand)], THR)
    assert report.environment == [{"key": "torch", "baseline": ["2.11.0"],
                                   "candidate": ["2.12.0"]}]
    md = to_markdown(report)
    assert md.index("Environment differences") < md.index("| torch |") < md.index("REGRESSED")
    doc = json.loads(to_json(report))
    assert doc["exit_code"] == 1 and doc["regressions"][0]["figure"] == "speedup"
    assert doc["regressions"][0]["baseline_interval"][0] < 2.0


def test_user_text_is_escaped_in_markdown():
    base = run(1, variant(around(2.0, 0.03)), model="<img src=x>|boom")
    cand = run(2, variant(around(1.4, 0.03)), model="<img src=x>|boom")
    md = to_markdown(gate([(base, cand)], THR))
    assert not re.search(r"(?<!\\)[<>|]boom|(?<!\\)<img", md)
    assert "\\<img src=x\\>\\|boom" in md


def test_headline_figures_per_mode():
    runs = [run(1, variant([2.0, 2.0], compile_s=2.0, peak=50)),
            run(2, variant([8.0, 8.0], compile_s=4.0, peak=200)),
            run(3, {"variant": "default", "status": "failed"})]
    (h,) = headline(runs)
    assert (h.mode, h.cells, h.passing) == ("default", 3, 2)
    assert h.pass_rate == pytest.approx(2 / 3)
    assert h.geomean_speedup == pytest.approx(4.0)
    assert h.mean_compile_s == pytest.approx(3.0)
    assert h.memory_ratio == pytest.approx(1.0)  # geomean of 2 and 0.5


@pytest.mark.parametrize("kwargs", [{"speedup": 1.2}, {"speedup": 0}, {"memory": -1},
                                    {"compile_time": 0.9}, {"alpha": 0.7},
                                    {"pass_rate": float("nan")}, {"compile_floor_s": -1}])
def test_thresholds_out_of_range_are_refused(kwargs):
    with pytest.raises(ValueError):
        Thresholds(**kwargs)
