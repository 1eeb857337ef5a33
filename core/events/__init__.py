"""Job state events: a worker says "job X changed", long-polls waiting on X wake up. Beside
them, credential events: a key or an account changed, so every gateway drops the callers it
cached (`core/accounts/callers.py`). And claim ends: a job was cancelled (or handed back), so
the worker running it stops at once (`workers/claims.py`).

Embedded mode broadcasts inside the process; with a Redis broker the events travel over Redis
pub/sub so a long-poll held on any gateway replica wakes whichever worker finished the job.
A progress event ("job X moved on") wakes only the subscribers that asked for progress (event
streams), so long-polls waiting for a terminal state are not woken about once a second; a job's
start (claimed by a worker) is sent as one too, since no long-poll waits for it.
"""

from __future__ import annotations

from pathlib import Path

from core.events.bus import JobEvents, JobWatch, begun_after_wakes

__all__ = ["JobEvents", "JobWatch", "begun_after_wakes", "job_events_for"]


def job_events_for(
    broker_url: str, namespace: str, credentials_marker: Path | None = None
) -> JobEvents:
    """`credentials_marker`: see JobEvents (unused with Redis, which reaches every process)."""
    if broker_url.startswith(("redis://", "rediss://")):
        # Imported here: an embedded deployment never loads the Redis client.
        from core.events.redis_bus import RedisJobEvents

        return RedisJobEvents(broker_url, f"{namespace}:job-events")
    return JobEvents(credentials_marker)
