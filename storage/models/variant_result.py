"""The ``variant_results`` table: what one variant (eager or a compile mode) of a run measured.

Every scalar of the VariantResult JSON and of its ``stats`` is a column, so the dashboard can
query and sort on them; the per-call series stay JSON arrays because they are only ever read
whole. Column order matters on SQLite: the scalars come first and the large JSON/text columns
last, so scans over scalars never have to follow a row's overflow pages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from storage.models.base import VARIANT_STATUSES, Base, json_column_type

if TYPE_CHECKING:
    from storage.models.graph_break import GraphBreak
    from storage.models.recompile import Recompile
    from storage.models.run import Run
    from storage.models.sweep_point import SweepPoint

_STATUS_LIST = ", ".join(f"'{s}'" for s in VARIANT_STATUSES)


class VariantResult(Base):
    """One variant of one run. Saved as soon as the variant finishes, so a crash loses none."""

    __tablename__ = "variant_results"
    __table_args__ = (
        # Saving a variant twice (a re-queued run measured again) replaces the earlier row.
        UniqueConstraint("run_id", "variant"),
        CheckConstraint(f"status IN ({_STATUS_LIST})", name="status_valid"),
        # Covers the runs page's best-speedup aggregate: answered from the index alone.
        Index("ix_variant_results_run_speedup", "run_id", "status", "variant", "speedup"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    variant: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    failure_kind: Mapped[str | None] = mapped_column(String(32))
    timer: Mapped[str | None] = mapped_column(String(32))

    setup_s: Mapped[float | None] = mapped_column(Float)
    first_call_cold_s: Mapped[float | None] = mapped_column(Float)
    first_call_warm_s: Mapped[float | None] = mapped_column(Float)
    peak_allocated_bytes: Mapped[int | None] = mapped_column(BigInteger)
    peak_reserved_bytes: Mapped[int | None] = mapped_column(BigInteger)
    graph_count: Mapped[int | None] = mapped_column(Integer)
    graph_break_count: Mapped[int | None] = mapped_column(Integer)
    recompile_count: Mapped[int | None] = mapped_column(Integer)
    kernels_per_call: Mapped[float | None] = mapped_column(Float)
    eager_kernels_per_call: Mapped[float | None] = mapped_column(Float)
    device_busy_ms_per_call: Mapped[float | None] = mapped_column(Float)
    wall_ms_per_call: Mapped[float | None] = mapped_column(Float)
    max_abs_err: Mapped[float | None] = mapped_column(Float)
    max_rel_err: Mapped[float | None] = mapped_column(Float)
    atol: Mapped[float | None] = mapped_column(Float)
    rtol: Mapped[float | None] = mapped_column(Float)
    correct: Mapped[bool | None] = mapped_column(Boolean)

    # stats (added by engine/analysis/stats.py)
    median_ms: Mapped[float | None] = mapped_column(Float)
    mean_ms: Mapped[float | None] = mapped_column(Float)
    p10_ms: Mapped[float | None] = mapped_column(Float)
    p90_ms: Mapped[float | None] = mapped_column(Float)
    iqr_ms: Mapped[float | None] = mapped_column(Float)
    n: Mapped[int | None] = mapped_column(Integer)
    noisy: Mapped[bool | None] = mapped_column(Boolean)
    pipelined_median_ms: Mapped[float | None] = mapped_column(Float)
    eager_median_ms: Mapped[float | None] = mapped_column(Float)
    eager_pipelined_median_ms: Mapped[float | None] = mapped_column(Float)
    speedup: Mapped[float | None] = mapped_column(Float)
    speedup_ci_low: Mapped[float | None] = mapped_column(Float)
    speedup_ci_high: Mapped[float | None] = mapped_column(Float)
    # A call count, but kept as a float: it is a ratio of times and may be fractional upstream.
    break_even_calls: Mapped[float | None] = mapped_column(Float)

    # Large values last (see module docstring).
    error: Mapped[str | None] = mapped_column(Text)
    compile_phases_s: Mapped[dict[str, Any] | None] = mapped_column(json_column_type())
    cudagraph_skips: Mapped[list[Any] | None] = mapped_column(json_column_type())
    # Keys of the result (or of its stats) that this schema has no column for yet: kept rather
    # than dropped, so a newer engine never loses data through an older storage.
    extra: Mapped[dict[str, Any] | None] = mapped_column(json_column_type())
    warmup_ms: Mapped[list[Any] | None] = mapped_column(json_column_type())
    samples_ms: Mapped[list[Any] | None] = mapped_column(json_column_type())
    eager_samples_ms: Mapped[list[Any] | None] = mapped_column(json_column_type())
    pipelined_ms: Mapped[list[Any] | None] = mapped_column(json_column_type())
    eager_pipelined_ms: Mapped[list[Any] | None] = mapped_column(json_column_type())
    stderr_tail: Mapped[str | None] = mapped_column(Text)

    run: Mapped[Run] = relationship(back_populates="variants")
    graph_breaks: Mapped[list[GraphBreak]] = relationship(
        back_populates="variant_result",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="GraphBreak.position",
    )
    recompiles: Mapped[list[Recompile]] = relationship(
        back_populates="variant_result",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Recompile.position",
    )
    sweep_points: Mapped[list[SweepPoint]] = relationship(
        back_populates="variant_result",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="SweepPoint.position",
    )
