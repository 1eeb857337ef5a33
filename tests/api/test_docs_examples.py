"""The docs can be followed by copy and paste: every shell variable an example uses is set by
an example of the same page (ids picked out with jq), the commands they name exist, and the
model documentation names every option the diffusion pipelines read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.testkit.processes import REPO

SHELL_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)
ASSIGNED = re.compile(r"^\s*([A-Z_][A-Z0-9_]*)=", re.MULTILINE)
USED = re.compile(r"\$\{?([A-Z_][A-Z0-9_]*)")
OPTION_READ = re.compile(r"\.option\(\s*\"([a-z_]+)\"")


def shell_code(page: Path) -> str:
    """The commands of a page's sh blocks, comments (example output) left out."""
    blocks = SHELL_BLOCK.findall(page.read_text())
    return "\n".join(
        line.split(" #")[0]
        for block in blocks
        for line in block.splitlines()
        if not line.lstrip().startswith("#")
    )


@pytest.mark.parametrize("page", ["README.md", "docs/api.md"])
def test_every_variable_an_example_uses_is_set_on_the_page(page: str) -> None:
    code = shell_code(REPO / page)
    assigned = set(ASSIGNED.findall(code))
    used = set(USED.findall(code))
    assert {"KEY"} <= assigned
    assert used - assigned == set(), f"{page}: set nowhere on the page"


def test_no_page_names_the_deprecated_hub_command_and_make_run_takes_a_port() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        assert "huggingface-cli download" not in page.read_text(), page
    readme = (REPO / "README.md").read_text()
    assert "make run PORT=" in readme and "sfumato --version" in readme
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^PORT \?= 8000$", makefile, re.MULTILINE)


def test_the_model_docs_name_every_option_the_pipelines_read() -> None:
    sources = [*(REPO / "pipelines" / "diffusion").glob("*.py"), *(REPO / "models").glob("*.py")]
    read = {name for path in sources for name in OPTION_READ.findall(path.read_text())}
    assert "ip_adapter" in read
    documented = (REPO / "docs" / "models.md").read_text() + (
        REPO / "docs" / "models-video.md"
    ).read_text()
    missing = {name for name in read if f"`{name}`" not in documented}
    assert missing == set()
