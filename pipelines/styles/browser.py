"""The headless Chromium a process renders brand sites in: one browser, reused across jobs,
restarted when it dies, driven by Playwright from a thread of its own.

Playwright's objects belong to the event loop that made them, and a worker runs jobs on several
threads, so the browser lives on one thread running an asyncio loop; `Browser.run` hands it a
coroutine and waits. Each extraction gets a fresh browser context (no profile, no cookies kept,
no service workers, no downloads), closed after. Nothing the browser sends reaches the network
by itself: every request is answered by request interception (`rendered.py`, through the
caller's fetcher), and Chromium is started with a proxy that cannot be resolved and a host
resolver that resolves nothing, so whatever escapes interception (WebSocket, preconnect, WebRTC)
fails instead of reaching an address the fetcher would have refused. JavaScript's heap is capped
per page (`--js-flags=--max-old-space-size`): a page past it crashes alone, the browser lives on.

The browser runs pages nobody vetted, so it gets as little as it can work with: an environment of
its own (a search path, a locale, an empty home: none of the worker's `SFUMATO_*` settings,
storage credentials or passwords, `browser_environment`), and Chromium's sandbox wherever the
platform allows one (`sandbox`: "auto" tries it and falls back, saying so, where it cannot run:
as root, or without user namespaces; "required" refuses to run without it; "off" never uses it).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pipelines.styles.sources import SiteUnavailable

if TYPE_CHECKING:
    from playwright.async_api import Browser as PlaywrightBrowser
    from playwright.async_api import Playwright

log = logging.getLogger(__name__)
T = TypeVar("T")

CHROMIUM_NAMES = ("chromium", "chromium-browser")
# The arguments the project runs Chromium with (docs/operations.md), then the network lock-down.
CHROMIUM_ARGS = (
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--no-first-run",
    "--mute-audio",
    "--proxy-server=http://unreachable.invalid:1",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)
# Seconds a start or a stop of the browser may take.
START_SECONDS = 30.0
SANDBOX_CHOICES = ("auto", "required", "off")
NO_SANDBOX = "--no-sandbox"


def browser_environment(home: str) -> dict[str, str | float | bool]:
    """All the browser's processes see of the environment: no setting of the service's, no
    credential, no password (a page that broke out of Chromium finds none)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": home}


def sandbox_attempts(sandbox: str, is_root: bool) -> list[list[str]]:
    """The launches to try, in order, as extra arguments: sandboxed first where Chromium can be
    (never as root: it refuses), then without, unless the sandbox is required."""
    if sandbox not in SANDBOX_CHOICES:
        raise ValueError(f"unknown sandbox setting {sandbox!r} (one of {SANDBOX_CHOICES})")
    if sandbox == "off":
        return [[NO_SANDBOX]]
    if sandbox == "required":
        return [] if is_root else [[]]
    return [[NO_SANDBOX]] if is_root else [[], [NO_SANDBOX]]


class BrowserUnavailable(Exception):
    """Chromium cannot be started here (not installed, or it fails to launch)."""


class BrowserCrashed(SiteUnavailable):
    """The browser process died while rendering the page, and again in a new browser."""


def find_chromium(configured: str) -> str | None:
    """The Chromium executable: `configured` ("off": none; a path; empty: look on PATH)."""
    if configured.strip().lower() == "off":
        return None
    if configured.strip():
        return configured.strip() if Path(configured.strip()).is_file() else None
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


@dataclass(frozen=True)
class RenderBudget:
    """What one extraction may spend in the browser."""

    # The whole extraction: load, settle, read, screenshots, logo; past it the job fails.
    seconds: float = 20.0
    # How long to wait for the network to go quiet after the page loaded (a page that never
    # goes quiet is read as it is then).
    settle_seconds: float = 2.5
    # Requests the page may make, and bytes fetched for it in all.
    max_requests: int = 300
    max_bytes: int = 40 * 1024 * 1024


