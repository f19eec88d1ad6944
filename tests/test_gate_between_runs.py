"""The gate counts how far identical runs of a config move apart beyond their intervals
(engine/analysis/between_runs.py) where its baseline tag holds three or more of them."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

from engine.analysis import between_runs
from engine.analysis.gate import Thresholds, compare_speedup, log_estimate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "acceptance"))
import gate_between_runs  # noqa: E402

row = gate_between_runs.row


def test_tau_is_zero_where_runs_agree_and_seen_where_they_move():
    rng = random.Random(1)
    agree = [row(math.log(3.4), rng) for _ in range(5)]
    got = between_runs.estimate(agree, log_estimate)
    assert got is not None and got.runs == 5 and got.percent < 2  # noise, not runs
    moved = [row(math.log(3.4) + d, rng) for d in (-0.08, 0.05, 0.0, 0.09, -0.06)]
    got = between_runs.estimate(moved, log_estimate)
    assert got is not None and 4 < got.percent < 12


def test_too_few_or_hostile_rows_give_nothing():
    rng = random.Random(2)
    assert between_runs.estimate([row(1.0, rng), row(1.1, rng)], log_estimate) is None
    junk = [None, "x", {}, {"speedup": "3"}, {"process_speedups": [float("nan"), -1, True]},
            {"speedup": 10 ** 400, "speedup_ci_low": 1, "speedup_ci_high": 2}, [1, 2]]
    assert between_runs.estimate(junk, log_estimate) is None
    assert between_runs.estimate(junk + [row(1.0, rng)] * 2, log_estimate) is None


def test_a_move_inside_the_run_to_run_spread_is_not_a_regression_but_a_large_one_is():
    rng = random.Random(3)
    history = [row(math.log(3.4) + d, rng) for d in (-0.08, 0.05, 0.0, 0.09, -0.06)]
    base, cand = history[2], row(math.log(3.4) - 0.10, rng)  # 9.5 % lower, as runs move
    alone = compare_speedup(base, cand, Thresholds(), config="bert", variant="ro")
    assert alone.verdict == "regression"  # the runs' own intervals alone: "real"
    judged = compare_speedup(base, cand, Thresholds(), history=history, config="bert",
                             variant="ro")
    assert judged.verdict == "not significant"
    assert "identical runs of this config moved" in judged.note and "5 baseline runs" in judged.test
    big = compare_speedup(base, row(math.log(3.4) - 0.45, rng), Thresholds(), history=history,
                          config="bert", variant="ro")
    assert big.verdict == "regression"


def test_where_the_baseline_runs_agree_the_test_is_unchanged():
    rng = random.Random(4)
    same = row(math.log(3.4), rng, sd=0.03)
    history = [dict(same) for _ in range(5)]  # Q = 0: no spread beyond the intervals
    assert between_runs.estimate(history, log_estimate).tau2 == 0
    cand = row(math.log(3.4) - 0.10, rng)
    with_h = compare_speedup(same, cand, Thresholds(), history=history, config="c", variant="v")
    without = compare_speedup(same, cand, Thresholds(), config="c", variant="v")
    assert with_h.p_value == pytest.approx(without.p_value)
    assert (with_h.note, with_h.test, with_h.verdict) == (without.note, without.test,
                                                          without.verdict)


def test_simulated_gate_with_and_without_the_run_to_run_spread():
    """Runs 6 % (sd) apart on the log scale, processes 2 % apart inside a run: the runs' own
    intervals call most identical pairs regressions; with five baseline runs' spread counted,
    about alpha; where runs do not move, the spread costs nothing."""
    f_alone, _ = gate_between_runs.simulate(0.06, use_history=False)
    f_hist, _ = gate_between_runs.simulate(0.06, use_history=True)
    assert f_alone > 0.2 and f_hist <= 0.08
    f0, c0 = gate_between_runs.simulate(0.0, use_history=True)
    f0_alone, c0_alone = gate_between_runs.simulate(0.0, use_history=False)
    assert f0 <= 0.06 and c0 >= c0_alone - 0.05


def test_only_runs_of_the_same_code_and_host_are_replicates():
    """A run at another commit (or torch, GPU, host ...) moved for its own reason: the spread
    is read from the baseline's replicates alone."""
    from engine.analysis.gate import compare_runs

    rng = random.Random(5)

    def run(run_id: int, level: float, commit: str = "aaaa") -> dict:
        r = {**row(level, rng), "variant": "ro", "status": "ok"}
        return {"run_id": run_id, "spec": {"model": "bert", "variants": ["eager", "ro"]},
                "environment": {"commit": commit, "torch": "2.11", "host": "h1"},
                "variants": [r]}

    base = run(5, math.log(3.4))
    other = [run(1, math.log(3.4) + 0.3, "old1"), run(2, math.log(3.4) - 0.3, "old2"),
             run(3, math.log(3.4) + 0.25, "old3")]
    cand = run(6, math.log(3.4) - 0.10)
    judged = [c for c in compare_runs(base, cand, Thresholds(), history=other + [base])
              if c.figure == "speedup"][0]
    assert "run-to-run" not in (judged.test or "") and judged.verdict == "regression"
    replicates = [run(i, math.log(3.4) + d) for i, d in ((1, 0.3), (2, -0.3), (3, 0.25))]
    widened = [c for c in compare_runs(base, cand, Thresholds(), history=replicates + [base])
               if c.figure == "speedup"][0]
    assert "4 baseline runs" in widened.test and widened.verdict == "not significant"
    hostile = [{**r, "environment": junk} for r, junk in zip(replicates, (None, "x", [1]),
                                                              strict=True)]
    plain = [c for c in compare_runs(base, cand, Thresholds(), history=hostile + [base])
             if c.figure == "speedup"][0]
    assert "run-to-run" not in (plain.test or "")


