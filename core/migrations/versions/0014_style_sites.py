"""style sites: the normalised address a style was extracted from, so re-extracting updates it

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

from core.styles.sites import site_address

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("styles", sa.Column("site", sa.Text(), nullable=True))
    op.create_index("ix_styles_account_site", "styles", ["account_id", "site"])
    # Styles extracted before kept the address their page was read at: their site is that.
    connection = op.get_bind()
    styles = sa.table("styles", sa.column("id", sa.String), sa.column("url", sa.Text))
    site = sa.table("styles", sa.column("id", sa.String), sa.column("site", sa.Text))
    rows = connection.execute(sa.select(styles.c.id, styles.c.url).where(styles.c.url.is_not(None)))
    for style_id, url in rows.all():
        connection.execute(
            sa.update(site).where(site.c.id == style_id).values(site=site_address(url))
        )


def downgrade() -> None:
    op.drop_index("ix_styles_account_site", table_name="styles")
    op.drop_column("styles", "site")
