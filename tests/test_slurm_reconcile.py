"""Slurm runs in storage and the reconciler, against a stand-in for Slurm's commands: which runs
workers may touch, what each job state does to its run, and submission's refusals (nothing
stored for a bad setting or a missing Slurm, a failed run for a refused job)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from test_storage_support import run_spec

from engine.slurm.commands import JobInfo, Slurm, SlurmUnavailable, SubmissionRefused
from engine.slurm.reconcile import reconcile, refresh
from engine.slurm.settings import SettingsError, SlurmSettings
from engine.slurm.submit import Refused, cancel_job, submit_run
from engine.spec import normalise
from storage import queue, slurm_jobs
from storage.models import Run, utcnow


class FakeSlurm(Slurm):
    """Answers from a dict instead of scontrol; records scancel and sbatch calls."""

    def __init__(self, refuse: Exception | None = None) -> None:
        super().__init__()
        self.jobs: dict[int, JobInfo | None] = {}
        self.cancelled: list[int] = []
        self.submitted: list[tuple[tuple[str, ...], str, dict]] = []
        self.refuse = refuse

    def check(self) -> None:
        pass

    def submit(self, args, script, env) -> int:
        if self.refuse:
            raise self.refuse
        self.submitted.append((tuple(args), script, dict(env)))
        job_id = 100 + len(self.submitted)
        self.jobs[job_id] = info(job_id, "PENDING", reason="Priority")
        return job_id

    def job(self, job_id: int) -> JobInfo | None:
        return self.jobs.get(job_id)

    def cancel(self, job_id: int) -> None:
        self.cancelled.append(job_id)


def info(job_id: int, state: str, *, reason: str | None = None, exit_code: str = "0:0",
         node: str | None = "node7", restarts: int = 0) -> JobInfo:
    return JobInfo(job_id, state, reason, node, "gpu", exit_code, restarts, None)


def _submit(db, tmp_path, slurm: FakeSlurm, **settings) -> int:
    s = SlurmSettings(log_dir=str(tmp_path / "logs"), workdir=str(tmp_path), **settings)
    return submit_run(db, normalise(run_spec(device="cpu")), settings=s, slurm=slurm,
                      environ={}).run_id


def _run(db, run_id: int) -> Run:
    with db.session() as s:
        return s.get(Run, run_id)


def test_workers_neither_claim_nor_recover_a_slurm_run(db):
    rid = queue.enqueue_run(db, run_spec(), executor="slurm")
    plain = queue.enqueue_run(db, run_spec())
    assert queue.claim_next_run(db, "w:1")[0] == plain  # the Slurm run is older, and skipped
    assert queue.claim_next_run(db, "w:1") is None
    assert queue.claim_run(db, rid, "node:5:slurm9") is not None  # its own job takes it
    with db.session(write=True) as s:
        s.get(Run, rid).heartbeat_at = utcnow() - timedelta(hours=1)
    assert queue.recover_stale_runs(db, 60) == []  # an hour without heartbeat: Slurm's call
    assert _run(db, rid).status == "running"
    assert queue.recover_dead_runs(db, "node", lambda pid: False) == []
    with pytest.raises(ValueError):
        queue.enqueue_run(db, run_spec(), executor="kubernetes")


def test_a_submitted_run_is_reconciled_through_its_jobs_life(db, tmp_path):
    slurm = FakeSlurm()
    rid = _submit(db, tmp_path, slurm, partition="gpu")
    args, script, env = slurm.submitted[0]
    assert f"--run-id {rid}" in script and "COMPILELAB_DB" in env
    job = slurm_jobs.job_of(db, rid)
    assert job["job_id"] == 101 and job["log_path"].endswith(f"compilelab-run-{rid}-101.out")
    reconcile(db, slurm)
    job = slurm_jobs.job_of(db, rid)
    assert (job["state"], job["reason"]) == ("PENDING", "Priority")
    assert _run(db, rid).status == "queued"
    assert queue.claim_run(db, rid, "node7:42:slurm101") is not None
    slurm.jobs[101] = info(101, "RUNNING")
    reconcile(db, slurm)
    assert slurm_jobs.job_of(db, rid)["node"] == "node7" and _run(db, rid).status == "running"
    slurm.jobs[101] = info(101, "TIMEOUT", exit_code="0:15")
    (change,) = reconcile(db, slurm)
    run = _run(db, rid)
    assert run.status == "failed" and run.error.startswith("time limit: Slurm stopped job 101")
    assert change.run_id == rid and slurm_jobs.job_of(db, rid)["state"] == "TIMEOUT"
    assert reconcile(db, slurm) == []  # nothing left to do: the job has ended, so has the run


def test_a_requeued_job_puts_its_running_run_back_in_the_queue(db, tmp_path):
    slurm = FakeSlurm()
    rid = _submit(db, tmp_path, slurm)
    queue.claim_run(db, rid, "node7:42:slurm101")
    slurm.jobs[101] = info(101, "PENDING", reason="BeginTime", restarts=1)
    reconcile(db, slurm)
    assert _run(db, rid).status == "queued" and slurm_jobs.job_of(db, rid)["restarts"] == 1
    # A restart of the same job releases a claim its earlier start left (the node died).
    queue.claim_run(db, rid, "node7:42:slurm101")
    assert not slurm_jobs.back_to_queue(db, rid, job_id=555)  # another job's claim: kept
    assert slurm_jobs.back_to_queue(db, rid, job_id=101)
    assert _run(db, rid).status == "queued"


def test_cancels_both_ways(db, tmp_path):
    slurm = FakeSlurm()
    rid = _submit(db, tmp_path, slurm)
    assert queue.request_cancel(db, rid) == "cancelled"
    assert cancel_job(db, rid, slurm) == "Slurm job 101 cancelled (scancel)"
    assert slurm.cancelled == [101]
    slurm.cancelled.clear()
    reconcile(db, slurm)  # the job still pending: the reconciler cancels it again
    assert slurm.cancelled == [101]
    slurm.jobs[101] = info(101, "CANCELLED", exit_code="0:15")
    reconcile(db, slurm)
    assert _run(db, rid).status == "cancelled" and reconcile(db, slurm) == []

    outside = _submit(db, tmp_path, slurm)  # job 102, cancelled with scancel by someone
    queue.claim_run(db, outside, "node7:43:slurm102")
    slurm.jobs[102] = info(102, "CANCELLED", exit_code="0:15")
    reconcile(db, slurm)
    run = _run(db, outside)
    assert run.status == "cancelled"
    assert run.error == "its Slurm job 102 was cancelled outside Compile Lab (scancel)"


def test_a_job_that_ended_without_a_word_is_explained_by_its_log(db, tmp_path):
    slurm = FakeSlurm()
    rid = _submit(db, tmp_path, slurm)
    log = slurm_jobs.job_of(db, rid)["log_path"]
    with open(log, "w") as f:
        f.write("compilelab: Slurm job 101 (start 1) on node7 for run 1\n"
                "12:00:01 compilelab.slurm.job cannot reach the database after 120 s: refused\n")
    slurm.jobs[101] = info(101, "FAILED", exit_code="3:0")
    reconcile(db, slurm)
    assert _run(db, rid).error == (
        "Slurm job 101 could not reach the database from node7; its log ends: 12:00:01 "
        "compilelab.slurm.job cannot reach the database after 120 s: refused")


def test_a_job_slurm_forgot_and_a_run_never_submitted_both_fail(db, tmp_path):
    slurm = FakeSlurm()
    rid = _submit(db, tmp_path, slurm)
    reconcile(db, slurm)
    slurm.jobs[101] = None  # past MinJobAge, no accounting
    reconcile(db, slurm)
    run = _run(db, rid)
    assert run.status == "failed" and "gone from Slurm (last seen PENDING)" in run.error
    assert slurm_jobs.job_of(db, rid)["state"] == "GONE"

    stuck = queue.enqueue_run(db, run_spec(), executor="slurm")  # sbatch never answered
    assert reconcile(db, slurm) == []  # young: its submitter may still be waiting for sbatch
    with db.session(write=True) as s:
        s.get(Run, stuck).created_at = utcnow() - timedelta(hours=1)
    reconcile(db, slurm)
    assert "never handed to Slurm" in _run(db, stuck).error


def test_slurm_unreachable_changes_nothing_and_refresh_says_so(db, tmp_path):
    slurm = FakeSlurm()
    rid = _submit(db, tmp_path, slurm)

    def down(job_id):
        raise SlurmUnavailable("scontrol did not answer within 30 s")

    slurm.job = down
    with pytest.raises(SlurmUnavailable):
        reconcile(db, slurm)
    assert _run(db, rid).status == "queued"
    assert "did not answer" in refresh(db, rid, min_interval_s=0, slurm=slurm)
    assert refresh(db, rid, min_interval_s=60, slurm=slurm) is None  # asked a moment ago
    assert refresh(db, queue.enqueue_run(db, run_spec()), min_interval_s=0, slurm=slurm) is None


def test_bad_settings_and_a_missing_slurm_store_nothing(db, tmp_path):
    spec = normalise(run_spec(device="cpu"))
    with pytest.raises(SettingsError, match="setting partition"):
        submit_run(db, spec, environ={"COMPILELAB_SLURM_PARTITION": "a b"}, slurm=FakeSlurm())
    empty = tmp_path / "bin"
    empty.mkdir()
    with pytest.raises(SlurmUnavailable, match="Slurm is not installed here"):
        submit_run(db, spec, settings=SlurmSettings(log_dir=str(tmp_path)),
                   slurm=Slurm(bin_dir=str(empty)))
    (empty / "scontrol").write_text("#!/bin/sh\n")
    (empty / "scontrol").chmod(0o755)
    with pytest.raises(SlurmUnavailable, match="sbatch is missing"):
        submit_run(db, spec, settings=SlurmSettings(log_dir=str(tmp_path)),
                   slurm=Slurm(bin_dir=str(empty)))
    with db.session() as s:
        assert s.query(Run).count() == 0


def test_a_refused_job_leaves_a_failed_run_and_nothing_queued(db, tmp_path):
    slurm = FakeSlurm(refuse=SubmissionRefused("Invalid partition name specified"))
    with pytest.raises(Refused) as e:
        _submit(db, tmp_path, slurm, partition="nosuch")
    assert "Invalid partition name specified (partition nosuch)" in str(e.value)
    run = _run(db, e.value.run_id)
    assert run.status == "failed" and run.error.startswith("sbatch refused the job")
    assert slurm_jobs.job_of(db, run.id) is None and reconcile(db, slurm) == []


def test_the_job_database_url_is_absolute_and_never_in_memory(tmp_path):
    from engine.slurm.submit import job_database_url
    from storage import open_database

    s = SlurmSettings()
    db = open_database(f"sqlite:///{tmp_path / 'a.db'}")
    assert job_database_url(db, s) == f"sqlite:///{tmp_path / 'a.db'}"
    assert job_database_url(db, replace(s, job_db="postgresql://n/x")) == "postgresql://n/x"
    with pytest.raises(SettingsError, match="in-memory"):
        job_database_url(open_database("sqlite://"), s)
