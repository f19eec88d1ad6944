"""A real PostgreSQL restart under a real worker (issue 12, items 6 and 8).

The test starts its own throwaway PostgreSQL cluster on 127.0.0.1 (a free port, a temp dir,
fsync off, the flags of ``.ci/run``; password authentication over TCP, so the worker's URL
carries a password), runs ``python -m engine worker`` against it, and stops the server with
``pg_ctl stop -m fast`` while a run is measuring:

* a short outage (~5 s: longer than a heartbeat and than the first backoff steps) in the middle
  of a compiled variant: the worker stays up, the run ends ``done`` with every variant saved;
* an outage that outlasts the measuring child: the server comes back only after the child has
  exited, and the result it measured meanwhile is written then.

The worker's log must show the database URL masked and never the password. Skipped, with the
reason, where the PostgreSQL server binaries are missing or the cluster cannot start.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import ROOT, run_cli
from sqlalchemy import select

from engine.orchestrate import forked
from storage.db import Database, create_db_engine, resolve_url
from storage.models import Run
from storage.records import load_run

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

# A run of several seconds on CPU in which nothing slow compiles: ``--backend eager``.
RUN_ARGS = ["--model", "mlp", "--dim", "batch=64", "--dim", "hidden=512", "--backend", "eager",
            "--warmup-calls", "3", "--pipeline-k", "5", "--min-time", "3", "--max-time", "5"]
OUTAGE_S = 5.0
FINAL = ("done", "failed", "cancelled")


def _pg_bin() -> Path | None:
    candidates = [Path("/usr/lib/postgresql/15/bin")] + sorted(
        Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for d in candidates:
        if (d / "initdb").is_file() and (d / "pg_ctl").is_file() and (d / "psql").is_file():
            return d
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A throwaway PostgreSQL cluster: initdb into a temp dir (as ``postgres`` when root: initdb
    refuses root), started and stopped with pg_ctl, removed at the end."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.dir = Path(tempfile.mkdtemp(prefix="compilelab-pgfault-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.port = _free_port()
        self.as_pg: list[str] = []
        if os.geteuid() == 0:
            runuser = shutil.which("runuser")
            if runuser is None:
                raise RuntimeError("running as root and there is no runuser to run initdb as "
                                   "postgres")
            shutil.chown(self.dir, "postgres", "postgres")
            self.as_pg = [runuser, "-u", "postgres", "--"]

    def _run(self, tool: str, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
        return subprocess.run([*self.as_pg, str(self.bin / tool), *args], capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def init(self) -> None:
        # Trust on the socket (the test's own admin), a password over TCP (the worker).
        p = self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth-local=trust",
                      "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync")
        if p.returncode:
            raise RuntimeError(f"initdb failed: {(p.stdout + p.stderr)[-1500:]}")

    def start(self) -> None:
        opts = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100")
        p = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                      "-o", opts, "start")
        if p.returncode:
            tail = self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {(p.stdout + p.stderr)[-800:]} {tail}")

    def stop(self) -> None:
        p = self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")
        if p.returncode:
            raise RuntimeError(f"pg_ctl stop failed: {(p.stdout + p.stderr)[-800:]}")

    def psql(self, sql: str) -> None:
        p = self._run("psql", "-h", str(self.dir), "-p", str(self.port), "-U", "postgres",
                      "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", sql)
        if p.returncode:
            raise RuntimeError(f"psql failed: {p.stderr[-800:]}")

    def new_database(self) -> tuple[str, str]:
        """A fresh database owned by a fresh password role: (URL with the password, password)."""
        name = f"cl_{uuid.uuid4().hex[:10]}"
        password = f"Pw{uuid.uuid4().hex}"
        self.psql(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        self.psql(f"CREATE DATABASE {name} OWNER {name}")
        return f"postgresql+psycopg://{name}:{password}@127.0.0.1:{self.port}/{name}", password

    def remove(self) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    bin_dir = _pg_bin()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl, psql) under "
                    "/usr/lib/postgresql/*/bin")
    try:
        c = Cluster(bin_dir)
    except (RuntimeError, LookupError, OSError) as e:
        pytest.skip(f"cannot set up a throwaway PostgreSQL cluster: {e}")
    try:
        c.init()
        c.start()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        c.remove()
        pytest.skip(f"cannot start a throwaway PostgreSQL cluster: {e}")
    yield c
    c.remove()


class Worker:
    """``python -m engine worker`` in its own session, stderr to a file."""

    def __init__(self, url: str, log_path: Path) -> None:
        self.log_path = log_path
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with open(log_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "engine", "worker", "--db", url, "--poll", "0.2",
                 "--stale-after", "600"],
                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def children(self) -> list[psutil.Process]:
        """The measuring children (``python -m engine.measure.child``)."""
        try:
            kids = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        out = []
        for kid in kids:
            with contextlib.suppress(psutil.Error):
                if (("engine.measure.child" in kid.cmdline() or kid.name().startswith(forked.NAME_PREFIX))
                        and kid.status() != psutil.STATUS_ZOMBIE):
                    out.append(kid)
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group it leads: itself and children
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


@pytest.fixture
def worker_factory(tmp_path: Path) -> Iterator[Callable[[str], Worker]]:
    started: list[Worker] = []

    def start(url: str) -> Worker:
        w = Worker(url, tmp_path / f"worker{len(started)}.stderr")
        started.append(w)
        return w

    yield start
    for w in started:
        w.close()


def wait_for(cond: Callable[[], Any], timeout: float, what: str,
             logs: Callable[[], str] = lambda: "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n"
                                 f"{logs()[-4000:]}")
        time.sleep(0.2)


def queue_run(url: str, *variant_args: str) -> int:
    p = run_cli("run", *RUN_ARGS, *variant_args, "--queue", "--json", db_url=url, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return int(p.stdout.strip())


@pytest.fixture
def reader() -> Iterator[Callable[[str], Database]]:
    """The test's own connection pool (pre-ping: it reconnects after the restart)."""
    opened: list[Database] = []

    def open_reader(url: str) -> Database:
        opened.append(Database(create_db_engine(resolve_url(url))))
        return opened[-1]

    yield open_reader
    for db in opened:
        db.dispose()


