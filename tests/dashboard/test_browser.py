"""The dashboard in real Chromium against a real server: sign-in, keys that work (and stop
working) over HTTP at once, a generation watched to its image, uploads used as references, a
style extracted from a local site, two accounts kept apart, and a screenshot of every page."""

from __future__ import annotations

import io
import re
from collections.abc import Callable

import httpx
import pytest
from PIL import Image
from playwright.sync_api import BrowserContext, expect

from core.accounts import api_keys
from tests.dashboard.conftest import Person, screenshot, sign_in
from tests.support.service import Service, wait_until

pytestmark = pytest.mark.slow


def _api_status(dash: Service, key: str) -> int:
    with dash.client(key) as client:
        return client.get("/account").status_code


def test_sign_in_and_sign_out(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = context.new_page()
    page.goto(f"{dash.url}/dashboard/keys")
    expect(page).to_have_url(re.compile(r"/dashboard/sign-in\?next="))
    page.get_by_label("Email").fill(who.email)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text(
        "That email and password do not match an account."
    )
    page.get_by_label("Email").fill(who.email)
    page.get_by_label("Password").fill(who.password)
    page.get_by_role("button", name="Sign in").click()
    # Back where the signed-out request wanted to go.
    expect(page).to_have_url(f"{dash.url}/dashboard/keys")
    cookie = next(c for c in context.cookies() if c["name"] == "sfumato_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(f"{dash.url}/dashboard/sign-in")
    page.goto(f"{dash.url}/dashboard/jobs")
    expect(page).to_have_url(re.compile(r"/dashboard/sign-in"))
    # The old cookie's session is gone on the server, not only in this browser.
    with httpx.Client(base_url=dash.url, cookies={"sfumato_session": cookie["value"]}) as client:
        assert client.get("/dashboard/jobs").status_code == 303


def test_keys_created_deactivated_and_revoked_in_the_browser_take_effect_at_once(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = context.new_page()
    sign_in(page, dash.url, who)
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name", exact=True).fill("ci server")
    page.get_by_label("Expires in days (optional)").fill("30")
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_text("it will not be shown again")).to_be_visible()
    plaintext = page.get_by_label("New API key").input_value()
    assert plaintext.startswith("sfm_")
    screenshot(page, "keys-created")
    assert _api_status(dash, plaintext) == 200

    page.goto(f"{dash.url}/dashboard/keys")
    assert plaintext not in page.content()  # shown once only
    row = page.locator("tr", has_text=plaintext[:10])
    expect(row.get_by_text("active", exact=True)).to_be_visible()
    row.get_by_role("button", name="Deactivate ci server").click()
    expect(page.get_by_role("status")).to_contain_text("deactivated")
    assert _api_status(dash, plaintext) == 401
    page.locator("tr", has_text=plaintext[:10]).get_by_role(
        "button", name="Activate ci server"
    ).click()
    assert _api_status(dash, plaintext) == 200

    row = page.locator("tr", has_text=plaintext[:10])
    row.get_by_label("Name of key").fill("ci runner")
    row.get_by_role("button", name="Rename").click()
    row = page.locator("tr", has_text=plaintext[:10])
    row.get_by_label("I understand revoking is final").check()
    row.get_by_role("button", name="Revoke ci runner").click()
    expect(page.get_by_role("status")).to_contain_text("revoked")
    assert _api_status(dash, plaintext) == 401
    expect(page.locator("tr", has_text=plaintext[:10])).to_contain_text("revoked")
    screenshot(page, "keys")


def test_the_keys_list_pages_older_and_back_to_the_newest(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    for number in range(27):
        api_keys.create_key(dash.services.db, who.email, f"key {number:02d}", None)
    page = context.new_page()
    sign_in(page, dash.url, who)
    page.get_by_role("link", name="API keys").click()
    rows = page.locator("tr[data-key-id]")
    expect(rows).to_have_count(24)
    expect(rows.first.get_by_label("Name of key")).to_have_value("key 26")  # newest first
    page.get_by_role("link", name="Older keys").click()
    expect(rows).to_have_count(3)
    expect(rows.last.get_by_label("Name of key")).to_have_value("key 00")
    expect(page.get_by_role("link", name="Older keys")).to_have_count(0)
    screenshot(page, "keys-older")
    page.get_by_role("link", name="Newest keys").click()
    expect(rows).to_have_count(24)


def test_a_waiting_jobs_page_shows_its_place_in_the_queue_and_then_its_expected_end(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    """The image queue runs two jobs at once: two long jobs hold it, a third waits; when one
    holder is cancelled the waiting job starts, and its page says so without a reload."""
    who = person()
    key = api_keys.create_key(dash.services.db, who.email, "queue", None).plaintext
    with httpx.Client(base_url=dash.api, headers={"x-api-key": key}, timeout=60) as api:

        def create(prompt: str) -> str:
            response = api.post("/images/generate", json={"prompt": prompt, "quality": "low"})
            assert response.status_code == 202, response.text
            return str(response.json()["data"]["id"])

        def job(job_id: str) -> dict:
            return dict(api.get(f"/jobs/{job_id}").json()["data"])

        holders = [create("[sleep 60] holding a slot") for _ in range(2)]
        for holder in holders:
            wait_until(lambda holder=holder: job(holder)["status"] == "processing", 60, "held")
        waiting = create("[sleep 60] a waiting lighthouse")
        page = context.new_page()
        sign_in(page, dash.url, who)
        page.goto(f"{dash.url}/dashboard/jobs/{waiting}")
        standing = page.locator("[data-standing]")
        expect(standing).to_have_text(re.compile(rf"^#{job(waiting)['queuePosition']} in queue"))
        screenshot(page, "job-waiting-in-queue")
        api.post(f"/jobs/{holders[0]}/cancel")
        expect(page.locator(".status")).to_have_text("processing", timeout=30_000)
        expect(standing).to_have_text(re.compile(r"^ends in about \d+ (s|min)$"), timeout=30_000)
        for job_id in (holders[1], waiting):
            api.post(f"/jobs/{job_id}/cancel")


def test_generate_from_the_form_and_watch_the_progress_reach_the_image(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = context.new_page()
    sign_in(page, dash.url, who)
    page.get_by_role("link", name="Create", exact=True).click()
    page.get_by_label("Prompt").first.fill("[sleep 6] [preview] a lighthouse in a storm")
    page.get_by_label("Aspect ratio").first.select_option("16:9")
    page.get_by_role("button", name="Generate", exact=True).click()
    expect(page).to_have_url(re.compile(r"/dashboard/jobs/[0-9a-f-]{36}$"))
    bar = page.get_by_label("Progress")
    expect(bar).to_be_visible()
    # The bar moves without a reload...
    page.wait_for_function(
        "() => { const bar = document.querySelector('progress');"
        " return bar && bar.value > 0 && bar.value < 100; }"
    )
    screenshot(page, "job-in-progress")
    # ...and so does the live preview, in place of the placeholder.
    preview = page.get_by_role("img", name=re.compile("Live preview of: .*lighthouse"))
    expect(preview).to_be_visible()
    page.wait_for_function(
        "() => { const img = document.querySelector('img[data-preview]');"
        " return img && img.complete && img.naturalWidth === 160; }"
    )
    first = preview.get_attribute("src")
    page.wait_for_function(
        f"() => document.querySelector('img[data-preview]')?.getAttribute('src') !== {first!r}"
    )
    # ...and the finished image replaces it (the preview's name says "Live preview", the
    # image's does not).
    image = page.get_by_role("img", name=re.compile(r"^(?!Live preview).*lighthouse"))
    expect(image).to_be_visible(timeout=60_000)
    page.wait_for_function(
        "() => [...document.images].every(i => i.complete && i.naturalWidth > 0)"
    )
    expect(page.get_by_text("completed")).to_be_visible()
    # The grid shows the thumbnail, never the original.
    page.goto(f"{dash.url}/dashboard/jobs")
    thumbnail = page.get_by_role("img", name=re.compile("lighthouse"))
    expect(thumbnail).to_be_visible()
    page.wait_for_function(
        "() => [...document.images].every(i => i.complete && i.naturalWidth > 0)"
    )
    width = thumbnail.evaluate("img => img.naturalWidth")
    assert 0 < width <= 384
    screenshot(page, "jobs")
    expect(page.get_by_text("credits", exact=False).first).to_be_visible()


def _png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (96, 64), colour).save(buffer, "PNG")
    return buffer.getvalue()


def test_upload_a_png_and_use_it_as_a_reference(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = context.new_page()
    sign_in(page, dash.url, who)
    page.get_by_role("link", name="Uploads").click()
    page.get_by_label("Images to upload").set_input_files(
        files=[{"name": "red.png", "mimeType": "image/png", "buffer": _png((220, 30, 30))}]
    )
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.locator(".notice")).to_have_text("Uploaded.")
    expect(page.locator("[data-upload-id]")).to_have_count(1)
    screenshot(page, "uploads")

    page.get_by_role("link", name="Create", exact=True).click()
    page.get_by_label("Prompt").first.fill("[echo-reference] the upload, echoed")
    page.locator("#generate").get_by_label(re.compile("Upload red.png")).check()
    page.get_by_role("button", name="Generate", exact=True).click()
    # The finished image, not the live preview, whose name also holds the prompt.
    image = page.get_by_role("img", name=re.compile(r"^(?!Live preview).*echoed"))
    expect(image).to_be_visible(timeout=60_000)
    job_id = page.url.rsplit("/", 1)[1]
    with dash.services.db.read() as session:
        from core.tables import JobRow

        job = session.get(JobRow, job_id)
        assert job is not None and job.status == "completed"
        stored = job.result["images"][0]["key"]  # type: ignore[index]
    pixels = Image.open(io.BytesIO(dash.services.storage.get_bytes(stored))).convert("RGB")
    red, green, blue = pixels.getpixel((pixels.width // 2, pixels.height // 2))  # type: ignore[misc]
    assert red > 180 and green < 80 and blue < 80  # the uploaded red reached the pipeline


def test_extract_a_style_from_a_local_site_and_see_its_swatches(
    dash: Service, sites: str, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = context.new_page()
    sign_in(page, dash.url, who)
    page.get_by_role("link", name="Styles", exact=True).click()
    page.get_by_label("Website address").fill(f"{sites}/northwind/")
    page.get_by_role("button", name="Extract style").click()
    expect(page).to_have_url(re.compile(r"/dashboard/jobs/"))
    page.get_by_role("link", name="View the style").click(timeout=120_000)
    expect(page.get_by_role("heading", name="Palette")).to_be_visible()
    swatches = page.locator(".swatch")
    assert swatches.count() >= 2
    backgrounds = swatches.locator(".chip").evaluate_all(
        "chips => chips.map(c => getComputedStyle(c).backgroundColor)"
    )
    assert any(colour not in ("rgba(0, 0, 0, 0)", "") for colour in backgrounds)
    expect(page.get_by_role("heading", name="Typography")).to_be_visible()
    screenshot(page, "style")
    page.get_by_label("Search the folder").fill("logo")
    # The first search of a process loads the sentence model in the gateway.
    page.set_default_navigation_timeout(120_000)
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("heading", name=re.compile("Results for"))).to_be_visible()
    hits = page.locator(".similarity")
    expect(hits.first).to_contain_text("similarity")
    screenshot(page, "style-search")
    page.get_by_role("link", name="Styles", exact=True).click()
    expect(page.locator(".style-list > li")).to_have_count(1)
    screenshot(page, "styles")


def test_two_accounts_see_only_their_own_things(
    dash: Service, context: BrowserContext, browser: object, person: Callable[..., Person]
) -> None:
    alice, bob = person(), person()
    db = dash.services.db
    alice_key = api_keys.create_key(db, alice.email, "alice-only", None)
    with dash.client(alice_key.plaintext) as client:
        created = client.post("/images/generate", json={"prompt": "[sleep 0.1] alice's secret"})
        alice_job = created.json()["data"]["id"]
    page = context.new_page()
    sign_in(page, dash.url, bob)
    for path in ("jobs", "keys", "uploads", "styles", "usage"):
        page.goto(f"{dash.url}/dashboard/{path}")
        content = page.content()
        assert "alice" not in content, path
    page.goto(f"{dash.url}/dashboard/jobs/{alice_job}")
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    # Bob cannot act on Alice's key either, even with his own valid CSRF token.
    csrf = page.locator("main").get_attribute("data-csrf")
    response = page.request.post(
        f"{dash.url}/dashboard/keys/{alice_key.key.id}/state",
        form={"csrf_token": csrf or "", "state": "revoked", "confirm": "yes"},
    )
    assert response.status == 400
    assert _api_status(dash, alice_key.plaintext) == 200
    cancel = page.request.post(
        f"{dash.url}/dashboard/jobs/{alice_job}/cancel", form={"csrf_token": csrf or ""}
    )
    assert cancel.status == 404


def test_a_screenshot_of_every_page(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person(admin=True)
    db = dash.services.db
    key = api_keys.create_key(db, who.email, "screenshots", None)
    with dash.client(key.plaintext) as client:
        for prompt in ("a calm blue sea at dawn", "a red fox in snow"):
            client.post("/images/generate", json={"prompt": prompt, "variations": 2})
    page = context.new_page()
    page.goto(f"{dash.url}/dashboard/sign-in")
    screenshot(page, "sign-in")
    sign_in(page, dash.url, who)
    # The gallery as it looks once its jobs are done (their cards swapped in live).
    expect(page.locator(".job-card[data-live]")).to_have_count(0, timeout=60_000)
    for path in ("jobs", "create", "styles", "uploads", "keys", "usage", "admin", "account"):
        page.goto(f"{dash.url}/dashboard/{path}")
        expect(page.locator("h1")).to_be_visible()
        assert page.locator("body").inner_text().find("Traceback") < 0
        screenshot(page, f"page-{path}")
    phone = context.browser.new_context(  # type: ignore[union-attr]
        viewport={"width": 390, "height": 844},
        color_scheme="dark",
        extra_http_headers={"X-Forwarded-For": "10.8.0.1"},
    )
    small = phone.new_page()
    sign_in(small, dash.url, who)
    screenshot(small, "phone-dark-jobs")
    phone.close()
