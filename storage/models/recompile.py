"""The ``recompiles`` table: each time a compiled variant had to compile again, and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Float, ForeignKey, Integer, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from storage.models.base import Base

if TYPE_CHECKING:
    from storage.models.variant_result import VariantResult


class Recompile(Base):
    """One recompilation: the guard failure reason, the call it happened on, the dim value,
    or the phase of the process it happened in."""

    __tablename__ = "recompiles"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    variant_result_id: Mapped[int] = mapped_column(
        ForeignKey("variant_results.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str | None] = mapped_column(Text)
    call_index: Mapped[int | None] = mapped_column(Integer)
    # Dim values are sizes (ints) in practice; a float column also takes the odd fractional dim.
    dim_value: Mapped[float | None] = mapped_column(Float)
    # Where neither places it: "steady" (the timed rounds), "decode" or "generate" (token
    # generation after timing), "mix" (the shape-mix replay), "profile" (the profiling pass);
    # contract.recompile.PHASES says each in words.
    phase: Mapped[str | None] = mapped_column(Text)

    variant_result: Mapped[VariantResult] = relationship(back_populates="recompiles")
