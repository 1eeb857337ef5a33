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
import copy
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Answer = TypeVar("Answer")


class _Call(Generic[Item, Answer]):
    """A call waiting for its answer, and when it gives up waiting (the loop's clock)."""

    __slots__ = ("answer", "deadline", "item")

    def __init__(self, item: Item, answer: asyncio.Future[Answer], deadline: float) -> None:
        self.item = item
        self.answer = answer
        self.deadline = deadline

    def fail(self, error: BaseException) -> None:
        if not self.answer.done():
            # An error of its own: callers raising one object would tangle their tracebacks.
            self.answer.set_exception(_copy_of(error))


def _copy_of(error: BaseException) -> BaseException:
    try:
        return copy.copy(error)
    except Exception:  # an exception class that cannot be rebuilt from its arguments
        return error


class _LoopQueue(Generic[Item, Answer]):
    """One event loop's calls waiting for a batch (oldest first), and its slots for batches in
    flight."""

    def __init__(self, slots: int) -> None:
        self.waiting: list[_Call[Item, Answer]] = []
        # Whether a batch that has not yet taken its calls is on its way (so no other is made).
        self.batch_coming = False
        self.slots = asyncio.Semaphore(slots)
        # The loop keeps only weak references to tasks: these are the batches' own.
        self.batches: set[asyncio.Task[None]] = set()


class LoopBatches(Generic[Item, Answer]):
    """`await batches(item)`: `run(items)` answers the items of one batch in their order (a
    sequence as long as `items`); an error it raises is every call's of that batch. At most
    `slots` batches of one event loop are in flight, each of at most `max_items`. A call not
    answered `within` seconds (a slot's wait included) fails with `TimeoutError`; a batch runs
    under one deadline, its oldest call's, so its calls fail together, none later than its own
    deadline."""

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
        queue.waiting.append(_Call(item, answer, loop.time() + self.within))
        if not queue.batch_coming:
            self._schedule(loop, queue)
        return answer

    def _schedule(self, loop: asyncio.AbstractEventLoop, queue: _LoopQueue[Item, Answer]) -> None:
        queue.batch_coming = True
        # After the callbacks already due in this pass: their calls join this batch.
        loop.call_soon(self._start_batch, loop, queue)

    def _start_batch(
        self, loop: asyncio.AbstractEventLoop, queue: _LoopQueue[Item, Answer]
    ) -> None:
        # A task of its own: a caller that goes away does not take the others' answers with it.
        batch = loop.create_task(self._batch(queue))
        queue.batches.add(batch)
        batch.add_done_callback(queue.batches.discard)

    def _take(self, queue: _LoopQueue[Item, Answer]) -> list[_Call[Item, Answer]]:
        """The calls of the batch starting now; those past `max_items` get a batch of their own."""
        calls = queue.waiting[: self.max_items]
        del queue.waiting[: self.max_items]
        self._after_taking(queue)
        return calls

    def _after_taking(self, queue: _LoopQueue[Item, Answer]) -> None:
        queue.batch_coming = False
        if queue.waiting:
            self._schedule(asyncio.get_running_loop(), queue)

    async def _batch(self, queue: _LoopQueue[Item, Answer]) -> None:
        calls: list[_Call[Item, Answer]] = []
        try:
            # The oldest waiting call's deadline: the calls behind it are younger.
            async with asyncio.timeout_at(queue.waiting[0].deadline), queue.slots:
                calls = self._take(queue)
                answers = await self.run([call.item for call in calls])
            if len(answers) != len(calls):
                raise RuntimeError(f"a batch of {len(calls)} got {len(answers)} answers")
        except Exception as error:
            if not calls:
                # Timed out waiting for a slot: every call past its deadline fails unrun.
                now = asyncio.get_running_loop().time()
                expired = 0  # a prefix: calls wait oldest first, all for `within`
                while expired < len(queue.waiting) and queue.waiting[expired].deadline <= now:
                    expired += 1
                calls = queue.waiting[:expired]
                del queue.waiting[:expired]
                self._after_taking(queue)
            for call in calls:
                call.fail(error)
            return
        except BaseException:
            # The loop is closing (a cancellation): the callers are cancelled with it.
            for call in calls or queue.waiting:
                call.answer.cancel()
            if not calls:
                queue.waiting.clear()
                queue.batch_coming = False
            raise
        for call, value in zip(calls, answers, strict=True):
            if not call.answer.done():
                call.answer.set_result(value)
