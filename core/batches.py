"""Calls that arrive together, answered by one round trip.

Under load a gateway's event loop takes many requests in one pass, and each made its own round
trip to PostgreSQL (the job read) and to Redis (the rate-limit count): the driver's per-call
Python was most of a distributed read's CPU (docs/benchmarks.md). A `LoopBatches` collects the
calls made while the loop runs one pass and sends them as one batch when the pass ends; a batch
waiting for a free slot (a connection) takes whatever arrived meanwhile, so batches grow with the
load and a lone call waits for nothing but the end of its own pass.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Answer = TypeVar("Answer")


class _LoopQueue(Generic[Item, Answer]):
    """One event loop's calls waiting for a batch, and its slots for batches in flight."""

    def __init__(self, slots: int) -> None:
        self.waiting: list[tuple[Item, asyncio.Future[Answer]]] = []
        # Whether a batch that has not yet taken its calls is on its way (so no other is made).
        self.batch_coming = False
        self.slots = asyncio.Semaphore(slots)
        # The loop keeps only weak references to tasks: these are the batches' own.
        self.batches: set[asyncio.Task[None]] = set()


class LoopBatches(Generic[Item, Answer]):
    """`await batches(item)`: `run(items)` answers the items of one batch in their order (a
    sequence as long as `items`); an error it raises is every call's of that batch. At most
    `slots` batches of one event loop are in flight, each of at most `max_items`. A batch not
    answered `within` seconds of its first call (a slot's wait included) fails its calls with
    `TimeoutError`: one deadline per batch, not one per call."""

    def __init__(
        self,
        run: Callable[[list[Item]], Awaitable[Sequence[Answer]]],
        slots: int,
        within: float,
        max_items: int = 256,
    ) -> None:
        self.run = run
        self.slots = slots
        self.within = within
        self.max_items = max_items
        self._queues: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, _LoopQueue[Item, Answer]
        ] = weakref.WeakKeyDictionary()

    def __call__(self, item: Item) -> asyncio.Future[Answer]:
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _LoopQueue(self.slots)
        answer: asyncio.Future[Answer] = loop.create_future()
        queue.waiting.append((item, answer))
        if not queue.batch_coming:
            queue.batch_coming = True
            # After the callbacks already due in this pass: their calls join this batch.
            loop.call_soon(self._start_batch, loop, queue)
        return answer

    def _start_batch(
        self, loop: asyncio.AbstractEventLoop, queue: _LoopQueue[Item, Answer]
    ) -> None:
        # A task of its own: a caller that goes away does not take the others' answers with it.
        batch = loop.create_task(self._batch(queue, loop.time() + self.within))
        queue.batches.add(batch)
        batch.add_done_callback(queue.batches.discard)

    def _take(self, queue: _LoopQueue[Item, Answer]) -> list[tuple[Item, asyncio.Future[Answer]]]:
        """The calls of the batch starting now; those past `max_items` get a batch of their own."""
        calls = queue.waiting[: self.max_items]
        del queue.waiting[: self.max_items]
        queue.batch_coming = bool(queue.waiting)
        if queue.waiting:
            loop = asyncio.get_running_loop()
            loop.call_soon(self._start_batch, loop, queue)
        return calls

    async def _batch(self, queue: _LoopQueue[Item, Answer], deadline: float) -> None:
        calls: list[tuple[Item, asyncio.Future[Answer]]] = []
        try:
            async with asyncio.timeout_at(deadline), queue.slots:
                calls = self._take(queue)
                answers = await self.run([item for item, _ in calls])
            if len(answers) != len(calls):
                raise RuntimeError(f"a batch of {len(calls)} got {len(answers)} answers")
        except Exception as error:
            # Timed out waiting for a slot: the calls this batch was to take time out with it.
            for _, answer in calls or self._take(queue):
                if not answer.done():
                    answer.set_exception(error)
            return
        except BaseException:
            # The loop is closing (a cancellation): its callers are cancelled with it.
            for _, answer in calls:
                answer.cancel()
            raise
        for (_, answer), value in zip(calls, answers, strict=True):
            if not answer.done():
                answer.set_result(value)
