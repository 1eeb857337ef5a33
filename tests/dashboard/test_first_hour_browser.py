"""The dashboard's first hour in real Chromium (issue 38): deleting from the pages, a live page's
status chip and a finished video's poster without a reload, prices that follow the form, the
keys as cards on a phone, logos and type specimens, the account page's column, and an admin's
invitation taken up in another browser."""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Callable

import pytest
from PIL import Image
from playwright.sync_api import BrowserContext, expect

from benchmarks.testkit.images import image_bytes
from core.accounts import api_keys, authentication
from core.ids import new_id
from core.tables import Style
from tests.dashboard.conftest import Person, screenshot, sign_in
from tests.support.http_jobs import create, wait_done
from tests.support.service import Service
from workers.storing import OutputStore

pytestmark = pytest.mark.slow


def api_key(dash: Service, who: Person) -> str:
    return api_keys.create_key(dash.services.db, who.email, "api", None).plaintext


def saved_style(dash: Service, key: str, **fields: object) -> str:
    """A style straight in the database (extraction has tests of its own)."""
    caller = authentication.authenticate(dash.services.db, key)
    assert caller is not None
    values: dict[str, object] = {
        "name": "Pale brand",
        "colours": [],
        "typography": [],
        "tone": [],
        "aesthetic": "",
        **fields,
    }
    style = Style(id=new_id(), account_id=caller.account_id, **values)
    with dash.services.db.write() as session:
        session.add(style)
    return style.id


