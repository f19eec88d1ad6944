"""The pipelined K: the spec's K, capped to a time budget of about 75 ms a sample on every device
(engine/measure/pipeline_k.py), chosen once per process from its first block of per-call times."""

from __future__ import annotations

import pytest

from engine.measure import pipeline_k
from engine.measure.child import Progress, measure, steady_rounds, timing_budget
from engine.spec import normalise


def _run(**over):
    return normalise({"model": "mlp", "variants": ["eager", "default"], "device": "cpu",
                      "dims": {"batch": 2, "hidden": 8}, "min_samples": 20, "min_time_s": 0.0,
                      "max_time_s": 60.0, "pipeline_k": 50, **over})


def test_capped_k_fits_the_budget_and_never_exceeds_the_spec():
    assert pipeline_k.capped_k(50, [16.0, 15.0, 17.0], 75.0) == 5  # ceil(75 / 16)
    assert pipeline_k.capped_k(50, [0.01], 75.0) == 50  # fast calls: K as asked
    assert pipeline_k.capped_k(50, [500.0], 75.0) == 1  # at least one call
    assert pipeline_k.capped_k(50, [16.0], None) == 50  # no budget: K as asked
    assert pipeline_k.capped_k(50, [0.0], 75.0) == 50  # a timer that read 0: no division


class TwoSpeedTimer:
    """A timer under which each function reads its own per-call time; records every K used."""

    def __init__(self, ms: dict) -> None:
        self.ms, self.ks = ms, []

    def per_call_ms(self, fn) -> float:
        return self.ms[fn()]

    def pipelined_ms(self, fn, k: int) -> float:
        self.ks.append(k)
        return self.ms[fn()]


@pytest.mark.parametrize("eager_ms, want", [(16.0, 5), (7.5, 10), (0.12, 50), (1.5, 50)])
def test_rounds_cap_k_from_the_first_block_and_keep_it_for_both_functions(eager_ms, want):
    """The H200's BERT-base eager call (~7.5 ms) gets 10 calls a sample instead of 50; the seed
    MLP's 0.12 ms keeps the spec's 50; K comes from eager's first block (eager is timed first)
    and the 1 ms compiled function uses the same K, in every round."""
    budget = timing_budget(_run())
    assert budget["k_budget_ms"] == pipeline_k.SAMPLE_BUDGET_MS == 75.0
    timer = TwoSpeedTimer({"eager": eager_ms, "variant": 1.0})
    out = steady_rounds(timer, {"eager": lambda: "eager", "variant": lambda: "variant"}, **budget)
    assert timer.ks == [want] * 4  # 2 rounds x 2 functions, one K for all of them
    assert out["eager"]["pipeline_k"] == out["variant"]["pipeline_k"] == [want, want]
    assert out["eager"]["pipelined"] == [eager_ms] * 2


def test_a_cpu_child_records_the_k_it_used():
    """A real eager child on the CPU: the tiny MLP takes microseconds, so a K of 10 000 is above the
    budget is cut to about 75 ms of calls, and the K used is in the result and its process."""
    run = _run(variants=["eager"], min_samples=3, max_time_s=0.2, warmup_calls=3,
               pipeline_k=10_000, warm_cache=False, profile=False)
    res = measure({"run": run, "variant": "eager", "phase": "cold"}, Progress(None))
    assert res["status"] == "ok", res.get("error")
    k = res["processes"][0]["pipeline_k"]
    assert 1 <= k < 10_000
    assert res["pipeline_k"] == [k]
    per_call = sorted(res["samples_ms"])[len(res["samples_ms"]) // 2]
    # the budget bought about 75 ms of calls per sample, not K of them
    assert k * per_call < 20 * pipeline_k.SAMPLE_BUDGET_MS


def test_the_show_text_states_the_k_used():
    assert pipeline_k.describe([50, 50], 50) == "50"
    capped = pipeline_k.describe([4, 6, 5], 50)
    assert capped.startswith("4-6 (capped") and "asked 50" in capped
    assert pipeline_k.describe([], 50) == "50"  # runs stored before K was recorded
