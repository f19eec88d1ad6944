"""A training step split into forward, backward and the optimizer step (issue 41): the split
at the step's marks, the figure from a real (aot_eager) training step on this CPU with SGD and
with AdamW under float16 autocast and a GradScaler, and the words ``show`` prints."""

from __future__ import annotations

import time

import pytest
import torch

from engine.analysis import train_report
from engine.measure import train_step


def test_phase_times_splits_a_step_at_its_marks():
    """A step whose phases take 30, 60 and 10 ms: each span is its own phase's, in order,
    and the step is their sum."""
    def step(mark):
        for i, secs in enumerate((0.03, 0.06, 0.01)):
            mark(i)
            time.sleep(secs)
        mark(3)

    out = train_step.phase_times(step, cuda=False, steps=3)
    assert out["forward_ms"] == pytest.approx(30, abs=8)
    assert out["backward_ms"] == pytest.approx(60, abs=8)
    assert out["optimizer_ms"] == pytest.approx(10, abs=8)
    assert out["step_ms"] == pytest.approx(100, abs=15)
    assert out["steps"] == 3 and out["timer"] == "perf_counter"


@pytest.mark.parametrize("optimizer,autocast", [("sgd", "none"), ("adamw", "float16")])
def test_a_training_step_on_this_cpu_is_split_for_the_variant_and_its_eager_twin(
        optimizer, autocast):
    """The seed MLP, compiled with aot_eager: on this CPU float16 autocast runs with a
    GradScaler (torch.amp.GradScaler("cpu")); the split covers the variant and eager's twin."""
    from engine.measure.setup import build
    from engine.spec import normalise

    run = normalise({"model": "mlp", "dims": {"batch": 4, "hidden": 16}, "device": "cpu",
                     "step": "train", "optimizer": optimizer, "autocast": autocast,
                     "backend": "aot_eager", "variants": ["eager", "default"]})
    model, inputs, loss = build(run, run["dims"], "cpu")
    training = train_step.Training(run, "default", model, inputs, loss, "cpu")
    assert (training.main.scaler is not None) == (autocast == "float16")
    assert isinstance(training.main.opt, {"sgd": torch.optim.SGD,
                                          "adamw": torch.optim.AdamW}[optimizer])
    before = [p.detach().clone() for p in training.main.model.parameters()]
    fig = training.phase_figures(cuda=False)
    assert "error" not in fig, fig
    for side in ("variant", "eager"):
        f = fig[side]
        assert all(f[f"{p}_ms"] > 0 for p in train_step.PHASES), f
        assert f["step_ms"] >= max(f[f"{p}_ms"] for p in train_step.PHASES)
        assert f["steps"] == train_step.PHASE_STEPS
    # the split ran real steps: the optimizer moved the parameters
    after = list(training.main.model.parameters())
    assert any(not b.equal(a.detach()) for b, a in zip(before, after, strict=True))


def _slow(fn, secs):
    def wrapped(*a, **k):
        time.sleep(secs)
        return fn(*a, **k)
    return wrapped


def test_each_phase_of_a_real_step_holds_its_own_work():
    """Marks in the right places: a forward made 300 ms slower shows in forward only, an
    optimizer step made 300 ms slower in optimizer only (under a GradScaler too). 300 ms: far
    above what a loaded 2-core host adds to a tiny step."""
    from engine.measure.setup import build
    from engine.spec import normalise

    run = normalise({"model": "mlp", "dims": {"batch": 4, "hidden": 16}, "device": "cpu",
                     "step": "train", "autocast": "float16", "backend": "eager",
                     "variants": ["eager"]})
    model, inputs, loss = build(run, run["dims"], "cpu")
    rep = train_step.Training(run, "eager", model, inputs, loss, "cpu").main
    rep.forward = _slow(rep.forward, 0.3)
    slow_fwd = train_step.phase_times(rep.step, cuda=False, steps=3)
    assert slow_fwd["forward_ms"] >= 300 > max(slow_fwd["backward_ms"], slow_fwd["optimizer_ms"])
    rep.forward = rep.module
    rep.opt.step = _slow(rep.opt.step, 0.3)
    slow_opt = train_step.phase_times(rep.step, cuda=False, steps=3)
    assert slow_opt["optimizer_ms"] >= 300 > max(slow_opt["forward_ms"], slow_opt["backward_ms"])