def progress(db: Database, run_id: int) -> tuple[str, str | None, str | None, float | None]:
    with db.session() as s:
        row = s.execute(select(Run.status, Run.progress_variant, Run.progress_phase,
                               Run.progress_fraction).where(Run.id == run_id)).one()
    status, variant, phase, fraction = row
    # the phase without the engine's "· about N s left" estimate
    return status, variant, phase.split(" · ")[0] if phase else phase, fraction


def statuses(db: Database) -> dict[int, str]:
    with db.session() as s:
        return dict(s.execute(select(Run.id, Run.status)).all())


def final_run(db: Database, run_id: int, worker: Worker, timeout: float) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        assert worker.alive(), f"the worker exited\n{worker.log()[-4000:]}"
        run = load_run(db, run_id)
        return run if run and run["status"] in FINAL else None

    return wait_for(done, timeout, f"run {run_id} to finish", worker.log)


def outage(cluster: Cluster, worker: Worker, db: Database, *, down_at_least_s: float,
           until: Callable[[], bool] = lambda: True) -> datetime:
    """Stop the server, keep it down at least ``down_at_least_s`` and until ``until()``, checking
    the worker stays alive, then start it again; returns the (UTC) moment it was back."""
    db.dispose()  # the test's own connections: nothing to keep across the restart
    cluster.stop()
    stopped = time.monotonic()
    while time.monotonic() - stopped < down_at_least_s or not until():
        assert worker.alive(), f"the worker died during the outage\n{worker.log()[-4000:]}"
        assert time.monotonic() - stopped < 60, "the outage condition never came"
        time.sleep(0.2)
    assert worker.alive(), worker.log()[-4000:]
    cluster.start()
    return datetime.now(UTC)


def check_log(worker: Worker, url: str, password: str, run_id: int) -> None:
    log = worker.log()
    masked = url.replace(password, "***")
    assert f"serving {masked}" in log, log[-3000:]
    assert password not in log
    assert "Traceback" not in log, log[-4000:]
    # The outage was seen (URL masked there too), and the run's results were logged after it.
    seen = log.find(f"run {run_id}: database {masked} unavailable, measuring on")
    assert seen >= 0, log[-4000:]
    assert f"run {run_id} done" in log[seen:], log[-4000:]


def test_worker_rides_out_a_postgresql_restart_mid_run(cluster, worker_factory, reader):
    url, password = cluster.new_database()
    run_id = queue_run(url, "--variants", "eager,default", "--processes", "2",
                       "--max-processes", "2")
    db = reader(url)
    worker = worker_factory(url)
    # The compiled variant measuring: eager is saved, a compiled child is mid-run.
    wait_for(lambda: progress(db, run_id)[:3] == ("running", "default", "measuring"), 90,
             "the run to measure its compiled variant", worker.log)
    assert progress(db, run_id)[3] > 0
    outage(cluster, worker, db, down_at_least_s=OUTAGE_S)

    run = final_run(db, run_id, worker, 90)
    assert worker.alive(), worker.log()[-4000:]
    assert run["status"] == "done", (run["error"], worker.log()[-4000:])
    by_variant = {v["variant"]: v for v in run["variants"]}
    assert set(by_variant) == {"eager", "default"}
    assert all(v["status"] == "ok" for v in by_variant.values()), by_variant
    default = by_variant["default"]
    assert len(default["processes"]) == 2, (  # cold and warm-cache: both saved
        default.get("process_errors"), (default.get("stats") or {}).get("stop_reason"),
        worker.log()[-4000:])
    assert by_variant["default"]["median_ms"] > 0
    assert "running" not in statuses(db).values()
    check_log(worker, url, password, run_id)


def test_results_measured_while_postgresql_is_down_are_written_when_it_is_back(
        cluster, worker_factory, reader):
    url, password = cluster.new_database()
    run_id = queue_run(url, "--variants", "eager")
    db = reader(url)
    worker = worker_factory(url)
    wait_for(lambda: progress(db, run_id)[:3] == ("running", "eager", "measuring"), 90,
             "the eager child to measure", worker.log)
    measuring = worker.children()
    assert measuring, "no measuring child while the run measures"
    # Down until the child has finished measuring and exited, and a few seconds beyond.
    child_gone: dict[str, float] = {}

    def child_finished_a_while_ago() -> bool:
        if any(k.is_running() and k.status() != psutil.STATUS_ZOMBIE for k in measuring):
            return False
        child_gone.setdefault("at", time.monotonic())
        return time.monotonic() - child_gone["at"] >= 3.0

    back_at = outage(cluster, worker, db, down_at_least_s=OUTAGE_S,
                     until=child_finished_a_while_ago)

    run = final_run(db, run_id, worker, 60)
    assert run["status"] == "done", (run["error"], worker.log()[-4000:])
    [eager] = run["variants"]
    assert eager["variant"] == "eager" and eager["status"] == "ok", eager
    assert eager["median_ms"] > 0 and eager["n"] > 0
    # Finished only after the server came back: the result waited for it.
    finished = datetime.fromisoformat(run["finished_at"])
    assert finished.replace(tzinfo=finished.tzinfo or UTC) >= back_at
    assert "running" not in statuses(db).values()
    check_log(worker, url, password, run_id)
