"""Runs through a real Slurm: the one-node cluster of ``scripts/slurm_local.sh up`` (Debian's
slurmctld, slurmd and munge; .ci/run starts it before the slow tier). Real CPU runs are
submitted with ``python -m engine run --slurm`` and followed in the database through ``show``
(which reconciles): a run that finishes, a pending one whose reason shows, cancels from Compile
Lab (pending and running), a job cancelled from outside (``scancel --signal=KILL``), a worker
killed on the node, a time limit (a hanging user model, a one-minute limit), a partition that
does not exist, a job that cannot reach the database, a job Slurm requeues (as a preemption
with requeue does), and a node failure (the node set DOWN under its job).

Without a Slurm these tests are skipped, unless ``COMPILELAB_TEST_SLURM=1`` (set by .ci/run)
says one must be there. Every process of a job carries a marker in its environment (exported
to the job), so teardown cancels the jobs and kills what is left, orphans included.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import FAST, FIXTURES, ROOT, run_cli

from engine.slurm.states import ENDED

pytestmark = pytest.mark.slow

HANG = f"{FIXTURES / 'user_models.py'}:hangs_when_compiled"  # hangs in its first compile
MARK = "COMPILELAB_TEST_MARK"
QUICK = ["--model", "mlp", "--dim", "batch=8", "--device", "cpu", "--variants", "eager,default",
         "--backend", "aot_eager", *FAST, "--no-warm-cache"]
HANGING = ["--model", HANG, "--device", "cpu", "--variants", "eager,default", *FAST]


def _slurm_idle() -> str | None:
    """Why there is no usable Slurm here, or None when its node is up."""
    if not shutil.which("sinfo"):
        return "no Slurm here (scripts/slurm_local.sh up starts one)"
    done = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], capture_output=True, text=True,
                          timeout=30, check=False)
    states = done.stdout.split()
    if done.returncode != 0 or not any(s.startswith(("idle", "mix", "alloc")) for s in states):
        return f"Slurm is not up: {done.stderr.strip() or states}"
    return None


def wait_for(what: str, get: Callable[[], Any], timeout: float, every: float = 2.0) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = get()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


class Cluster:
    """A temp database, the runs submitted to Slurm against it, and their cleanup."""

    def __init__(self, tmp: Path) -> None:
        self.url = f"sqlite:///{tmp / 'slurm.db'}"
        self.mark = uuid.uuid4().hex
        (tmp / "slurm.toml").write_text("")  # no user settings file: only what a test sets
        self.env = {"PYTHONPATH": str(ROOT), MARK: self.mark,
                    "COMPILELAB_SLURM_CONFIG": str(tmp / "slurm.toml"),
                    "COMPILELAB_SLURM_LOG_DIR": str(tmp / "logs"),
                    "COMPILELAB_SLURM_EXPORT": MARK}
        self.jobs: list[int] = []

    def submit(self, *args: str, **env: str) -> int:
        p = run_cli("run", *args, "--slurm", "--json", db_url=self.url, env={**self.env, **env})
        assert p.returncode == 0, p.stderr
        run_id = int(p.stdout.strip())
        self.jobs.append(self.show(run_id)["slurm_job_id"])
        return run_id

    def show(self, run_id: int) -> dict[str, Any]:
        p = run_cli("show", str(run_id), "--json", db_url=self.url, env=self.env)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    def wait(self, run_id: int, done: Callable[[dict[str, Any]], bool], what: str,
             timeout: float = 300) -> dict[str, Any]:
        return wait_for(f"run {run_id} {what}", lambda: (r := self.show(run_id)) and done(r) and r,
                        timeout)

    def wait_final(self, run_id: int, timeout: float = 300) -> dict[str, Any]:
        """The run ended, and so did its job (a job whose run is done is still exiting for a
        moment: the next reconcile sees it COMPLETED)."""
        return self.wait(run_id, lambda r: r["status"] in ("done", "failed", "cancelled")
                         and (r["slurm"] is None or r["slurm"]["state"] in ENDED),
                         "and its job to end", timeout)

    def running(self, run_id: int) -> dict[str, Any]:
        return self.wait(run_id, lambda r: r["status"] == "running", "to run", timeout=120)

    def close(self) -> None:
        for job in self.jobs:
            subprocess.run(["scancel", str(job)], capture_output=True, timeout=30, check=False)
        marked = []
        for p in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if p.pid != os.getpid() and p.environ().get(MARK) == self.mark:
                    marked.append(p)
        for p in marked:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(marked, timeout=10)
        # The node is exclusive: the next test's job waits until these have left it.
        wait_for("the jobs to leave the node", lambda: not subprocess.run(
            ["squeue", "-h", "-j", ",".join(map(str, self.jobs)) or "0"], capture_output=True,
            text=True, timeout=30, check=False).stdout.strip(), 60, every=1)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    why = _slurm_idle()
    if why:
        if os.environ.get("COMPILELAB_TEST_SLURM") == "1":
            pytest.fail(f"COMPILELAB_TEST_SLURM=1 but {why}")
        pytest.skip(why)
    c = Cluster(tmp_path)
    yield c
    c.close()


@pytest.mark.timeout(600)  # its waits outlast the tier's 300 s default
def test_a_run_submitted_to_slurm_reaches_done_with_its_job_id(cluster):
    """The issue's acceptance command, with a real inductor compile."""
    rid = cluster.submit("--model", "mlp", "--dim", "batch=8", "--device", "cpu",
                         "--variants", "eager,default")
    run = cluster.wait_final(rid, timeout=480)
    assert run["status"] == "done", run["error"]
    assert isinstance(run["slurm_job_id"], int) and run["slurm_job_id"] == cluster.jobs[0]
    job = run["slurm"]
    assert job["state"] == "COMPLETED" and job["node"] == socket.gethostname().split(".")[0]
    assert job["partition"] == "debug" and job["time_limit_min"] >= 10
    assert [v["status"] for v in run["variants"]] == ["ok", "ok"]
    assert run["environment"]["host"] == socket.gethostname()


