"""Faults the engine must survive (issue 12): signals to ``engine run``, a worker killed with -9
and ``worker --once`` after it, model code that exits the measuring child with code 0, and a
database outage under a worker. Plus the URL masking every message relies on."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest
from conftest import FIXTURES, ROOT, run_cli
from sqlalchemy.exc import OperationalError

from engine.orchestrate import forked
from engine.orchestrate.runner import run_variants
from engine.orchestrate.worker import Worker
from engine.spec import normalise
from storage import mask_url, open_database, queries, queue

# The slow tier (make test-slow, run by .ci/run): process and database faults.
pytestmark = pytest.mark.slow

USER = str(FIXTURES / "user_models.py")
TINY = {"backend": "eager", "warmup_calls": 3, "min_samples": 3, "min_time_s": 0.0,
        "max_time_s": 0.3, "pipeline_k": 2, "warm_cache": False, "profile": False}


def _wait(cond, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
    return value


def _status(url: str, run_id: int) -> tuple[str, str | None]:
    db = open_database(url)
    try:
        run = queries.load_runs(db, [run_id])["runs"].iloc[0]
        return run["status"], run["error"]
    finally:
        db.dispose()


def _children(pid: int) -> list[psutil.Process]:
    try:
        # not the process server, whose command line names engine.measure.child among its preloads
        # (it starts while the spec is checked, before any measuring child exists)
        return [p for p in psutil.Process(pid).children(recursive=True)
                if ("engine.measure.child" in " ".join(p.cmdline())
                    and "multiprocessing.forkserver" not in " ".join(p.cmdline()))
                or p.name().startswith(forked.NAME_PREFIX)]
    except psutil.Error:
        return []


# ------------------------------------------------------------------ URL masking


@pytest.mark.parametrize("url,shown", [
    ("postgresql://u:secret@h/db", "postgresql://u:***@h/db"),
    ("postgresql+psycopg://u:p%40ss@h:5432/db", "postgresql+psycopg://u:***@h:5432/db"),
    ("sqlite:///x.db", "sqlite:///x.db"),
    ("not a url u:secret@host", "not a url u:***@host"),
])
def test_mask_url_hides_passwords(url, shown):
    assert mask_url(url) == shown


# ------------------------------------------------------------------ dead claimers, by pid


def test_runs_of_a_dead_claimer_on_this_host_are_recovered_at_once(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'q.db'}")
    host = socket.gethostname()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that existed and is gone
    ids = [queue.enqueue_run(db, {"model": "mlp"}) for _ in range(4)]
    owners = [f"{host}:{dead.pid}", f"cli:{host}:{dead.pid}", f"{host}:{os.getpid()}",
              f"otherhost:{dead.pid}"]
    for run_id, owner in zip(ids, owners, strict=True):
        assert queue.claim_run(db, run_id, owner) is not None
    alive = psutil.pid_exists
    assert queue.parse_worker_id(f"cli:{host}:12:gpu0") == (host, 12)
    assert queue.parse_worker_id("acceptance") is None
    assert queue.recover_dead_runs(db, host, alive) == ids[:2]  # this host's dead pids only
    runs = queries.load_runs(db, ids)["runs"].set_index("run_id")["status"]
    assert list(runs) == ["queued", "queued", "running", "running"]
    assert queue.recover_dead_runs(db, host, alive) == []


@pytest.mark.slow
def test_kill_9_of_a_worker_then_worker_once_recovers_and_runs_it(tmp_path):
    """The H200 report: after kill -9 of a worker, ``worker --once`` exited after 3 s and the
    run stayed running. Now the pid check re-queues it at once and --once serves it."""
    url = f"sqlite:///{tmp_path / 'q.db'}"
    db = open_database(url)
    run_id = queue.enqueue_run(db, normalise({"model": "mlp", "variants": ["eager"],
                                              "dims": {"batch": 64, "hidden": 256}, **TINY,
                                              "min_time_s": 20.0, "max_time_s": 20.0}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    w = subprocess.Popen([sys.executable, "-m", "engine", "worker", "--db", url, "--poll", "0.2"],
                         cwd=ROOT, env=env, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        kids = _wait(lambda: _children(w.pid), 60, "the measuring child")
        # the measuring child, the process server it was forked from, the resource tracker
        left = psutil.Process(w.pid).children(recursive=True)
        w.kill()
        w.wait(10)
    finally:
        if w.poll() is None:
            w.kill()
    assert _status(url, run_id)[0] == "running"
    # Nothing the killed worker started lives on: the child held the server's liveness pipe
    # open and waited at its gate forever, and the server with it.
    assert {k.pid for k in kids} <= {p.pid for p in left}
    _gone, alive = psutil.wait_procs(left, timeout=20)
    assert not alive, [" ".join(p.cmdline())[:160] for p in alive]
    # The next run of this run measures 20 s again; make it short by rewriting the budget.
    from sqlalchemy import update

    from storage.models import Run
    with db.session(write=True) as s:
        s.execute(update(Run).where(Run.id == run_id).values(
            spec=normalise({"model": "mlp", "variants": ["eager"],
                            "dims": {"batch": 2, "hidden": 8}, **TINY})))
    p = run_cli("worker", "--once", "--stale-after", "600", db_url=url, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"run {run_id} recovered: its worker process on" in p.stderr
    assert _status(url, run_id)[0] == "done"


# ------------------------------------------------------------------ signals to engine run


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_engine_run_killed_by_a_signal_ends_cancelled_with_no_child_left(sig, tmp_path):
    url = f"sqlite:///{tmp_path / 'q.db'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "--model", "mlp", "--dim", "batch=64",
         "--dim", "hidden=256", "--variants", "eager", "--backend", "eager", "--no-warm-cache",
         "--min-time", "60", "--max-time", "60", "--db", url],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        kids = _wait(lambda: _children(p.pid), 60, "the measuring child")
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + sig, err[-3000:]
    assert "Traceback" not in err
    status, error = _status(url, 1)
    assert status == "cancelled" and "interrupted" in error
    psutil.wait_procs(kids, timeout=10)
    assert not any(k.is_running() and k.status() != psutil.STATUS_ZOMBIE for k in kids)


# ------------------------------------------------------------------ model code exiting with 0


@pytest.mark.parametrize("factory,variant", [("exits_during_build", "eager"),
                                             ("os_exits_during_build", "eager"),
                                             ("os_exits_when_compiled", "default")])
def test_model_code_that_exits_0_fails_its_variant_with_the_reason(factory, variant):
    spec = normalise({"model": f"{USER}:{factory}", "variants": ["eager", "default"], **TINY},
                     allow_user_models=True)
    results = {r["variant"]: r for r in run_variants(spec)}
    r = results[variant]
    assert r["status"] == "failed", r
    assert "exited with code 0 without writing a result" in r["error"]
    if variant == "default":
        assert results["eager"]["status"] == "ok"


# ------------------------------------------------------------------ database outage


class Outage:
    """Make ``db.session`` fail like a server that went away, between two moments."""

    def __init__(self, db) -> None:
        self.real = db.session
        self.until = 0.0
        self.failed = 0
        db.session = self.session

    def start(self, seconds: float) -> None:
        self.until = time.monotonic() + seconds

    def session(self, *args, **kwargs):
        if time.monotonic() < self.until:
            self.failed += 1
            raise OperationalError("SELECT 1", {}, Exception("server closed the connection"))
        return self.real(*args, **kwargs)


def test_worker_rides_out_a_database_outage_and_writes_results_afterwards(tmp_path, caplog):
    db = open_database(f"sqlite:///{tmp_path / 'q.db'}")
    # The child measures for 3 s, so that its progress is seen and the outage meets it running
    # (a forked child of this size is otherwise done within one poll of the runner).
    first = queue.enqueue_run(db, normalise({"model": "mlp", "variants": ["eager"],
                                             "dims": {"batch": 2, "hidden": 8},
                                             **TINY, "min_time_s": 3.0, "max_time_s": 3.5}))
    outage = Outage(db)
    worker = Worker(db, queue.worker_identity(), poll_s=0.05, retry_cap_s=0.4)
    seen: list[str] = []

    def progress(run_id):  # the outage starts once the child runs, and outlasts it
        def on(variant, phase, fraction):
            if "outage" not in seen:
                seen.append("outage")
                outage.start(4.0)
        return on

    worker._log_phase = progress
    outage.start(1.5)  # and one at the start: claims are retried
    caplog.set_level("INFO")
    assert worker.serve(once=True) == 0
    assert outage.failed > 2
    status, error = _status(db.url, first)
    assert status == "done", (error, caplog.text[-3000:])
    variants = queries.load_runs(db, [first])["variants"]
    assert list(variants["status"]) == ["ok"]
    assert "unavailable while recovering runs" in caplog.text  # the loop's own calls
    assert "unavailable, measuring on" in caplog.text  # heartbeats skipped, child kept going
    assert "database sqlite:///" in caplog.text and "is back" in caplog.text
