"""seeds: a job's seed takes any value 0..4294967295 (a create may give one), beyond int32

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.alter_column(
            "seed", type_=sa.BigInteger(), existing_type=sa.Integer(), existing_nullable=False
        )


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.alter_column(
            "seed", type_=sa.Integer(), existing_type=sa.BigInteger(), existing_nullable=False
        )
