"""dashboard: passwords and the admin flag on accounts, key purpose, sessions, thumbnails

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("accounts", sa.Column("password_hash", sa.String(length=255), nullable=True))
    op.add_column(
        "accounts",
        sa.Column("is_admin", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column(
        "api_keys",
        sa.Column("purpose", sa.String(length=16), nullable=False, server_default="api"),
    )
    op.create_table(
        "dashboard_sessions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_dashboard_sessions_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dashboard_sessions")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_dashboard_sessions_token_hash")),
    )
    op.create_index(op.f("ix_dashboard_sessions_account_id"), "dashboard_sessions", ["account_id"])
    op.create_index(op.f("ix_dashboard_sessions_expires_at"), "dashboard_sessions", ["expires_at"])
    op.create_table(
        "thumbnails",
        sa.Column("media_id", sa.String(length=36), nullable=False),
        sa.Column("storage_key", sa.String(length=512), nullable=False),
        sa.Column("width", sa.Integer(), nullable=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["media_id"], ["media.id"], name=op.f("fk_thumbnails_media_id_media")
        ),
        sa.PrimaryKeyConstraint("media_id", name=op.f("pk_thumbnails")),
    )


def downgrade() -> None:
    op.drop_table("thumbnails")
    op.drop_index(op.f("ix_dashboard_sessions_expires_at"), table_name="dashboard_sessions")
    op.drop_index(op.f("ix_dashboard_sessions_account_id"), table_name="dashboard_sessions")
    op.drop_table("dashboard_sessions")
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("purpose")
    with op.batch_alter_table("accounts") as batch:
        batch.drop_column("is_admin")
        batch.drop_column("password_hash")