def test_pending_reason_shows_and_cancels_from_compile_lab_cancel_the_jobs(cluster):
    first = cluster.submit(*HANGING)
    cluster.running(first)
    second = cluster.submit(*QUICK)  # the node is exclusive: it waits
    waiting = cluster.wait(second, lambda r: (r["slurm"] or {}).get("reason") is not None,
                           "to show why it waits", timeout=60)
    assert waiting["status"] == "queued" and waiting["slurm"]["state"] == "PENDING"
    assert waiting["slurm"]["reason"] in ("Resources", "Priority")
    p = run_cli("cancel", str(second), db_url=cluster.url, env=cluster.env)
    assert p.stdout.strip() == (f"run {second}: cancelled; Slurm job {cluster.jobs[1]} "
                                "cancelled (scancel)")
    p = run_cli("cancel", str(first), db_url=cluster.url, env=cluster.env)
    assert p.stdout.strip() == (f"run {first}: running (cancel requested: its worker stops it "
                                f"at its next heartbeat, within seconds); Slurm job "
                                f"{cluster.jobs[0]} cancelled (scancel)")
    for rid in (first, second):
        run = cluster.wait(rid, lambda r: r["status"] == "cancelled"
                           and r["slurm"]["state"] == "CANCELLED", "to be cancelled, its job too")
        assert "outside" not in (run["error"] or "")


def test_a_job_cancelled_from_outside_ends_its_run_cancelled(cluster):
    rid = cluster.submit(*HANGING)
    cluster.running(rid)
    subprocess.run(["scancel", "--signal=KILL", str(cluster.jobs[0])], check=True, timeout=30)
    run = cluster.wait_final(rid)
    assert run["status"] == "cancelled"
    assert run["error"].startswith(f"its Slurm job {cluster.jobs[0]} was cancelled outside "
                                   "Compile Lab (scancel")


def test_a_worker_killed_on_its_node_fails_its_run_with_the_signal(cluster):
    rid = cluster.submit(*HANGING)
    cluster.running(rid)
    from storage import open_database
    from storage.models import Run

    with open_database(cluster.url).session() as s:
        worker_id = s.get(Run, rid).worker_id  # HOST:PID:slurmJOB
    assert worker_id.endswith(f":slurm{cluster.jobs[0]}")
    os.kill(int(worker_id.split(":")[1]), 9)  # as the kernel's OOM killer would
    run = cluster.wait_final(rid)
    assert run["status"] == "failed"
    assert f"Slurm job {cluster.jobs[0]} was killed by signal 9 (SIGKILL)" in run["error"]
    assert run["slurm"]["state"] == "FAILED" and run["slurm"]["exit_code"] == "0:9"


