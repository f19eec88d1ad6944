"""runs.executor and the slurm_jobs table: runs carried out by a Slurm batch job.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06

* ``runs.executor``: None for a run any worker may claim (every run so far), ``'slurm'`` for a
  run handed to Slurm, whose batch job claims exactly that run; workers neither claim nor
  recover such runs. Nullable, so existing runs are claimed exactly as before.
* ``slurm_jobs``: one row per Slurm run once ``sbatch`` answered: the job id, the partition,
  the time limit, the job's log path, and what the reconciler last saw (state, pending reason,
  node, exit code, restarts). ``ON DELETE CASCADE`` with its run.

Upgrade adds the column in place (no table rebuild on SQLite: migration 0004 says why that
matters); downgrade drops the table and the column with a plain ``ALTER TABLE ... DROP COLUMN``.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch_op:
        batch_op.add_column(sa.Column("executor", sa.String(length=16), nullable=True))
    op.create_table(
        "slurm_jobs",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("partition", sa.String(length=64), nullable=True),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("time_limit_min", sa.Integer(), nullable=True),
        sa.Column("log_path", sa.String(length=1024), nullable=True),
        sa.Column("state", sa.String(length=32), nullable=True),
        sa.Column("reason", sa.String(length=256), nullable=True),
        sa.Column("node", sa.String(length=256), nullable=True),
        sa.Column("exit_code", sa.String(length=32), nullable=True),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_slurm_jobs_run_id_runs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_slurm_jobs")),
    )
    op.create_index(op.f("ix_slurm_jobs_job_id"), "slurm_jobs", ["job_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_slurm_jobs_job_id"), table_name="slurm_jobs")
    op.drop_table("slurm_jobs")
    op.execute("ALTER TABLE runs DROP COLUMN executor")
