"""baselines: the run or tag each configuration is judged against.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04

A new table, so upgrade leaves every existing row alone; downgrade drops it (pins are lost, runs
are not). ``config_key`` is contract.config_key's hash of a run's config, or "*" for a tag pinned
for every config; exactly one of ``run_id`` and ``tag`` is set (a check constraint). Deleting
the pinned run deletes its pin (ON DELETE CASCADE).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "baselines",
        sa.Column("config_key", sa.String(length=64), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("tag", sa.String(length=100), nullable=True),
        sa.Column("pinned_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("(run_id IS NULL) <> (tag IS NULL)",
                           name=op.f("ck_baselines_run_or_tag")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_baselines_run_id_runs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("config_key", name=op.f("pk_baselines")),
    )
    op.create_index(op.f("ix_baselines_run_id"), "baselines", ["run_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_baselines_run_id"), table_name="baselines")
    op.drop_table("baselines")
