"""Faults lose no accepted job and no credit: restarts, killed workers, unpublished jobs."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Connection, event, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from benchmarks.testkit.outages import DiskUnavailable, SmallDisk, small_disk
from benchmarks.testkit.processes import ChildProcess
from benchmarks.testkit.waits import free_port, wait_until
from core.accounts import api_keys, authentication
from core.accounts import service as accounts
from core.clock import utcnow
from core.credits import repository as ledger
from core.db import Database
from core.events import job_events_for
from core.ids import new_id
from core.jobs import repository as jobs_repository
from core.jobs import service as jobs_service
from core.jobs.contract import ImagesResult, image_folder
from core.jobs.lifecycle import JobLifecycle
from core.services import Services
from core.settings import Settings
from core.tables import JobRow, Media
from pipelines.base import Cancelled
from tests.conftest import COMMON_ENV, embedded_mode
from tests.support.http_jobs import create, status_of, wait_done
from tests.support.service import Mode, Service, running_service
from tests.support.stored_rows import job_row, ledger_kinds
from workers.claims import Leases, claim_job


@pytest.mark.slow
def test_embedded_restart_after_sigkill_loses_no_job(tmp_path: Path) -> None:
    """Jobs running and queued when `sfumato serve` dies complete after it comes back."""
    mode = embedded_mode()
    env = {**mode.env, "SFUMATO_DATA_DIR": str(tmp_path)}
    port = free_port()
    api = f"http://127.0.0.1:{port}/v1"
    services = Services.from_settings(mode.settings().model_copy(update={"data_dir": tmp_path}))

    def start() -> ChildProcess:
        process = ChildProcess.sfumato(
            ["serve", "--port", str(port)], env, tmp_path / "serve.log"
        ).start()
        wait_until(lambda: _answers(api), 60, "serve up")
        return process

    server = start()
    accounts.create_account(services.db, "restart@test.local", "pro", 100)
    key = api_keys.create_key(services.db, "restart@test.local", "k", None).plaintext
    with httpx.Client(base_url=api, headers={"x-api-key": key}, timeout=30) as client:
        running = create(client, "[sleep 3] running when killed")["id"]
        queued = [create(client, f"[sleep 1] queued {index}")["id"] for index in range(3)]
        wait_until(lambda: status_of(client, running) == "processing", 20, "processing")
    server.kill(signal.SIGKILL)
    server = start()
    try:
        with httpx.Client(base_url=api, headers={"x-api-key": key}, timeout=30) as client:
            for job_id in [running, *queued]:
                assert wait_done(client, job_id)["status"] == "completed"
        assert job_row(services, running).attempts == 2
        assert accounts.find_account(services.db, "restart@test.local").credit_balance == 100 - 8
        kinds = ledger_kinds(services, key)
        assert kinds.count("reserve") == 4 and kinds.count("settle") == 4
        assert "refund" not in kinds
    finally:
        server.stop()


def _answers(api: str) -> bool:
    try:
        return httpx.get(f"{api}/openapi.json", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _unpublished_job(service: Service, key: str, prompt: str) -> JobRow:
    """A pending job committed as a create commits it, but never published to the broker."""
    caller = authentication.authenticate(service.services.db, key)
    assert caller is not None
    job, _ = jobs_service.insert_pending(
        service.services.db,
        caller,
        jobs_service.NewJob(
            type="image.generate",
            operation="generate",
            queue="image",
            inputs={
                "prompt": prompt,
                "quality": "low",
                "resolution": "1K",
                "variations": 1,
                "width": 64,
                "height": 64,
                "aspectRatio": "1:1",
                "styleId": None,
                "references": [],
            },
            price=1,
        ),
    )
    return job


def test_a_job_committed_but_never_published_is_published_by_the_sweep(
    service: Service, key: str
) -> None:
    job = _unpublished_job(service, key, "[sleep 0] orphaned before publishing")
    with service.client(key) as client:
        assert wait_done(client, job.id)["status"] == "completed"
    assert job_row(service.services, job.id).attempts == 1


class _ClaimAnswerLostOnce(JobLifecycle):
    """The first claim commits, then its answer is lost on the way back (the connection drops
    after the COMMIT reached the database)."""

    answer_lost = False

    def claim(self, job_id: str, token: str) -> jobs_service.Claim | None:
        claim = super().claim(job_id, token)
        if not self.answer_lost:
            self.answer_lost = True
            raise OperationalError("COMMIT", {}, ConnectionResetError("reset after the commit"))
        return claim


def test_a_claim_whose_answer_was_lost_is_recovered_at_once_by_the_same_delivery(
    service: Service, key: str
) -> None:
    job = _unpublished_job(service, key, "[sleep 0] claimed, answer lost")
    lifecycle = _ClaimAnswerLostOnce.for_services(service.services)
    started = time.monotonic()
    claim = claim_job(lifecycle, job.id)
    # Recovered by the retry, not after the lease (30 s) lapsed and the sweep handed it out.
    assert claim is not None and lifecycle.answer_lost
    assert time.monotonic() - started < 5
    row = job_row(service.services, job.id)
    assert (row.status, row.attempts, row.claim_token) == ("processing", 1, claim.token)
    # Another delivery of the same job still finds nothing to claim.
    assert lifecycle.claim(job.id, "another-delivery") is None
    assert lifecycle.fail(claim, "ended by the test")


def test_a_settlement_whose_answer_was_lost_counts_as_done_by_the_same_claim(
    service: Service, key: str
) -> None:
    """A worker tries its completion (or failure) again through a dropped connection: when the
    first try's commit had landed, the retry finds the job ended by its own claim and says so,
    so the stored output is kept and the charge settled once."""
    completed = _unpublished_job(service, key, "[sleep 0] completed, answer lost")
    failed = _unpublished_job(service, key, "[sleep 0] failed, answer lost")
    lifecycle = JobLifecycle.for_services(service.services)
    db = service.services.db
    claims = [claim_job(lifecycle, job.id) for job in (completed, failed)]
    assert claims[0] is not None and claims[1] is not None
    empty = ImagesResult(images=[]).stored()
    for _ in range(2):
        assert jobs_service.complete(db, claims[0], empty, [], None)
        assert jobs_service.fail(db, claims[1], "ended by the test")
    # Another claim's retry is not mistaken for this one's.
    stranger = jobs_service.Claim(job=completed, token="another-delivery")
    assert not jobs_service.complete(db, stranger, empty, [], None)
    assert not jobs_service.fail(db, stranger, "ended by the test")
    assert job_row(service.services, completed.id).status == "completed"
    assert job_row(service.services, failed.id).status == "failed"
    kinds = ledger_kinds(service.services, key)
    assert (kinds.count("settle"), kinds.count("refund")) == (1, 1)


@pytest.mark.parametrize("with_records", [False, True], ids=["alone", "with-records"])
def test_a_completion_writes_the_job_its_media_and_the_settle_entry_together(
    service: Service, key: str, with_records: bool
) -> None:
    """Both completions (PostgreSQL's one statement; the statements of a transaction, on
    SQLite and for a job with rows of its own on either) write the same rows: the job
    completed, its media owned by its account, a settle entry recording the balance as it
    stands, and the job's other rows; a stranger's claim writes nothing."""
    job = _unpublished_job(service, key, "[sleep 0] completed with its media")
    db = service.services.db
    claim = jobs_service.take_pending(db, job.id, 30)
    assert claim is not None
    image = Media(
        kind="image",
        account_id=job.account_id,
        storage_key=f"{image_folder(job.id)}0.png",
        content_type="image/png",
        width=8,
        height=6,
        size_bytes=70,
    )
    image.id = new_id()
    result = ImagesResult(images=[]).stored()
    stranger = jobs_service.Claim(job=job, token="another-delivery")
    # A row of the job's own, as a saved style is: here a second media row.
    records = [
        Media(
            id=new_id(),
            kind="image",
            account_id=job.account_id,
            storage_key=f"{image_folder(job.id)}extra.png",
            content_type="image/png",
        )
    ]
    records = records if with_records else []

    def save(session: Session) -> None:
        session.add_all(records)

    saving = save if with_records else None
    assert not jobs_service.complete(db, stranger, result, [image], "not mine", saving)
    assert jobs_service.complete(db, claim, result, [image], "a note", saving)
    row = job_row(service.services, job.id)
    assert (row.status, row.result, row.progress, row.message, row.lease_expires_at) == (
        "completed",
        result,
        1.0,
        "a note",
        None,
    )
    assert row.finished_at is not None
    with db.read() as session:
        (media,) = jobs_repository.result_media(session, job.id)
        entries = ledger.entries_of(session, job.account_id)
        extra = [session.get(Media, record.id) is not None for record in records]
    assert extra == [True] * len(records)
    assert (media.id, media.account_id, media.job_id, media.storage_key) == (
        image.id,
        job.account_id,
        job.id,
        image.storage_key,
    )
    assert (media.width, media.height, media.size_bytes, media.created_at) == (
        8,
        6,
        70,
        row.finished_at,
    )
    settle = entries[-1]
    balance = accounts.find_account(db, authentication.authenticate(db, key).email).credit_balance  # type: ignore[union-attr]
    assert (settle.kind, settle.job_id, settle.amount, settle.balance_after, settle.reason) == (
        "settle",
        job.id,
        0,
        balance,
        "charged 1",
    )
    assert [entry.kind for entry in entries].count("settle") == 1


@pytest.mark.parametrize("service", ["distributed"], indirect=True)
def test_a_claim_and_a_completion_are_each_one_statement_committing_by_itself(
    service: Service, key: str
) -> None:
    """Issue 18's spine: on PostgreSQL the claim and the completion (job, media, settle entry,
    webhook deliveries) are one round trip each, on a connection where the statement is its
    own durable commit (no BEGIN, no COMMIT of their own); what they wrote is there for
    everyone afterwards."""
    job = _unpublished_job(service, key, "[sleep 0] one statement each")
    db = service.services.db
    sent: list[tuple[str, bool]] = []
    this_thread = threading.get_ident()

    def record(connection: Connection, _cursor: object, statement: str, *_: object) -> None:
        if threading.get_ident() == this_thread:  # not the in-process gateway's sweeps
            autocommit = connection.connection.dbapi_connection.autocommit  # type: ignore[union-attr]
            sent.append((statement.split()[0], autocommit))

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        claim = jobs_service.take_pending(db, job.id, 30)
        assert claim is not None
        claimed = list(sent)
        sent.clear()
        image = Media(
            account_id=job.account_id,
            job_id=job.id,
            kind="image",
            storage_key=f"{image_folder(job.id)}one.png",
            content_type="image/png",
            width=8,
            height=8,
            size_bytes=70,
        )
        image.id = "one-statement-media"
        assert jobs_service.complete(db, claim, ImagesResult(images=[]).stored(), [image], None)
        completed = list(sent)
    finally:
        event.remove(db.engine, "before_cursor_execute", record)
    # Each a data-modifying CTE: the change, and its webhook deliveries (core/webhooks/outbox).
    assert claimed == [("WITH", True)]
    assert completed == [("WITH", True)]
    row = job_row(service.services, job.id)
    assert (row.status, row.attempts, row.progress, row.lease_expires_at) == (
        "completed",
        1,
        1.0,
        None,
    )
    with db.read() as session:
        assert [media.id for media in jobs_repository.result_media(session, job.id)] == [
            "one-statement-media"
        ]
    assert ledger_kinds(service.services, key) == ["grant", "reserve", "settle"]


def test_one_thread_keeps_the_leases_of_the_jobs_running_at_once(
    service: Service, key: str
) -> None:
    """The leases of a worker's jobs are renewed by one thread, not one per job: a cancelled
    job's keeper says so at its next progress report while the other's lease moves on."""
    settings = service.services.settings.model_copy(
        update={"lease_seconds": 0.9, "progress_seconds": 0.3}
    )
    lifecycle = JobLifecycle.for_services(replace(service.services, settings=settings))
    leases = Leases(lifecycle)
    running, cancelled = (_unpublished_job(service, key, f"[sleep 0] leased {n}") for n in (1, 2))
    claims = [claim_job(lifecycle, job.id) for job in (running, cancelled)]
    assert claims[0] is not None and claims[1] is not None
    threads_before = _lease_threads()
    with leases.keep(claims[0]) as keeping, leases.keep(claims[1]) as losing:
        assert _lease_threads() == threads_before + 1
        leased_until = job_row(service.services, running.id).lease_expires_at
        assert leased_until is not None
        lifecycle.cancel(cancelled.account_id, cancelled.id)
        wait_until(losing.lost.is_set, 5, "the cancel noticed")
        with pytest.raises(Cancelled):
            losing.progress(0.5)
        keeping.progress(0.5)

        def renewed_with_progress() -> bool:
            # A renewal may land before the progress report: wait for one that carries it.
            row = job_row(service.services, running.id)
            return (row.lease_expires_at or leased_until) > leased_until and row.progress >= 0.5

        wait_until(renewed_with_progress, 5, "the lease renewed with the progress")
        keeping.progress(0.6)
    assert _lease_threads() == threads_before + 1  # kept for the next jobs, not one per job
    assert job_row(service.services, running.id).progress >= 0.5
    assert lifecycle.fail(claims[0], "ended by the test")


def _lease_threads() -> int:
    return sum(thread.name == "leases" for thread in threading.enumerate())


def _lifecycle_with_events_of_its_own(service: Service, settings: Settings) -> JobLifecycle:
    """A lifecycle as another process of the fleet has it: its own event bus, so what it hears
    comes over Redis, not from this test's bus."""
    services = replace(
        service.services,
        settings=settings,
        events=job_events_for(settings.broker_url, settings.namespace),
    )
    return JobLifecycle.for_services(services)


