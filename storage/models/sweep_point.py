"""The ``sweep_points`` table: one value of the swept dim, measured within one variant."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Boolean, Float, ForeignKey, Integer
from sqlalchemy.orm import Mapped, mapped_column, relationship

from storage.models.base import Base

if TYPE_CHECKING:
    from storage.models.variant_result import VariantResult


class SweepPoint(Base):
    """Timings of one sweep value: its first call (compile or recompile), steady state, and the
    paired eager median at the same value."""

    __tablename__ = "sweep_points"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    variant_result_id: Mapped[int] = mapped_column(
        ForeignKey("variant_results.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int] = mapped_column(Integer)
    value: Mapped[float | None] = mapped_column(Float)
    first_call_ms: Mapped[float | None] = mapped_column(Float)
    median_ms: Mapped[float | None] = mapped_column(Float)
    p10_ms: Mapped[float | None] = mapped_column(Float)
    p90_ms: Mapped[float | None] = mapped_column(Float)
    n: Mapped[int | None] = mapped_column(Integer)
    recompiled: Mapped[bool | None] = mapped_column(Boolean)
    # Eager's median at this value, from the same interleaved rounds (migration 0002).
    eager_median_ms: Mapped[float | None] = mapped_column(Float)

    variant_result: Mapped[VariantResult] = relationship(back_populates="sweep_points")
