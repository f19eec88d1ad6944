"""A worker registers the hardware it really has and claims only the runs it can serve.

In-process ``Worker`` on a temp SQLite database (no measuring child is started: the only run
queued is one this CPU worker must leave alone), plus the real hardware probe on this host.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from sqlalchemy import text

from engine.orchestrate.hardware import describe, probe_capabilities
from engine.orchestrate.worker import Worker
from storage import open_database, queries, queue
from storage.workers import Capabilities, live_workers

LAPTOP = Capabilities(devices=("cpu",), torch_version="2.13.0+cpu")


def _wait(cond, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return value


def test_cpu_worker_registers_beats_leaves_a_cuda_run_queued_and_unregisters(db_url):
    db = open_database(db_url)
    run_id = queue.enqueue_run(db, {"model": "mlp", "device": "cuda"})
    worker = Worker(db, "laptop:1", poll_s=0.05, capabilities=LAPTOP, beat_every_s=0.1)
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    try:
        first = _wait(lambda: live_workers(db))[0]
        assert (first["worker_id"], first["devices"], first["torch_version"]) == (
            "laptop:1", ["cpu"], "2.13.0+cpu")
        # The beat thread keeps it fresh while the loop polls.
        _wait(lambda: live_workers(db)[0]["heartbeat_at"] > first["heartbeat_at"])
    finally:
        worker.stopping = True
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert live_workers(db) == []  # a clean stop unregisters
    assert queries.list_runs(db)["status"].tolist() == ["queued"]  # never claimed
    assert queue.claim_next_run(db, "gpu:1", Capabilities(devices=("cpu", "cuda")))[0] == run_id
    db.dispose()


def test_once_without_servable_runs_returns_at_once(db_url):
    db = open_database(db_url)
    queue.enqueue_run(db, {"model": "mlp", "device": "cpu", "require_torch": "2.11"})
    assert Worker(db, "laptop:2", capabilities=LAPTOP).serve(once=True) == 0
    assert queries.list_runs(db)["status"].tolist() == ["queued"]
    db.dispose()


def test_probe_reports_this_hosts_devices_and_torch():
    import torch

    caps = probe_capabilities()
    assert "probe_error" not in caps.info, caps.info
    assert caps.torch_version == torch.__version__
    assert ("cuda" in caps.devices) == torch.cuda.is_available()
    assert describe(caps).endswith(f"torch {torch.__version__}")


H200 = Capabilities(devices=("cpu", "cuda"), gpu_name="NVIDIA H200", gpu_count=1,
                    torch_version="2.11.0+cu128")


@pytest.mark.parametrize("caps,spec_needs,unmet", [
    (LAPTOP, {"require_torch": "2.11"}, "torch '2.11'"),
    (LAPTOP, {"require_gpu": "NVIDIA H200"}, "GPU 'NVIDIA H200'"),
    (LAPTOP, {"device": "cuda"}, "device 'cuda'"),
    (H200, {"device": "cuda", "require_gpu": "NVIDIA B200"}, "GPU 'NVIDIA B200'"),
    (H200, {"device": "cuda", "require_torch": "2.13"}, "torch '2.13'"),
])
def test_a_row_whose_columns_and_spec_disagree_is_refused_never_measured(
        db_url, caps, spec_needs, unmet, monkeypatch):
    """Someone writing the shared database queues a run whose columns say "any worker" while
    its spec asks for a GPU model or torch release this worker lacks: the claim query (columns)
    lets the worker take it; the worker checks the spec and fails the run with the reason."""
    import engine.orchestrate.worker

    measured = []
    monkeypatch.setattr(engine.orchestrate.worker, "execute_run", lambda *a, **k: measured.append(a))
    db = open_database(db_url)
    run_id = queue.enqueue_run(db, {"model": "mlp", "dims": {"hidden": 8}, "device": "cpu"})
    spec = {"model": "mlp", "dims": {"hidden": 8}, "device": "cpu", **spec_needs}
    with db.session(write=True) as s:  # by hand: the spec only, the columns left as they were
        s.execute(text("UPDATE runs SET spec = :spec WHERE id = :id"),
                  {"spec": json.dumps(spec), "id": run_id})
    assert Worker(db, "w:1", capabilities=caps).serve(once=True) == 0
    run = queries.list_runs(db).iloc[0]
    assert run["status"] == "failed" and not measured
    assert unmet in run["error"] and "columns and spec disagree" in run["error"]
    db.dispose()


def test_a_row_whose_spec_this_worker_serves_is_measured(db_url, monkeypatch):
    """The control: the same hand-written row, with a requirement the worker meets, is run."""
    import engine.orchestrate.worker

    measured = []
    monkeypatch.setattr(engine.orchestrate.worker, "execute_run",
                        lambda db, run_id, spec, *a, **k: measured.append(spec) or "done")
    db = open_database(db_url)
    run_id = queue.enqueue_run(db, {"model": "mlp", "dims": {"hidden": 8}, "device": "cpu"})
    with db.session(write=True) as s:
        s.execute(text("UPDATE runs SET spec = :spec WHERE id = :id"), {"spec": json.dumps(
            {"model": "mlp", "dims": {"hidden": 8}, "require_torch": "2.11"}), "id": run_id})
    assert Worker(db, "w:2", capabilities=H200).serve(once=True) == 0
    assert [s["require_torch"] for s in measured] == ["2.11"]
    db.dispose()
