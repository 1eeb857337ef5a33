"""`python -m benchmarks [name ...] [--quick]`: run benchmarks, print each one's results as it
ends, and write them to docs/benchmarks.md (all of it when all run; named ones replace only
their own sections)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from benchmarks import (
    create_overhead,
    create_to_start,
    dashboard,
    diffusion,
    diffusion_video,
    fleet,
    images,
    job_cost,
    job_read,
    long_poll,
    model_load,
    queue_position,
    scale_out,
    stack,
    startup,
    styles,
    videos,
    webhook_outbox,
)
from benchmarks.chaos import soak as chaos_soak
from benchmarks.harness import Options
from benchmarks.measures import raise_fd_limit
from benchmarks.report import Section, document, machine, merged, run_stamp
from benchmarks.testkit.processes import REPO

BENCHMARKS: dict[str, Callable[[Options], Section]] = {
    "job_read": job_read.run,
    "long_poll": long_poll.run,
    "create_to_start": create_to_start.run,
    "create_overhead": create_overhead.run,
    "queue_position": queue_position.run,
    "images": images.run,
    "videos": videos.run,
    "styles": styles.run,
    "fleet": fleet.run,
    "dashboard": dashboard.run,
    "diffusion": diffusion.run,
    "diffusion_video": diffusion_video.run,
    "model_load": model_load.run,
    "chaos": chaos_soak.run,
    "startup": startup.run,
    "job_cost": job_cost.run,
    "scale_out": scale_out.run,
    "webhook_outbox": webhook_outbox.run,
    "stack": stack.run,
}
DOC = REPO / "docs" / "benchmarks.md"
# What a benchmark needs beyond the service's own dependencies (the dev extras): `chaos` and
# `job_cost` run moto's S3 server as their object store.
NEEDS: dict[str, tuple[str, ...]] = {"chaos": ("moto",), "job_cost": ("moto",)}
INSTALL_DEV = "pip install -e '.[dev]' (or `make dev`)"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "names", nargs="*", metavar="name", help=f"any of {', '.join(BENCHMARKS)}; all if none"
    )
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--minutes", type=float, help="chaos: minutes of load (default 5)")
    parser.add_argument("--device", help="diffusion: the models' device (cpu, cuda; default auto)")
    parser.add_argument("--doc", type=Path, default=DOC, help=f"results page (default {DOC})")
    arguments = parser.parse_args(argv)
    unknown = [name for name in arguments.names if name not in BENCHMARKS]
    if unknown:
        parser.error(f"no benchmark {', '.join(unknown)} (there are {', '.join(BENCHMARKS)})")
    missing = {
        name: absent
        for name in arguments.names or list(BENCHMARKS)
        if (absent := [module for module in NEEDS.get(name, ()) if not _installed(module)])
    }
    if missing:
        for name, absent in missing.items():
            print(
                f"error: `{name}` needs {', '.join(absent)}, from the dev extras", file=sys.stderr
            )
        print(f"install them with {INSTALL_DEV}, or name other benchmarks", file=sys.stderr)
        return 2
    if arguments.device:
        os.environ["SFUMATO_MODEL_DEVICE"] = arguments.device
    raise_fd_limit()
    # Stopped by a plain `kill`, still stop the servers and drop the databases on the way out.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    started = datetime.now(UTC)
    described = machine()
    sections: list[Section] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sfumato-bench-") as work_dir:
        options = Options(quick=arguments.quick, work_dir=Path(work_dir), minutes=arguments.minutes)
        for name in arguments.names or list(BENCHMARKS):
            print(f"\n== {name}", flush=True)
            try:
                section = BENCHMARKS[name](options)
            except Exception as error:
                traceback.print_exc()
                _print_server_logs(Path(work_dir), name)
                first_line = str(error).partition("\n")[0]
                failures.append(f"`{name}`: {type(error).__name__}: {first_line}")
                continue
            print(section.markdown(), flush=True)
            sections.append(section)
    command = " ".join(["python -m benchmarks", *argv])
    if arguments.names and arguments.doc.exists():
        stamp = run_stamp(started, command)
        page = merged(arguments.doc.read_text(), stamp, sections, failures)
    else:
        page = document(started, described, command, sections, failures)
    arguments.doc.write_text(page)
    print(f"\nwrote {arguments.doc}")
    for section in sections:
        if section.last_line:
            print(section.last_line, flush=True)
    return 1 if failures else 0


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _exit_on_sigterm(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _print_server_logs(work_dir: Path, name: str) -> None:
    """The ends of the logs of a failed benchmark's servers, which the run directory loses."""
    for log in sorted(work_dir.glob(f"{name}*/*.log")):
        print(f"--- end of {log.relative_to(work_dir)}", file=sys.stderr)
        print("\n".join(log.read_text(errors="replace").splitlines()[-40:]), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
