"""Training under float16 autocast with a GradScaler, judged against float64: GradScaler skips
the steps whose float16 gradients overflow, the float64 reference never does. A model whose
gradients overflow at GradScaler's default start (65536) is judged on the updates it made
(the scale GradScaler settles on is every copy's start; a skipped step is skipped in float64
too), and an eager error that is not finite never lets a compiled variant pass."""

import math

import torch
from torch import nn

from engine.analysis import verdict
from engine.measure import accuracy, train_step


def _overflowing(seed: int = 0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8))
    x = torch.randn(16, 64) * 30  # gradients of tens: x 65536 is past float16's 65504

    def loss(out):
        return (out.float() ** 2).mean()
    return model, (x,), loss


RUN = {"step": "train", "autocast": "float16", "backend": "aot_eager", "device": "cpu",
       "dtype": "float32", "accuracy_steps": 3, "lr": 1e-4}


def test_default_scale_overflows_this_model():
    """The premise: at GradScaler's default start this model's first step is skipped."""
    model, inputs, loss = _overflowing()
    rep = train_step.Replica(RUN, model, loss, inputs, "cpu", autocast="float16",
                             compile_model=None, compile_optimizer=None, track_skips=True)
    rep.step()
    assert rep.skipped == [True]


def test_overflowing_model_is_judged_on_updates_it_made():
    model, inputs, loss = _overflowing()
    t = train_step.Training(RUN, "default", model, inputs, loss, "cpu")
    assert t.init_scale is not None and t.init_scale < 65536.0
    for i in range(t.n_steps):
        t.variant_step()
        t.after_call(i + 1)
    acc = t.accuracy()
    assert acc["accuracy_ok"] is True, acc
    grads = acc["accuracy"]["groups"]["gradients"]["worst"]
    assert math.isfinite(grads["eager_error"]) and grads["eager_error"] < 0.01
    assert acc["accuracy"]["grad_scale"] == t.init_scale
    assert acc["accuracy"]["scaler_skipped_steps"] == []
    # float16's own error, small against the update itself (before: 5.0 on the loss)
    assert acc["eager_error"] < 1e-4


def test_float64_leaves_out_the_updates_the_scaler_skipped():
    model, inputs, loss = _overflowing()
    ref = nn.Sequential(*[m for m in model]).double()
    before = [p.detach().clone() for p in ref.parameters()]
    rep = train_step.Replica(RUN, ref, loss, accuracy.to_float64(inputs), "cpu", autocast=None,
                             compile_model=None, compile_optimizer=None)
    rep.skip_steps = frozenset({0})
    rep.step()
    assert all(torch.equal(a, b) for a, b in zip(before, ref.parameters(), strict=True))
    rep.step()
    assert not all(torch.equal(a, b) for a, b in zip(before, ref.parameters(), strict=True))
    assert rep.skipped == [True, False]


def test_an_eager_error_that_is_not_finite_lets_nothing_pass():
    ref = {"grad:w": torch.ones(4, dtype=torch.float64)}
    bad = {"grad:w": torch.full((4,), math.inf)}
    for judge in (accuracy.judge, accuracy.judge_whole):
        g = judge(ref, bad, bad, multiplier=3.0, floor=1e-3)
        assert g["ok"] is False, judge.__name__
    row = {"variant": "default", "reference_dtype": "float64", "accuracy_ok": False,
           "eager_error": None, "compiled_error": None, "accuracy_multiplier": 3.0,
           "accuracy_floor": 1e-3,
           "accuracy": {"groups": {"gradients": {"ok": False, "worst": {"tensor": "grad:w"}}}}}
    text = verdict.accuracy_failure(row)
    assert "could not be judged" in text and "not a finite number" in text
    assert "n/a" not in text and "grad:w" in text
