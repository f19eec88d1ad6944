"""The ``slurm_jobs`` table: the Slurm batch job that carries out a run submitted to Slurm.

A run submitted with ``--slurm`` (or "Run on: Slurm" in the dashboard) has ``runs.executor =
'slurm'`` and, once ``sbatch`` has answered, one row here: the job id and what the reconciler
(engine/slurm/reconcile.py) last saw of the job in Slurm (its state, the reason it waits, the
node it runs on, its exit code). The runs table stays the one source of truth for the run's
status; this row only says where the job is, so the dashboard and ``show`` can tell a user why a
run waits. ``ON DELETE CASCADE``: deleting a run deletes its job row.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base


class SlurmJob(Base):
    """One run's Slurm job (primary key: the run id; one job per run)."""

    __tablename__ = "slurm_jobs"

    run_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    job_id: Mapped[int] = mapped_column(BigInteger, index=True)
    partition: Mapped[str | None] = mapped_column(String(64))
    submitted_at: Mapped[datetime]
    time_limit_min: Mapped[int | None] = mapped_column(Integer)
    # The job's output file as sbatch was told (the reconciler quotes its last line when the job
    # ended without a word in the database, e.g. it could not reach the database).
    log_path: Mapped[str | None] = mapped_column(String(1024))
    # What Slurm said the last time the reconciler asked (None: not asked yet).
    state: Mapped[str | None] = mapped_column(String(32))
    reason: Mapped[str | None] = mapped_column(String(256))
    node: Mapped[str | None] = mapped_column(String(256))
    exit_code: Mapped[str | None] = mapped_column(String(32))
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    checked_at: Mapped[datetime | None]
