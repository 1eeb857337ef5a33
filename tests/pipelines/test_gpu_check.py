"""`benchmarks/gpu_check.sh --dry-run`: the GPU check's every step on the CPU with the tiny
models, so the script is known to run when a GPU machine is lent."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from benchmarks.testkit.processes import REPO

pytestmark = pytest.mark.slow


@pytest.mark.timeout(3000)
def test_the_gpu_check_runs_every_step_on_the_cpu() -> None:
    result = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "gpu_check.sh"), "--dry-run"],
        cwd=REPO,
        # The steps' limits stretched for a test machine whose cores other tests share.
        env={**os.environ, "PYTHONPATH": str(REPO), "GPU_CHECK_LIMIT_SCALE": "10"},
        capture_output=True,
        text=True,
        timeout=2900,
    )
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-4000:]
    assert "GPU check on cpu" in out
    steps = re.findall(r"^== (.+?) \(limit", out, re.MULTILINE)
    assert steps == [
        "CUDA tests",
        "tiny: eager, previews off, against the bare diffusers call",
        "tiny: compiled (the preset's tuning), against the bare call",
        "tiny: eager, a preview at every step",
        "out-of-memory drill",
    ]
    assert "needs a CUDA device" in out or "skipped" in out  # no GPU here: the tests say so
    assert out.count("| bare diffusers call | pipeline over bare |") == 2
    assert "tuning preset ({'compile': 'denoiser'" in out
    assert "previews every-step" in out
    # The drill: the batch halves down to single images; then none fits; then the next job runs.
    assert "batch of 4, memory short: calls of [4, 2, 1, 1, 2, 1, 1] images; jobs completed" in out
    assert "batch of 4, no image fits: calls of [4, 2, 1] images; jobs OutOfDeviceMemory" in out
    assert "the next job: 1 image" in out
    assert re.search(r"GPU check done in \d+ s\n", out)
