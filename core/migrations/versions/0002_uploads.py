"""uploads

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "uploads",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("declared_content_type", sa.String(length=64), nullable=False),
        sa.Column("staging_key", sa.String(length=512), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_uploads_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_uploads")),
        sa.UniqueConstraint("staging_key", name=op.f("uq_uploads_staging_key")),
    )
    op.create_index(op.f("ix_uploads_account_id"), "uploads", ["account_id"], unique=False)
    # References by URL look media up by storage key.
    op.create_index(op.f("ix_media_storage_key"), "media", ["storage_key"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_media_storage_key"), table_name="media")
    op.drop_index(op.f("ix_uploads_account_id"), table_name="uploads")
    op.drop_table("uploads")