@contextmanager
def _claim_reads(db: Database) -> Iterator[list[str]]:
    """The claim checks (`holds_claim`'s SELECT) this process sends while the block runs."""
    sent: list[str] = []

    def record(_connection: Connection, _cursor: object, statement: str, *_: object) -> None:
        if statement.split()[:2] == ["SELECT", "jobs.id"] and "jobs.claim_token =" in statement:
            sent.append(statement)

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(db.engine, "before_cursor_execute", record)


@pytest.mark.parametrize("service", ["distributed"], indirect=True)
def test_a_cancel_reaches_the_running_job_as_an_event_without_polling_its_claim(
    service: Service, key: str
) -> None:
    """In a fleet the worker hears a cancel made on a gateway over Redis and reads the claim
    then: no claim read while the job runs, and the cancel noticed at once, not at the lease's
    next renewal (20 s away here)."""
    long_lease = service.services.settings.model_copy(
        update={"lease_seconds": 60.0, "progress_seconds": 60.0}
    )
    worker = _lifecycle_with_events_of_its_own(service, long_lease)
    gateway = _lifecycle_with_events_of_its_own(service, service.services.settings)
    leases = Leases(worker)
    wait_until(worker.services.events.hears_every_claim_end, 10, "the worker hears cancels")
    job = _unpublished_job(service, key, "[sleep 0] cancelled as it runs")
    claim = claim_job(worker, job.id)
    assert claim is not None
    with _claim_reads(service.services.db) as claim_reads, leases.keep(claim) as keeper:
        time.sleep(1.0)  # five of the intervals at which the claim used to be read
        assert claim_reads == []
        keeper.progress(0.5)
        cancelled_at = time.monotonic()
        gateway.cancel(job.account_id, job.id)
        wait_until(keeper.lost.is_set, 5, "the cancel heard")
        assert time.monotonic() - cancelled_at < 5
        with pytest.raises(Cancelled):
            keeper.progress(0.6)
        assert len(claim_reads) == 1  # read once, when the cancel was heard


