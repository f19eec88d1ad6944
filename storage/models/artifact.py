"""The ``artifacts`` table: files a run keeps beside its results, such as the gzipped
``TORCH_TRACE`` log of a compiled variant's cold compile (engine/measure/torch_trace.py).

Bytes, not paths: nothing here is ever unpacked on the server. Deleting the run deletes its
artifacts (``ON DELETE CASCADE``). Bundles leave artifacts out (storage/bundle_export.py says so).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base, utcnow


class Artifact(Base):
    """One file of one variant of one run; a kind appears once per variant (saved again: the
    later bytes replace the earlier, as a re-measured variant's result does)."""

    __tablename__ = "artifacts"
    __table_args__ = (UniqueConstraint("run_id", "variant", "kind"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    variant: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(32))
    # As the engine named it; shown and offered as a download name only after sanitising.
    name: Mapped[str] = mapped_column(String(256))
    size: Mapped[int] = mapped_column(Integer)
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Last column: listings select the others and never load the bytes.
    content: Mapped[bytes] = mapped_column(LargeBinary)
