"""Runs carried out by Slurm batch jobs: their job rows, and the queue moves the reconciler makes.

A Slurm run is enqueued with ``executor='slurm'`` (``storage.queue.enqueue_run``), so no worker
claims it; once ``sbatch`` answers, ``record_submission`` keeps the job id. The job claims its
run with ``storage.queue.claim_run`` and measures it like any worker. The reconciler
(engine/slurm/reconcile.py) compares Slurm's view of each job with the run: ``observe`` stores
what Slurm said, ``storage.queue.finish_run`` ends a run whose job is gone, ``back_to_queue``
gives a running run back when Slurm requeued its job (preemption, node failure) so the job's
next start can claim it again.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from storage.db import Database
from storage.models import Run, SlurmJob, utcnow
from storage.queue_recovery import hand_back, select_queue_columns

SLURM = "slurm"  # runs.executor of a run handed to Slurm
JOB_SUFFIX = "slurm"  # a job's claimer id ends with ":slurm<JOBID>" (engine/slurm/job.py)

_TEXT_LIMITS = {"partition": 64, "log_path": 1024, "state": 32, "reason": 256, "node": 256,
                "exit_code": 32}


def _text(key: str, value: Any) -> str | None:
    """A value for a text column: Slurm's output is text from outside, cut to the column."""
    if value is None:
        return None
    return str(value)[: _TEXT_LIMITS[key]]


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def url_for_a_job(db: Database) -> str:
    """This database's URL as a batch job elsewhere opens it: with its password (the caller
    passes it in the job's environment, never on a command line), a relative SQLite path made
    absolute (the job starts in another folder). ValueError for an in-memory database."""
    url = db.engine.url
    if url.get_backend_name() == "sqlite":
        if not url.database or url.database == ":memory:" or "mode=memory" in str(url):
            raise ValueError("a Slurm job cannot reach an in-memory database: use a file on a "
                             "shared filesystem or PostgreSQL")
        url = url.set(database=str(Path(url.database).expanduser().resolve()))
    return url.render_as_string(hide_password=False)


def record_submission(db: Database, run_id: int, job_id: int, *, partition: str | None,
                      time_limit_min: int | None, log_path: str | None) -> None:
    """Keep the job id ``sbatch`` gave for ``run_id`` (one job per run: a second call for the
    same run replaces the row, as a resubmission would)."""
    if not isinstance(job_id, int) or isinstance(job_id, bool) or not 0 < job_id < 2**63:
        raise ValueError(f"a Slurm job id is a positive whole number, got {job_id!r}")
    with db.session(write=True) as session:
        row = session.get(SlurmJob, run_id) or SlurmJob(run_id=run_id)
        row.job_id = job_id
        row.partition = _text("partition", partition)
        row.time_limit_min = time_limit_min
        row.log_path = _text("log_path", log_path)
        row.submitted_at = utcnow()
        row.state, row.reason, row.node, row.exit_code = "SUBMITTED", None, None, None
        row.restarts = 0
        row.checked_at = None
        session.add(row)


def _job_dict(row: SlurmJob) -> dict[str, Any]:
    return {"job_id": row.job_id, "partition": row.partition, "state": row.state,
            "reason": row.reason, "node": row.node, "exit_code": row.exit_code,
            "restarts": row.restarts, "time_limit_min": row.time_limit_min,
            "log_path": row.log_path, "submitted_at": _iso(row.submitted_at),
            "checked_at": _iso(row.checked_at)}


def job_of(db: Database, run_id: int) -> dict[str, Any] | None:
    """The Slurm job of ``run_id`` as a plain dict, or None (not a Slurm run, or not submitted)."""
    with db.session() as session:
        row = session.get(SlurmJob, run_id)
        return None if row is None else _job_dict(row)


def is_slurm_run(db: Database, run_id: int) -> bool:
    with db.session() as session:
        return session.scalar(select(Run.executor).where(Run.id == run_id)) == SLURM


def runs_to_reconcile(db: Database, ended_states: frozenset[str],
                      run_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """Slurm runs the reconciler must look at: those still queued or running, and finished
    runs whose job Slurm had not yet reported ended (their job may need ``scancel``, or its
    final state is still to be seen). ``ended_states``: the job states after which nothing more
    can happen. Plain dicts: run fields plus ``job`` (None before sbatch answered)."""
    with db.session() as session:
        stmt = (select(Run.id, Run.status, Run.cancel_requested, Run.created_at, Run.worker_id,
                       SlurmJob)
                .outerjoin(SlurmJob, SlurmJob.run_id == Run.id)
                .where(Run.executor == SLURM)
                .where(Run.status.in_(("queued", "running"))
                       | (SlurmJob.run_id.is_not(None)
                          & (SlurmJob.state.is_(None) | SlurmJob.state.not_in(ended_states))))
                .order_by(Run.id))
        if run_ids is not None:
            stmt = stmt.where(Run.id.in_(run_ids))
        return [{"run_id": rid, "status": status, "cancel_requested": bool(cancel),
                 "created_at": created, "worker_id": worker,
                 "job": None if job is None else _job_dict(job)}
                for rid, status, cancel, created, worker, job in session.execute(stmt)]


def observe(db: Database, run_id: int, *, state: str, reason: str | None = None,
            node: str | None = None, exit_code: str | None = None,
            restarts: int | None = None, partition: str | None = None) -> None:
    """Store what Slurm said about ``run_id``'s job just now."""
    with db.session(write=True) as session:
        row = session.get(SlurmJob, run_id)
        if row is None:
            return
        row.state = _text("state", state)
        row.reason = _text("reason", reason)
        row.node = _text("node", node) if node else row.node  # keep where it ran once it ended
        row.exit_code = _text("exit_code", exit_code)
        if partition:  # the one Slurm chose when the settings named none
            row.partition = _text("partition", partition)
        if restarts is not None:
            row.restarts = max(int(restarts), 0)
        row.checked_at = utcnow()


def back_to_queue(db: Database, run_id: int, job_id: int | None = None) -> bool:
    """A running Slurm run whose job Slurm requeued (preempted, node failed): queued again, so
    the job's next start claims it. With ``job_id``, only when the run's claimer was an earlier
    start of that same job (the job itself, restarted, releasing its own stale claim). True if
    it did (a run whose cancel was pending ends cancelled instead). The claim is not counted as
    a failed attempt: the scheduler took the node away."""
    with db.session(write=True) as session:
        run = session.scalars(
            select_queue_columns()
            .where(Run.id == run_id, Run.status == "running", Run.executor == SLURM)
            .with_for_update()
        ).one_or_none()
        if run is None:
            return False
        if job_id is not None and not str(run.worker_id or "").endswith(f":{JOB_SUFFIX}{job_id}"):
            return False
        hand_back(run)
        return True
