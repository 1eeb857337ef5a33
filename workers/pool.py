"""Celery's thread pool, fixed for several apps in one process.

The stock pool's threads resolve tasks through the *current* app, which is the default app in a
fresh thread, so a task of our (non-default) app stays PENDING forever. Each worker thread here
makes its worker's app current before it runs anything.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery.concurrency.thread import TaskPool


class AppThreadPool(TaskPool):
    executor: ThreadPoolExecutor

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        app = kwargs["app"]
        self.executor.shutdown(wait=False)
        self.executor = ThreadPoolExecutor(
            max_workers=self.limit, initializer=app.set_current, thread_name_prefix="job"
        )
