"""`LoopBatches`: the calls of one pass of the event loop are one batch, a batch waiting for a slot
takes what arrives meanwhile, and a batch's failure or a caller's departure touches no other
batch or caller."""

from __future__ import annotations

import asyncio

import pytest

from core.batches import LoopBatches


class Recorder:
    """Runs batches (doubling each item), recording them; `gate`, when set, holds each batch
    until it is opened."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.batches: list[list[int]] = []
        self.gate = gate

    async def run(self, items: list[int]) -> list[int]:
        self.batches.append(items)
        if self.gate is not None:
            await self.gate.wait()
        await asyncio.sleep(0)  # a round trip's worth of suspension
        return [item * 2 for item in items]


def test_calls_of_one_pass_are_one_batch_answered_in_order() -> None:
    recorder = Recorder()
    batches = LoopBatches(recorder.run, slots=4, within=5)

    async def calls() -> list[int]:
        return await asyncio.gather(*(batches(item) for item in range(10)))

    assert asyncio.run(calls()) == [item * 2 for item in range(10)]
    assert recorder.batches == [list(range(10))]


def test_calls_of_later_passes_make_later_batches() -> None:
    recorder = Recorder()
    batches = LoopBatches(recorder.run, slots=4, within=5)

    async def calls() -> list[int]:
        return [await batches(item) for item in range(3)]

    assert asyncio.run(calls()) == [0, 2, 4]
    assert recorder.batches == [[0], [1], [2]]


def test_a_batch_waiting_for_a_slot_takes_the_calls_made_meanwhile() -> None:
    gate = asyncio.Event()
    recorder = Recorder(gate)
    batches = LoopBatches(recorder.run, slots=1, within=5)

    async def calls() -> list[int]:
        first = asyncio.ensure_future(batches(1))
        await asyncio.sleep(0.01)  # the first batch holds the only slot
        later = [asyncio.ensure_future(batches(item)) for item in (2, 3)]
        await asyncio.sleep(0.01)
        last = asyncio.ensure_future(batches(4))  # a pass later, while the second batch waits
        await asyncio.sleep(0.01)
        gate.set()
        return await asyncio.gather(first, *later, last)

    assert asyncio.run(calls()) == [2, 4, 6, 8]
    assert recorder.batches == [[1], [2, 3, 4]]


def test_batches_are_at_most_max_items() -> None:
    recorder = Recorder()
    batches = LoopBatches(recorder.run, slots=4, within=5, max_items=4)

    async def calls() -> list[int]:
        return await asyncio.gather(*(batches(item) for item in range(10)))

    assert asyncio.run(calls()) == [item * 2 for item in range(10)]
    assert recorder.batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_a_failed_batch_fails_its_calls_and_the_next_batch_runs() -> None:
    attempts: list[list[int]] = []

    async def run(items: list[int]) -> list[int]:
        attempts.append(items)
        if len(attempts) == 1:
            raise ConnectionError("the server went away")
        return items

    batches = LoopBatches(run, slots=2, within=5)

    async def calls() -> tuple[list[object], int]:
        failed = await asyncio.gather(batches(1), batches(2), return_exceptions=True)
        return failed, await batches(3)

    failed, answered = asyncio.run(calls())
    assert [type(error) for error in failed] == [ConnectionError, ConnectionError]
    assert answered == 3


def test_a_batch_answering_the_wrong_number_of_items_fails_its_calls() -> None:
    async def run(items: list[int]) -> list[int]:
        return items[1:]

    batches = LoopBatches(run, slots=1, within=5)

    async def call() -> None:
        with pytest.raises(RuntimeError, match="a batch of 2 got 1 answers"):
            await asyncio.gather(batches(1), batches(2))

    asyncio.run(call())


def test_a_caller_that_goes_away_takes_no_answer_from_the_others() -> None:
    gate = asyncio.Event()
    recorder = Recorder(gate)
    batches = LoopBatches(recorder.run, slots=1, within=5)

    async def calls() -> list[int]:
        leaving = asyncio.ensure_future(batches(1))
        staying = asyncio.ensure_future(batches(2))
        await asyncio.sleep(0.01)
        leaving.cancel()
        gate.set()
        answered = await staying
        assert leaving.cancelled()
        return [answered, await batches(3)]

    assert asyncio.run(calls()) == [4, 6]
    assert recorder.batches == [[1, 2], [3]]


def test_each_event_loop_has_its_own_batches() -> None:
    recorder = Recorder()
    batches = LoopBatches(recorder.run, slots=1, within=5)

    async def call(item: int) -> int:
        return await batches(item)

    assert asyncio.run(call(1)) == 2
    assert asyncio.run(call(2)) == 4
    assert recorder.batches == [[1], [2]]


def test_a_batch_not_answered_in_time_fails_its_calls_and_the_next_batch_runs() -> None:
    gate = asyncio.Event()
    recorder = Recorder(gate)
    batches = LoopBatches(recorder.run, slots=1, within=0.05)

    async def calls() -> tuple[object, int]:
        failed = await asyncio.gather(batches(1), return_exceptions=True)
        gate.set()
        return failed[0], await batches(2)

    failed, answered = asyncio.run(calls())
    assert isinstance(failed, TimeoutError)
    assert answered == 4
    assert recorder.batches == [[1], [2]]


def test_calls_waiting_for_a_slot_past_their_deadline_time_out_unrun() -> None:
    runs: list[list[int]] = []

    async def slow_to_let_go(items: list[int]) -> list[int]:
        runs.append(items)
        if items == [1]:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                await asyncio.sleep(0.2)  # holds its slot well past the next batch's deadline
                raise
        return items

    batches = LoopBatches(slow_to_let_go, slots=1, within=0.05)

    async def calls() -> tuple[list[object], int]:
        first = asyncio.ensure_future(batches(1))
        await asyncio.sleep(0.01)
        waiting = asyncio.ensure_future(batches(2))
        failed = await asyncio.gather(first, waiting, return_exceptions=True)
        return failed, await batches(3)

    failed, answered = asyncio.run(calls())
    assert [type(error) for error in failed] == [TimeoutError, TimeoutError]
    assert answered == 3
    assert runs == [[1], [3]], "the call that timed out waiting was never run"


def test_every_call_fails_by_its_own_deadline_however_many_wait() -> None:
    """Calls past `max_items`, waiting behind a batch the server never answers, each fail at
    their own deadline, not one batch's deadline after another."""

    async def unanswered(items: list[int]) -> list[int]:
        await asyncio.Event().wait()
        return items

    batches = LoopBatches(unanswered, slots=1, within=0.1, max_items=2)

    async def calls() -> tuple[list[object], float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        failed = await asyncio.gather(*(batches(item) for item in range(7)), return_exceptions=True)
        return failed, loop.time() - started

    failed, waited = asyncio.run(calls())
    assert [type(error) for error in failed] == [TimeoutError] * 7
    assert waited < 0.25, f"7 calls of one pass failed after {waited:.2f} s"


def test_each_caller_gets_an_error_of_its_own() -> None:
    async def failing(items: list[int]) -> list[int]:
        raise ConnectionError("the server went away")

    batches = LoopBatches(failing, slots=1, within=5)

    async def calls() -> list[BaseException]:
        return await asyncio.gather(batches(1), batches(2), return_exceptions=True)

    first, second = asyncio.run(calls())
    assert isinstance(first, ConnectionError) and isinstance(second, ConnectionError)
    assert first is not second and first.args == second.args


def test_calls_still_waiting_when_the_loop_closes_are_cancelled() -> None:
    gate = asyncio.Event()
    batches = LoopBatches(Recorder(gate).run, slots=1, within=5)

    async def leave_them() -> list[asyncio.Future[int]]:
        running = batches(1)
        await asyncio.sleep(0.01)
        waiting = batches(2)  # for the first's slot
        await asyncio.sleep(0.01)
        return [running, waiting]

    left = asyncio.run(leave_them())
    assert all(answer.cancelled() for answer in left)
