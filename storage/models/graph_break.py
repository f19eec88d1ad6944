"""The ``graph_breaks`` table: where and why dynamo split a variant's graph, de-duplicated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import ForeignKey, Integer, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from storage.models.base import Base

if TYPE_CHECKING:
    from storage.models.variant_result import VariantResult


class GraphBreak(Base):
    """One distinct graph break (reason + user file:line) and how often it happened."""

    __tablename__ = "graph_breaks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    variant_result_id: Mapped[int] = mapped_column(
        ForeignKey("variant_results.id", ondelete="CASCADE"), index=True
    )
    # Order within the variant as the engine reported it (ids alone would not survive import).
    position: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str | None] = mapped_column(Text)
    file: Mapped[str | None] = mapped_column(Text)
    line: Mapped[int | None] = mapped_column(Integer)
    count: Mapped[int | None] = mapped_column(Integer)

    variant_result: Mapped[VariantResult] = relationship(back_populates="graph_breaks")
