"""recompiles.phase: when in the measuring process a recompile happened.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-07

The engine's child records, with each recompile, the phase it happened in when that is not a
warm-up call or a sweep value (``steady``: the timed rounds; ``decode``: llama_decode's
generations; ``generate``: transformers' generate(); ``mix``: the shape-mix replay;
``profile``: the profiling pass). Storage dropped the key with a warning on
every such run; a recompile while timing means the timed calls held a compile, which a reader
must see. Nullable: rows written before this revision, and recompiles placed by call index or
sweep value, have none.

Upgrade adds the column in place on both backends; downgrade drops it (SQLite rebuilds the
table in batch mode, keeping the other columns' data).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("recompiles") as batch_op:
        batch_op.add_column(sa.Column("phase", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("recompiles") as batch_op:
        batch_op.drop_column("phase")
