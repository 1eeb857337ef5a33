"""queue standing: the pending jobs' order per queue, and each queue's recent runs

Revision ID: 0010
Revises: 0012
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0012"
branch_labels = None
depends_on = None

PENDING = sa.text("status = 'pending'")


def upgrade() -> None:
    op.create_index(
        "ix_jobs_pending_queue_order",
        "jobs",
        ["queue", sa.text("coalesce(dispatched_at, created_at)"), "id"],
        unique=False,
        postgresql_where=PENDING,
        sqlite_where=PENDING,
    )
    op.create_index("ix_jobs_queue_finished", "jobs", ["queue", "finished_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_jobs_queue_finished", table_name="jobs")
    op.drop_index("ix_jobs_pending_queue_order", table_name="jobs")