@pytest.mark.timeout(600)  # its waits outlast the tier's 300 s default
def test_a_hanging_run_past_its_one_minute_limit_fails_with_the_time_limit(cluster):
    rid = cluster.submit(*HANGING, COMPILELAB_SLURM_MAX_TIME_MIN="1")
    run = cluster.wait_final(rid, timeout=240)
    assert run["status"] == "failed"
    assert run["error"].startswith(f"time limit: Slurm stopped job {cluster.jobs[0]} at its "
                                   "limit of 1 min")
    assert run["slurm"]["state"] == "TIMEOUT"


def test_a_partition_that_does_not_exist_is_one_line_and_nothing_queued(cluster):
    p = run_cli("run", *QUICK, "--slurm", "--json", db_url=cluster.url,
                env={**cluster.env, "COMPILELAB_SLURM_PARTITION": "nosuch"})
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "error: sbatch refused the job of run 1: Invalid partition name specified (partition "
        "nosuch) (run 1 is stored as failed, nothing is queued)"]
    run = cluster.show(1)
    assert run["status"] == "failed" and run["slurm_job_id"] is None
    queued = subprocess.run(["squeue", "-h", "-n", "compilelab-run-1"], capture_output=True,
                            text=True, timeout=30, check=True)
    assert queued.stdout.strip() == ""


def test_a_job_that_cannot_reach_the_database_fails_its_run_saying_so(cluster):
    rid = cluster.submit(*QUICK, COMPILELAB_SLURM_JOB_DB="postgresql+psycopg://nobody@127.0.0.1:1/x",
                         COMPILELAB_SLURM_DB_WAIT_S="2")
    run = cluster.wait_final(rid, timeout=120)
    assert run["status"] == "failed"
    assert run["error"].startswith(f"Slurm job {cluster.jobs[0]} could not reach the database")
    assert "Connection refused" in run["error"] and run["slurm"]["exit_code"] == "3:0"


@pytest.mark.timeout(600)  # its waits outlast the tier's 300 s default
def test_a_job_slurm_requeues_starts_again_and_finishes_the_run(cluster):
    rid = cluster.submit(*QUICK)
    cluster.running(rid)
    job = str(cluster.jobs[0])
    subprocess.run(["scontrol", "requeue", job], check=True, timeout=30)  # as a preemption does
    requeued = time.monotonic()
    # The run is queued again at once; its job passes through COMPLETING (Slurm ending the old
    # allocation's processes) before it is PENDING, for as long as those take to end.
    waiting = cluster.wait(rid, lambda r: r["status"] == "queued"
                           and r["slurm"]["state"] == "PENDING", "to be queued again", 60)
    assert waiting["slurm"]["restarts"] == 1
    # Slurm holds a requeued job back two minutes (BeginTime); let it start now, but not within
    # the requeue's own second: slurmd refuses a job whose new credential is as old (in whole
    # seconds) as the revocation of its last one ("Killing non-startable batch JobId=N: Job
    # credential revoked", the job then ends FAILED, exit code 1), seen once when PENDING came
    # under a second after the requeue. Slurm's two-minute hold exists to keep clear of that.
    time.sleep(max(0.0, requeued + 2.5 - time.monotonic()))
    subprocess.run(["scontrol", "update", f"jobid={job}", "StartTime=now"], check=True, timeout=30)
    run = cluster.wait_final(rid, timeout=300)
    assert run["status"] == "done", run["error"]
    assert run["slurm"]["restarts"] >= 1 and run["slurm"]["state"] == "COMPLETED"


def test_a_node_failure_fails_the_run_saying_so(cluster):
    node = socket.gethostname().split(".")[0]
    rid = cluster.submit(*HANGING, COMPILELAB_SLURM_REQUEUE="0")  # requeue would hide it
    cluster.running(rid)
    try:
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=down",
                        "reason=compilelab node failure test"], check=True, timeout=30)
        run = cluster.wait_final(rid, timeout=120)
    finally:  # the node comes back for the next test (ReturnToService may have done it)
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"],
                       capture_output=True, timeout=30, check=False)
        wait_for("the node to be idle again", lambda: _slurm_idle() is None, 60, every=1)
    assert run["status"] == "failed"
    assert run["error"] == f"node failure: {node} failed while it ran Slurm job {cluster.jobs[0]}"
    assert run["slurm"]["state"] == "NODE_FAIL"
