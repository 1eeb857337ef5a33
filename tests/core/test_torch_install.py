"""Which torch `make` installs (issue 38 item 15), as logic and as the script `make` runs in
dry-run mode on an interpreter without torch: the local wheel where there is one (as on these
machines), else the CPU-only build on a machine without an NVIDIA GPU. Nothing is downloaded:
download.pytorch.org is not reachable from here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.testkit.processes import REPO

sys.path.insert(0, str(REPO / "tools"))
import torch_install

TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"
WHEEL = f"torch-2.13.0+cpu-{TAG}-{TAG}-manylinux_2_28_x86_64.whl"
SCRIPT = str(REPO / "tools" / "torch_install.py")


def test_the_choice() -> None:
    wheel = Path("/wheels") / WHEEL
    assert torch_install.choose("2.13.0+cpu", [wheel], False).pip_args == ()
    local = torch_install.choose(None, [wheel], False)
    assert local.pip_args == () and str(wheel) in local.summary
    cpu = torch_install.choose(None, [], False)
    assert cpu.pip_args == ("install", "torch==2.13.0", "--index-url", torch_install.CPU_INDEX)
    assert "CPU-only" in cpu.summary
    cuda = torch_install.choose(None, [], True)
    assert cuda.pip_args == () and "CUDA" in cuda.summary
    # Another torch installed is replaced by the pin's build, as for a fresh environment.
    assert torch_install.choose("2.12.1", [], False) == cpu


def test_local_wheels_for_this_interpreter_only(tmp_path: Path) -> None:
    for name in (WHEEL, "torch-2.13.0-cp39-cp39-linux_x86_64.whl", "torch-2.12.0-x.whl"):
        (tmp_path / name).touch()
    assert torch_install.local_wheels([tmp_path]) == [tmp_path / WHEEL]


def run_on_an_interpreter_without_torch(env: dict[str, str]) -> str:
    base = sys._base_executable
    if subprocess.run([base, "-c", "import torch"], capture_output=True).returncode == 0:
        pytest.skip(f"{base} has torch")
    answer = subprocess.run(
        [base, SCRIPT, "--dry-run"], env={"PATH": os.environ["PATH"], **env},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    return answer.stdout


def test_a_local_wheel_is_used_as_before(tmp_path: Path) -> None:
    (tmp_path / WHEEL).touch()
    out = run_on_an_interpreter_without_torch(
        {"PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": str(tmp_path)}
    )
    assert out == f"torch: torch 2.13.0 from the local wheel {tmp_path / WHEEL}\n"


@pytest.mark.skipif(torch_install.has_nvidia_gpu(), reason="this machine has an NVIDIA GPU")
def test_without_a_local_wheel_or_a_gpu_the_cpu_build_is_chosen() -> None:
    out = run_on_an_interpreter_without_torch({"PIP_CONFIG_FILE": os.devnull})
    lines = out.splitlines()
    assert lines[0].startswith("torch: torch 2.13.0, CPU-only build (no NVIDIA GPU here)")
    assert lines[1].endswith(
        "-m pip install -q torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    )
