"""The reconciler: Slurm's view of each job against the runs table, so no run outlives its job.

For every Slurm run still queued or running (and every finished one whose job Slurm had not yet
reported ended), it asks the controller about the job (``scontrol show job``), stores what it
said (state, pending reason, node, exit code) and applies ``engine.slurm.states.decide``: end
the run with the reason, queue it again after a requeue, or ``scancel`` a job whose run was
cancelled. A run stored for Slurm whose submitter never got a job id is failed after a while.

It runs wherever someone looks: ``python -m engine show`` of a Slurm run, the dashboard's
progress views (``refresh``, at most every few seconds), and ``python -m engine slurm reconcile
[--watch S]`` for a cron job or a loop. Any number of reconcilers may run at once: each change
is one conditional statement on the run (``finish_run`` only ends a queued or running run).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from engine.slurm.commands import JobInfo, Slurm, SlurmError
from engine.slurm.states import ENDED, UNSUBMITTED_AFTER_S, Action, decide

LOG_TAIL_CHARS = 300
# Endings whose why is in the job's own output (an exit code, a signal from the node): the
# failure quotes the log's last line. A time limit or a node failure is said by the state.
EXPLAINED_BY_LOG = frozenset({"FAILED", "COMPLETED", "SPECIAL_EXIT"})
_last_refresh: dict[tuple[str, int], float] = {}


@dataclass(frozen=True)
class Change:
    run_id: int
    job_id: int | None
    what: str  # one line: "failed: time limit: ...", "queued again: ...", "scancel"


def _log_tail(path: str | None) -> str | None:
    """The job log's last line, when this host can read it (a shared filesystem)."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(f.tell() - 4096, 0))
            lines = [ln.strip() for ln in f.read().decode("utf-8", "replace").splitlines()]
    except OSError:
        return None
    from contract.text import one_line

    lines = [ln for ln in lines if ln]
    return one_line(lines[-1], LOG_TAIL_CHARS) if lines else None


def _with_log(error: str, job: dict[str, Any], info: JobInfo | None) -> str:
    tail = _log_tail(job.get("log_path") or (info.std_out if info else None))
    return f"{error}; its log ends: {tail}" if tail else error


def _unsubmitted(db: Any, run: dict[str, Any], now: Any) -> Change | None:
    from storage import queue

    if run["status"] not in ("queued", "running") or \
            now - run["created_at"] < timedelta(seconds=UNSUBMITTED_AFTER_S):
        return None
    error = ("never handed to Slurm: the process that stored it stopped before sbatch "
             "answered")
    if queue.finish_run(db, run["run_id"], "failed", error=error):
        return Change(run["run_id"], None, f"failed: {error}")
    return None


def _apply(db: Any, run: dict[str, Any], info: JobInfo | None, action: Action,
           slurm: Slurm) -> Change | None:
    from storage import queue, slurm_jobs

    job = run["job"]
    rid, jid = run["run_id"], job["job_id"]
    if action.kind == "finish":
        error = action.error or ""
        if action.status == "failed" and info is not None and info.state in EXPLAINED_BY_LOG:
            error = _with_log(error, job, info)
        if queue.finish_run(db, rid, str(action.status), error=error):
            return Change(rid, jid, f"{action.status}: {error}")
    elif action.kind == "requeue":
        if slurm_jobs.back_to_queue(db, rid):
            return Change(rid, jid, f"queued again: Slurm requeued job {jid} ({info and info.state})")
    elif action.kind == "scancel":
        slurm.cancel(jid)
        return Change(rid, jid, f"scancel: the run is cancelled, so is Slurm job {jid}")
    return None


def reconcile(db: Any, slurm: Slurm | None = None, run_ids: list[int] | None = None,
              log: Callable[[str], None] | None = None) -> list[Change]:
    """One pass over the Slurm runs (all, or ``run_ids``); the changes made. SlurmUnavailable
    when the controller cannot be asked (nothing is changed on its account)."""
    from storage import slurm_jobs
    from storage.models import utcnow

    slurm = slurm or Slurm()
    changes: list[Change] = []
    for run in slurm_jobs.runs_to_reconcile(db, ENDED, run_ids):
        job = run["job"]
        if job is None:
            change = _unsubmitted(db, run, utcnow())
        else:
            info = slurm.job(int(job["job_id"]))
            slurm_jobs.observe(
                db, run["run_id"], state=info.state if info else "GONE",
                reason=info.reason if info and info.state not in ENDED else None,
                node=info.node if info else None, exit_code=info.exit_code if info else None,
                restarts=info.restarts if info else None,
                partition=info.partition if info else None)
            action = decide(run["status"], run["cancel_requested"], info,
                            limit_min=job.get("time_limit_min"), last_state=job.get("state"))
            change = _apply(db, run, info, action, slurm)
        if change:
            changes.append(change)
            if log:
                log(f"run {change.run_id}: {change.what}")
    return changes


def refresh(db: Any, run_id: int, *, min_interval_s: float = 5.0,
            slurm: Slurm | None = None) -> str | None:
    """Reconcile one run if it is Slurm's and was not refreshed in this process within
    ``min_interval_s`` (a page that redraws every second asks Slurm every few seconds). None,
    or one line saying why Slurm could not be asked (the run is left as it is)."""
    from storage import slurm_jobs

    key = (str(getattr(db, "url", "")), int(run_id))
    now = time.monotonic()
    if now - _last_refresh.get(key, -1e9) < min_interval_s:
        return None
    _last_refresh[key] = now
    if not slurm_jobs.is_slurm_run(db, run_id):
        return None
    try:
        reconcile(db, slurm, [run_id])
    except SlurmError as e:
        return f"Slurm could not be asked about this run's job: {e}"
    return None
