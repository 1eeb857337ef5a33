"""Job and credential events over Redis pub/sub: a long-poll held on any gateway replica wakes
when any worker finishes its job, and a key changed anywhere clears every replica's callers."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import redis
import redis.asyncio as aioredis

from core.events.bus import JobEvents

log = logging.getLogger(__name__)
# Appended to the job id of a progress event on the Redis channel.
PROGRESS_SUFFIX = " progress"


class RedisJobEvents(JobEvents):
    def __init__(self, url: str, channel: str) -> None:
        super().__init__()
        self._url = url
        self.channel = channel
        self.credentials_channel = f"{channel}:credentials"
        self._publisher = redis.Redis.from_url(url)
        self._listener: asyncio.Task[None] | None = None
        self.subscribed = asyncio.Event()
        # Set once Redis confirmed both subscriptions; cleared as soon as the connection fails.
        self._receiving = False

    def publish(self, job_id: str) -> None:
        self._send(job_id, job_id)
        self._wake(job_id, progress=False)

    def publish_progress(self, job_id: str) -> None:
        self._send(job_id, f"{job_id}{PROGRESS_SUFFIX}")
        self._wake(job_id, progress=True)

    def _send(self, job_id: str, message: str) -> None:
        try:
            self._publisher.publish(self.channel, message)
        except redis.RedisError as error:
            # Long-polls still end by their timeout; the job row itself is already committed.
            log.warning("could not publish the event of job %s: %s", job_id, error)

    def publish_credentials_changed(self) -> None:
        # Unlike a job event this one must not be lost: a revoked key would stay cached
        # elsewhere. A failure raises, so the command that changed the key says so.
        self._publisher.publish(self.credentials_channel, b"")
        self._credentials_changed()

    def receives_every_change(self) -> bool:
        return self._receiving

    async def start(self) -> None:
        self._listener = asyncio.create_task(self._listen(), name="job-events")

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener

    async def _listen(self) -> None:
        backoff = 0.1
        job_channel = self.channel.encode()
        credentials_channel = self.credentials_channel.encode()
        while True:
            client = aioredis.Redis.from_url(self._url)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(self.channel, self.credentials_channel)
                    self.subscribed.set()
                    backoff = 0.1
                    async for message in pubsub.listen():
                        kind = message.get("type")
                        channel = message.get("channel")
                        if kind == "message" and channel == job_channel:
                            data = message["data"].decode()
                            job_id = data.removesuffix(PROGRESS_SUFFIX)
                            self._wake(job_id, progress=job_id != data)
                        elif channel == credentials_channel:
                            if kind == "subscribe":
                                # Changes made while not subscribed were missed: start afresh.
                                self._credentials_changed()
                                self._receiving = True
                            elif kind == "message":
                                self._credentials_changed()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a dropped connection: reconnect with backoff
                self._receiving = False
                self.subscribed.clear()
                log.warning("job events: redis connection lost (%s); reconnecting", error)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                self._receiving = False
                await client.aclose()
