"""The webhooks' outbox: a job's change writes the deliveries it causes in its own transaction
(`core/jobs/service.py` calls `record` inside each transition the lifecycle makes), so a change
that commits has its deliveries committed with it, and one rolled back has none. The deliverer
(`core/webhooks/deliverer.py`) sends them afterwards, however long that takes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from core.ids import new_id
from core.webhooks import repository
from core.webhooks.events import JobEvent, JobSnapshot


def record(session: Session, job_id: str, event: JobEvent, moment: datetime) -> int:
    """Write a delivery of `event` for the job's own webhook and each of its account's enabled
    endpoints whose filter names it, with the job as this transaction now sees it. Returns how
    many were written. One indexed read when nothing is subscribed."""
    connection = session.connection()
    rows = repository.job_state_and_endpoints(connection, job_id)
    if not rows:
        return 0
    job = rows[0]
    urls: list[tuple[str, str | None, str]] = []
    if job.webhook is not None and event in job.webhook["events"]:
        urls.append(("job", None, job.webhook["url"]))
    for row in rows:
        if row.endpoint_id is not None and event in row.endpoint_events:
            urls.append(("endpoint", row.endpoint_id, row.endpoint_url))
    if not urls:
        return 0
    state = JobSnapshot(
        id=job.id,
        type=job.type,
        status=job.status,
        created_at=job.created_at,
        result=job.result,
        error=job.error,
        progress=job.progress,
        message=job.message,
    ).stored()
    repository.add_deliveries(
        connection,
        [
            {
                "id": new_id(),
                "account_id": job.account_id,
                "job_id": job.id,
                "source": source,
                "endpoint_id": endpoint_id,
                "url": url,
                "event": event.value,
                "job_state": state,
                "status": repository.PENDING,
                "attempts": 0,
                "next_attempt_at": moment,
                "created_at": moment,
            }
            for source, endpoint_id, url in urls
        ],
    )
    return len(urls)
