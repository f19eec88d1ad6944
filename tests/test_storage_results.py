"""Saving variant results and reading them back through load_runs; environment, notes, tags."""

from __future__ import annotations

import math

import numpy as np
import pytest

from storage.bundle import export_bundle
from storage.db import open_database
from storage.queries import (
    GRAPH_BREAK_COLUMNS,
    RECOMPILE_COLUMNS,
    RUN_COLUMNS,
    SAMPLE_COLUMNS,
    SWEEP_COLUMNS,
    VARIANT_COLUMNS,
    WARMUP_COLUMNS,
    list_runs,
    load_runs,
)
from storage.queue import claim_next_run, enqueue_run, finish_run
from storage.results import (
    MAX_STDERR_CHARS,
    RunNotFound,
    delete_runs,
    save_variant_result,
    set_environment,
    set_note,
    set_tags,
)
from tests.test_storage_support import (
    ENVIRONMENT,
    failed_result,
    run_spec,
    variant_result,
)


@pytest.fixture
def run_id(db) -> int:
    run_id = enqueue_run(
        db, run_spec(variants=["eager", "default", "reduce-overhead", "max-autotune"])
    )
    claim_next_run(db, "w1")
    return run_id


def test_roundtrip_of_a_realistic_variant_result(db, run_id):
    compiled = variant_result("reduce-overhead")
    # Saved out of spec order: load_runs lists variants as the spec does.
    save_variant_result(db, run_id, compiled)
    save_variant_result(db, run_id, variant_result("eager"))
    save_variant_result(db, run_id, failed_result("max-autotune"))
    frames = load_runs(db, [run_id])

    assert list(frames) == [
        "runs",
        "variants",
        "graph_breaks",
        "recompiles",
        "sweep_points",
        "warmup",
        "samples",
    ]
    assert list(frames["runs"].columns) == RUN_COLUMNS
    variants = frames["variants"]
    assert list(variants.columns) == VARIANT_COLUMNS
    assert variants["variant"].tolist() == ["eager", "reduce-overhead", "max-autotune"]

    row = variants.set_index("variant").loc["reduce-overhead"]
    for key in (
        "status",
        "timer",
        "setup_s",
        "first_call_cold_s",
        "first_call_warm_s",
        "peak_allocated_bytes",
        "graph_count",
        "graph_break_count",
        "kernels_per_call",
        "eager_kernels_per_call",
        "device_busy_ms_per_call",
        "wall_ms_per_call",
        "max_abs_err",
        "max_rel_err",
        "atol",
        "rtol",
        "correct",
        "compile_phases_s",
        "cudagraph_skips",
    ):
        assert row[key] == compiled[key], key
    for key, value in compiled["stats"].items():
        if value is None:
            assert row[key] is None or math.isnan(row[key]), key
        else:
            assert row[key] == value, key
    assert row["recompile_count"] == 1
    assert row["error"] is None and row["failure_kind"] is None

    failed = variants.set_index("variant").loc["max-autotune"]
    assert (failed["status"], failed["failure_kind"]) == ("failed", "oom")
    assert "OutOfMemoryError" in failed["stderr_tail"]
    assert math.isnan(failed["median_ms"])

    breaks = frames["graph_breaks"]
    assert list(breaks.columns) == GRAPH_BREAK_COLUMNS
    assert breaks.drop(columns=["run_id", "variant"]).to_dict("records") == compiled["graph_breaks"]
    recompiles = frames["recompiles"]
    assert list(recompiles.columns) == RECOMPILE_COLUMNS
    assert (
        recompiles.drop(columns=["run_id", "variant"]).to_dict("records") == compiled["recompiles"]
    )
    sweep = frames["sweep_points"]
    assert list(sweep.columns) == SWEEP_COLUMNS
    assert sweep.drop(columns=["run_id", "variant"]).to_dict("records") == compiled["sweep"]
    assert sweep["value"].dtype == "int64"

    warmup = frames["warmup"]
    assert list(warmup.columns) == WARMUP_COLUMNS
    ro = warmup[warmup["variant"] == "reduce-overhead"]
    assert ro["call_index"].tolist() == list(range(1, 11))
    assert ro["ms"].tolist() == compiled["warmup_ms"]

    samples = frames["samples"]
    assert list(samples.columns) == SAMPLE_COLUMNS
    ro = samples[samples["variant"] == "reduce-overhead"]
    for kind, key in (
        ("per_call", "samples_ms"),
        ("pipelined", "pipelined_ms"),
        ("eager_per_call", "eager_samples_ms"),
        ("eager_pipelined", "eager_pipelined_ms"),
    ):
        part = ro[ro["kind"] == kind]
        assert part["ms"].tolist() == compiled[key], kind
        assert part["round_index"].tolist() == list(range(1, len(compiled[key]) + 1))

    # The whole dict comes back out of an export, key for key.
    exported = export_bundle_after_finish(db, run_id)
    assert exported["reduce-overhead"] == {**compiled, "recompile_count": 1}


def export_bundle_after_finish(db, run_id: int) -> dict[str, dict]:
    finish_run(db, run_id, "done")
    bundle = export_bundle(db, [run_id])
    return {v["variant"]: v for v in bundle["runs"][0]["variants"]}


