"""The create forms besides generate, in Chromium against a real server on the builtin CPU
pipelines: edit, reframe and upscale a gallery image (from its page's links), image to video
and frames to video from images uploaded through the Uploads page's file input. Each job shows
up in the gallery and reaches completed there without a reload, and its result downloads and
decodes. Each form's bad input gets its message on the form, makes no job and charges nothing.

Where the browser itself refuses a value (`required`, `min`/`max`), the test turns the browser's
checks off for that form (`noValidate`) to reach the server's own check: what a page left open
across a change, or a browser without those checks, meets."""

from __future__ import annotations

import io
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

import av
import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import BrowserContext, FilePayload, Locator, Page, expect

from core.accounts import api_keys
from core.accounts import service as accounts
from core.sizes import image_size, video_size
from core.tables import JobRow
from tests.dashboard.conftest import Person, screenshot, sign_in
from tests.support.http_jobs import create, wait_done
from tests.support.service import Service

pytestmark = pytest.mark.slow
JOB_PAGE = re.compile(r"/dashboard/jobs/([0-9a-f-]{36})$")
ANIMATE_DURATION = re.compile(r"^Duration in seconds \(1.15\)$")
FRAMES_DURATION = re.compile(r"^Duration in seconds \(4.15\)$")


def _png(colour: tuple[int, int, int], size: tuple[int, int] = (96, 64)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, "PNG")
    return buffer.getvalue()


def _source_job(dash: Service, who: Person) -> str:
    """A completed 1K square image job of `who`'s, made over the API: what the forms work on
    (the test pipeline paints it solid (0, 90, 160), a blue)."""
    key = api_keys.create_key(dash.services.db, who.email, "source", None)
    with dash.client(key.plaintext) as client:
        job = wait_done(client, create(client, "[sleep 0.1] a flat blue square")["id"])
    assert job["status"] == "completed", job
    return str(job["id"])


def _signed_in(dash: Service, context: BrowserContext, who: Person) -> Page:
    page = context.new_page()
    sign_in(page, dash.url, who)
    return page


def _upload(page: Page, base: str, files: dict[str, bytes]) -> None:
    """The files sent through the Uploads page's file input."""
    page.goto(f"{base}/dashboard/uploads")
    payloads: list[FilePayload] = [
        {"name": name, "mimeType": "image/png", "buffer": data} for name, data in files.items()
    ]
    page.get_by_label("Images to upload").set_input_files(files=payloads)
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.locator(".notice")).to_have_text("Uploaded.")
    expect(page.locator("[data-upload-id]")).to_have_count(len(files))


def _submitted(page: Page, button: Locator) -> str:
    """Submit with `button`; the id of the job the browser lands on."""
    button.click()
    expect(page).to_have_url(JOB_PAGE)
    found = JOB_PAGE.search(page.url)
    assert found is not None
    return found.group(1)


def _completes_in_the_gallery(page: Page, base: str, job_id: str) -> None:
    """The job's card is in the gallery and reaches completed there without a reload."""
    page.goto(f"{base}/dashboard/jobs")
    card = page.locator(f'.job-card[data-job-id="{job_id}"]')
    expect(card).to_be_visible()
    expect(card).to_have_attribute("data-status", "completed", timeout=180_000)
    expect(card.locator(".status")).to_have_text("completed")


def _download(page: Page, base: str, job_id: str) -> bytes:
    """The result's bytes, by the job page's first Download link."""
    page.goto(f"{base}/dashboard/jobs/{job_id}")
    href = page.get_by_role("link", name="Download").first.get_attribute("href")
    assert href
    response = page.request.get(urljoin(page.url, href))
    assert response.ok
    return response.body()


