"""Earlier runs' measuring processes for the live ETA's priors (storage/history.py)."""

from __future__ import annotations

from storage.history import recent_processes
from storage.queue import claim_run, enqueue_run, finish_run
from storage.results import save_variant_result
from tests.test_storage_support import run_spec, variant_result


def _proc(spawn: float) -> dict:
    return {"spawned_at": spawn, "ended_at": spawn + 9, "phases": [
        {"name": "waiting", "start": spawn + 1, "end": spawn + 2},
        {"name": "waiting", "start": spawn + 5, "end": spawn + 6}]}


def _run(db, *, host: str, dims: dict | None = None, status: str = "done",
         processes: object = None, model: str = "mlp", step: str = "inference") -> int:
    spec = run_spec(model=model, device="cpu", step=step, **({"dims": dims} if dims else {}))
    run_id = enqueue_run(db, spec)
    claim_run(db, run_id, "w1")
    save_variant_result(db, run_id, variant_result(
        "default", processes=[_proc(100.0 * run_id), _proc(100.0 * run_id + 1)]
        if processes is None else processes))
    finish_run(db, run_id, status, environment={"host": host}, worker_id="w1")
    return run_id


def test_latest_finished_runs_of_the_model_on_this_host_same_shape_first(db):
    mine = _run(db, host="a")
    _run(db, host="b")  # another host: other cores, other compile times
    _run(db, host="a", dims={"batch": 64, "hidden": 1024})  # another shape
    _run(db, host="a", status="failed")
    _run(db, host="a", model="other")
    train = _run(db, host="a", step="train")  # a training step: another graph
    got = recent_processes(db, "mlp", "cpu", host="a", dims={"batch": 32, "hidden": 1024},
                           dtype="float32")
    assert [(v, i, p["spawned_at"]) for v, i, p in got] == [
        ("default", 0, 100.0 * mine), ("default", 1, 100.0 * mine + 1)]
    # no run of that shape: the model's other runs on the host
    other = recent_processes(db, "mlp", "cpu", host="a", dims={"batch": 8}, dtype="float32")
    assert len(other) == 4
    assert recent_processes(db, "mlp", "cpu", host="c") == []
    trained = recent_processes(db, "mlp", "cpu", host="a", step="train",
                               dims={"batch": 32, "hidden": 1024}, dtype="float32")
    assert {p["spawned_at"] for _, _, p in trained} == {100.0 * train, 100.0 * train + 1}


def test_stored_processes_that_are_not_dicts_are_left_out(db):
    _run(db, host="a", processes=[_proc(1.0), "junk", 7, None])
    got = recent_processes(db, "mlp", "cpu", host="a", dims={"batch": 32, "hidden": 1024},
                           dtype="float32")
    assert [(v, i) for v, i, _ in got] == [("default", 0)]