@pytest.mark.parametrize("service", ["distributed"], indirect=True)
def test_a_cancel_whose_event_is_lost_is_noticed_at_the_next_lease_renewal(
    service: Service, key: str
) -> None:
    """The database stays the truth: a cancel committed with no event sent (a publish that
    failed) is noticed by the lease's next renewal, which finds the claim gone."""
    short_lease = service.services.settings.model_copy(
        update={"lease_seconds": 1.5, "progress_seconds": 60.0}
    )
    worker = _lifecycle_with_events_of_its_own(service, short_lease)
    leases = Leases(worker)
    wait_until(worker.services.events.hears_every_claim_end, 10, "the worker hears cancels")
    job = _unpublished_job(service, key, "[sleep 0] cancelled unannounced")
    claim = claim_job(worker, job.id)
    assert claim is not None
    with _claim_reads(service.services.db) as claim_reads, leases.keep(claim) as keeper:
        cancelled, _ = jobs_service.cancel(service.services.db, job.account_id, job.id)
        assert cancelled is not None and cancelled.status == "failed"
        wait_until(keeper.lost.is_set, 5, "the renewal found the claim gone")
        assert claim_reads == []  # the renewal's write found it, not a claim read


@pytest.mark.slow
@pytest.mark.parametrize("service", ["distributed"], indirect=True)
def test_worker_killed_mid_job_is_redelivered_and_charged_once(service: Service, key: str) -> None:
    """Distributed only: embedded workers live in the serving process (the restart test)."""
    image_worker = next(w for w in service.workers if "image" in w.args)
    with service.client(key) as client:
        job = create(client, "[sleep 3] killed mid-job")
        wait_until(lambda: status_of(client, job["id"]) == "processing", 20, "processing")
        image_worker.kill(signal.SIGKILL)
        service.workers.remove(image_worker)
        replacement = ChildProcess(
            image_worker.args, image_worker.env, image_worker.log.with_suffix(".2.log")
        ).start()
        service.workers.append(replacement)
        done = wait_done(client, job["id"])
    assert done["status"] == "completed"
    assert len(done["result"]["images"]) == 1
    assert job_row(service.services, job["id"]).attempts == 2
    assert service.balance(key) == 1000 - 2
    kinds = ledger_kinds(service.services, key)
    assert kinds == ["grant", "reserve", "settle"]


