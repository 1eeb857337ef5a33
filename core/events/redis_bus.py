"""Job, credential and claim-end events over Redis pub/sub: a long-poll held on any gateway
replica wakes when any worker finishes its job, a key changed anywhere clears every replica's
callers, and a job cancelled on any gateway stops on whichever worker runs it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable

import redis
import redis.asyncio as aioredis

from core.events.bus import JobEvents

log = logging.getLogger(__name__)
# Appended to the job id of a progress event on the Redis channel.
PROGRESS_SUFFIX = " progress"
# How often the claim-end listener's idle connection is pinged (a peer gone without a reset is
# noticed in this long) and how long each of its waits for a message lasts.
CLAIM_END_HEALTH_CHECK_SECONDS = 5.0
CLAIM_END_POLL_SECONDS = 1.0


class RedisJobEvents(JobEvents):
    def __init__(self, url: str, channel: str) -> None:
        super().__init__()
        self._url = url
        self.channel = channel
        self.credentials_channel = f"{channel}:credentials"
        # Claim ends travel apart from the job events: the workers that listen for them are not
        # sent every job's state and progress.
        self.claims_ended_channel = f"{channel}:claims-ended"
        self._claim_end_listener: threading.Thread | None = None
        self._claim_end_listener_lock = threading.Lock()
        # Set once Redis confirmed the claim-end subscription; cleared when its connection fails.
        self._hearing_claim_ends = False
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

    def publish_claim_ended(self, job_id: str) -> None:
        try:
            self._publisher.publish(self.claims_ended_channel, job_id)
        except redis.RedisError as error:
            # The change is committed: the job's worker notices at its next lease renewal.
            log.warning("could not publish the claim end of job %s: %s", job_id, error)
        self._claim_ended(job_id)

    def on_claim_ended(self, listener: Callable[[str | None], None]) -> None:
        super().on_claim_ended(listener)
        with self._claim_end_listener_lock:
            if self._claim_end_listener is None:
                self._claim_end_listener = threading.Thread(
                    target=self._listen_for_claim_ends, name="claim-end-events", daemon=True
                )
                self._claim_end_listener.start()

    def hears_every_claim_end(self) -> bool:
        return self._hearing_claim_ends

    def _listen_for_claim_ends(self) -> None:
        """A thread of its own (workers have no event loop): subscribed to the claim ends, and
        subscribed again with backoff when the connection fails."""
        backoff = 0.1
        while True:
            client = redis.Redis.from_url(
                self._url, health_check_interval=CLAIM_END_HEALTH_CHECK_SECONDS
            )
            pubsub = client.pubsub()
            try:
                pubsub.subscribe(self.claims_ended_channel)
                while True:
                    message = pubsub.get_message(timeout=CLAIM_END_POLL_SECONDS)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        self._hearing_claim_ends = True
                        backoff = 0.1
                        # Claim ends sent while not subscribed were missed: check every claim.
                        self._claim_ended(None)
                    elif message["type"] == "message":
                        self._claim_ended(message["data"].decode())
            except Exception as error:  # a dropped connection: subscribe again
                log.warning("claim-end events: redis connection lost (%s); reconnecting", error)
            finally:
                self._hearing_claim_ends = False
                pubsub.close()
                client.close()
            time.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

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