def _r(**kw) -> dict:
    return {"speedup": 2.0, "speedup_ci_low": 1.9, "speedup_ci_high": 2.1,
            "process_speedups": [2.0, 2.02], **kw}


@pytest.mark.parametrize("bad", [
    {"speedup_log_se": 1e-300, "speedup_df": 5}, {"speedup_log_se": 1e200, "speedup_df": 5},
    {"process_speedups": None, "n_processes": float("nan")},
    {"process_speedups": None, "n_processes": float("inf")},
    {"process_speedups": None, "n_processes": 10 ** 11},
    {"within_process_spread": 1e200}, {"speedup": 1e308, "process_speedups": [1e308, 5e-324]},
    {"status": "failed"}, {"correct": False}])
def test_a_hostile_history_row_is_skipped_not_raised(bad):
    """Rows from a database (the attacker's pass of 2026-12-07): each is skipped, and the
    gate judges with what is left or as before."""
    rng = random.Random(8)
    history = [_r(**bad)] * 3 + [row(math.log(2.0), rng)]
    got = between_runs.estimate(history, log_estimate)  # skipped, or read as what it says
    assert got is None or got.tau2 == 0
    change = compare_speedup(row(math.log(2.0), rng), row(math.log(1.6), rng), Thresholds(),
                             history=history, config="c", variant="v")
    assert change.verdict == "regression" and "run-to-run" not in change.test


def test_a_history_too_far_apart_is_not_used():
    """One run at 3x the others (a broken history, not the host): it would hide a real 20 %
    regression, so it is not counted and the note says nothing of a spread."""
    rng = random.Random(9)
    history = [row(math.log(2.0), rng) for _ in range(3)] + [row(math.log(6.0), rng)]
    assert between_runs.estimate(history, log_estimate) is None
    change = compare_speedup(history[0], row(math.log(1.6), rng), Thresholds(), history=history,
                             config="c", variant="v")
    assert change.verdict == "regression"


def test_one_dominant_weight_does_not_cancel_the_scale():
    """se 1e-9 beside 0.1s: the weights' sum less their squares' share, computed without
    cancelling (the exact value from fractions)."""
    from fractions import Fraction

    class Est:
        def __init__(self, mean, se):
            self.mean, self.se = mean, se

    pts = [(0.0, 1e-9), (0.3, 0.1), (-0.2, 0.1), (0.25, 0.12)]
    got = between_runs.estimate([{"m": m, "s": s} for m, s in pts],
                                lambda r: Est(r["m"], r["s"]))
    w = [Fraction(1) / (Fraction(s) ** 2) for _, s in pts]
    y = [Fraction(m) for m, _ in pts]
    sw = sum(w)
    mean = sum(a * b for a, b in zip(y, w, strict=True)) / sw
    q = sum(b * (a - mean) ** 2 for a, b in zip(y, w, strict=True))
    exact = max(0, (q - 3) / (sw - sum(b * b for b in w) / sw))
    assert got is not None and got.tau2 == pytest.approx(float(exact), rel=1e-6)


def test_an_interval_that_overflows_is_not_tested_rather_than_nan():
    """A stored interval whose hi/lo overflows gave p = NaN and "not significant" (the
    attacker's pass): now no p, "untested" or "unchanged", and no NaN in the JSON."""
    base = {"speedup": 2.0, "speedup_ci_low": 5e-324, "speedup_ci_high": 1e308, "n_processes": 3}
    cand = {"speedup": 1.0, "speedup_ci_low": 0.9, "speedup_ci_high": 1.1, "n_processes": 3}
    change = compare_speedup(base, cand, Thresholds(), config="c", variant="v")
    assert change.p_value is None and change.verdict == "untested"
