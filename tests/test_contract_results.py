"""Typed results (contract/results.py): one JSON form each, and hostile input left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract.results import ProcessResult, RunResult, VariantResult
from contract.schema import STATS_KEYS

BUNDLE = Path(__file__).resolve().parents[1] / "data" / "h200_bundle.json"


def _process() -> dict:
    return {"phase": "warm_cache", "block": 10, "samples_ms": [1.0] * 20,
            "eager_samples_ms": [2.0] * 20, "pipelined_ms": [0.9, 0.9],
            "eager_pipelined_ms": [1.8, 1.8], "pipeline_k": 50, "pid": 7,
            "host_other_busy_cores": 0.1, "host_probe": {"launch_us": 7.0, "module_call_us": 0.8},
            "host_settle": {"waited_s": 0.5, "reference_us": 0.7, "probes": 3, "slow": False},
            "host_probe_after": {"launch_us": 7.5, "module_call_us": 1.3},
            "device_ms": {"variant": 0.9, "eager": 1.7},
            "core_probe_us": {"3": 0.9, "15": 0.82},
            "timing_cpus": [15], "threads": 1, "first_call_s": 3.2,
            "phases": [{"name": "measure", "start": 1.0, "end": 2.0}],
            "compile_load": {"other_busy_cores": 0.0}, "autotune_draw": "redrawn",
            "autotune_draw_note": None, "started_at": 1.0, "spawned_at": 0.5,
            "ended_at": 3.0}


def test_a_process_round_trips_through_its_json():
    p = ProcessResult.from_json(_process())
    assert p.paired and p.block == 10 and p.host_probe["launch_us"] == 7.0
    assert ProcessResult.from_json(p.to_json()) == p
    assert p.to_json() == _process()
    with pytest.raises(AttributeError):
        p.block = 3  # frozen


@pytest.mark.parametrize("key,value", [
    ("samples_ms", [1.0, -1.0]), ("samples_ms", [1.0, float("nan")]), ("samples_ms", "12"),
    ("samples_ms", [True, 1.0]), ("block", 0), ("block", True), ("pipeline_k", 1.5),
    ("host_probe", {"launch_us": "fast"}), ("timing_cpus", "15"), ("first_call_s", float("inf")),
    ("phases", "x"), ("compile_load", [1]), ("autotune_draw", "<b>"),
    ("autotune_draw", ["redrawn"]), ("autotune_draw_note", 5)])
def test_what_does_not_fit_is_left_out(key, value):
    """A row or a child's file written by anyone: the field reads as missing, nothing raises."""
    p = ProcessResult.from_json({**_process(), key: value})
    default = ProcessResult()
    got = getattr(p, key)
    assert got == getattr(default, key) or (key == "host_probe" and dict(got) == {})
    assert ProcessResult.from_json("not a dict") == ProcessResult()


def test_a_process_from_a_child_takes_the_childs_timeline():
    child = {"processes": [{"phase": "cold", "block": 10, "samples_ms": [1.0] * 10,
                            "eager_samples_ms": [1.5] * 10}],
             "phases": [{"name": "compile", "start": 1.0, "end": 4.0}],
             "process_started_at": 0.9, "process_spawned_at": 0.5, "process_ended_at": 9.0,
             "compile_load": {"other_busy_cores": 1.0}}
    p = ProcessResult.from_child(child, 3.0)
    assert (p.first_call_s, p.started_at, p.spawned_at, p.ended_at) == (3.0, 0.9, 0.5, 9.0)
    assert p.phases[0]["name"] == "compile" and p.compile_load["other_busy_cores"] == 1.0


@pytest.mark.skipif(not BUNDLE.exists(), reason="data/h200_bundle.json not present")
def test_every_shipped_variant_round_trips():
    bundle = json.loads(BUNDLE.read_text())
    n = 0
    for run in bundle["runs"]:
        typed = RunResult.from_json({"run_id": run["source_id"], "spec": run["spec"],
                                     "environment": run["environment"],
                                     "variants": run["variants"]})
        again = RunResult.from_json(typed.to_json())
        assert again == typed
        for raw, v in zip(run["variants"], typed.variants, strict=True):
            n += 1
            assert v.variant == raw["variant"] and v.status == raw["status"]
            assert set(v.to_json()["stats"]) == set(STATS_KEYS)
            if raw.get("stats", {}).get("speedup") is not None:
                assert v.figure("speedup") == raw["stats"]["speedup"]
    assert n >= 69


def test_a_variant_drops_figures_of_the_wrong_kind():
    v = VariantResult.from_json({"variant": "default", "status": "ok", "setup_s": "slow",
                                 "graph_count": 3, "stats": {"speedup": "2x", "n": 10}})
    assert v.figure("setup_s") is None and v.figure("graph_count") == 3
    assert v.figure("speedup") is None and v.figure("n") == 10
    with pytest.raises(ValueError):
        VariantResult.from_json(["not", "a", "dict"])


def test_a_variant_keeps_what_lies_beyond_the_contract():
    raw = {"variant": "default", "status": "ok", "process_errors": [{"index": 2}],
           "scheduling": {"concurrency": 4}, "graph_breaks": [{"reason": "print"}]}
    v = VariantResult.from_json(raw)
    assert dict(v.extra) == {"process_errors": [{"index": 2}], "scheduling": {"concurrency": 4}}
    again = v.to_json()
    assert again["process_errors"] == [{"index": 2}] and again["graph_breaks"] == [
        {"reason": "print"}]
    assert VariantResult.from_json(again) == v


def test_the_runner_hands_on_only_figures_that_fit():
    """engine/orchestrate/fold.with_stats passes every result through the typed form: a child
    that wrote text where a number belongs does not reach storage or a page with it."""
    from engine.orchestrate.fold import with_stats

    child = {"variant": "eager", "status": "ok", "setup_s": "slow", "graph_count": 0,
             "processes": [{"phase": "cold", "block": 10, "samples_ms": [1.0] * 30,
                            "eager_samples_ms": [1.0] * 30}], "samples_ms": [1.0] * 30}
    out = with_stats(child, {"eager": child}, 0.5)
    assert out.get("setup_s") is None
    assert out["graph_count"] == 0 and out["stats"]["median_ms"] == 1.0
