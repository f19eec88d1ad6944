"""A cancelled run's held results (engine/orchestrate/execute.py): saved with the run's end,
each variant's last one, and a result storage cannot build costs only itself."""

from __future__ import annotations

from engine.orchestrate.execute import _Execution
from storage.queries import load_runs
from storage.queue import claim_next_run, enqueue_run
from tests.test_storage_support import failed_result, run_spec, variant_result


def test_a_cancel_saves_each_variants_last_held_result_and_skips_a_bad_one(db):
    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w1")
    said: list[str] = []
    ex = _Execution(db, run_id, "w1", log=said.append, on_progress=None,
                    stop_requested=lambda: False, heartbeat_every_s=60, retry_cap_s=0.1)
    ex.cancel = True
    early = failed_result("default", "cancelled")
    ex.held = [variant_result("eager"), early, {**early, "error": "the last one"},
               {"variant": "max-autotune", "status": "half-done"}]
    assert ex.close([]) == "cancelled"
    rows = load_runs(db, [run_id])
    variants = rows["variants"].set_index("variant")
    assert rows["runs"].iloc[0]["status"] == "cancelled"
    assert sorted(variants.index) == ["default", "eager"]
    assert variants.loc["default", "error"] == "the last one"
    assert any("variant max-autotune's result cannot be stored" in line for line in said)
