"""style assets: the images of a style's linked folder and their search embeddings

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "style_assets",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("style_id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("media_id", sa.String(length=36), nullable=False),
        sa.Column("storage_key", sa.String(length=512), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("alt_text", sa.Text(), nullable=False),
        sa.Column("surrounding_text", sa.Text(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("embedding", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["style_id"], ["styles.id"], name=op.f("fk_style_assets_style_id_styles")
        ),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_style_assets_account_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["media_id"], ["media.id"], name=op.f("fk_style_assets_media_id_media")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_style_assets")),
        sa.UniqueConstraint("style_id", "media_id", name="uq_style_assets_style_media"),
    )
    op.create_index(
        "ix_style_assets_style_created",
        "style_assets",
        ["style_id", "created_at", "id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_style_assets_style_created", table_name="style_assets")
    op.drop_table("style_assets")
