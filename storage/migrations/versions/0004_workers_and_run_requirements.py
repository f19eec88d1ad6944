"""workers table (connected engine workers and their hardware); runs.require_gpu/require_torch.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-04

Two things the dashboard and the queue need to send runs to the right machine:

* ``workers``: one row per running worker (registered at start, heartbeat every few seconds,
  deleted on a clean stop) with the devices, GPU model and memory and torch release it has.
  The New run page reads it instead of guessing the hardware from past runs' environments.
* ``runs.require_gpu`` / ``runs.require_torch``: what a run needs beyond its device (a GPU
  model, a torch release prefix), copied from its spec at enqueue time so the claim query can
  match them against the claiming worker. Nullable (any), so existing runs keep being claimable
  exactly as before.

Upgrade adds the columns in place (no table rebuild on SQLite); downgrade drops them with a plain
``ALTER TABLE ... DROP COLUMN`` (PostgreSQL; SQLite 3.35+) and drops the ``workers`` table.
Not batch mode: on SQLite it rebuilds ``runs`` by dropping the old table, and with foreign keys
on, that drop cascades to every variant result.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("worker_id", sa.String(length=256), nullable=False),
        sa.Column("host", sa.String(length=256), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("devices", sa.JSON(), nullable=False),
        sa.Column("gpu_name", sa.String(length=256), nullable=True),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("gpu_memory_bytes", sa.BigInteger(), nullable=True),
        sa.Column("torch_version", sa.String(length=64), nullable=True),
        sa.Column("current_run_id", sa.Integer(), nullable=True),
        sa.Column("info", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("worker_id", name=op.f("pk_workers")),
    )
    op.create_index(op.f("ix_workers_heartbeat_at"), "workers", ["heartbeat_at"])
    with op.batch_alter_table("runs") as batch_op:
        batch_op.add_column(sa.Column("require_gpu", sa.String(length=256), nullable=True))
        batch_op.add_column(sa.Column("require_torch", sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE runs DROP COLUMN require_torch")
    op.execute("ALTER TABLE runs DROP COLUMN require_gpu")
    op.drop_index(op.f("ix_workers_heartbeat_at"), table_name="workers")
    op.drop_table("workers")