def test_a_job_whose_worker_keeps_dying_fails_and_is_refunded(service: Service, key: str) -> None:
    """After max_attempts lost workers the sweep gives up: failed, refunded, not stuck."""
    caller = authentication.authenticate(service.services.db, key)
    assert caller is not None
    job, _ = jobs_service.insert_pending(
        service.services.db,
        caller,
        jobs_service.NewJob("image.generate", "generate", "image", {"prompt": "lost"}, price=2),
    )
    assert service.balance(key) == 1000 - 2
    moment = utcnow()
    with service.services.db.write() as session:
        # What the row looks like when its worker vanished on the last allowed attempt.
        session.execute(
            update(JobRow)
            .where(JobRow.id == job.id)
            .values(
                status="processing",
                attempts=service.services.settings.max_attempts,
                claim_token="lost",
                dispatched_at=moment,
                lease_expires_at=moment,
            )
        )
    with service.client(key) as client:
        wait_until(lambda: status_of(client, job.id) == "failed", 10, "given up")
        error = client.get(f"/jobs/{job.id}").json()["data"]["error"]
    assert "worker was lost" in error["message"]
    assert service.balance(key) == 1000


def test_what_a_vanished_attempt_stored_is_cleared_when_the_job_runs_again(
    service: Service, key: str
) -> None:
    """A worker killed mid-store leaves objects in the job's folder that no row names; the next
    attempt clears them, so the job's folder holds exactly its result."""
    job = _unpublished_job(service, key, "[sleep 0] its first worker vanished")
    services = service.services
    vanished = jobs_service.take_pending(services.db, job.id, 60)
    assert vanished is not None
    leftover = f"{image_folder(job.id)}half-stored.png"
    services.storage.put_bytes(leftover, b"not a finished image", "image/png")
    with services.db.write() as session:
        session.execute(update(JobRow).where(JobRow.id == job.id).values(lease_expires_at=utcnow()))
    with service.client(key) as client:
        done = wait_done(client, job.id)
    assert done["status"] == "completed"
    assert job_row(services, job.id).attempts == 2
    stored = services.storage.keys_under(image_folder(job.id))
    assert stored == [
        f"{image_folder(job.id)}{image['id']}.png" for image in done["result"]["images"]
    ]


