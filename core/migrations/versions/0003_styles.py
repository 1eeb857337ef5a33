"""styles

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "styles",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("tagline", sa.Text(), nullable=True),
        sa.Column("colours", JSON, nullable=False),
        sa.Column("typography", JSON, nullable=False),
        sa.Column("tone", JSON, nullable=False),
        sa.Column("aesthetic", sa.Text(), nullable=False),
        sa.Column("logo_key", sa.String(length=512), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_styles_account_id_accounts")
        ),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_styles_job_id_jobs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_styles")),
    )
    op.create_index(
        "ix_styles_account_created", "styles", ["account_id", "created_at", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_styles_account_created", table_name="styles")
    op.drop_table("styles")
