"""The `sfumato` commands on top of the client, against the real server: real PNG and MP4 files
written, exit codes 0 / 1 (job failed) / 2 (usage) / 3 (API error), Ctrl-C's question."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from benchmarks.testkit.processes import REPO
from benchmarks.testkit.waits import wait_until
from sfumato.cli import app
from sfumato_client import Client
from tests.client.conftest import mp4_facts, png_size
from tests.support.service import Service

pytestmark = pytest.mark.slow
JOB_LINE = re.compile(r"^job ([0-9a-f-]{36}) ", re.MULTILINE)


def run(service: Service, key: str, *args: str) -> tuple[int, str, str]:
    env = {"SFUMATO_API_URL": service.api, "SFUMATO_API_KEY": key}
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def job_id(stdout: str) -> str:
    match = JOB_LINE.search(stdout)
    assert match, stdout
    return match.group(1)


def test_generate_writes_pngs_and_prints_the_job(
    service: Service, key: str, tmp_path: Path
) -> None:
    code, out, err = run(
        service, key, "generate", "[sleep 0.5] a cli", "--ratio", "16:9", "--variations", "2",
        "-o", str(tmp_path / "out"),
    )  # fmt: skip
    assert code == 0, err
    paths = [Path(line) for line in out.splitlines() if line.endswith(".png")]
    assert len(paths) == 2 and all(png_size(path) == (1360, 768) for path in paths)
    assert "completed" in err  # the progress bar's last state
    with Client(service.api, key) as client:
        assert client.jobs.get(job_id(out)).status == "completed"


def test_generate_as_a_real_process_with_options(
    service: Service, key: str, tmp_path: Path
) -> None:
    target = tmp_path / "square.png"
    result = subprocess.run(
        [sys.executable, "-m", "sfumato", "generate", "a red square", "-o", str(target),
         "--api-url", service.api, "--api-key", key, "--quality", "low"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert png_size(target) == (1024, 1024)
    assert str(target) in result.stdout


def test_generate_and_jobs_show_print_the_notes(service: Service, key: str, tmp_path: Path) -> None:
    code, out, err = run(
        service, key, "generate", "snowy mountains under the northern lights", "-o", str(tmp_path)
    )
    assert code == 0, err
    with Client(service.api, key) as client:
        notes = client.jobs.get(job_id(out)).notes
    assert notes
    assert [
        line.removeprefix("note: ") for line in err.splitlines() if line.startswith("note: ")
    ] == notes
    code, out, _ = run(service, key, "jobs", "show", job_id(out))
    assert code == 0
    assert [
        line.strip().removeprefix("note: ") for line in out.splitlines() if "note: " in line
    ] == notes


def test_json_results_are_one_document_on_stdout(
    service: Service, key: str, tmp_path: Path
) -> None:
    code, out, err = run(
        service, key, "generate", "[sleep 0.3] for a script", "-o", str(tmp_path), "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["job"]["status"] == "completed" and result["job"]["createdAt"]
    assert [Path(path) for path in result["files"]] and all(
        png_size(Path(path)) == (1024, 1024) for path in result["files"]
    )
    assert f"job {result['job']['id']}" in err  # progress on stderr
    code, out, _ = run(service, key, "jobs", "show", result["job"]["id"], "--json")
    assert code == 0 and json.loads(out) == result["job"]
    code, out, _ = run(service, key, "jobs", "list", "--json", "--limit", "1")
    assert code == 0 and [job["id"] for job in json.loads(out)] == [result["job"]["id"]]


def test_exit_codes(service: Service, key: str, tmp_path: Path) -> None:
    code, _, err = run(service, key, "generate", "x", "--ratio", "7:3", "-o", str(tmp_path))
    assert code == 2 and "7:3" in err and "16:9" in err
    code, _, err = run(service, key, "reframe", "some-id", "--ratio", "21:10")
    assert code == 2
    code, _, err = run(service, key, "animate", "img", "go", "--resolution", "1080p")
    assert code == 2
    assert not list(tmp_path.iterdir())
    code, _, err = run(service, "sfm_wrong", "generate", "x", "-o", str(tmp_path))
    assert code == 3 and err.strip() == "error: UNAUTHORIZED: Invalid API key"
    code, _, err = run(service, key, "generate", "x", "--variations", "9")
    assert code == 3 and err.startswith("error: VALIDATION_ERROR: ")
    # The envelope's details under the message: the field and why.
    assert re.fullmatch(r"  variations: .+", err.splitlines()[1]), err
    code, out, err = run(service, key, "generate", "[fail] please", "-o", str(tmp_path))
    assert code == 1 and f"job {job_id(out)} failed" in err
    code, _, err = run(
        service, key, "style", "search", "0" * 8 + "-0000-4000-8000-" + "0" * 12, "q"
    )
    assert code == 3 and "NOT_FOUND" in err
    unconfigured = CliRunner().invoke(app, ["jobs", "list"], env={"SFUMATO_API_URL": ""})
    assert unconfigured.exit_code == 2 and "SFUMATO_API_URL" in unconfigured.stderr


def test_an_api_url_without_v1_gets_a_hint(service: Service, key: str, tmp_path: Path) -> None:
    env = {"SFUMATO_API_URL": service.url, "SFUMATO_API_KEY": key}
    result = CliRunner().invoke(app, ["generate", "x", "-o", str(tmp_path)], env=env)
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        "error: NOT_FOUND: Not found",
        f"hint: the API's address ends in /v1; is {service.url} missing it?",
    ]
    assert not list(tmp_path.iterdir())


def test_edit_reframe_upscale_from_a_prior_image(
    service: Service, key: str, tmp_path: Path
) -> None:
    code, out, err = run(
        service, key, "generate", "a blue circle", "-o", str(tmp_path / "first.png")
    )
    assert code == 0, err
    first = job_id(out)
    code, out, err = run(
        service, key, "reframe", first, "--ratio", "21:9", "-o", str(tmp_path / "wide.png")
    )
    assert code == 0, err
    width, height = png_size(tmp_path / "wide.png")
    assert width / height == pytest.approx(21 / 9, rel=0.02)
    code, out, err = run(
        service, key, "edit", first, "make it green", "-o", str(tmp_path / "edited.png")
    )
    assert code == 0, err
    assert png_size(tmp_path / "edited.png") == (1024, 1024)
    code, out, err = run(
        service, key, "upscale", first, "--resolution", "1K", "-o", str(tmp_path / "up.png")
    )
    assert code == 0, err
    assert png_size(tmp_path / "up.png") == (1024, 1024)


# The clips cost 10-20 s of CPU and the CLI is the same against every mode: run once, square.
@pytest.mark.parametrize("service", ["embedded"], indirect=True)
def test_animate_and_transition_write_mp4s(service: Service, key: str, tmp_path: Path) -> None:
    start, end = tmp_path / "start.png", tmp_path / "end.png"
    Image.new("RGB", (240, 240), (200, 40, 40)).save(start)
    Image.new("RGB", (240, 240), (40, 40, 200)).save(end)
    clip = tmp_path / "clip.mp4"
    code, _, err = run(
        service, key, "animate", str(start), "slow pan", "--duration", "1", "--resolution", "480p",
        "--no-audio", "-o", str(clip),
    )  # fmt: skip
    assert code == 0, err
    assert mp4_facts(clip) == (480, 480, 24, False)
    between = tmp_path / "between.mp4"
    code, _, err = run(
        service, key, "transition", str(start), str(end), "morph", "--duration", "4",
        "--resolution", "480p", "-o", str(between),
    )  # fmt: skip
    assert code == 0, err
    width, height, frames, audio = mp4_facts(between)
    assert (width, height, frames, audio) == (480, 480, 96, True)


def test_jobs_list_show_cancel(service: Service) -> None:
    key = service.new_key()
    with Client(service.api, key) as client:
        slow = client.images.generate("[sleep 30] to cancel")
        done = client.images.generate("[sleep 0.1] quick").wait()
    code, out, _ = run(service, key, "jobs", "list")
    assert code == 0 and out.index(done.id) < out.index(slow.id)
    code, out, _ = run(service, key, "jobs", "list", "--status", "completed")
    assert done.id in out and slow.id not in out
    assert run(service, key, "jobs", "list", "--status", "done")[0] == 2
    code, out, _ = run(service, key, "jobs", "show", done.id)
    assert code == 0 and "completed" in out and "http" in out
    code, out, _ = run(service, key, "jobs", "cancel", slow.id)
    assert code == 0 and "failed" in out and "Job cancelled" in out
    code, out, _ = run(service, key, "jobs", "show", slow.id, "--wait")
    assert code == 1


def test_ctrl_c_asks_whether_to_cancel(service: Service, key: str, tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    with log.open("w") as stdout:
        process = subprocess.Popen(
            [sys.executable, "-m", "sfumato", "generate", "[sleep 60] interrupted",
             "-o", str(tmp_path)],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO), "SFUMATO_API_URL": service.api,
                 "SFUMATO_API_KEY": key},
            stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        started = wait_until(lambda: JOB_LINE.search(log.read_text()), 60, "the job id printed")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate("y\n", timeout=60)
    assert process.returncode == 130, err
    assert "cancel job" in err and "cancelled" in err
    with Client(service.api, key) as client:
        job = client.jobs.get(started.group(1))
    assert job.status == "failed" and job.error is not None and job.error.message == "Job cancelled"