@pytest.fixture
def store_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """A 1 MiB disk for the local store; skipped, saying why, where one cannot be made."""
    try:
        with small_disk(tmp_path / "store", 1 << 20) as disk:
            yield disk
    except DiskUnavailable as reason:
        pytest.skip(f"no small disk to fill here: {reason}")


@pytest.mark.slow
def test_a_full_disk_while_storing_fails_the_job_and_refunds(
    store_disk: SmallDisk, tmp_path: Path
) -> None:
    """The local store on a disk of its own, full to the last page while a job stores its
    result: the job fails with GENERATION_FAILED and a refund, nothing half-written stays, and
    once there is room again jobs complete."""
    env = {**COMMON_ENV, "SFUMATO_STORAGE_URL": f"file://{store_disk.path}"}
    with running_service(Mode("local", env, False), tmp_path / "data") as service:
        key = service.new_key(credits=100)
        with service.client(key) as client:
            store_disk.fill()
            failed = wait_done(client, create(client, "[sleep 0] onto a full disk")["id"])
            store_disk.free()
            completed = wait_done(client, create(client, "[sleep 0] room again")["id"])
        assert failed["status"] == "failed"
        assert failed["error"] == {
            "code": "GENERATION_FAILED",
            "message": "Could not store the result; the credits were refunded",
        }
        assert completed["status"] == "completed"
        assert ledger_kinds(service.services, key) == [
            "grant",
            "reserve",
            "refund",
            "reserve",
            "settle",
        ]
        charged = job_row(service.services, completed["id"]).credits_reserved
        assert service.balance(key) == 100 - charged
    # Nothing half-written: the disk holds the completed job's images and nothing else.
    on_disk = sorted(path.name for path in store_disk.path.rglob("*") if path.is_file())
    assert on_disk == sorted(f"{image['id']}.png" for image in completed["result"]["images"])