def test_a_failing_split_is_the_figures_error_not_the_runs():
    class Broken:
        twin = None

        class main:  # noqa: N801 - a stand-in for a Replica
            @staticmethod
            def step(mark=None):
                raise RuntimeError("boom")

    assert train_step.Training.phase_figures(Broken(), cuda=False) == {
        "error": "RuntimeError: boom"}


def test_show_prints_the_split_beside_eagers():
    rows = [{"variant": "eager", "train_phases_ms": {"variant": {
                "forward_ms": 2.0, "backward_ms": 3.5, "optimizer_ms": 1.25, "step_ms": 6.75,
                "steps": 10}}},
            {"variant": "default", "train_phases_ms": {
                "variant": {"forward_ms": 1.0, "backward_ms": 2.0, "optimizer_ms": 1.2,
                            "step_ms": 4.2, "steps": 10},
                "eager": {"forward_ms": 2.1, "backward_ms": 3.4, "optimizer_ms": 1.3,
                          "step_ms": 6.8, "steps": 10}}},
            {"variant": "default+opt", "train_phases_ms": {"error": "RuntimeError: x"}},
            {"variant": "reduce-overhead"}]
    text = "\n".join(train_report.lines(rows))
    assert "training step split (median of 10 steps" in text  # a figure without 'kept'
    rows[0]["train_phases_ms"]["variant"]["kept"] = 6
    assert "(mean of the middle 6 of 10 steps" in "\n".join(train_report.lines(rows))
    assert "eager: forward 2 ms, backward 3.5 ms, optimizer 1.25 ms (step 6.75 ms)" in text
    assert ("default: forward 1 ms, backward 2 ms, optimizer 1.2 ms (step 4.2 ms); eager in "
            "the same process: forward 2.1 ms") in text
    assert "default+opt]: not measured: RuntimeError: x" in text
    assert train_report.lines([{"variant": "eager"}]) == []


def test_the_documented_factory_trains_and_passes_the_float64_check(tmp_path):
    """docs/TRAINING.md's example, as written: three steps compiled (aot_eager) on this CPU
    under float16 autocast with a GradScaler, judged against float64."""
    import re
    from pathlib import Path

    from engine.measure.setup import build
    from engine.spec import normalise

    doc = (Path(__file__).resolve().parent.parent / "docs" / "TRAINING.md").read_text()
    code = re.search(r"```python\n(# my_classifier.py\n.*?)```", doc, re.S).group(1)
    path = tmp_path / "my_classifier.py"
    path.write_text(code)
    run = normalise({"model": f"{path}:factory", "dims": {"batch": 8}, "device": "cpu",
                     "step": "train", "autocast": "float16", "backend": "aot_eager",
                     "variants": ["eager", "default"]}, allow_user_models=True)
    model, inputs, loss = build(run, run["dims"], "cpu")
    assert loss is not None
    training = train_step.Training(run, "default", model, inputs, loss, "cpu")
    for i in range(training.n_steps):
        training.variant_step()
        training.after_call(i + 1)
    acc = training.accuracy()
    assert acc["accuracy_ok"] is True, acc
    assert acc["reference_dtype"] == "float64"


def test_the_phases_add_up_to_the_step_and_a_stalled_step_is_left_out():
    """Ten steps of 10 + 20 + 5 ms, one of which stalls 500 ms in its backward: the split is
    the mean of the middle six by step time, so it adds up and the stall does not count."""
    calls = iter(range(10))

    def step(mark):
        n = next(calls)
        for i, secs in enumerate((0.01, 0.5 if n == 3 else 0.02, 0.005)):
            mark(i)
            time.sleep(secs)
        mark(3)

    out = train_step.phase_times(step, cuda=False, steps=10)
    assert out["kept"] == 6
    assert out["step_ms"] == pytest.approx(out["forward_ms"] + out["backward_ms"]
                                           + out["optimizer_ms"])
    assert out["backward_ms"] == pytest.approx(20, abs=10)  # not (9 x 20 + 500) / 10
