"""Hand a run to Slurm: store it (``executor='slurm'``: no worker claims it), ``sbatch`` its job,
keep the job id; and cancel a run's job (``scancel``) when the run is cancelled.

Everything that can be checked before a row is written is checked first (the settings, the
Slurm commands on PATH, the GPU constraint, the log folder, the database URL the job will
use), so a bad setting or a missing Slurm leaves nothing behind. A job ``sbatch`` refuses after
the run was stored (an unknown partition, a bad account: only the controller knows) ends the run
as failed with Slurm's reason: nothing is left queued.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.slurm.commands import Slurm, SlurmError, SlurmUnavailable, SubmissionRefused
from engine.slurm.script import DB_ENV, estimate_s, feature_for_gpu, plan_job, time_limit_min
from engine.slurm.settings import SettingsError, SlurmSettings, load_settings


@dataclass(frozen=True)
class Submitted:
    run_id: int
    job_id: int
    time_limit_min: int
    settings: SlurmSettings

    def text(self) -> str:
        return (f"run {self.run_id} submitted to Slurm as job {self.job_id} "
                f"({self.settings.summary()}; this run's limit {self.time_limit_min} min)")


class Refused(SlurmError):
    """sbatch refused the job of a stored run (now failed); the message is one line."""

    def __init__(self, run_id: int, reason: str) -> None:
        super().__init__(f"sbatch refused the job of run {run_id}: {reason} (run {run_id} is "
                         "stored as failed, nothing is queued)")
        self.run_id = run_id


def job_database_url(db: Any, settings: SlurmSettings) -> str:
    """The URL the job opens: the ``job_db`` setting, else this database's own
    (``storage.slurm_jobs.url_for_a_job``)."""
    from storage.slurm_jobs import url_for_a_job

    if settings.job_db:
        return settings.job_db
    try:
        return url_for_a_job(db)
    except ValueError as e:
        raise SettingsError(str(e)) from None


def _prepare(spec: Mapping[str, Any], settings: SlurmSettings, slurm: Slurm) -> None:
    """The checks that need no run id: before anything is stored."""
    slurm.check()
    if spec.get("require_gpu"):
        feature_for_gpu(str(spec["require_gpu"]), settings)
    try:
        os.makedirs(settings.log_dir, exist_ok=True)
    except OSError as e:
        raise SettingsError(f"Slurm setting log_dir: cannot create {settings.log_dir}: "
                            f"{e.strerror or e}") from None
    if not os.path.isdir(settings.workdir):
        raise SettingsError(f"Slurm setting workdir: {settings.workdir} is not a folder here "
                            "(the job starts in it; it must hold this checkout)")


def submit_run(db: Any, spec: dict[str, Any], *, tags: Iterable[str] = (), note: str = "",
               allow_user_models: bool = False, settings: SlurmSettings | None = None,
               slurm: Slurm | None = None, environ: Mapping[str, str] | None = None
               ) -> Submitted:
    """Store ``spec`` (normalised) as a Slurm run and submit its job. ``allow_user_models``:
    the job may run a file or module reference (the CLI's user typed it; never the
    dashboard's). SettingsError / SlurmUnavailable before anything is stored; Refused after."""
    from storage import queue, slurm_jobs
    from storage.history import process_seconds

    settings = settings or load_settings(environ)
    slurm = slurm or Slurm()
    _prepare(spec, settings, slurm)
    url = job_database_url(db, settings)
    try:
        history = process_seconds(db, spec["model"], spec["device"])
    except Exception:  # noqa: BLE001 - an estimate without history is still an estimate
        history = None
    minutes = time_limit_min(estimate_s(spec, history), settings)
    run_id = queue.enqueue_run(db, spec, tags=tags, note=note, executor=slurm_jobs.SLURM)
    job = plan_job(run_id, spec, settings, minutes=minutes, allow_user_models=allow_user_models,
                   environ=dict(environ if environ is not None else os.environ))
    env = {**(environ if environ is not None else os.environ), DB_ENV: url}
    try:
        job_id = slurm.submit(job.args, job.script, env)
    except (SubmissionRefused, SlurmUnavailable) as e:
        where = f" (partition {settings.partition})" if settings.partition and \
            "partition" in str(e).lower() else ""
        queue.finish_run(db, run_id, "failed", error=f"sbatch refused the job: {e}{where}")
        raise Refused(run_id, f"{e}{where}") from None
    slurm_jobs.record_submission(db, run_id, job_id, partition=settings.partition,
                                 time_limit_min=minutes,
                                 log_path=job.log_path.replace("%j", str(job_id)))
    return Submitted(run_id, job_id, minutes, settings)


def cancel_job(db: Any, run_id: int, slurm: Slurm | None = None) -> str | None:
    """After a cancel in Compile Lab: ``scancel`` the run's job if it may still live. A line
    saying what was done, or None for a run that is not Slurm's. A Slurm that cannot be reached
    is said in the line; the reconciler cancels the job later (its run is cancelled)."""
    from engine.slurm.states import ENDED
    from storage import slurm_jobs

    job = slurm_jobs.job_of(db, run_id)
    if job is None:
        return None
    if job.get("state") in ENDED:
        return f"its Slurm job {job['job_id']} had already ended"
    try:
        (slurm or Slurm()).cancel(int(job["job_id"]))
    except SlurmError as e:
        return f"could not cancel Slurm job {job['job_id']} now ({e}); it is cancelled later"
    return f"Slurm job {job['job_id']} cancelled (scancel)"