def _png_of(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG"
    return image.convert("RGB")


def _mp4_of(data: bytes) -> dict:
    assert data[4:8] == b"ftyp"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "clip.mp4"
        path.write_bytes(data)
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            frames = [frame.to_ndarray(format="rgb24") for frame in container.decode(stream)]
            return {
                "codec": stream.codec_context.name,
                "size": (stream.codec_context.width, stream.codec_context.height),
                "frames": frames,
                "audio": len(container.streams.audio),
            }


def _jobs_and_balance(dash: Service, who: Person) -> tuple[int, int]:
    account = accounts.find_account(dash.services.db, who.email)
    with dash.services.db.read() as session:
        count = session.query(JobRow).filter(JobRow.account_id == account.id).count()
    return count, account.credit_balance


def _choose(select: Locator, text: str) -> None:
    """Choose the option of `select` whose label contains `text`."""
    value = select.locator("option", has_text=text).get_attribute("value")
    assert value
    select.select_option(value)


def _without_the_browsers_checks(form: Locator) -> None:
    form.evaluate("form => { form.noValidate = true; }")


def _refused_on_the_form(page: Page, section: str, *reasons: str) -> None:
    """The page came back with the form and its message, scrolled to it and focused there (the
    form may be far down the page): still the create page, no job."""
    expect(page).to_have_url(re.compile(rf"/dashboard/create/{section.lstrip('#')}$"))
    alert = page.locator(section).get_by_role("alert")
    expect(alert).to_be_focused()
    expect(alert).to_be_in_viewport()
    expect(alert).to_contain_text("Please correct the form.")
    for reason in reasons:
        expect(alert).to_contain_text(reason)
    assert "Traceback" not in page.content()


# -- edit, reframe, upscale: from a gallery image's page -----------------------------------------


def test_edit_a_gallery_image_from_its_page(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    source = _source_job(dash, who)
    page = _signed_in(dash, context, who)
    page.goto(f"{dash.url}/dashboard/jobs/{source}")
    page.get_by_role("link", name="Edit", exact=True).click()
    edit = page.locator("#edit")
    # The form came with the image chosen.
    assert edit.get_by_label("Image to edit").input_value()
    edit.get_by_label("What to change").fill("make it black and white")
    job_id = _submitted(page, edit.get_by_role("button", name="Edit image"))
    _completes_in_the_gallery(page, dash.url, job_id)
    pixels = np.asarray(_png_of(_download(page, dash.url, job_id)), dtype=np.int16)
    assert pixels.shape == (1024, 1024, 3)
    assert np.abs(pixels[..., 0] - pixels[..., 2]).mean() < 2, "grey, not the blue source"


def test_reframe_a_gallery_image_to_a_new_ratio(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    source = _source_job(dash, who)
    page = _signed_in(dash, context, who)
    page.goto(f"{dash.url}/dashboard/jobs/{source}")
    page.get_by_role("link", name="Reframe", exact=True).click()
    reframe = page.locator("#reframe")
    assert reframe.get_by_label("Image to reframe").input_value()
    reframe.get_by_label("New aspect ratio").select_option("16:9")
    reframe.get_by_label("Resolution").select_option("1K")
    reframe.scroll_into_view_if_needed()
    screenshot(page, "create-reframe-filled")
    job_id = _submitted(page, reframe.get_by_role("button", name="Reframe image"))
    _completes_in_the_gallery(page, dash.url, job_id)
    image = _png_of(_download(page, dash.url, job_id))
    assert image.size == image_size("16:9", "1K")


def test_upscale_a_gallery_image(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    source = _source_job(dash, who)
    page = _signed_in(dash, context, who)
    page.goto(f"{dash.url}/dashboard/jobs/{source}")
    page.get_by_role("link", name="Upscale", exact=True).click()
    upscale = page.locator("#upscale")
    assert upscale.get_by_label("Image to upscale").input_value()
    expect(upscale.get_by_label("Resolution")).to_have_value("2K")
    job_id = _submitted(page, upscale.get_by_role("button", name="Upscale image"))
    _completes_in_the_gallery(page, dash.url, job_id)
    image = _png_of(_download(page, dash.url, job_id))
    assert image.size == (2048, 2048)
    red, _, blue = image.getpixel((1024, 1024))  # type: ignore[misc]
    assert blue > red + 100, "the blue source, larger"


def test_an_empty_edit_instruction_is_refused_on_the_form(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    source = _source_job(dash, who)
    page = _signed_in(dash, context, who)
    page.goto(f"{dash.url}/dashboard/jobs/{source}")
    page.get_by_role("link", name="Edit", exact=True).click()
    before = _jobs_and_balance(dash, who)
    edit = page.locator("#edit")
    # Spaces pass the browser's `required`; the service wants words.
    edit.get_by_label("What to change").fill("   ")
    edit.get_by_role("button", name="Edit image").click()
    _refused_on_the_form(page, "#edit", "Prompt: must be at least 1 character")
    assert _jobs_and_balance(dash, who) == before


def test_a_reframe_without_an_image_is_refused_on_the_form(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    _source_job(dash, who)
    page = _signed_in(dash, context, who)
    page.goto(f"{dash.url}/dashboard/create#reframe")
    before = _jobs_and_balance(dash, who)
    reframe = page.locator("#reframe")
    expect(reframe.get_by_label("Image to reframe")).to_have_value("")
    reframe.get_by_label("New aspect ratio").select_option("9:16")
    _without_the_browsers_checks(reframe.locator("form"))
    reframe.get_by_role("button", name="Reframe image").click()
    _refused_on_the_form(page, "#reframe", "Image: choose an image")
    # What was chosen stays chosen.
    expect(page.locator("#reframe").get_by_label("New aspect ratio")).to_have_value("9:16")
    assert _jobs_and_balance(dash, who) == before


def test_an_upscale_of_an_image_deleted_meanwhile_is_refused_on_the_form(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    source = _source_job(dash, who)
    page = _signed_in(dash, context, who)
    page.goto(f"{dash.url}/dashboard/jobs/{source}")
    page.get_by_role("link", name="Upscale", exact=True).click()
    # The image goes (over the API, say from a script) while the form is open.
    key = api_keys.create_key(dash.services.db, who.email, "cleanup", None)
    with dash.client(key.plaintext) as client:
        assert client.delete(f"/jobs/{source}").status_code == 204
    before = _jobs_and_balance(dash, who)
    page.locator("#upscale").get_by_role("button", name="Upscale image").click()
    expect(page).to_have_url(re.compile(r"/dashboard/create/upscale$"))
    alert = page.locator("#upscale").get_by_role("alert")
    expect(alert).to_be_in_viewport()
    expect(alert).to_contain_text("The image to work on could not be resolved")
    expect(alert).to_contain_text("Image: image not found")
    assert _jobs_and_balance(dash, who) == before


# -- image to video, frames to video: from uploads ------------------------------------------------


def test_animate_an_uploaded_image(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = _signed_in(dash, context, who)
    _upload(page, dash.url, {"red.png": _png((220, 30, 30))})
    page.get_by_role("link", name="Use in a video").click()
    animate = page.locator("#animate")
    expect(animate.get_by_label("Image to animate")).to_have_value(
        page.url.split("image=")[1].split("#")[0]
    )
    animate.get_by_label("Prompt", exact=True).fill("a slow zoom in")
    animate.get_by_label(ANIMATE_DURATION).fill("1")
    animate.get_by_label("Resolution").select_option("480p")
    job_id = _submitted(page, animate.get_by_role("button", name="Make video"))
    _completes_in_the_gallery(page, dash.url, job_id)
    clip = _mp4_of(_download(page, dash.url, job_id))
    assert clip["codec"] == "h264" and clip["audio"] == 1
    assert clip["size"] == video_size(96, 64, "480p") and len(clip["frames"]) == 24
    red, green, blue = clip["frames"][0].reshape(-1, 3).mean(axis=0)
    assert red > 150 and green < 90 and blue < 90, "the uploaded red, animated"


def test_frames_to_video_from_two_uploads(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = _signed_in(dash, context, who)
    _upload(page, dash.url, {"dawn.png": _png((20, 60, 220)), "dusk.png": _png((240, 120, 20))})
    page.get_by_role("link", name="Create", exact=True).click()
    frames = page.locator("#frames")
    _choose(frames.get_by_label("First frame"), "dawn.png")
    _choose(frames.get_by_label("Last frame"), "dusk.png")
    frames.get_by_label("Prompt", exact=True).fill("the day turns to dusk")
    frames.get_by_label(FRAMES_DURATION).fill("4")
    # Square: a 4 s clip at 16:9 costs twice the CPU, and the choice is what is tested.
    frames.get_by_label("Aspect ratio").select_option("1:1")
    frames.get_by_label("Resolution").select_option("480p")
    frames.get_by_label("With audio").uncheck()
    job_id = _submitted(page, frames.get_by_role("button", name="Make video"))
    _completes_in_the_gallery(page, dash.url, job_id)
    clip = _mp4_of(_download(page, dash.url, job_id))
    assert clip["size"] == video_size(1, 1, "480p") and len(clip["frames"]) == 96
    assert clip["audio"] == 0
    first = clip["frames"][0].reshape(-1, 3).mean(axis=0)
    last = clip["frames"][-1].reshape(-1, 3).mean(axis=0)
    assert first[2] > first[0] and last[0] > last[2], "from the dawn upload to the dusk one"


def test_an_animation_too_long_is_refused_on_the_form(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = _signed_in(dash, context, who)
    _upload(page, dash.url, {"red.png": _png((220, 30, 30))})
    page.get_by_role("link", name="Use in a video").click()
    before = _jobs_and_balance(dash, who)
    animate = page.locator("#animate")
    animate.get_by_label("Prompt", exact=True).fill("a very long zoom")
    animate.get_by_label(ANIMATE_DURATION).fill("20")
    animate.get_by_label("With audio").uncheck()
    # The browser refuses it first...
    animate.get_by_role("button", name="Make video").click()
    assert animate.get_by_label(ANIMATE_DURATION).evaluate("input => input.validity.rangeOverflow")
    assert "/dashboard/create" in page.url and "/create/animate" not in page.url
    # ...and the server too, with its message on the form.
    _without_the_browsers_checks(animate.locator("form"))
    animate.get_by_role("button", name="Make video").click()
    _refused_on_the_form(page, "#animate", "Duration: must be at most 15")
    animate = page.locator("#animate")
    # The form keeps what was typed and chosen, the unticked audio box included.
    expect(animate.get_by_label("Prompt", exact=True)).to_have_value("a very long zoom")
    expect(animate.get_by_label(ANIMATE_DURATION)).to_have_value("20")
    expect(animate.get_by_label("With audio")).not_to_be_checked()
    assert animate.get_by_label("Image to animate").input_value()
    animate.scroll_into_view_if_needed()
    screenshot(page, "create-animate-refused")
    assert _jobs_and_balance(dash, who) == before


def test_frames_without_a_last_frame_are_refused_on_the_form(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = _signed_in(dash, context, who)
    _upload(page, dash.url, {"dawn.png": _png((20, 60, 220))})
    page.get_by_role("link", name="Use in a video").click()
    before = _jobs_and_balance(dash, who)
    frames = page.locator("#frames")
    # The image the page was opened with is the first frame, never the last one as well.
    expect(frames.get_by_label("First frame")).not_to_have_value("")
    expect(frames.get_by_label("Last frame")).to_have_value("")
    frames.get_by_label("Prompt", exact=True).fill("the day turns to dusk")
    _without_the_browsers_checks(frames.locator("form"))
    frames.get_by_role("button", name="Make video").click()
    _refused_on_the_form(page, "#frames", "Last frame: choose an image")
    assert page.locator("#frames").get_by_label("First frame").input_value()
    assert _jobs_and_balance(dash, who) == before
