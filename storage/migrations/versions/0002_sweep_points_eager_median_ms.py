"""sweep_points.eager_median_ms: the paired eager median at each sweep value.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02

The engine's child sends ``eager_median_ms`` with every sweep point (eager measured in the same
interleaved rounds as the variant at that value); until now storage dropped it. Nullable: rows
written before this revision, and eager's own sweep points, have no paired value.

Upgrade adds the column in place on both backends (SQLite's ALTER TABLE ADD COLUMN, no table
rebuild), so existing rows are kept untouched with NULL in the new column. Downgrade drops it
(SQLite rebuilds the table in batch mode, keeping the other columns' data).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sweep_points") as batch_op:
        batch_op.add_column(sa.Column("eager_median_ms", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sweep_points") as batch_op:
        batch_op.drop_column("eager_median_ms")
