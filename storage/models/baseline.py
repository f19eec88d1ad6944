"""The ``baselines`` table: which run a configuration is judged against.

One row per config (contract/config_key.py: the RunSpec without measurement budgets and variants),
pinning either one run (``run_id``) or a tag (``tag``: the latest finished run with that tag and
the same config is the baseline, so a nightly job that tags its runs moves the baseline forward
by itself). The row with ``config_key = "*"`` pins a tag for every config that has no row of its
own. Deleting the pinned run deletes its pin (a baseline that no longer exists is no baseline).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from contract.text import MAX_TAG_LENGTH
from storage.models.base import Base, json_column_type

ALL_CONFIGS = "*"


class Baseline(Base):
    """A pinned baseline: exactly one of ``run_id`` and ``tag`` is set."""

    __tablename__ = "baselines"
    __table_args__ = (
        CheckConstraint("(run_id IS NULL) <> (tag IS NULL)", name="run_or_tag"),
    )

    config_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    # The config itself, for display (the key is a hash).
    config: Mapped[dict[str, Any]] = mapped_column(json_column_type())
    run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    tag: Mapped[str | None] = mapped_column(String(MAX_TAG_LENGTH))
    pinned_at: Mapped[datetime]
