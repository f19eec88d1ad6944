"""Several processes on one database: each run claimed once; readers never see "locked".

These tests use real processes (spawn), as a worker per GPU and a dashboard would.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from collections import Counter
from pathlib import Path

import pytest

from storage.db import open_database
from storage.queries import list_runs, load_runs
from storage.queue import claim_next_run, claim_run, enqueue_run, finish_run, heartbeat
from storage.results import save_variant_result, set_environment
from tests.test_storage_support import (
    BACKENDS,
    ENVIRONMENT,
    backend_url,
    failed_result,
    run_spec,
    variant_result,
)

N_QUEUED = 50
N_CLAIMERS = 2


@pytest.fixture(params=BACKENDS)
def storage_url(request: pytest.FixtureRequest, tmp_path: Path):
    with backend_url(request.param, tmp_path) as url:
        yield url


def _claim_all(url: str, worker_id: str, barrier, out) -> None:
    """A worker that claims until the queue is empty; reports what it got (or its error)."""
    try:
        db = open_database(url)
        claimed = []
        barrier.wait(timeout=60)
        while (claim := claim_next_run(db, worker_id)) is not None:
            claimed.append(claim[0])
            # A moment of "work" between claims; without it SQLite's busy handler (which sleeps
            # and retries) lets the first process drain the queue and nothing is contended.
            time.sleep(0.002)
        db.dispose()
        out.put((worker_id, claimed))
    except BaseException:
        out.put((worker_id, traceback.format_exc()))


def test_two_processes_claim_each_of_50_runs_exactly_once(storage_url):
    db = open_database(storage_url)
    queued = [enqueue_run(db, run_spec(seed=i)) for i in range(N_QUEUED)]
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(N_CLAIMERS), ctx.Queue()
    procs = [
        ctx.Process(target=_claim_all, args=(storage_url, f"worker-{i}", barrier, out))
        for i in range(N_CLAIMERS)
    ]
    for proc in procs:
        proc.start()
    reports = dict(out.get(timeout=120) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)
    for worker_id, claimed in reports.items():
        assert isinstance(claimed, list), f"{worker_id} failed:\n{claimed}"
        assert claimed == sorted(claimed), "each worker takes runs oldest first"
    counts = Counter(run_id for claimed in reports.values() for run_id in claimed)
    assert sorted(counts) == queued
    assert set(counts.values()) == {1}, "a run was claimed twice"
    owners = list_runs(db, status="running")
    assert len(owners) == N_QUEUED
    db.dispose()


def _write_runs(url: str, worker_id: str, seconds: float, barrier, out) -> None:
    """What a worker does to the database, as fast as it can, for ``seconds``."""
    try:
        db = open_database(url)
        barrier.wait(timeout=60)
        deadline, done = time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            run_id = enqueue_run(db, run_spec(), tags=[worker_id])
            if claim_run(db, run_id, worker_id) is None:
                continue
            for phase in ("building", "compiling", "measuring"):
                assert heartbeat(db, run_id, worker_id, variant="default", phase=phase)
            set_environment(db, run_id, ENVIRONMENT)
            save_variant_result(db, run_id, variant_result("eager"))
            save_variant_result(db, run_id, variant_result("default"))
            save_variant_result(db, run_id, failed_result("max-autotune"))
            finish_run(db, run_id, "done", environment=ENVIRONMENT, worker_id=worker_id)
            done += 1
        db.dispose()
        out.put((worker_id, done))
    except BaseException:
        out.put((worker_id, traceback.format_exc()))


def test_readers_never_see_database_locked_while_writers_write(tmp_path):
    url = f"sqlite:///{tmp_path / 'busy.db'}"
    db = open_database(url)
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(3), ctx.Queue()
    procs = [
        ctx.Process(target=_write_runs, args=(url, f"writer-{i}", 3.0, barrier, out))
        for i in range(2)
    ]
    for proc in procs:
        proc.start()
    barrier.wait(timeout=60)
    reads = 0
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        runs = list_runs(db, limit=50)
        load_runs(db, runs["run_id"].head(4).tolist())
        reads += 1
    reports = dict(out.get(timeout=120) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)
    for worker_id, done in reports.items():
        assert isinstance(done, int), f"{worker_id} failed:\n{done}"
        assert done > 0
    assert reads > 0
    finished = list_runs(db, status="done")
    assert len(finished) == sum(reports.values())
    frames = load_runs(db, finished["run_id"].tolist())
    assert len(frames["variants"]) == 3 * len(finished)
    db.dispose()
