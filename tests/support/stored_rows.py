"""What a service under test has stored, read straight from its database: an account's ledger
entries and a job's row."""

from __future__ import annotations

from core.accounts import authentication
from core.credits import repository as ledger
from core.services import Services
from core.tables import JobRow


def ledger_kinds(services: Services, key: str) -> list[str]:
    caller = authentication.authenticate(services.db, key)
    assert caller is not None
    with services.db.read() as session:
        return [entry.kind for entry in ledger.entries_of(session, caller.account_id)]


def job_row(services: Services, job_id: str) -> JobRow:
    with services.db.read() as session:
        job = session.get(JobRow, job_id)
        assert job is not None
        return job
