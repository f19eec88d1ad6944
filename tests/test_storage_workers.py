"""Connected workers and runs that go to the right machine (storage/workers.py, the claim query).

On both backends (PostgreSQL where COMPILELAB_TEST_PG_URL is set): a CPU laptop on the team
database never takes a cuda run, a run asking for an H200 waits for an H200, a run asking for
torch 2.11 is taken by a 2.11 build only; workers register, beat, go stale and unregister.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from storage.models import Worker, utcnow
from storage.queue import claim_next_run, claim_run, enqueue_run, finish_run
from storage.workers import (
    Capabilities,
    beat_worker,
    live_workers,
    register_worker,
    torch_prefixes,
    unregister_worker,
)
from tests.test_storage_support import run_spec

LAPTOP = Capabilities(devices=("cpu",), torch_version="2.13.0+cpu")
H200 = Capabilities(devices=("cpu", "cuda"), gpu_name="NVIDIA H200", gpu_count=1,
                    gpu_memory_bytes=150_000_000_000, torch_version="2.11.0+cu128")
H100 = Capabilities(devices=("cpu", "cuda"), gpu_name="NVIDIA H100 80GB HBM3", gpu_count=1,
                    torch_version="2.11.0+cu128")


def _queue(db, device: str, **needs) -> int:
    return enqueue_run(db, run_spec(device=device, **needs))


def test_torch_prefixes_cut_at_dots_and_plus():
    assert torch_prefixes("2.11.0+cu128") == ["2", "2.11", "2.11.0", "2.11.0+cu128"]
    assert torch_prefixes("2.13.0") == ["2", "2.13", "2.13.0"]
    assert torch_prefixes(None) == [] and torch_prefixes("") == []


def test_cpu_worker_never_takes_a_cuda_run(db):
    cuda_run = _queue(db, "cuda")
    cpu_run = _queue(db, "cpu")
    assert claim_next_run(db, "laptop:1", LAPTOP)[0] == cpu_run  # the older cuda run skipped
    assert claim_next_run(db, "laptop:1", LAPTOP) is None
    assert claim_next_run(db, "gpu:1", H200)[0] == cuda_run


def test_gpu_and_torch_requirements_are_matched(db):
    on_h200 = _queue(db, "cuda", require_gpu="NVIDIA H200")
    on_211 = _queue(db, "cuda", require_torch="2.11")
    on_213 = _queue(db, "cpu", require_torch="2.13")
    # The H100 may take the torch-2.11 run but not the H200 baseline, nor the 2.13 one.
    assert claim_next_run(db, "h100:1", H100)[0] == on_211
    assert claim_next_run(db, "h100:1", H100) is None
    assert claim_next_run(db, "h200:1", H200)[0] == on_h200
    assert claim_next_run(db, "h200:1", H200) is None
    assert claim_next_run(db, "laptop:1", LAPTOP)[0] == on_213
    assert H200.serves("cuda", "NVIDIA H200", "2.11.0") and not H100.serves("cuda", "NVIDIA H200")
    assert not LAPTOP.serves("cuda") and LAPTOP.serves("cpu", None, "2")


def test_without_capabilities_any_run_is_claimed(db):
    run_id = _queue(db, "cuda", require_gpu="NVIDIA H200")
    assert claim_next_run(db, "tool:1")[0] == run_id


def test_register_beat_and_unregister(db):
    assert live_workers(db) == []
    register_worker(db, "gpu7:42:gpu0", H200, host="gpu7", pid=42)
    register_worker(db, "laptop:9", LAPTOP, host="laptop", pid=9)
    workers = live_workers(db)
    assert [w["worker_id"] for w in workers] == ["gpu7:42:gpu0", "laptop:9"]
    gpu = workers[0]
    assert (gpu["host"], gpu["devices"], gpu["gpu_name"], gpu["gpu_memory_bytes"],
            gpu["torch_version"]) == ("gpu7", ["cpu", "cuda"], "NVIDIA H200", 150_000_000_000,
                                      "2.11.0+cu128")
    run_id = enqueue_run(db, {"model": "mlp"})
    claim_run(db, run_id, "gpu7:42:gpu0")
    assert beat_worker(db, "gpu7:42:gpu0", current_run_id=run_id)
    assert live_workers(db)[0]["current_run_id"] == run_id
    finish_run(db, run_id, "done")  # ended before the worker's next beat: not busy with it
    assert live_workers(db)[0]["current_run_id"] is None
    # A worker killed with -9 stops beating: after LIVE_AFTER_S it is no longer offered.
    with db.session(write=True) as session:
        session.execute(update(Worker).where(Worker.worker_id == "laptop:9")
                        .values(heartbeat_at=utcnow() - timedelta(seconds=120)))
    assert [w["worker_id"] for w in live_workers(db)] == ["gpu7:42:gpu0"]
    unregister_worker(db, "gpu7:42:gpu0")
    assert live_workers(db) == []
    assert not beat_worker(db, "gpu7:42:gpu0")  # gone: the worker registers again


def test_register_sweeps_long_dead_rows(db):
    register_worker(db, "old:1", LAPTOP)
    with db.session(write=True) as session:
        session.execute(update(Worker).values(heartbeat_at=utcnow() - timedelta(days=3)))
    register_worker(db, "new:2", LAPTOP)
    with db.session() as session:
        assert [w.worker_id for w in session.query(Worker).all()] == ["new:2"]
