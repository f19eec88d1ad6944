"""engine/measure/run_share.py: facts every measuring process of a run would compute alike (the
graph-break trace, eager's profile) are computed by the first process and read by the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.measure import run_share

ROOT = Path(__file__).resolve().parents[1]
BREAKS = {"graph_count": 2, "graph_break_count": 1,
          "graph_breaks": [{"reason": "print", "file": "m.py", "line": 3, "count": 1}]}


def test_the_first_computes_and_leaves_it_the_next_reads_it(tmp_path, monkeypatch):
    monkeypatch.setenv(run_share.ENV, str(tmp_path))
    calls = []
    first = run_share.once("explain", lambda: calls.append(1) or BREAKS, run_share.explained_ok)
    again = run_share.once("explain", lambda: calls.append(1) or {}, run_share.explained_ok)
    assert first == again == BREAKS and calls == [1]
    assert json.loads((tmp_path / "explain.json").read_text()) == BREAKS
    assert [p.name for p in tmp_path.iterdir()] == ["explain.json"]  # no temporary left


@pytest.mark.parametrize("content", ["{not json", "[]", json.dumps({"graph_count": "2"}),
                                     json.dumps({**BREAKS, "graph_breaks": ["x"]})])
def test_a_damaged_file_is_computed_again(tmp_path, monkeypatch, content):
    monkeypatch.setenv(run_share.ENV, str(tmp_path))
    (tmp_path / "explain.json").write_text(content)
    assert run_share.once("explain", lambda: BREAKS, run_share.explained_ok) == BREAKS


def test_without_a_run_folder_each_process_computes_its_own(monkeypatch):
    monkeypatch.delenv(run_share.ENV, raising=False)
    calls = []
    for _ in range(2):
        run_share.once("eager_profile", lambda: calls.append(1) or {
            "kernels_per_call": 3.0, "device_busy_ms_per_call": None}, run_share.eager_profile_ok)
    assert calls == [1, 1]


def test_only_known_facts_are_shared():
    with pytest.raises(ValueError):
        run_share.once("../../etc/passwd", dict, lambda d: True)
    assert not run_share.eager_profile_ok({"kernels_per_call": "3"})
    assert run_share.eager_profile_ok({"kernels_per_call": None, "device_busy_ms_per_call": 0.5})


CHILD = """
import json, sys
from engine.measure.child import Progress, measure
from engine.spec import normalise
variant, phase, ahead = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
run = normalise({"model": "graph_breaks", "variants": ["eager", "default", "default@dyn=1"],
                 "dims": {"batch": 2, "hidden": 16}, "device": "cpu", "warmup_calls": 3,
                 "min_samples": 3, "min_time_s": 0.0, "max_time_s": 0.2, "pipeline_k": 2,
                 "backend": "eager"})
res = measure({"run": run, "variant": variant, "phase": phase, "explain_ahead": ahead},
              Progress(None))
print(json.dumps({k: res.get(k) for k in ("status", "graph_breaks", "graph_break_count",
                                          "phases", "first_call_warm_s")}))
"""


def _child(variant: str, run_dir: Path, phase: str = "cold", ahead: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), run_share.ENV: str(run_dir),
           "TORCHINDUCTOR_CACHE_DIR": str(run_dir / f"cache-{variant}")}
    p = subprocess.run([sys.executable, "-c", CHILD, variant, phase, "1" if ahead else "0"],
                       cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["status"] == "ok", out
    return out


@pytest.mark.slow  # two measuring children (backend "eager": no compile), ~30 s here
def test_the_second_compiled_variant_reads_the_first_ones_break_trace(tmp_path):
    first = _child("default", tmp_path)
    assert first["graph_break_count"] == 3 and len(first["graph_breaks"]) == 3
    shared = json.loads((tmp_path / "explain.json").read_text())
    assert shared["graph_breaks"] == first["graph_breaks"]
    # mark the left trace: the next process must report it as read, not trace again
    shared["graph_breaks"][0]["reason"] = "MARK " + shared["graph_breaks"][0]["reason"]
    (tmp_path / "explain.json").write_text(json.dumps(shared))
    second = _child("default@dyn=1", tmp_path)
    assert second["graph_breaks"] == shared["graph_breaks"]
    assert second["graph_break_count"] == 3  # its own dynamo counters agree


@pytest.mark.slow  # three measuring children (backend "eager": no compile), ~45 s here
def test_a_further_process_traces_the_breaks_before_its_first_call(tmp_path):
    """The further process the runner picks (engine/schedule.explains_ahead) traces the run's
    graph breaks before its own first call, a compile nobody reports; the cold process's slot
    tail then reads them instead of tracing in its timing slot."""
    further = _child("default", tmp_path, phase="warm_cache", ahead=True)
    names = [p["name"] for p in further["phases"]]
    assert "explain" in names and names.index("explain") < names.index("compile")
    assert further["first_call_warm_s"] > 0  # it compiled after the trace's dynamo reset
    shared = json.loads((tmp_path / "explain.json").read_text())
    assert shared["graph_break_count"] == 3 and len(shared["graph_breaks"]) == 3
    shared["graph_breaks"][0]["reason"] = "MARK " + shared["graph_breaks"][0]["reason"]
    (tmp_path / "explain.json").write_text(json.dumps(shared))
    cold = _child("default", tmp_path)
    assert cold["graph_breaks"] == shared["graph_breaks"] and cold["graph_break_count"] == 3
    quiet = _child("default", tmp_path / "other", phase="warm_cache")  # not picked: no trace
    assert "explain" not in [p["name"] for p in quiet["phases"]]


def test_one_profiler_pass_gives_the_kernel_figures():
    """A compiled variant's lost-time pass also gives its kernels and device-busy time per call
    (engine/measure/slot_tail.py), counted as ``signals.profile_calls`` counts them."""
    from engine.measure.losttime import LostTime

    lost = object.__new__(LostTime)
    lost.error, lost.cuda, lost.frames = None, True, {}
    lost.timeline = {"events": [], "kernels": [[0.0, 10.0], [5.0, 15.0], [20.0, 30.0]],
                     "calls": 2}
    assert lost.kernel_figures() == {"kernels_per_call": 1.5,
                                     "device_busy_ms_per_call": 25.0 / 1e3 / 2}
    lost.cuda = False
    assert lost.kernel_figures() == {"kernels_per_call": None, "device_busy_ms_per_call": None}
    lost.error = "RuntimeError: profiler"
    assert lost.kernel_figures() is None  # the caller profiles again


def test_a_trace_ahead_that_raises_is_left_to_the_tail(tmp_path, monkeypatch):
    """A further process whose break trace raises goes on to its own compile (the variant keeps
    the process); nothing is left shared, so the cold process's tail traces and reports it."""
    import torch._dynamo

    from engine.measure import signals, slot_tail
    from engine.measure.child import PhaseClock

    def boom(model, inputs):
        raise RuntimeError("explain failed")

    resets = []
    monkeypatch.setenv(run_share.ENV, str(tmp_path))
    monkeypatch.setattr(signals, "explain_breaks", boom)
    monkeypatch.setattr(torch._dynamo, "reset", lambda: resets.append(1))
    clock = PhaseClock()
    slot_tail.explain_ahead(object(), (), clock)
    assert [p["name"] for p in clock.phases] == ["explain"] and resets == [1]
    assert not (tmp_path / "explain.json").exists()
