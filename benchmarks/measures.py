"""Readings of processes from /proc, the open-file limit, and percentiles."""

from __future__ import annotations

import math
import os
import resource
from collections.abc import Sequence
from pathlib import Path


def raise_fd_limit() -> int:
    """Lift this process's open-file limit to its hard limit (children inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def open_file_limit(pid: int) -> int:
    """The soft RLIMIT_NOFILE of any process, as /proc shows it."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise RuntimeError(f"no open-file limit for process {pid}")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, all its threads together."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    # utime and stime are fields 14 and 15 of proc(5); this list starts at field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(roots: Sequence[int]) -> float:
    """User plus system CPU time of processes and all their descendants so far, those already
    ended and waited for included (their time is in their parent's cutime and cstime)."""
    # pid -> (parent pid, utime + stime + cutime + cstime in ticks), one pass over /proc.
    processes: dict[int, tuple[int, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # it ended meanwhile; its parent's cutime has it once waited for
            continue
        # ppid is field 4 of proc(5), utime to cstime 14 to 17; this list starts at field 3.
        processes[int(entry.name)] = (int(fields[1]), sum(int(v) for v in fields[11:15]))
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in processes.items():
        children.setdefault(parent, []).append(pid)
    ticks = 0
    pending = [pid for pid in roots if pid in processes]
    while pending:
        pid = pending.pop()
        ticks += processes[pid][1]
        pending += children.get(pid, [])
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent on anything but idling, since boot."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    # user nice system idle iowait irq softirq steal: all but idle and iowait are work.
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending sequence: the value of rank ceil(fraction * n)
    (p99 of 100 values is the 99th, p50 the 50th; until 2026-11-26 this took the rank after it,
    so p99 of 100 was their maximum)."""
    if not sorted_values:
        return float("nan")
    rank = math.ceil(fraction * len(sorted_values))
    return sorted_values[min(len(sorted_values), max(1, rank)) - 1]


def peak_rss_mib(pid: int) -> float:
    """A live process's RSS high-water mark (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def child_pids(parent: int) -> list[int]:
    """Live processes whose parent is `parent`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        # ppid is field 4 of proc(5); this list starts at field 3.
        if int(fields[1]) == parent:
            pids.append(int(entry.name))
    return pids
