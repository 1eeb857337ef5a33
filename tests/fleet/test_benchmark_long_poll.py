"""`long_poll`'s held reads: a run whose reads were not held stops instead of printing a table
(the gateway once refused all 2,000 with 503 and the table showed them as held)."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.httpclient import Response
from benchmarks.long_poll import _check_held


def test_reads_answered_before_the_cancels_stop_the_run_naming_the_answers() -> None:
    # Futures of a loop that is never run: `asyncio.run` here would fail once the session's
    # Playwright browser (sync API) has set a running loop in this thread.
    loop = asyncio.new_event_loop()
    try:
        held = [loop.create_future() for _ in range(3)]
        _check_held(held, files_held=3)  # all held, each on a socket of the gateway
        held[1].set_result(Response(503, b"Service Unavailable", 0.0))
        with pytest.raises(RuntimeError, match=r"1 of 3 reads answered.*503 b'Service Unav"):
            _check_held(held, files_held=3)
        held[1] = loop.create_future()
        with pytest.raises(RuntimeError, match="holds 2 open files for 3 held reads"):
            _check_held(held, files_held=2)
    finally:
        loop.close()
