"""Single-row reads on the database driver's own connections, for the per-request hot path.

The job poll is the request every client makes most, and SQLAlchemy's execution of even a
prebuilt statement (its execution context, result metadata, pool checkout) cost more than the
query itself (docs/benchmarks.md). A `PreparedSelect` is the same SQLAlchemy statement compiled
once for the database's dialect, its rows decoded by the columns' own result processors, so values
are exactly what SQLAlchemy would give. `DriverReads` runs it on:

- SQLite (`one`): inline, on one connection per thread taken from the engine's pool (so it has the
  engine's pragmas); a WAL reader never waits for a writer, and the read takes microseconds.
- PostgreSQL (`by_key`): psycopg's asyncio connections of the running event loop, at most
  `ASYNC_CONNECTIONS` per loop, in autocommit (each statement its own snapshot, as the
  session-less reads before), so a read needs no thread hop. The reads of one key each that one
  pass of the event loop makes are one statement (`core/batches.py`): under load a query serves
  tens of polls, and its snapshot is taken after each of them was asked for. psycopg prepares a
  statement on the server once it has run a few times on a connection.
"""

from __future__ import annotations

import asyncio
import functools
import select
import sqlite3
import threading
import weakref
from collections import namedtuple
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.types.json import set_json_loads
from sqlalchemy import Engine, Select

from core.batches import LoopBatches
from core.tables import load_json

# Per event loop: enough for a gateway's concurrent polls (a batch of them holds one for a round
# trip), few enough beside the engine's pool under PostgreSQL's default 100 connections.
ASYNC_CONNECTIONS = 8
# A read waiting longer (for a connection slot, a connect, the answer) fails as the database
# being unavailable (a 503), instead of hanging the request on a server that went silent.
READ_TIMEOUT_SECONDS = 10


class PreparedSelect:
    """`statement`, compiled for `engine`'s dialect once; rows are named tuples of its columns."""

    def __init__(self, statement: Select[Any], engine: Engine) -> None:
        dialect = engine.dialect
        compiled = statement.compile(dialect=dialect)
        self.sql = str(compiled)
        # qmark (SQLite) binds by position, pyformat (psycopg) by name.
        self.positions = tuple(compiled.positiontup or ())
        for name, bind in compiled.binds.items():
            if bind.type.dialect_impl(dialect).bind_processor(dialect) is not None:
                raise TypeError(f"parameter {name} needs conversion: not a driver read")
        self.dialect = dialect
        self.columns = list(statement.selected_columns)
        self.row_type = namedtuple("Row", [column.key for column in self.columns])  # type: ignore[misc]
        self.processors: list[tuple[int, Callable[[Any], Any]]] | None = None

    def parameters(self, values: Mapping[str, Any]) -> Any:
        positions = self.positions
        return tuple([values[name] for name in positions]) if positions else values

    def row(self, values: Any, description: Callable[[], Any]) -> Any:
        """A named tuple of the driver's row (None for none); `description` gives the cursor's
        (psycopg builds it anew on each call: only the first row needs it)."""
        if values is None:
            return None
        processors = self.processors
        if processors is None:
            processors = self.processors = self._processors(description())
        if processors:
            values = list(values)
            for index, processor in processors:
                values[index] = processor(values[index])
        return self.row_type(*values)

    def _processors(self, description: Any) -> list[tuple[int, Callable[[Any], Any]]]:
        """The columns' result processors, for the types the driver said it returns (psycopg's
        type codes decide which need none)."""
        dialect = self.dialect
        processors: list[tuple[int, Callable[[Any], Any]]] = []
        for index, column in enumerate(self.columns):
            coltype = description[index][1]
            processor = column.type.dialect_impl(dialect).result_processor(dialect, coltype)
            if processor is not None:
                processors.append((index, processor))
        return processors


