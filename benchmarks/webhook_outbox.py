"""`webhook_outbox`: what writing the webhooks' outbox in a job's transitions costs them."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import timedelta

from benchmarks.harness import Options, temporary_postgres_database
from benchmarks.report import Section, Table, ms
from core.accounts import api_keys, authentication
from core.accounts import service as accounts
from core.accounts.service import Caller
from core.clock import utcnow
from core.credits import service as credits
from core.db import Database
from core.ids import new_id
from core.jobs import repository
from core.jobs import service as jobs_service
from core.settings import Settings
from core.tables import WebhookEndpoint

METHOD = """
Mean time of a worker's claim (`pending -> processing`) and of its completion, one job after
another from one thread, on the embedded database (SQLite, `synchronous=FULL` as deployed) and
on PostgreSQL (the local test server). Three variants, interleaved job by job so that all see
the same machine: the transitions as they were before webhooks (`repository.set_processing` on
`Database.statements()`, autocommitting; the completion `repository.complete_in_transaction`
alone on SQLite; on PostgreSQL the completion statement itself, which now carries its outbox
CTE, so there that row's completion is no before), the
transitions as they are now (`jobs_service.take_pending` and `complete`) for an account with no
webhook, and for an account with one endpoint subscribed to every event (one delivery row
written per transition). On PostgreSQL each is still one statement committing by itself, the
outbox a data-modifying CTE in it; on SQLite the claim becomes a transaction with the outbox's
read. Jobs without media or other rows. The machine is shared: compare the rows of one run,
not runs.
"""
VARIANTS = ("before webhooks", "now, nothing subscribed", "now, one endpoint")


def _account(db: Database, hooked: bool) -> Caller:
    email = f"bench-{new_id()}@bench.local"
    accounts.create_account(db, email, "enterprise", 10**7)
    caller = authentication.authenticate(db, api_keys.create_key(db, email, "b", None).plaintext)
    assert caller is not None
    if hooked:
        with db.write() as session:
            session.add(
                WebhookEndpoint(
                    account_id=caller.account_id,
                    url="https://example.com/hook",
                    events=["started", "progress", "completed", "failed"],
                    secret="whsec_" + "A" * 32,
                )
            )
    return caller


def _before(db: Database, job_id: str) -> tuple[float, float]:
    """The claim and completion as main had them before the outbox."""
    moment = utcnow()
    token = new_id()
    started = time.perf_counter()
    with db.statements() as connection:
        job = repository.set_processing(
            connection, job_id, token, moment, moment + timedelta(seconds=30)
        )
    claimed = time.perf_counter()
    assert job is not None
    completion = repository.Completion(
        job_id=job_id,
        token=token,
        moment=utcnow(),
        result={"images": []},
        message=None,
        media=[],
        entry_id=new_id(),
        reason=credits.settle_reason(job.credits_reserved),
    )
    if db.is_sqlite:
        with db.write() as session:
            assert repository.complete_in_transaction(session.connection(), completion)
    else:
        with db.statements() as connection:
            assert repository.complete(connection, completion)
    return claimed - started, time.perf_counter() - claimed


def _now(db: Database, job_id: str) -> tuple[float, float]:
    started = time.perf_counter()
    claim = jobs_service.take_pending(db, job_id, 30)
    claimed = time.perf_counter()
    assert claim is not None
    assert jobs_service.complete(db, claim, {"images": []}, [], None)
    return claimed - started, time.perf_counter() - claimed


def _measure(db: Database, jobs: int) -> dict[str, tuple[list[float], list[float]]]:
    plain, hooked = _account(db, False), _account(db, True)
    new = jobs_service.NewJob("image.generate", "generate", "image", {"prompt": "timed"}, 1)
    runs: dict[str, tuple[Caller, Callable[[Database, str], tuple[float, float]]]] = {
        VARIANTS[0]: (plain, _before),
        VARIANTS[1]: (plain, _now),
        VARIANTS[2]: (hooked, _now),
    }
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in VARIANTS}
    for index in range(jobs + 5):
        for name in VARIANTS[index % 3 :] + VARIANTS[: index % 3]:
            caller, transitions = runs[name]
            job, _ = jobs_service.insert_pending(db, caller, new)
            claim_seconds, complete_seconds = transitions(db, job.id)
            if index >= 5:  # the first statements compile
                times[name][0].append(claim_seconds)
                times[name][1].append(complete_seconds)
    return times


def run(options: Options) -> Section:
    jobs = options.scaled(300, 30)
    section = Section("webhook_outbox", METHOD)
    table = Table(["database", "transitions", "claim (mean)", "completion (mean)"])
    with ExitStack() as stack:
        for database, url in (
            ("SQLite", f"sqlite:///{options.work_dir / 'webhook_outbox.db'}"),
            ("PostgreSQL", stack.enter_context(temporary_postgres_database())),
        ):
            db = Database(url)
            try:
                db.migrate()
                accounts.sync_plans(db, Settings().service_config())
                times = _measure(db, jobs)
            finally:
                db.dispose()
            for name in VARIANTS:
                claims, completions = times[name]
                table.add(
                    database, name, ms(statistics.mean(claims)), ms(statistics.mean(completions))
                )
    section.tables.append(table)
    section.findings.append(
        "PostgreSQL: the same one statement and one commit per transition, with a join to the "
        "account's endpoints; a subscribed transition also writes its delivery rows. SQLite: "
        "the claim becomes a transaction (it was one autocommitting statement) with one indexed "
        "read (the job and its account's endpoints). One durable commit per transition either way."
    )
    return section
