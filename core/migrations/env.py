"""Alembic environment: runs on the connection `core.db.Database.migrate` hands over."""

from alembic import context
from sqlalchemy import create_engine

from core.tables import Base

config = context.config
connection = config.attributes.get("connection")

if connection is None:
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("run migrations through `sfumato migrate`")
    with create_engine(url).connect() as own_connection:
        context.configure(connection=own_connection, target_metadata=Base.metadata)
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