class _LoopConnections:
    """psycopg's asyncio connections of one event loop. A connection that saw any error is
    closed, never reused: its state is unknown (and a dropped one must be replaced). How many
    are in use at once is bounded by their one user, `DriverReads.by_key`: `ASYNC_CONNECTIONS`
    batches in flight per statement and loop (one statement, the job poll's, today)."""

    def __init__(
        self, conninfo: str, connect_args: Mapping[str, Any], recycle_seconds: float
    ) -> None:
        # The engine's own (`core/db.py`): timeouts and keepalives alike on every connection.
        self.conninfo = make_conninfo(conninfo, **connect_args)
        self.recycle_seconds = recycle_seconds
        # Idle connections with when they were opened (the loop's clock).
        self.idle: list[tuple[psycopg.AsyncConnection[Any], float]] = []

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        idle = await self._idle_connection()
        connection, opened_at = idle or (await self._connect(), _now())
        try:
            yield connection
        except BaseException as error:
            # close() only finishes the socket: it cannot be interrupted by a cancellation.
            await connection.close()
            if isinstance(error, psycopg.OperationalError):
                # The server went away: the idle ones were dropped too (as SQLAlchemy's pool
                # invalidates itself), or each would fail one request after it is back.
                await self.close()
            raise
        if not connection.closed:
            self.idle.append((connection, opened_at))

    async def _idle_connection(self) -> tuple[psycopg.AsyncConnection[Any], float] | None:
        """An idle connection the server has not closed, younger than the engine's recycling
        age. An idle one has nothing to read unless the server went away (its FIN, or a FATAL
        message): one poll, no round trip."""
        while self.idle:
            connection, opened_at = self.idle.pop()
            # poll, not select: a gateway holding thousands of reads has descriptors past 1024.
            poller = select.poll()
            poller.register(connection.fileno(), select.POLLIN)
            if not poller.poll(0) and _now() - opened_at < self.recycle_seconds:
                return connection, opened_at
            await connection.close()
        return None

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        connection = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
        set_json_loads(load_json, connection)  # as the engine's connections decode JSON
        return connection

    async def close(self) -> None:
        idle, self.idle = self.idle, []
        for connection, _ in idle:
            await connection.close()


def _now() -> float:
    return asyncio.get_running_loop().time()


class DriverReads:
    def __init__(
        self, engine: Engine, connect_args: Mapping[str, Any], recycle_seconds: float
    ) -> None:
        self.engine = engine
        self.connect_args = connect_args
        self.recycle_seconds = recycle_seconds
        self._prepared: dict[Select[Any], PreparedSelect] = {}
        self._batches: dict[Select[Any], LoopBatches[Any, Any]] = {}
        self._thread = threading.local()
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopConnections] = (
            weakref.WeakKeyDictionary()
        )

    def prepared(self, statement: Select[Any]) -> PreparedSelect:
        prepared = self._prepared.get(statement)
        if prepared is None:
            prepared = self._prepared[statement] = PreparedSelect(statement, self.engine)
        return prepared

    def one(self, statement: Select[Any], values: Mapping[str, Any]) -> Any:
        """SQLite: the statement's first row (a named tuple of its columns), or None."""
        prepared = self.prepared(statement)
        # fetchall, not fetchone: a statement left unfinished would hold its read snapshot.
        cursor = self._sqlite_connection().execute(prepared.sql, prepared.parameters(values))
        rows = cursor.fetchall()
        return prepared.row(rows[0] if rows else None, lambda: cursor.description)

    async def by_key(self, statement: Select[Any], key: Any) -> Any:
        """PostgreSQL: the row of `statement` whose first column is `key` (a named tuple of its
        columns), or None. `statement` selects the rows whose first column is one of the
        parameter `keys`; the calls of one pass of the event loop share one run of it."""
        batches = self._batches.get(statement)
        if batches is None:
            batches = self._batches[statement] = LoopBatches(
                functools.partial(self._rows_by_key, self.prepared(statement)),
                ASYNC_CONNECTIONS,
                # Waiting for a connection counts too: a server gone silent fails every read.
                within=READ_TIMEOUT_SECONDS,
            )
        try:
            return await batches(key)
        except TimeoutError:
            raise psycopg.OperationalError(
                f"the database did not answer within {READ_TIMEOUT_SECONDS} s"
            ) from None

    async def _rows_by_key(self, prepared: PreparedSelect, keys: list[Any]) -> list[Any]:
        rows = await self._rows(prepared, {"keys": list(dict.fromkeys(keys))})
        found = {row[0]: row for row in rows}
        return [found.get(key) for key in keys]

    async def _rows(self, prepared: PreparedSelect, values: Mapping[str, Any]) -> list[Any]:
        async with self._loop_connections().connection() as connection:
            cursor = await connection.execute(prepared.sql, prepared.parameters(values))
            return [
                prepared.row(row, lambda: cursor.description) for row in await cursor.fetchall()
            ]

    def _sqlite_connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._thread, "connection", None)
        if connection is None:
            # Kept checked out for the thread's lifetime: the pool's connection carries the
            # engine's pragmas (WAL, busy timeout).
            self._thread.pooled = self.engine.raw_connection()
            connection = self._thread.connection = self._thread.pooled.driver_connection
        assert connection is not None
        return connection

    def _loop_connections(self) -> _LoopConnections:
        loop = asyncio.get_running_loop()
        connections = self._loops.get(loop)
        if connections is None:
            url = self.engine.url.set(drivername="postgresql")
            connections = self._loops[loop] = _LoopConnections(
                url.render_as_string(hide_password=False), self.connect_args, self.recycle_seconds
            )
        return connections

    async def close(self) -> None:
        """Closes the running loop's idle connections (a gateway's shutdown)."""
        connections = self._loops.pop(asyncio.get_running_loop(), None)
        if connections is not None:
            await connections.close()
