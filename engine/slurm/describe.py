"""A Slurm run's job in words, for ``show`` and the dashboard: ``job 12``, ``PENDING
(Priority)``, ``node gpu03``, ``exit 0:9``, ``partition gpu``, ``limit 30 min``."""

from __future__ import annotations

from typing import Any


def job_parts(job: dict[str, Any]) -> list[str]:
    """The job row of storage/slurm_jobs.py as short phrases (what the reconciler last saw)."""
    state = str(job.get("state") or "?")
    waiting = f" ({job['reason']})" if job.get("reason") and state == "PENDING" else ""
    parts = [f"job {job.get('job_id')}", f"{state}{waiting}"]
    if job.get("node"):
        parts.append(f"node {job['node']}")
    if job.get("exit_code") and state not in ("SUBMITTED", "PENDING", "RUNNING"):
        parts.append(f"exit {job['exit_code']}")
    parts.append(f"partition {job.get('partition') or '(default)'}")
    if job.get("time_limit_min"):
        parts.append(f"limit {job['time_limit_min']} min")
    if job.get("restarts"):
        parts.append(f"restarted {job['restarts']}x")
    return parts
