"""artifacts table: files a run keeps (the TORCH_TRACE log of a compiled variant, gzipped).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03

One row per (run, variant, kind) with the bytes, their size, a name and a note (for example
that the log was cut at the size cap). ``ON DELETE CASCADE``: deleting a run deletes its
artifacts. A new table only, so upgrade and downgrade touch nothing that exists.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "artifacts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("variant", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=256), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_artifacts_run_id_runs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_artifacts")),
        sa.UniqueConstraint("run_id", "variant", "kind",
                            name=op.f("uq_artifacts_run_id_variant_kind")),
    )
    op.create_index(op.f("ix_artifacts_run_id"), "artifacts", ["run_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_artifacts_run_id"), table_name="artifacts")
    op.drop_table("artifacts")
