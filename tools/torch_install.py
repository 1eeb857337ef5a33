"""Which torch build `make` installs, said aloud: `python tools/torch_install.py [--dry-run]`,
run with the virtual environment's Python before the project is installed.

- torch==2.13.0 already in the environment: nothing to do.
- a torch==2.13.0 wheel for this interpreter in pip's find-links folders (a machine prepared
  offline, as the project's CI machines are): pip takes it when the project installs, as before.
- no NVIDIA GPU (no driver in /proc/driver/nvidia, no nvidia-smi): the CPU-only build from
  PyTorch's own index, about 200 MB instead of the CUDA wheel's gigabytes. pip then keeps it,
  since it satisfies the pin.
- an NVIDIA GPU: the default wheel from PyPI, with CUDA, when the project installs.

`--dry-run` prints the choice and the command without running it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PIN = "2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@dataclass(frozen=True)
class Choice:
    summary: str
    # The pip arguments to run before the project installs; empty: none.
    pip_args: tuple[str, ...] = ()


def choose(installed: str | None, local_wheels: list[Path], has_nvidia_gpu: bool) -> Choice:
    if installed is not None and installed.split("+")[0] == PIN:
        return Choice(f"torch {installed} is already installed")
    if local_wheels:
        return Choice(f"torch {PIN} from the local wheel {local_wheels[0]}")
    if not has_nvidia_gpu:
        return Choice(
            f"torch {PIN}, CPU-only build (no NVIDIA GPU here), from {CPU_INDEX}",
            ("install", f"torch=={PIN}", "--index-url", CPU_INDEX),
        )
    return Choice(f"torch {PIN} with CUDA (an NVIDIA GPU is here), from PyPI")


def installed_torch() -> str | None:
    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def find_links() -> list[Path]:
    """pip's find-links folders: its configuration and PIP_FIND_LINKS."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    ).stdout
    values = re.findall(r"find-links='([^']*)'", listed)
    values.append(os.environ.get("PIP_FIND_LINKS", ""))
    folders = (entry.removeprefix("file://") for value in values for entry in value.split())
    return [Path(folder) for folder in dict.fromkeys(folders) if Path(folder).is_dir()]


def local_wheels(folders: list[Path]) -> list[Path]:
    """The torch==PIN wheels for this interpreter in these folders."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return sorted(
        wheel for folder in folders for wheel in folder.glob(f"torch-{PIN}*-{tag}-{tag}-*.whl")
    )


def has_nvidia_gpu() -> bool:
    return Path("/proc/driver/nvidia").exists() or shutil.which("nvidia-smi") is not None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="say what, install nothing")
    arguments = parser.parse_args(argv)
    choice = choose(installed_torch(), local_wheels(find_links()), has_nvidia_gpu())
    print(f"torch: {choice.summary}", flush=True)
    if not choice.pip_args:
        return 0
    command = [sys.executable, "-m", "pip", "install", "-q", *choice.pip_args[1:]]
    if arguments.dry_run:
        print("would run: " + " ".join(command))
        return 0
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
