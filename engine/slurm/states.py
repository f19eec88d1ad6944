"""What a Slurm job's state means for its run: the reconciler's rules as one pure function.

A job that still lives leaves its run alone, except that a running run whose job Slurm put back
in the queue (preempted or its node failed, with requeue) is queued again for the job's next
start, and a job whose run was cancelled in Compile Lab is cancelled too. A job that ended while
its run is still queued or running ends the run, with the reason in words: the time limit, a
node failure, a preemption, a signal, a job that could not reach the database, a job cancelled
outside Compile Lab. A job Slurm no longer knows (ended longer ago than MinJobAge, and no
accounting to ask) ends its run as failed, saying so.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.slurm.commands import JobInfo, signal_name

# Job states after which nothing more happens to the job (Slurm's JOB_STATE_BASE values and
# the ended flags scontrol prints); "GONE" is ours: the controller no longer knows the job.
ENDED = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                   "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED", "GONE"})
# Back in Slurm's queue (after a requeue): the run waits for the job's next start.
WAITING = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})

EXIT_NO_DATABASE = 3  # engine/slurm/job.py: the job could not reach the database
EXIT_NO_WORKDIR = 4  # the batch script could not enter the checkout
# A run left queued with no job row this long after it was stored: its submitter stopped
# before sbatch answered (sbatch's own timeout is far shorter).
UNSUBMITTED_AFTER_S = 300.0


@dataclass(frozen=True)
class Action:
    """``kind``: "none", "finish" (end the run as ``status`` with ``error``), "requeue" (the run
    back to the queue) or "scancel" (cancel the job: its run is over)."""

    kind: str
    status: str | None = None
    error: str | None = None


NOTHING = Action("none")


def _ended_how(job: JobInfo) -> str:
    """The exit in words: ``killed by signal 9 (SIGKILL)``, ``exit code 1``."""
    if job.signal:
        return f"killed by signal {job.signal} ({signal_name(job.signal)})"
    return f"exit code {job.exit_status}" if job.exit_status is not None else "no exit code"


def _failure(job: JobInfo, limit_min: int | None) -> str:
    j, node = job.job_id, job.node or "its node"
    state = job.state
    if state == "TIMEOUT":
        limit = f" of {limit_min} min" if limit_min else ""
        return (f"time limit: Slurm stopped job {j} at its limit{limit} (the run's estimate "
                "with a margin, capped by the max_time_min setting)")
    if state == "NODE_FAIL":
        return f"node failure: {node} failed while it ran Slurm job {j}"
    if state == "PREEMPTED":
        return (f"preempted: Slurm job {j} gave {node} to a higher-priority job and was not "
                "requeued (the partition's PreemptMode ends preempted jobs)")
    if state == "BOOT_FAIL":
        return f"node boot failure: {node} did not boot for Slurm job {j}"
    if state == "DEADLINE":
        return f"deadline: Slurm job {j} passed its deadline"
    if state == "OUT_OF_MEMORY":
        return f"out of memory: Slurm job {j} went over its memory limit (the mem setting)"
    if job.exit_status == EXIT_NO_DATABASE:
        return f"Slurm job {j} could not reach the database from {node}"
    if job.exit_status == EXIT_NO_WORKDIR:
        return f"Slurm job {j} could not enter the Compile Lab checkout (workdir) on {node}"
    if job.signal:
        return f"Slurm job {j} was {_ended_how(job)} on {node}"
    if state == "COMPLETED":
        return f"Slurm job {j} ended ({_ended_how(job)}) without finishing the run"
    return f"Slurm job {j} ended {state} ({_ended_how(job)}) on {node}"


def decide(status: str, cancel_requested: bool, job: JobInfo | None, *,
           limit_min: int | None = None, last_state: str | None = None) -> Action:
    """The reconciler's move for a run in ``status`` whose job Slurm describes as ``job``
    (None: Slurm no longer knows it; ``last_state``: what it said last time)."""
    active = status in ("queued", "running")
    if job is None:
        if not active:
            return NOTHING
        if cancel_requested:
            return Action("finish", "cancelled", "cancelled by the user")
        seen = f" (last seen {last_state})" if last_state and last_state != "SUBMITTED" else ""
        return Action("finish", "failed",
                      f"its Slurm job is gone from Slurm{seen}: it ended longer ago than the "
                      "controller keeps jobs (MinJobAge), so how it ended is unknown")
    if job.state not in ENDED:
        if status == "cancelled":
            return Action("scancel")
        if status == "running" and job.state in WAITING:
            return Action("requeue")
        return NOTHING
    if not active:
        return NOTHING
    if job.state == "CANCELLED" or cancel_requested:
        if cancel_requested:
            return Action("finish", "cancelled", "cancelled by the user")
        how = f", {_ended_how(job)}" if job.signal and job.signal != 15 else ""
        return Action("finish", "cancelled",
                      f"its Slurm job {job.job_id} was cancelled outside Compile Lab "
                      f"(scancel{how})")
    return Action("finish", "failed", _failure(job, limit_min))
