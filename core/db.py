"""Engine, sessions and migrations: one `Database` per process, on SQLite or PostgreSQL."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import Connection, Engine, create_engine, event, make_url, text
from sqlalchemy import exc as sqlalchemy_errors
from sqlalchemy.orm import Session, sessionmaker

from core.driver_reads import DriverReads
from core.tables import load_json

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Any fixed 64-bit number: the PostgreSQL advisory lock that serialises concurrent migrations.
MIGRATION_LOCK_ID = 0x5F0A7011
CONNECT_TIMEOUT_SECONDS = 5
# Every PostgreSQL connection of a process (the engine's pool and the job polls' own): a server
# that stops answering fails a connect in seconds, and TCP keepalives find a peer that vanished
# without a FIN (a failover, a NAT's idle drop) within a minute instead of the kernel's hours.
POSTGRES_CONNECT_ARGS = {
    "connect_timeout": CONNECT_TIMEOUT_SECONDS,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}
# No connection outlives a server-side idle timeout.
RECYCLE_SECONDS = 1800
# The database cannot be reached or dropped the connection (its transaction rolled back), or the
# pool has no connection to give. Worth retrying: a dropped connection invalidates the pool, so
# the next attempt connects afresh. The driver's own errors come from `DriverReads`.
DATABASE_UNAVAILABLE = (
    sqlalchemy_errors.OperationalError,
    sqlalchemy_errors.InterfaceError,
    sqlalchemy_errors.TimeoutError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
    sqlite3.OperationalError,
)


def head_revision() -> str | None:
    """The newest migration, read from the scripts' own `revision` and `down_revision` lines:
    Alembic takes most of a second to import and read them, which every process paid at start
    (tests/core/test_units.py holds this to Alembic's own answer). None unless there is one."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in (MIGRATIONS_DIR / "versions").glob("*.py"):
        text = script.read_text()
        revision = re.search(r'^revision = "([^"]+)"$', text, re.MULTILINE)
        if revision is None:
            return None
        revisions.add(revision[1])
        parents.update(re.findall(r'^down_revision = "([^"]+)"$', text, re.MULTILINE))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def _prepare_sqlite(engine: Engine, synchronous: str) -> None:
    """WAL for concurrent readers, a busy timeout for writers, and explicit BEGINs. `synchronous`
    FULL (the default) makes each commit durable before it returns, a power loss included;
    NORMAL leaves the last commits to a crash of the machine (never of the process).

    Write transactions begin IMMEDIATE so that two writers queue on the lock instead of failing
    with SQLITE_BUSY when both upgrade from a read to a write.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        statement = connection.get_execution_options().get("sqlite_begin", "BEGIN")
        if statement is not None:
            connection.exec_driver_sql(statement)


class Database:
    """`hide_parameters`: a statement's error never logs its values (emails, key hashes,
    prompts). `sqlite_synchronous`: how SQLite commits (docs/operations.md "Power loss")."""

    def __init__(self, url: str, sqlite_synchronous: str = "FULL") -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        # As many pooled connections as the threads that may use them at once (the gateway's
        # thread pool is 40), so none is opened and closed per request under load.
        if self.is_sqlite:
            self.engine = create_engine(
                url,
                connect_args={"check_same_thread": False, "timeout": 30},
                pool_size=48,
                json_deserializer=load_json,
                hide_parameters=True,
            )
            _prepare_sqlite(self.engine, sqlite_synchronous)
            write_engine: Engine = self.engine.execution_options(sqlite_begin="BEGIN IMMEDIATE")
            self._statement_engine = self.engine.execution_options(sqlite_begin=None)
        else:
            # A server behind a network that drops packets fails a connect in seconds, not
            # after the kernel's TCP timeout (minutes), so requests and probes answer 503 soon.
            self.engine = create_engine(
                url,
                connect_args=POSTGRES_CONNECT_ARGS,
                pool_size=48,
                max_overflow=16,
                pool_recycle=RECYCLE_SECONDS,
                json_deserializer=load_json,
                hide_parameters=True,
            )
            write_engine = self.engine
            self._statement_engine = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        self.driver_reads = DriverReads(self.engine, POSTGRES_CONNECT_ARGS, RECYCLE_SECONDS)
        self._reader = sessionmaker(self.engine, expire_on_commit=False)
        self._writer = sessionmaker(write_engine, expire_on_commit=False)

    def sibling(self, suffix: str) -> Path | None:
        """A path beside the SQLite database file (None on a server database, or in memory):
        for what every process of an embedded deployment, on one machine, must share."""
        database = make_url(self.url).database if self.is_sqlite else None
        if not database or database == ":memory:":
            return None
        return Path(database).with_name(Path(database).name + suffix)

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._reader() as session:
            yield session

    @contextmanager
    def statements(self) -> Iterator[Connection]:
        """A connection whose every statement commits by itself: no session, no BEGIN. For
        single statements on hot paths (the job read, a worker's claim), where that machinery
        would cost several times the statement; a write here is as durable as any commit."""
        with self._statement_engine.connect() as connection:
            yield connection

    @contextmanager
    def write(self) -> Iterator[Session]:
        """One transaction: committed on success, rolled back on any exception."""
        with self._writer() as session, session.begin():
            yield session

    def migrate(self) -> None:
        """Bring the schema to the newest Alembic revision (safe to run from many processes).
        A database already there is only read: Alembic is not even imported."""
        head = head_revision()
        if head is not None and self.revision() == head:
            return
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        with self.engine.connect() as connection:
            if not self.is_sqlite:
                connection.execute(text("SELECT pg_advisory_lock(:id)"), {"id": MIGRATION_LOCK_ID})
                connection.commit()
            try:
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
                connection.commit()
            finally:
                if not self.is_sqlite:
                    connection.execute(
                        text("SELECT pg_advisory_unlock(:id)"), {"id": MIGRATION_LOCK_ID}
                    )
                    connection.commit()

    def revision(self) -> str | None:
        """The schema's Alembic revision; None before the first migration."""
        with self.engine.connect() as connection:
            try:
                rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
            except (sqlalchemy_errors.ProgrammingError, sqlalchemy_errors.OperationalError):
                return None  # no such table yet (a database that cannot answer fails below)
        return rows[0][0] if len(rows) == 1 else None

    def dispose(self) -> None:
        self.engine.dispose()
