"""Rows of one training run judged on different tensors say so (contract/accuracy.py,
engine/analysis/show.judged_lines): on an H100, ResNet-50's eager row printed 1.2e+00 (its
largest error, grad:conv1.weight) beside default's "9.1e-03 (7.9e-03)" (another tensor)."""

from __future__ import annotations

import math

from contract.accuracy import judged_tensor, worst_group
from engine.analysis.show import judged_lines


def _group(tensor, eager, compiled=None, allowed=None):
    return {"ok": True, "worst": {"tensor": tensor, "eager_error": eager,
                                  "compiled_error": compiled, "allowed": allowed},
            "multiplier": 3.0, "floor": 1e-3}


EAGER = {"variant": "eager", "status": "ok", "eager_error": 1.16, "accuracy": {"groups": {
    "loss": _group("loss@3", 0.039), "gradients": _group("grad:conv1.weight", 1.16)}}}
DEFAULT = {"variant": "default", "status": "ok", "eager_error": 0.0079, "accuracy": {"groups": {
    "loss": _group("loss@3", 0.039, 0.030, 0.12),
    "gradients": _group("grad:layer2.3.bn2.weight", 0.0079, 0.0091, 0.0238)}}}


def test_each_row_names_its_judged_tensor_when_they_differ():
    assert judged_tensor(EAGER) == "grad:conv1.weight"
    assert judged_tensor(DEFAULT) == "grad:layer2.3.bn2.weight"
    (line,) = judged_lines([EAGER, DEFAULT])
    assert "eager grad:conv1.weight (its largest error)" in line
    assert "default grad:layer2.3.bn2.weight (nearest its allowance)" in line
    stored = {**DEFAULT, "accuracy_tensor": "grad:fc.weight"}  # what a new run stores wins
    assert "default grad:fc.weight" in judged_lines([EAGER, stored])[0]


def test_one_tensor_or_none_says_nothing():
    one = {"variant": "eager", "status": "ok", "eager_error": 0.01,
           "accuracy": {"groups": {"output": _group("output", 0.01)}}}
    other = {**one, "variant": "default",
             "accuracy": {"groups": {"output": _group("output", 0.01, 0.01, 0.03)}}}
    assert judged_lines([one, other]) == []
    assert judged_lines([EAGER]) == []


def test_a_compiled_error_that_is_not_a_number_decides():
    groups = {"loss": _group("loss@1", 0.1, 0.1, 0.3),
              "gradients": _group("grad:w", 0.1, math.nan, 0.3)}
    assert worst_group(groups)["worst"]["tensor"] == "grad:w"


def test_a_hostile_tensor_name_stays_on_its_line():
    evil = {**EAGER, "accuracy_tensor": "w\nVerdict:\n  Latency: Ship default" + "x" * 500}
    (line,) = judged_lines([evil, DEFAULT])
    assert "\n" not in line and "w Verdict: Latency: Ship default" in line and len(line) < 400


def test_hostile_details_give_none():
    for detail in (None, "x", {"groups": "x"}, {"groups": {}}, {"groups": {"a": "x"}},
                   {"groups": {"a": {"worst": "x"}}},
                   {"groups": {"a": {"worst": {"tensor": ["x"], "eager_error": 1.0}}}},
                   {"groups": {"a": _group("t", "1", "2", "3"), "b": _group("u", 1.0)}}):
        assert judged_tensor({"accuracy": detail}) is None, detail


def test_the_measured_result_stores_the_tensor_it_is_judged_on():
    from engine.measure.accuracy import figures

    out = figures(DEFAULT["accuracy"]["groups"], deterministic_diff=0.0)
    assert out["accuracy_tensor"] == "grad:layer2.3.bn2.weight"
    assert out["eager_error"] == 0.0079 and out["compiled_error"] == 0.0091
    assert figures(EAGER["accuracy"]["groups"], deterministic_diff=0.0)["accuracy_tensor"] == (
        "grad:conv1.weight")
