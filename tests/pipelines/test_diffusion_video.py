"""The diffusion video pipelines on tiny random-weight Wan models, from HTTP to a decoded MP4.

The service runs `pipelines.diffusion.animate` (through `SteerableAnimate`, which only steers the
diffusers call) and `pipelines.diffusion.transition` with the registry of
`models/testing_video.py`: real `WanImageToVideoPipeline` classes, 32 px, 2 steps, 8 fps and at
most 9 frames a call, so a 2 s clip takes two segments and every clip is retimed to 24 fps. A
second, embedded service animates with a tiny `LTXImageToVideoPipeline` instead.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from benchmarks.testkit.waits import wait_until
from core.tables import JobRow, Media
from models.cache import ModelCache
from models.loading import ModelUnavailable
from models.registry import ModelSpec, load_registry
from models.testing_video import build_tiny_ltx_models, build_tiny_video_models
from pipelines.base import NoControl
from pipelines.diffusion.clip import model_time_positions, spanning_positions, write_clip
from pipelines.diffusion.presets import native_size
from pipelines.diffusion.video_model import VideoModel, geometry_for, plan_segments
from tests.conftest import COMMON_ENV
from tests.support.clips import decode_file, decoded
from tests.support.http_jobs import create, video_done, wait_done
from tests.support.service import Mode, Service, running_service
from tests.support.steerable_video import logged
from tests.support.threads import ONE_THREAD, one_torch_thread

PIPELINES = (
    "generate=benchmarks.testkit.pipelines:ControllableGenerate,"
    "animate=tests.support.steerable_video:SteerableAnimate,"
    "transition=pipelines.diffusion.transition:DiffusionTransition"
)


# The worker's logic is the same in both deployments; these paths run on the embedded one only.
EMBEDDED_ONLY = pytest.mark.parametrize("video_service", ["embedded"], indirect=True)


@pytest.fixture(scope="module")
def models_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-video-models")
    registry = folder / "models.toml"
    registry.write_text(build_tiny_video_models(folder))
    return registry


@pytest.fixture(scope="module", params=["embedded", "distributed"])
def video_service(
    request: pytest.FixtureRequest, models_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    data_dir: Path = tmp_path_factory.mktemp(f"diffusion-video-{request.param}")
    env = {
        **COMMON_ENV,
        "SFUMATO_PIPELINES": PIPELINES,
        "SFUMATO_MODELS_FILE": str(models_file),
        "SFUMATO_MODEL_DEVICE": "cpu",
        "SFUMATO_TEST_STEP_LOG": str(data_dir / "steps.jsonl"),
        **ONE_THREAD,
    }
    if request.param == "embedded":
        mode = Mode("embedded", env, separate_workers=False)
    else:
        database = request.getfixturevalue("postgres_database")
        broker = request.getfixturevalue("redis_url")
        mode = Mode(
            "distributed",
            {**env, "SFUMATO_DATABASE_URL": database, "SFUMATO_BROKER_URL": broker},
            separate_workers=True,
        )
    # Embedded workers run in this process and read the registry from its environment.
    with pytest.MonkeyPatch.context() as patch, one_torch_thread():
        for name in ("SFUMATO_MODELS_FILE", "SFUMATO_MODEL_DEVICE", "SFUMATO_TEST_STEP_LOG"):
            patch.setenv(name, env[name])
        with running_service(mode, data_dir) as service:
            yield service


@pytest.fixture(scope="module")
def ltx_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """Embedded, animate on the tiny LTX model. Its pipelines are built when the service starts
    (the workers warm up), so the registry need only be in the environment until then."""
    folder = tmp_path_factory.mktemp("tiny-ltx-models")
    registry = folder / "models.toml"
    registry.write_text(build_tiny_ltx_models(folder))
    env = {
        **COMMON_ENV,
        "SFUMATO_PIPELINES": "animate=pipelines.diffusion.animate:DiffusionAnimate",
        "SFUMATO_MODELS_FILE": str(registry),
        "SFUMATO_MODEL_DEVICE": "cpu",
    }
    data_dir: Path = tmp_path_factory.mktemp("diffusion-video-ltx")
    with ExitStack() as stack:
        stack.enter_context(one_torch_thread())
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SFUMATO_MODELS_FILE", str(registry))
            mode = Mode("embedded", env, separate_workers=False)
            service = stack.enter_context(running_service(mode, data_dir))
        yield service


@pytest.fixture(scope="module")
def frames(video_service: Service) -> tuple[str, str, str]:
    """A key and two differently coloured images of it (media ids) to animate and to join."""
    key = video_service.new_key(credits=5000)
    with video_service.client(key) as client:
        job = wait_done(client, create(client, "[sleep 0] frames", variations=2)["id"])
    first, second = job["result"]["images"]
    return key, first["id"], second["id"]


def animate(client: httpx.Client, image: str, prompt: str, **fields: object) -> str:
    body = {"image": image, "prompt": prompt, "duration": 1, "resolution": "480p", **fields}
    response = client.post("/videos/image-to-video", json=body)
    assert response.status_code == 202, response.text
    return response.json()["data"]["id"]


@pytest.mark.slow
def test_animate_runs_the_model_in_segments_and_stores_the_promised_mp4(
    video_service: Service, frames: tuple[str, str, str]
) -> None:
    key, image, _ = frames
    prompt = "slow zoom in on the sea, two seconds"
    with video_service.client(key) as client:
        job = video_done(client, animate(client, image, prompt, duration=2))
    assert job["status"] == "completed", job
    video = job["result"]["video"]
    assert (video["width"], video["height"]) == (480, 480)
    assert video["durationSeconds"] == 2.0
    facts = decoded(video["url"])
    assert facts["codec"] == "h264" and facts["size"] == (480, 480)
    assert len(facts["frames"]) == 48 and facts["fps"] == 24.0
    assert abs(facts["duration"] - 2.0) <= 0.05
    assert facts["audio"] == [("aac", 48000)]
    # 2 s at the tiny model's 8 fps is 16 steps past the first frame; 9 frames a call: two calls,
    # the second starting on the first's last frame, each with its 2 denoising steps.
    events = logged(os.environ["SFUMATO_TEST_STEP_LOG"], prompt)
    assert [e["event"] for e in events] == ["call", "step", "step"] * 2
    pixels = np.stack(facts["frames"]).astype(np.float32)
    assert pixels.std(axis=0).mean() > 1.0, "the frames change over the clip"


@pytest.mark.slow
def test_transition_joins_two_frames_at_the_requested_size_without_audio(
    video_service: Service, frames: tuple[str, str, str]
) -> None:
    key, start, end = frames
    body = {
        "startImage": start,
        "endImage": end,
        "prompt": "the day turns to dusk",
        "duration": 4,
        "aspectRatio": "16:9",
        "resolution": "480p",
        "audio": False,
    }
    with video_service.client(key) as client:
        response = client.post("/videos/frames", json=body)
        assert response.status_code == 202, response.text
        job = video_done(client, response.json()["data"]["id"])
    assert job["status"] == "completed", job
    video = job["result"]["video"]
    assert (video["width"], video["height"]) == (848, 480)
    facts = decoded(video["url"])
    assert facts["size"] == (848, 480) and len(facts["frames"]) == 96
    assert abs(facts["duration"] - 4.0) <= 0.05 and facts["audio"] == []


@pytest.mark.slow
@EMBEDDED_ONLY
def test_cancel_mid_steps_stops_the_model_and_stores_nothing(
    video_service: Service, frames: tuple[str, str, str]
) -> None:
    key, image, _ = frames
    prompt = "[slow-steps 1.5] cancel me between two steps"
    log = os.environ["SFUMATO_TEST_STEP_LOG"]
    with video_service.client(key) as client:
        job_id = animate(client, image, prompt)
        wait_until(lambda: any(e["event"] == "step" for e in logged(log, prompt)), 60, "step 1")
        cancelled = client.post(f"/jobs/{job_id}/cancel").json()["data"]
        assert cancelled["status"] == "failed"
        assert cancelled["error"]["message"] == "Job cancelled"
    # The first step's callback saw the cancel and raised: the second step, due 1.5 s after
    # the first, never ran.
    wait_until(lambda: logged(log, prompt)[-1]["event"] == "raised", 60, "the call to end")
    assert [e["event"] for e in logged(log, prompt)] == ["call", "step", "raised"]
    with video_service.services.db.read() as session:
        assert session.query(Media).filter(Media.job_id == job_id).count() == 0


@pytest.mark.slow
@EMBEDDED_ONLY
def test_out_of_memory_retries_once_then_fails_with_a_refund(
    video_service: Service, frames: tuple[str, str, str]
) -> None:
    key, image, _ = frames
    log = os.environ["SFUMATO_TEST_STEP_LOG"]
    with video_service.client(key) as client:
        recovered = video_done(client, animate(client, image, "[oom 1] recovers"))
        assert recovered["status"] == "completed", recovered
        before = video_service.balance(key)
        failed = video_done(client, animate(client, image, "[oom 2] does not fit"))
    assert failed["status"] == "failed"
    message = failed["error"]["message"]
    assert "out of memory" in message and message.endswith("the credits were refunded")
    assert video_service.balance(key) == before
    calls = [e for e in logged(log, "[oom 2] does not fit") if e["event"] == "call"]
    assert len(calls) == 2, "one retry after freeing the cache, then the job fails"
    assert [e["event"] for e in logged(log, "[oom 1] recovers")][:2] == ["call", "call"]


@pytest.mark.slow
@EMBEDDED_ONLY
def test_the_recorded_seed_reproduces_the_video(
    video_service: Service, frames: tuple[str, str, str]
) -> None:
    key, image, _ = frames
    with video_service.client(key) as client:
        job = video_done(client, animate(client, image, "a calm sea", audio=False))
    assert job["status"] == "completed", job
    stored = np.stack(decoded(job["result"]["video"]["url"])["frames"]).astype(np.int16)
    with video_service.services.db.read() as session:
        row = session.get(JobRow, job["id"])
        assert row is not None
        seed, source_key = row.seed, row.inputs["image"]["key"]
    source = Image.open(io.BytesIO(video_service.services.storage.get_bytes(source_key)))

    def replay(with_seed: int) -> np.ndarray:
        from pipelines.base import AnimateInput
        from pipelines.diffusion.animate import DiffusionAnimate

        with tempfile.TemporaryDirectory() as folder:
            request = AnimateInput(
                image=source,
                prompt="a calm sea",
                duration=1,
                width=480,
                height=480,
                audio=False,
                seed=with_seed,
                output_path=f"{folder}/clip.mp4",
            )
            DiffusionAnimate().run(request, NoControl())
            return np.stack(decode_file(f"{folder}/clip.mp4")["frames"]).astype(np.int16)

    same = np.abs(replay(seed) - stored).mean()
    other = np.abs(replay(seed + 1) - stored).mean()
    assert same < 0.5, f"the job's seed gives the job's frames (mean difference {same:.2f})"
    assert other > 4 * max(same, 0.5), "another seed gives other frames"


@pytest.mark.slow
def test_animate_with_an_ltx_model_keeps_the_image_aspect_ratio(ltx_service: Service) -> None:
    key = ltx_service.new_key(credits=5000)
    with ltx_service.client(key) as client:
        wide = wait_done(client, create(client, "[sleep 0] wide", aspectRatio="16:9")["id"])
        job = video_done(client, animate(client, wide["id"], "waves roll in"))
    assert job["status"] == "completed", job
    video = job["result"]["video"]
    assert (video["width"], video["height"]) == (848, 480)
    facts = decoded(video["url"])
    assert facts["size"] == (848, 480) and len(facts["frames"]) == 24
    assert facts["audio"] == [("aac", 48000)]


# The geometry of a real Wan 2.1 I2V 480P entry, without its weights.


def wan_480p() -> ModelSpec:
    return ModelSpec(
        operation="animate",
        model="Wan-AI/Wan2.1-I2V-14B-480P-Diffusers",
        folder=Path("/models/wan"),
        pipeline="WanImageToVideoPipeline",
        options={"fps": 16, "max_frames": 81, "resolution": 632},
    )


def test_wan_geometry_follows_its_frame_rule_size_factor_and_longest_clip() -> None:
    class Wan:  # what geometry_for reads of a loaded WanImageToVideoPipeline
        vae_scale_factor_temporal = 4
        vae_scale_factor_spatial = 8
        transformer = type("T", (), {"config": type("C", (), {"patch_size": (1, 2, 2)})})

    geometry = geometry_for(wan_480p(), Wan())
    assert (geometry.frame_multiple, geometry.size_multiple) == (4, 16)
    assert geometry.frames_for(5.0) == 81 and geometry.frames_for(1.0) == 17
    assert geometry.frames_for(15.0) == 241
    assert plan_segments(241, 81, 4) == [81, 81, 81]
    assert plan_segments(97, 81, 4) == [81, 17]
    assert plan_segments(17, 81, 4) == [17]
    assert native_size(wan_480p(), 848, 480, 16) == (848, 480)
    assert native_size(wan_480p(), 1280, 720, 16) == (848, 480)
    assert native_size(wan_480p(), 720, 720, 16) == (640, 640)
    with pytest.raises(ValueError, match="4k\\+1"):
        geometry_for(wan_480p().model_copy(update={"options": {"max_frames": 80}}), Wan())


def test_ltx_geometry_takes_its_vae_factors_and_the_32_px_its_pipeline_demands() -> None:
    class LTXImageToVideoPipeline:  # what geometry_for reads of the loaded pipeline
        vae_temporal_compression_ratio = 8
        vae_spatial_compression_ratio = 32
        transformer = type("T", (), {"config": type("C", (), {"patch_size": 1})})

    spec = wan_480p().model_copy(
        update={"options": {"fps": 24, "max_frames": 257, "resolution": 627}}
    )
    geometry = geometry_for(spec, LTXImageToVideoPipeline())
    assert (geometry.frame_multiple, geometry.size_multiple) == (8, 32)
    assert geometry.frames_for(5.0) == 121
    assert native_size(spec, 848, 480, geometry.size_multiple) == (832, 480)


def test_a_missing_or_unfit_video_model_fails_at_start_not_at_the_first_job(
    tmp_path: Path,
) -> None:
    cache = ModelCache(device="cpu")
    missing = wan_480p().model_copy(update={"folder": tmp_path / "absent"})
    with pytest.raises(ModelUnavailable, match="absent"):
        VideoModel("animate", spec=missing, cache=cache)
    registry = tmp_path / "models.toml"
    registry.write_text(build_tiny_ltx_models(tmp_path))
    ltx = load_registry(registry).spec("animate").model_copy(update={"operation": "transition"})
    with pytest.raises(ValueError, match="takes no last_image"):
        VideoModel("transition", needs=("image", "last_image"), spec=ltx, cache=cache)


def test_retiming_to_24_fps_puts_in_betweens_where_the_motion_is(tmp_path: Path) -> None:
    """A square crossing 9 frames at 8 fps, retimed to 24 fps and scaled 2x: every output
    frame, model frame or RIFE in-between, shows it where it is at that instant."""

    def square_at(x: int) -> np.ndarray:
        frame = np.zeros((64, 64, 3), np.uint8)
        frame[26:38, x : x + 12] = 255
        return frame

    model_frames = [square_at(4 + 5 * index) for index in range(9)]
    path = str(tmp_path / "clip.mp4")
    output = write_clip(
        model_frames, model_time_positions(24, 8), path, (128, 128), None, NoControl(), "squares"
    )
    assert (output.frame_count, output.duration_seconds, output.has_audio) == (24, 1.0, False)
    lefts = []
    for frame in decode_file(path)["frames"]:
        columns = np.nonzero(frame[..., 0] > 128)[1]
        lefts.append(columns.mean() / 2 - 6)
    expected = [4 + 5 * index / 3 for index in range(24)]
    assert max(abs(a - b) for a, b in zip(lefts, expected, strict=True)) < 1.0
    assert spanning_positions(96, 9)[-1] == 8.0 and spanning_positions(96, 9)[0] == 0.0
