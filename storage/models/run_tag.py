"""The ``run_tags`` table: free-form labels a user attaches to runs ("baseline", "pr-1234")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from contract.text import MAX_TAG_LENGTH
from storage.models.base import Base

if TYPE_CHECKING:
    from storage.models.run import Run


class RunTag(Base):
    """One tag on one run; the pair is the primary key, so a tag appears once per run."""

    __tablename__ = "run_tags"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    # Indexed on its own for the runs page's "tag" filter (the primary key starts with run_id).
    tag: Mapped[str] = mapped_column(String(MAX_TAG_LENGTH), primary_key=True, index=True)

    run: Mapped[Run] = relationship(back_populates="tags")
