"""A completed job never names a file a power loss could leave empty (issue 31 D1): the local
store syncs a file's bytes before renaming it into place and its folder's entry after, and the
job's completing commit comes after both. A power cut cannot be staged here, so the order of
the calls is what the test holds: each recorded as the job runs."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from core.jobs import service as jobs_service
from tests.support.http_jobs import create, wait_done
from tests.support.service import Service

EMBEDDED_ONLY = pytest.mark.parametrize("service", ["embedded"], indirect=True)


@EMBEDDED_ONLY
def test_a_jobs_files_are_on_disk_before_the_commit_that_completes_it(
    service: Service, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    lock = threading.Lock()
    real_fsync, real_replace, real_complete = os.fsync, os.replace, jobs_service.complete

    def record(kind: str, target: str) -> None:
        with lock:
            calls.append((kind, target))

    def fsync(descriptor: int) -> None:
        record("fsync", os.readlink(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    def replace(source: Any, target: Any) -> None:
        record("rename", f"{source} -> {target}")
        real_replace(source, target)

    def complete(*args: Any, **kwargs: Any) -> bool:
        record("commit", args[1].job.id)
        return real_complete(*args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(jobs_service, "complete", complete)
    with service.client(key) as client:
        job = wait_done(client, create(client, "[sleep 0] two on disk", variations=2)["id"])
    assert job["status"] == "completed"
    mine = [call for call in calls if job["id"] in call[1]]
    commit = mine.index(("commit", job["id"]))
    renames = [index for index, (kind, _) in enumerate(mine) if kind == "rename"]
    assert len(renames) == 2, mine
    for index in renames:
        source, _, target = mine[index][1].partition(" -> ")
        # The bytes synced before the rename, the folder's entry after it, both before the commit.
        assert ("fsync", source) in mine[:index], mine
        folder_synced = mine.index(("fsync", str(Path(target).parent)), index)
        assert index < folder_synced < commit, mine
