"""The job poll's driver read gives exactly what SQLAlchemy's execution of the same statement
gives, on SQLite and on PostgreSQL: values, types and time zones, a missing row (or another
account's) as None; on PostgreSQL the polls of one pass of the event loop are one statement."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from benchmarks.testkit.outages import TcpProxy, tcp_proxy
from core import driver_reads
from core.accounts import service as accounts
from core.clock import utcnow
from core.db import DATABASE_UNAVAILABLE, Database
from core.ids import new_id
from core.jobs import service as jobs_service
from core.jobs.repository import JOB_VIEW_BY_ID
from core.services import Services
from core.settings import Settings
from core.tables import JobRow


def _database(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Database:
    """A migrated database with the plans written, as `sfumato` prepares it."""
    settings = Settings(data_dir=tmp_path)
    if kind == "postgres":
        settings = Settings(
            data_dir=tmp_path, database_url=request.getfixturevalue("postgres_database")
        )
    services = Services.from_settings(settings)
    services.prepare()
    return services.db


@pytest.mark.parametrize(
    "kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.distributed)]
)
def test_a_driver_read_equals_sqlalchemys_row(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    db = _database(kind, tmp_path, request)
    email = f"{new_id()}@driver.test"
    account = accounts.create_account(db, email, "pro", 10)
    created_at = datetime(2026, 11, 26, 3, 4, 5, 678000, tzinfo=UTC)
    jobs = {
        "completed": {"result": {"images": [{"id": "m", "key": "k.png", "width": 8}]}},
        "failed": {"error": {"message": "the pipeline failed"}, "message": "a\nb"},
        "pending": {"progress": 0.25},
    }
    ids = {}
    with db.write() as session:
        for status, columns in jobs.items():
            ids[status] = new_id()
            session.add(
                JobRow(
                    id=ids[status],
                    account_id=account.id,
                    type="image.generate",
                    operation="generate",
                    queue="image",
                    status=status,
                    inputs={},
                    created_at=created_at,
                    **columns,
                )
            )

    async def read(job_id: str, account_id: str) -> object:
        return await jobs_service.view_owned(db, account_id, job_id)

    async def reads() -> list[object]:
        try:
            answers = [await read(job_id, account.id) for job_id in ids.values()]
            answers.append(await read(ids["completed"], new_id()))  # another account's job
            return answers
        finally:
            await db.driver_reads.close()

    driven = asyncio.run(reads())
    with db.statements() as connection:
        expected = [
            connection.execute(JOB_VIEW_BY_ID, {"job_id": job_id, "account_id": account.id})
            .first()
            ._asdict()
            for job_id in ids.values()
        ]
    assert [row._asdict() for row in driven[:-1]] == expected  # type: ignore[attr-defined]
    assert driven[-1] is None
    assert driven[0].created_at == created_at  # type: ignore[attr-defined]
    assert driven[0].created_at.tzinfo is not None  # type: ignore[attr-defined]
    db.dispose()


@contextmanager
def proxied_database(postgres_database: str, tmp_path: Path) -> Iterator[tuple[TcpProxy, Database]]:
    """The test database, prepared, reached through a proxy the test can silence or watch."""
    target = urlsplit(postgres_database)
    with tcp_proxy(target.hostname or "127.0.0.1", target.port or 5432) as proxy:
        proxied = urlunsplit(target._replace(netloc=f"{target.username}@127.0.0.1:{proxy.port}"))
        services = Services.from_settings(Settings(data_dir=tmp_path, database_url=proxied))
        services.prepare()
        yield proxy, services.db


@pytest.mark.distributed
def test_a_read_the_server_never_answers_fails_as_unavailable_and_the_next_one_reads(
    postgres_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A half-open connection (no FIN, no answer) fails the read after `READ_TIMEOUT_SECONDS`
    with an error the gateway answers 503, instead of holding the request; the connection is
    dropped and the next read connects afresh. (The limit is shortened here: the suite's time.)"""
    limit = 2
    monkeypatch.setattr(driver_reads, "READ_TIMEOUT_SECONDS", limit)
    with proxied_database(postgres_database, tmp_path) as (proxy, db):
        job_id, account_id = new_id(), new_id()

        async def reads() -> float:
            try:
                assert await jobs_service.view_owned(db, account_id, job_id) is None
                proxy.silence_on(b"SELECT jobs.id")
                started = time.monotonic()
                with pytest.raises(DATABASE_UNAVAILABLE):
                    await jobs_service.view_owned(db, account_id, job_id)
                waited = time.monotonic() - started
                assert await jobs_service.view_owned(db, account_id, job_id) is None
                return waited
            finally:
                await db.driver_reads.close()

        waited = asyncio.run(reads())
        assert proxy.tripped.is_set()
        # Plus up to psycopg's 5 s for the cancel request it sends when a query is interrupted.
        assert limit <= waited < limit + 8
        db.dispose()


@pytest.mark.distributed
def test_polls_of_one_pass_are_one_statement_each_seeing_only_its_accounts_jobs(
    postgres_database: str, tmp_path: Path
) -> None:
    with proxied_database(postgres_database, tmp_path) as (proxy, db):
        owners = [
            accounts.create_account(db, f"{new_id()}@batch.test", "pro", 10).id for _ in range(2)
        ]
        jobs = {}
        with db.write() as session:
            for index in range(6):
                job = JobRow(
                    account_id=owners[index % 2],
                    type="image.generate",
                    operation="generate",
                    queue="image",
                    inputs={},
                )
                session.add(job)
                session.flush()
                jobs[job.id] = job.account_id
            deleted = JobRow(
                account_id=owners[0],
                type="image.generate",
                operation="generate",
                queue="image",
                inputs={},
                deleted_at=utcnow(),
            )
            session.add(deleted)
            session.flush()
        missing = new_id()
        # Each job asked for by its owner and by the other account, twice; one missing, and
        # one deleted asked for by its owner.
        polls = [(owner, job_id) for job_id in jobs for owner in owners for _ in range(2)] + [
            (owners[0], missing),
            (owners[0], deleted.id),
        ]

        async def reads() -> tuple[list[object], int]:
            try:
                await jobs_service.view_owned(db, owners[0], missing)  # connected, prepared
                sends = proxy.client_sends
                answers = await asyncio.gather(
                    *(jobs_service.view_owned(db, owner, job_id) for owner, job_id in polls)
                )
                return list(answers), proxy.client_sends - sends
            finally:
                await db.driver_reads.close()

        answers, sends = asyncio.run(reads())
        assert sends == 1, f"{len(polls)} polls of one pass took {sends} round trips"
        for (owner, job_id), answer in zip(polls, answers, strict=True):
            if jobs.get(job_id) == owner:
                assert answer is not None and answer.id == job_id  # type: ignore[attr-defined]
            else:
                assert answer is None, (owner, job_id)
        db.dispose()