def test_results_are_committed_per_variant(db, run_id, tmp_path):
    save_variant_result(db, run_id, variant_result("eager"))
    # Another process (a fresh Database) sees it at once, while the run is still running.
    other = open_database(db.engine.url.render_as_string(hide_password=False))
    try:
        assert load_runs(other, [run_id])["variants"]["variant"].tolist() == ["eager"]
    finally:
        other.dispose()


def test_saving_a_variant_again_replaces_it(db, run_id):
    save_variant_result(db, run_id, variant_result("default"))
    save_variant_result(
        db, run_id, variant_result("default", stats={"speedup": 2.5}, graph_breaks=[])
    )
    frames = load_runs(db, [run_id])
    assert frames["variants"]["speedup"].tolist() == [2.5]
    assert frames["graph_breaks"].empty


def test_unknown_keys_are_kept_and_numpy_values_accepted(db, run_id):
    result = variant_result(
        "default",
        samples_ms=np.array([0.1, 0.2]),
        graph_count=np.int64(1),
        stats={
            "n": np.int64(2),
            "noisy": np.bool_(True),
            "median_ms": float("nan"),
            "new_stat": 1.5,
        },
        environment={"gpu": "NVIDIA H200"},
    )
    save_variant_result(db, run_id, result)
    row = load_runs(db, [run_id])["variants"].iloc[0]
    assert (row["n"], row["noisy"], row["graph_count"]) == (2, True, 1)
    assert math.isnan(row["median_ms"])
    finish_run(db, run_id, "done")
    exported = export_bundle(db, [run_id])["runs"][0]["variants"][0]
    assert exported["extra"] == {"environment": {"gpu": "NVIDIA H200"}, "stats": {"new_stat": 1.5}}
    assert exported["samples_ms"] == [0.1, 0.2]


def test_bad_results_are_refused_with_a_reason(db, run_id):
    with pytest.raises(ValueError, match="status"):
        save_variant_result(db, run_id, {"variant": "default", "status": "great"})
    with pytest.raises(ValueError, match="graph_count"):
        save_variant_result(db, run_id, variant_result(graph_count="two"))
    with pytest.raises(RunNotFound):
        save_variant_result(db, 987_654, variant_result())


def test_huge_stderr_keeps_its_tail(db, run_id):
    tail = "x" * (MAX_STDERR_CHARS * 3) + "FINAL LINE\x00"
    save_variant_result(db, run_id, failed_result(kind="crash") | {"stderr_tail": tail})
    stored = load_runs(db, [run_id])["variants"]["stderr_tail"].iloc[0]
    assert len(stored) == MAX_STDERR_CHARS
    assert stored.endswith("FINAL LINE\ufffd")


def test_environment_note_and_tags(db, run_id):
    set_environment(db, run_id, ENVIRONMENT)
    set_note(db, run_id, "after the driver update")
    assert set_tags(db, run_id, ["h200", " nightly", "h200", ""]) == ["h200", "nightly"]
    runs = list_runs(db)
    row = runs.iloc[0]
    assert (row["gpu"], row["torch_version"], row["note"]) == (
        "NVIDIA H200",
        "2.11.0+cu128",
        "after the driver update",
    )
    assert row["environment"] == ENVIRONMENT
    assert sorted(row["tags"]) == ["h200", "nightly"]
    set_tags(db, run_id, [])
    assert list_runs(db)["tags"].iloc[0] == []
    with pytest.raises(ValueError, match="longer"):
        set_tags(db, run_id, ["x" * 101])
    with pytest.raises(RunNotFound):
        set_note(db, 5555, "nobody")


def test_cpu_runs_show_cpu_as_their_gpu(db):
    run_id = enqueue_run(db, run_spec(device="cpu"))
    set_environment(db, run_id, {"torch": "2.13.0+cpu", "gpu": None, "gpu_count": 0})
    assert list_runs(db)["gpu"].tolist() == ["cpu"]


def test_delete_runs_removes_children_and_refuses_running_runs(db, run_id):
    save_variant_result(db, run_id, variant_result())
    with pytest.raises(ValueError, match="running"):
        delete_runs(db, [run_id])
    finish_run(db, run_id, "done")
    assert delete_runs(db, [run_id]) == 1
    frames = load_runs(db, [run_id])
    assert all(frame.empty for frame in frames.values())


def test_a_recompile_keeps_the_phase_it_happened_in(db, run_id, caplog):
    """The child records the phase of a recompile that no warm-up call or sweep value places
    (engine/measure/child.py: the timed rounds, token generation, profiling); storage dropped
    it with a warning on every such run. Now it is kept, and nothing is ignored."""
    compiled = variant_result("reduce-overhead")
    compiled["recompiles"] = [
        {"reason": "len(kwargs) == 4", "call_index": None, "dim_value": None,
         "phase": "generate"},
        {"reason": "size mismatch", "call_index": 3, "dim_value": None, "phase": None},
    ]
    with caplog.at_level("WARNING"):
        save_variant_result(db, run_id, compiled)
    assert "ignoring keys" not in caplog.text
    rc = load_runs(db, [run_id])["recompiles"]
    assert rc["phase"].tolist() == ["generate", None]
    assert rc["reason"].tolist() == ["len(kwargs) == 4", "size mismatch"]
