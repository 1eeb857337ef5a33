"""The child processes a test or a benchmark starts: `sfumato` servers and workers, a load
generator, a bare app. One harness for both, so that a process is started, awaited, killed and
stopped the same way wherever it runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.testkit.waits import wait_until

REPO = Path(__file__).resolve().parents[2]


def _inherited_environment() -> dict[str, str]:
    """This process's environment less the service's own settings (`SFUMATO_*`): a child's
    settings come from the `env` it is given alone, never from the shell that ran the tests or
    the benchmark. `SFUMATO_TEST_*` are no settings but the test harness's channels to the
    steerable pipelines (benchmarks/testkit/pipelines.py), which every child inherits."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("SFUMATO_") or name.startswith("SFUMATO_TEST_")
    }


class ChildProcess:
    """This interpreter run with `args` in the repository, its output appended to `log`;
    stopped with SIGTERM (SIGKILL after 20 s) or killed with any signal."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.args = args
        self.env = {**_inherited_environment(), **env, "PYTHONPATH": str(REPO)}
        self.log = log
        self.popen: subprocess.Popen[bytes] | None = None

    @classmethod
    def sfumato(cls, args: list[str], env: dict[str, str], log: Path) -> ChildProcess:
        """A `sfumato` command: `python -m sfumato ARGS`."""
        return cls(["-m", "sfumato", *args], env, log)

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def start(self) -> ChildProcess:
        with self.log.open("ab") as handle:
            self.popen = subprocess.Popen(
                [sys.executable, *self.args], cwd=REPO, env=self.env, stdout=handle, stderr=handle
            )
        return self

    def exited(self) -> bool:
        return self.popen is not None and self.popen.poll() is not None

    def check_alive(self) -> None:
        if self.popen is None or self.exited():
            raise RuntimeError(f"{' '.join(self.args)} exited (its log is {self.log.name})")

    def wait_for(
        self, predicate: Callable[[], object], timeout: float, message: str, interval: float = 0.1
    ) -> None:
        """Poll `predicate` until it holds, at most `timeout` seconds; at once an error should
        the process exit first (a predicate that held just before the exit still counts)."""

        def held() -> bool:
            exited = self.exited()
            if predicate():
                return True
            if exited:
                self.check_alive()
            return False

        wait_until(held, timeout, message, interval)

    def wait_for_log(self, text: str, timeout: float = 60) -> None:
        self.wait_for(
            lambda: self.log.exists() and text in self.log.read_text(errors="replace"),
            timeout,
            f"{text!r} in {self.log}",
        )

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` and wait for the exit."""
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(sig)
            self.popen.wait(30)

    def stop(self) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        self.popen.terminate()
        try:
            self.popen.wait(20)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()


@contextmanager
def running(child: ChildProcess) -> Iterator[ChildProcess]:
    """`child` started, and stopped on the way out."""
    child.start()
    try:
        yield child
    finally:
        child.stop()