def test_delete_a_job_an_upload_and_a_style_from_their_pages(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    key = api_key(dash, who)
    with dash.client(key) as api:
        job = wait_done(api, create(api, "[sleep 0.1] a job to delete")["id"])
        style_id = saved_style(dash, key)
        page = context.new_page()
        sign_in(page, dash.url, who)

        page.goto(f"{dash.url}/dashboard/jobs/{job['id']}")
        page.get_by_label("Delete its images for good").check()
        page.get_by_role("button", name="Delete job").click()
        expect(page.locator(".notice")).to_have_text("The job was deleted.")
        assert api.get(f"/jobs/{job['id']}").status_code == 404

        page.get_by_role("link", name="Uploads").click()
        page.get_by_label("Images to upload").set_input_files(
            files=[{"name": "pale.png", "mimeType": "image/png", "buffer": image_bytes((9, 9, 9))}]
        )
        page.get_by_role("button", name="Upload", exact=True).click()
        expect(page.locator("[data-upload-id]")).to_have_count(1)
        upload_id = page.locator("[data-upload-id]").get_attribute("data-upload-id")
        # Not without the box ticked: the browser holds the form back.
        page.get_by_role("button", name="Delete upload").click()
        expect(page.locator("[data-upload-id]")).to_have_count(1)
        page.get_by_label("Delete pale.png for good").check()
        page.get_by_role("button", name="Delete upload").click()
        expect(page.locator(".notice")).to_have_text("The upload was deleted.")
        expect(page.locator("[data-upload-id]")).to_have_count(0)
        assert api.delete(f"/uploads/{upload_id}").status_code == 404  # gone for the API too

        page.goto(f"{dash.url}/dashboard/styles/{style_id}")
        page.get_by_label("Delete Pale brand for good").check()
        page.get_by_role("button", name="Delete style").click()
        expect(page.locator(".notice")).to_have_text("The style was deleted.")
        assert api.get(f"/styles/{style_id}").status_code == 404


@pytest.mark.timeout(600)
def test_a_live_page_follows_the_job_chip_and_the_videos_poster_without_a_reload(
    dash: Service,
    context: BrowserContext,
    person: Callable[..., Person],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    who = person()
    # The poster of the watched video waits for the test: its card is swapped in without one
    # first, as happens whenever the worker makes it a moment after the job completes.
    release_poster = threading.Event()
    make_poster = OutputStore.poster
    watched: list[str] = []

    def held_poster(store: OutputStore, job: object, video: object) -> None:
        if getattr(job, "id", None) in watched:
            release_poster.wait(120)
        make_poster(store, job, video)  # type: ignore[arg-type]

    monkeypatch.setattr(OutputStore, "poster", held_poster)
    with dash.client(api_key(dash, who)) as api:
        image = wait_done(api, create(api, "[sleep 0.1] a still")["id"])["id"]

        def video(prompt: str) -> str:
            body = {"image": image, "prompt": prompt, "duration": 1, "resolution": "480p"}
            response = api.post("/videos/image-to-video", json=body)
            assert response.status_code == 202, response.text
            return str(response.json()["data"]["id"])

        # One account's videos run one after another: the second waits, pending, for the first.
        first = video("[sleep 3] the first clip")
        second = video("[sleep 3] the second clip")
        watched.append(second)
        page = context.new_page()
        sign_in(page, dash.url, who)
        page.goto(f"{dash.url}/dashboard/jobs/{second}")
        chip = page.locator(".facts-line .status")
        expect(chip).to_have_text("pending")
        cancel = page.get_by_role("button", name="Cancel job")
        background = cancel.evaluate("b => getComputedStyle(b).backgroundColor")
        assert background == "rgba(0, 0, 0, 0)"  # a secondary, outlined button
        # The bar moves and the chip says what the job is doing, without a reload.
        page.wait_for_function(
            "() => document.querySelector('progress')?.value > 0", timeout=120_000
        )
        expect(chip).to_have_text("processing")
        screenshot(page, "video-processing")
        video_element = page.locator("video")
        expect(video_element).to_be_visible(timeout=180_000)
        expect(chip).to_have_text("completed")
        assert video_element.get_attribute("poster") is None
        release_poster.set()
        expect(video_element).to_have_attribute(
            "poster", re.compile(r"poster\.jpg"), timeout=60_000
        )
        screenshot(page, "video-poster")
        assert wait_done(api, first)["status"] == "completed"


def test_each_forms_price_follows_its_choices_and_is_what_the_job_costs(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = context.new_page()
    sign_in(page, dash.url, who)
    page.get_by_role("link", name="Create", exact=True).click()
    generate = page.locator("#generate")
    price = generate.locator("[data-price]")
    expect(price).to_have_text("2 credits")
    generate.get_by_label("Quality").select_option("high")
    generate.get_by_label("Variations").select_option("3")
    expect(price).to_have_text("12 credits")
    animate = page.locator("#animate")
    animate.get_by_label("Duration in seconds").fill("2.5")
    animate.get_by_label("Resolution").select_option("480p")
    expect(animate.locator("[data-price]")).to_have_text("5 credits")
    screenshot(page, "create-prices")
    generate.get_by_label("Prompt").fill("[sleep 0.1] priced")
    generate.get_by_role("button", name="Generate", exact=True).click()
    expect(page).to_have_url(re.compile(r"/dashboard/jobs/[0-9a-f-]{36}$"))
    expect(page.locator(".facts-line")).to_contain_text("12 credits")


def test_small_screens_and_details(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    key = api_key(dash, who)
    api_keys.create_key(dash.services.db, who.email, "a key with a rather long name", 30)
    # A white logo, and type in a font this browser has, a generic family, and one it lacks.
    logo = io.BytesIO()
    Image.new("RGBA", (120, 60), (255, 255, 255, 255)).save(logo, "PNG")
    logo_key = f"styles/{new_id()}/logo.png"
    dash.services.storage.put_bytes(logo_key, logo.getvalue(), "image/png")
    typography = [
        {"fontFamily": "DejaVu Serif", "weight": "regular", "role": "heading"},
        {"fontFamily": "serif", "weight": "regular", "role": "body"},
        {"fontFamily": "A Font Nobody Has", "weight": "regular", "role": "body"},
    ]
    style_id = saved_style(dash, key, logo_key=logo_key, typography=typography)

    phone = context.browser.new_context(  # type: ignore[union-attr]
        viewport={"width": 390, "height": 844}, extra_http_headers={"X-Forwarded-For": "10.5.0.1"}
    )
    small = phone.new_page()
    sign_in(small, dash.url, who)
    small.goto(f"{dash.url}/dashboard/keys")
    rows = small.locator("tr[data-key-id]")
    expect(rows).to_have_count(2)
    # Cards, not a table that scrolls sideways; a date on one or two lines, not four.
    assert small.evaluate("document.documentElement.scrollWidth") <= 390
    wrap = small.locator(".table-wrap")
    assert wrap.evaluate("w => w.scrollWidth <= w.clientWidth")
    created = rows.first.locator("td[data-label='Created']")
    line = float(created.evaluate("c => parseFloat(getComputedStyle(c).lineHeight)"))
    assert created.bounding_box()["height"] <= 2 * line + 16  # type: ignore[index]
    screenshot(small, "phone-keys")
    phone.close()

    page = context.new_page()
    sign_in(page, dash.url, who)
    page.goto(f"{dash.url}/dashboard/styles/{style_id}")
    logo_image = page.get_by_role("img", name="Pale brand logo")
    expect(logo_image).to_be_visible()
    assert logo_image.evaluate("i => getComputedStyle(i).objectFit") == "contain"
    shot = Image.open(io.BytesIO(logo_image.screenshot())).convert("L")
    # The white logo is seen against its backdrop: much of the box is not white.
    not_white = sum(1 for value in shot.getdata() if value < 235) / (shot.width * shot.height)
    assert not_white > 0.2, not_white
    specimens = page.locator(".specimen")
    expect(specimens).to_have_count(3)
    families = specimens.evaluate_all("s => s.map(e => getComputedStyle(e).fontFamily)")
    assert families[0].startswith('"DejaVu Serif"') and families[1] == "serif", families
    widths = specimens.evaluate_all(
        "s => s.map(e => { const r = document.createRange(); r.selectNodeContents(e);"
        " return r.getBoundingClientRect().width; })"
    )
    # The serifs are drawn as serifs: not the fallback the unknown font gets.
    assert abs(widths[1] - widths[2]) > 5 and abs(widths[0] - widths[2]) > 5, widths
    screenshot(page, "style-logo-type")

    page.goto(f"{dash.url}/dashboard/styles")
    listed = page.get_by_role("img", name="Pale brand logo")
    assert listed.evaluate("i => getComputedStyle(i).objectFit") == "contain"

    page.goto(f"{dash.url}/dashboard/account")
    boxes = [box.bounding_box() for box in page.locator("main section.card").all()]
    assert len(boxes) == 2
    assert boxes[0]["x"] == boxes[1]["x"] and boxes[0]["width"] == boxes[1]["width"], boxes  # type: ignore[index]
    screenshot(page, "account")


def test_an_admin_invites_a_person_who_sets_a_password_and_is_signed_in(
    dash: Service, context: BrowserContext, browser: object, person: Callable[..., Person]
) -> None:
    admin = person(admin=True)
    email = f"newcomer-{new_id()[-8:]}@test.local"
    page = context.new_page()
    sign_in(page, dash.url, admin)
    page.get_by_role("link", name="Admin").click()
    page.locator("#invite-email").fill(email)
    page.locator("#invite-plan").select_option("pro")
    page.locator("#invite-credits").fill("40")
    page.get_by_role("button", name="Invite").click()
    link = page.get_by_label("Invitation link").input_value()
    assert "/dashboard/invitations/" in link
    screenshot(page, "admin-invited")
    # The person opens the link in a browser of their own.
    theirs = context.browser.new_context(  # type: ignore[union-attr]
        extra_http_headers={"X-Forwarded-For": "10.5.0.2"}
    )
    invited = theirs.new_page()
    invited.goto(link)
    expect(invited.get_by_text(email)).to_be_visible()
    invited.get_by_label("Password (at least 10 characters)").fill("my own password")
    invited.get_by_label("Password again").fill("my own password")
    invited.get_by_role("button", name="Set password and sign in").click()
    expect(invited).to_have_url(f"{dash.url}/dashboard/jobs")
    expect(invited.get_by_role("link", name=email)).to_be_visible()
    invited.goto(link)
    expect(invited.get_by_role("heading", name="This invitation link is not valid")).to_be_visible()
    theirs.close()
    # And the create form: an account that signs in with the password the admin chose.
    other = f"made-{new_id()[-8:]}@test.local"
    page.locator("#create-email").fill(other)
    page.locator("#create-password").fill("chosen by the admin")
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_role("status")).to_contain_text("The account was created")
    expect(page.locator("tr", has_text=other)).to_be_visible()