class Browser:
    """One Chromium for this process, started on first use and restarted when it died."""

    def __init__(
        self, executable: str, heap_mb: int = 512, fetch_threads: int = 8, sandbox: str = "auto"
    ) -> None:
        self.executable = executable
        self.heap_mb = heap_mb
        self.sandbox = sandbox
        self.sandboxed: bool | None = None
        # The browser's home: made at its launch, removed when it is closed.
        self._home: str | None = None
        # Blocking fetches of the pages' requests run here, off the browser's loop.
        self.fetch_pool = ThreadPoolExecutor(fetch_threads, thread_name_prefix="browser-fetch")
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._playwright: Playwright | None = None
        self._browser: PlaywrightBrowser | None = None
        self._launch_lock: asyncio.Lock | None = None
        self.launches = 0
        self._closing = False
        # The browser's own styles per element type (rendered.py), the same for every page.
        self.defaults: dict[str, Any] | None = None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=serve, name="browser", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    async def _started(self) -> PlaywrightBrowser:
        """The running browser, launched (again) if there is none or it died."""
        if self._launch_lock is None:
            self._launch_lock = asyncio.Lock()
        async with self._launch_lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            from playwright.async_api import Error, async_playwright

            if self._playwright is None:
                self._playwright = await async_playwright().start()
            browser = await self._launch(Error)
            if self.launches:
                log.warning("the browser had stopped; started a new one")
            self.launches += 1
            browser.on("disconnected", self._on_disconnected)
            self._browser = browser
            return browser

    async def _launch(self, error_type: type[Exception]) -> PlaywrightBrowser:
        assert self._playwright is not None
        args = [*CHROMIUM_ARGS, f"--js-flags=--max-old-space-size={self.heap_mb}"]
        attempts = sandbox_attempts(self.sandbox, os.geteuid() == 0)
        if not attempts:
            raise BrowserUnavailable(
                "Chromium's sandbox is required (SFUMATO_CHROMIUM_SANDBOX=required), and it "
                "cannot run as root"
            )
        if self._home is None:
            self._home = tempfile.mkdtemp(prefix="sfumato-browser-home-")
        failure = "error"
        for extra in attempts:
            try:
                browser = await self._playwright.chromium.launch(
                    executable_path=self.executable,
                    args=[*args, *extra],
                    env=browser_environment(self._home),
                    timeout=START_SECONDS * 1000,
                    handle_sigint=False,
                    handle_sigterm=False,
                    handle_sighup=False,
                )
            except error_type as error:
                failure = str(error).strip().splitlines()[0] if str(error).strip() else "error"
                continue
            sandboxed = NO_SANDBOX not in extra
            if self.sandboxed is None and not sandboxed:
                log.warning(
                    "Chromium renders pages without its sandbox here (%s); run the worker as "
                    "a user other than root, with user namespaces, to have it",
                    "as root" if os.geteuid() == 0 else failure,
                )
            self.sandboxed = sandboxed
            return browser
        raise BrowserUnavailable(f"Chromium ({self.executable}) did not start: {failure}")

    def _on_disconnected(self, _browser: object) -> None:
        if not self._closing:
            log.warning("the browser stopped; the next extraction starts a new one")

    def run(self, work: Callable[[PlaywrightBrowser], Awaitable[T]], timeout: float) -> T:
        """Run `work` with the browser on the browser's thread and return its result. The work
        keeps its own deadline; `timeout` only guards against a loop that stopped answering.
        A browser that dies during the work is restarted and the work tried once more."""
        from playwright.async_api import Error

        loop = self._ensure_loop()
        for attempt in (1, 2):

            async def attempt_work() -> T:
                return await work(await self._started())

            future = asyncio.run_coroutine_threadsafe(attempt_work(), loop)
            try:
                return future.result(timeout + START_SECONDS)
            except FutureTimeout:
                future.cancel()
                raise BrowserCrashed("the browser stopped answering") from None
            except Error:
                if self._browser is not None and self._browser.is_connected():
                    raise  # the page failed, not the browser
                if attempt == 2:
                    raise BrowserCrashed("the page stopped the browser, twice") from None
                log.warning("the browser stopped while rendering; trying again in a new one")
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the browser and stop its thread; a later `run` starts a new one."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
        if loop is None:
            return
        self._closing = True

        async def stop() -> None:
            try:
                if self._browser is not None:
                    await self._browser.close()
                if self._playwright is not None:
                    await self._playwright.stop()
            finally:
                self._browser = self._playwright = None
                self._launch_lock = None
                self._closing = False

        try:
            asyncio.run_coroutine_threadsafe(stop(), loop).result(START_SECONDS)
        except Exception as error:  # closing is best effort: the driver dies with the process
            log.warning("closing the browser failed: %s", error)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(START_SECONDS)
        loop.close()


_shared: dict[tuple[str, int, str], Browser] = {}
_shared_lock = threading.Lock()


def shared_browser(executable: str, heap_mb: int, sandbox: str = "auto") -> Browser:
    """The process's browser for this configuration: every worker of a process (embedded mode
    runs one per queue, tests several services) renders in one Chromium."""
    with _shared_lock:
        key = (executable, heap_mb, sandbox)
        if key not in _shared:
            _shared[key] = Browser(executable, heap_mb, sandbox=sandbox)
        return _shared[key]
