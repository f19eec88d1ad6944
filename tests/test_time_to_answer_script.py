"""acceptance/time_to_answer_steps.py, the H200 check of issue "time to answer": its steps, its
refusals and its summary (ratio of medians, fidelity, the lever apart from the defaults), without
running a harness or an engine."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "acceptance"))
import bench_vs_naive  # noqa: E402
import time_to_answer_steps as tta  # noqa: E402


def test_steps_parse_and_bad_ones_are_refused():
    assert tta.parse_step("e:bert") == ("engine", "bert")
    assert tta.parse_step("n:mlp") == ("naive", "mlp")
    assert tta.parse_step("l:mlp") == ("lever", "mlp")
    for bad in ("x:mlp", "e:resnet", "e", ":mlp", "e:bert:1"):
        with pytest.raises(argparse.ArgumentTypeError):
            tta.parse_step(bad)


def test_a_lever_step_without_a_lever_is_a_usage_error(tmp_path):
    p = subprocess.run([sys.executable, "acceptance/time_to_answer_steps.py", "--device", "cpu",
                        "--out", str(tmp_path), "e:mlp", "l:mlp"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "l:MODEL steps need at least one --lever argument" in p.stderr
    assert not (tmp_path / "tta.db").exists()


def test_summary_keeps_the_lever_apart_from_the_defaults(tmp_path, capsys):
    def step(who, wall, cold):
        return {"who": who, "model": "mlp", "modes": "eager,default", "wall_s": wall,
                "first_call_s": {"default cold": cold, "default warm": 1.0, "eager cold": 0.1}}

    steps = [step("naive", 20.0, 9.0), step("engine", 18.0, 9.9), step("naive", 22.0, 9.0),
             step("engine", 16.0, 12.0), step("lever", 11.0, 9.0)]
    assert tta.summary(steps, f"sqlite:///{tmp_path / 'none.db'}", ["--min-samples=20"]) == 0
    out = capsys.readouterr().out
    assert "ratio of medians (shipped defaults): 17.0 / 21.0 = 0.81" in out
    assert ("ratio of medians (NOT the shipped defaults: engine run --min-samples=20): "
            "11.0 / 21.0 = 0.52") in out
    # the engine's median cold first call (10.95 s) against the harness's (9.0 s): off by 22 %
    assert "default cold engine  10.950 (n=2)  naive   9.000 (n=2)  +21.7%  OFF" in out
    assert "default cold engine   9.000 (n=1)  naive   9.000 (n=2)   +0.0%  ok" in out


def test_the_naive_harness_is_the_repositorys_own_and_runs(tmp_path):
    """The baseline every time-to-answer figure is set against is acceptance/naive_harness.py
    (not a file outside the checkout), and its output is what bench_vs_naive parses."""
    assert bench_vs_naive.NAIVE == ROOT / "acceptance" / "naive_harness.py"
    assert bench_vs_naive.NAIVE.is_file()
    args = argparse.Namespace(device="cpu", modes="eager", model="mlp")
    wall, first = bench_vs_naive.naive(args)
    assert wall > 0
    assert set(first) == {("eager", "cold")} and first[("eager", "cold")] > 0
