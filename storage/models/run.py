"""The ``runs`` table: one requested measurement, and at the same time the work queue.

A run is enqueued by the dashboard or the CLI (status ``queued``), claimed by a worker
(``running``, with ``worker_id`` and a ``heartbeat_at`` it keeps fresh) and finished as ``done``,
``failed`` or ``cancelled``. Keeping the queue in the same table as the results means there is no
second system to keep consistent: the database's own locking is the queue's locking.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Boolean, CheckConstraint, Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from storage.models.base import RUN_STATUSES, Base, json_column_type

if TYPE_CHECKING:
    from storage.models.run_tag import RunTag
    from storage.models.variant_result import VariantResult

_STATUS_LIST = ", ".join(f"'{s}'" for s in RUN_STATUSES)


class Run(Base):
    """One model configuration measured under several variants (see docs/CONTRACTS.md)."""

    __tablename__ = "runs"
    __table_args__ = (
        CheckConstraint(f"status IN ({_STATUS_LIST})", name="status_valid"),
        CheckConstraint("attempts >= 0", name="attempts_non_negative"),
        # The claim query walks queued runs oldest first; this index makes it a short range scan
        # however long the history grows.
        Index("ix_runs_status_created_at", "status", "created_at", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(index=True)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    # Not indexed alone: ix_runs_status_created_at starts with status and serves status filters.
    status: Mapped[str] = mapped_column(String(16))

    # Copied out of the spec at enqueue time so the runs page can filter without parsing JSON.
    model: Mapped[str] = mapped_column(String(512), index=True)
    dims: Mapped[dict[str, Any]] = mapped_column(json_column_type())
    dtype: Mapped[str] = mapped_column(String(32))
    device: Mapped[str] = mapped_column(String(32), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(json_column_type())
    # What the run needs beyond its device, copied from the spec (RunSpec.require_gpu /
    # require_torch) so that the claim query can match them against the claiming worker: a GPU
    # model (exact name) and a torch release (a prefix such as "2.11"); None accepts any.
    require_gpu: Mapped[str | None] = mapped_column(String(256))
    require_torch: Mapped[str | None] = mapped_column(String(64))
    # Who carries the run out: None, any worker that claims it from the queue; "slurm", the
    # Slurm batch job submitted for it (storage/slurm_jobs.py), which claims exactly this run:
    # workers never claim such a run, nor recover it (the Slurm reconciler does).
    executor: Mapped[str | None] = mapped_column(String(16))

    error: Mapped[str | None] = mapped_column(Text)
    note: Mapped[str] = mapped_column(Text, default="")

    # Environment fingerprint written by the worker; gpu and torch_version are denormalised from
    # it because the runs page filters on them.
    environment: Mapped[dict[str, Any] | None] = mapped_column(json_column_type())
    gpu: Mapped[str | None] = mapped_column(String(256), index=True)
    torch_version: Mapped[str | None] = mapped_column(String(64))

    # Queue bookkeeping. ``attempts`` counts claims: a run lost by its worker is re-queued while
    # it has been claimed fewer than twice, then failed with "worker lost".
    worker_id: Mapped[str | None] = mapped_column(String(256))
    heartbeat_at: Mapped[datetime | None]
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    progress_variant: Mapped[str | None] = mapped_column(String(64))
    progress_phase: Mapped[str | None] = mapped_column(String(64))
    progress_fraction: Mapped[float | None] = mapped_column(Float)

    tags: Mapped[list[RunTag]] = relationship(
        back_populates="run", cascade="all, delete-orphan", passive_deletes=True
    )
    variants: Mapped[list[VariantResult]] = relationship(
        back_populates="run",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="VariantResult.id",
    )
