"""The in-memory broker of embedded mode: idle consumers sleep until a message arrives."""

from __future__ import annotations

import threading
from typing import Any

from kombu import Connection, Queue

from core.broker import MEMORY_RECHECK_SECONDS, WAKING_MEMORY_TRANSPORT

IDLE_SECONDS = 1.0


def test_an_idle_consumer_looks_for_messages_only_when_woken() -> None:
    queue = Queue("waking-memory-test", routing_key="waking-memory-test")
    received: list[Any] = []

    def on_message(body: Any, message: Any) -> None:
        received.append(body)
        message.ack()

    with (
        Connection("memory://localhost", transport=WAKING_MEMORY_TRANSPORT) as consumer_side,
        Connection("memory://localhost", transport=WAKING_MEMORY_TRANSPORT) as producer_side,
        consumer_side.Consumer(queue, callbacks=[on_message]),
    ):
        cycle = consumer_side.transport.cycle
        looks = 0
        look = cycle.get

        def counted_look(*args: Any, **kwargs: Any) -> Any:
            nonlocal looks
            looks += 1
            return look(*args, **kwargs)

        cycle.get = counted_look
        publish = threading.Timer(
            IDLE_SECONDS,
            lambda: producer_side.Producer().publish(
                "hello", routing_key=queue.routing_key, declare=[queue]
            ),
        )
        publish.start()
        consumer_side.drain_events(timeout=30)
        publish.join()
    assert received == ["hello"]
    # Polling every few milliseconds would have looked hundreds of times while idle.
    assert looks <= 2 + IDLE_SECONDS / MEMORY_RECHECK_SECONDS
