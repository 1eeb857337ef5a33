"""The dashboard's first hour over plain HTTP (issue 38): a job's notes on its card and page,
delete with confirmation through the API's own services, a ledger line per job, images made
without a prompt named by their size, each form's price, the favicon, admins adding people, and
the root: a page for a browser, the JSON 404 for an API client."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator

import httpx
import pytest

from core.accounts import api_keys
from core.accounts import service as accounts
from tests.dashboard.conftest import Person
from tests.dashboard.test_http import CSRF, attempt, browser_like, csrf_of
from tests.support.http_jobs import create, status_of, wait_done
from tests.support.service import Service

pytestmark = pytest.mark.slow
LEDGER_LINE = re.compile(r"<tr data-ledger-line>(.*?)</tr>", re.S)
OPTION = re.compile(r'<option value="[0-9a-f-]{36}"[^>]*>([^<]*)</option>')


@pytest.fixture
def signed_in(
    dash: Service, person: Callable[..., Person]
) -> Iterator[tuple[httpx.Client, Person]]:
    who = person()
    with browser_like(dash, f"10.6.{id(who) % 250}.1") as client:
        response = attempt(client, who.email, who.password)
        assert response.status_code == 303, response.text
        yield client, who


def api_key(dash: Service, who: Person) -> str:
    return api_keys.create_key(dash.services.db, who.email, "api", None).plaintext


def test_a_jobs_notes_show_on_its_card_and_on_its_page(
    dash: Service, signed_in: tuple[httpx.Client, Person]
) -> None:
    client, who = signed_in
    with dash.client(api_key(dash, who)) as api:
        job = wait_done(api, create(api, "a quarterly report", quality="low")["id"])
    note = next(note for note in job["notes"] if note.startswith("cannot draw"))
    for path in ("/jobs", f"/jobs/{job['id']}"):
        shown = html.unescape(client.get(path).text)
        assert 'aria-label="Notes from the pipeline"' in shown, path
        assert note[:80] in shown, path


def test_delete_needs_its_box_ticked_and_does_what_the_apis_delete_does(
    dash: Service, signed_in: tuple[httpx.Client, Person], person: Callable[..., Person]
) -> None:
    client, who = signed_in
    with dash.client(api_key(dash, who)) as api:
        job = wait_done(api, create(api, "[sleep 0.1] to be deleted")["id"])
        running = create(api, "[sleep 6] still running")
        csrf = csrf_of(client)
        unconfirmed = client.post(f"/jobs/{job['id']}/delete", data={"csrf_token": csrf})
        assert unconfirmed.status_code == 400
        assert "Tick the box" in unconfirmed.text
        assert api.get(f"/jobs/{job['id']}").status_code == 200
        # A job in flight is refused as the API refuses it: cancel it first.
        in_flight = client.post(
            f"/jobs/{running['id']}/delete", data={"csrf_token": csrf, "confirm": "yes"}
        )
        assert in_flight.status_code == 409
        assert "cancel it first" in in_flight.text
        assert status_of(api, running["id"]) in ("pending", "processing")
        deleted = client.post(
            f"/jobs/{job['id']}/delete", data={"csrf_token": csrf, "confirm": "yes"}
        )
        assert deleted.status_code == 303
        assert deleted.headers["location"] == "/dashboard/jobs?done=deleted"
        assert "The job was deleted." in client.get("/jobs?done=deleted").text
        assert api.get(f"/jobs/{job['id']}").status_code == 404
    # Someone else's job is not found, and stays.
    other = person()
    with dash.client(api_key(dash, other)) as api:
        theirs = wait_done(api, create(api, "[sleep 0.1] not yours")["id"])
        refused = client.post(
            f"/jobs/{theirs['id']}/delete", data={"csrf_token": csrf, "confirm": "yes"}
        )
        assert refused.status_code == 404
        assert api.get(f"/jobs/{theirs['id']}").status_code == 200


def test_the_ledger_has_one_line_per_job_named_by_its_operation_and_prompt(
    dash: Service, signed_in: tuple[httpx.Client, Person]
) -> None:
    client, who = signed_in
    with dash.client(api_key(dash, who)) as api:
        # Made in the same minute: their ids share the UUIDv7 time prefix the old ledger showed.
        charged = [
            wait_done(api, create(api, f"[sleep 0.1] ledger job {number}")["id"])
            for number in range(2)
        ]
        refunded = wait_done(api, create(api, "[fail] a ledger job that fails")["id"])
    page = client.get("/usage").text
    lines = LEDGER_LINE.findall(page)
    assert len(lines) == 4, lines  # three jobs and the account's initial grant
    for job, prompt, amount, state in (
        (charged[0], "[sleep 0.1] ledger job 0", "-2", "charged"),
        (charged[1], "[sleep 0.1] ledger job 1", "-2", "charged"),
        (refunded, "[fail] a ledger job that fails", "+0", "refunded"),
    ):
        (line,) = [line for line in lines if f'href="/dashboard/jobs/{job["id"]}"' in line]
        assert ">Generate</a>" in line and prompt in html.unescape(line)
        assert f'<td class="num">{amount}</td>' in line
        assert f">{state}</span>" in line
        # Expandable to its movements: the reservation, then the charge or the refund.
        assert "<details" in line and "Reserved" in line
        assert ("Charged" if state == "charged" else "Refunded") in line
        assert f">{job['id'][:8]}<" not in page
    (grant,) = [line for line in lines if "Credits granted" in line]
    assert "initial grant" in grant and '<td class="num">+1000</td>' in grant


def test_images_made_without_a_prompt_are_named_by_size_not_a_blank_label(
    dash: Service, signed_in: tuple[httpx.Client, Person]
) -> None:
    client, who = signed_in
    with dash.client(api_key(dash, who)) as api:
        source = wait_done(api, create(api, "[sleep 0.1] the source")["id"])
        image_id = source["result"]["images"][0]["id"]
        response = api.post("/images/upscale", json={"imageId": image_id, "resolution": "1K"})
        assert response.status_code == 202, response.text
        assert wait_done(api, response.json()["data"]["id"])["status"] == "completed"
    labels = [html.unescape(label) for label in OPTION.findall(client.get("/create").text)]
    assert labels and not [label for label in labels if label.rstrip().endswith(":")], labels
    made_without_prompt = re.compile(r"Upscale \d+\u00d7\d+, \d{4}-\d\d-\d\d \d\d:\d\d$")
    assert any(made_without_prompt.match(label) for label in labels), labels


def test_each_form_shows_its_price_before_it_is_sent(
    dash: Service, signed_in: tuple[httpx.Client, Person]
) -> None:
    client, _ = signed_in
    page = client.get("/create").text
    # Without a script: the price of each form's defaults (core/prices.py, the default table).
    shown = re.findall(r"<output data-price>([^<]*)</output>", page)
    # generate medium 1K x1: 2; edit: no image chosen yet; reframe 1K: 2; upscale 2K: 2;
    # animate 720p 6 s: 24; frames 720p 6 s: 36.
    assert shown == ["2 credits", "—", "2 credits", "2 credits", "24 credits", "36 credits"]
    assert 'data-price-fields="quality resolution variations"' in page
    assert "&#34;high|4K|4&#34;:64" in page  # every choice priced by the server
    assert "Price: <output>5 credits</output>" in client.get("/styles").text


def test_every_page_names_its_favicon_and_it_is_served(
    signed_in: tuple[httpx.Client, Person],
) -> None:
    client, _ = signed_in
    page = client.get("/jobs").text
    found = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', page)
    assert found is not None
    icon = client.get(found.group(1).removeprefix("/dashboard"))
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.text.startswith("<svg")


def test_the_root_is_a_page_for_a_browser_and_the_json_404_for_an_api_client(
    dash: Service,
) -> None:
    with httpx.Client(base_url=dash.url, timeout=30) as client:
        browser = client.get("/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
        assert browser.status_code == 200
        assert browser.headers["content-type"].startswith("text/html")
        for target in ('href="/dashboard"', 'href="/docs"', 'href="/redoc"'):
            assert target in browser.text
        unknown = client.get("/no-such-page", headers={"Accept": "application/json"})
        assert unknown.status_code == 404
        for headers in ({"Accept": "application/json"}, {"Accept": "*/*"}, {}):
            answer = client.get("/", headers=headers)
            assert answer.status_code == 404, headers
            assert answer.headers["content-type"] == unknown.headers["content-type"]
            assert answer.json() == unknown.json()
        for method in ("POST", "PUT", "DELETE"):
            answer = client.request(method, "/", headers={"Accept": "text/html"})
            assert answer.status_code == 404 and answer.json() == unknown.json(), method


def _form(page: str) -> dict[str, str]:
    found = CSRF.search(page)
    assert found is not None
    return {"csrf_token": found.group(1)}


def test_only_admins_add_people_and_an_invitation_works_once(
    dash: Service, person: Callable[..., Person]
) -> None:
    admin, plain = person(admin=True), person()
    email = f"invited-{id(admin)}@test.local"
    with browser_like(dash, "10.6.251.1") as client:
        assert attempt(client, plain.email, plain.password).status_code == 303
        refused = client.post(
            "/admin/invitations",
            data={**_form(client.get("/keys").text), "email": email, "plan": "free"},
        )
        assert refused.status_code == 403
        with pytest.raises(accounts.AccountError):
            accounts.find_account(dash.services.db, email)
    with browser_like(dash, "10.6.251.2") as client:
        assert attempt(client, admin.email, admin.password).status_code == 303
        form = _form(client.get("/admin").text)
        bad = client.post("/admin/invitations", data={**form, "email": "not an email"})
        assert bad.status_code == 400 and "is not an email address" in bad.text
        made = client.post(
            "/admin/invitations", data={**form, "email": email, "plan": "pro", "credits": "50"}
        )
        assert made.status_code == 201
        link = re.search(r'id="invitation-link" readonly value="([^"]+)"', made.text)
        assert link is not None
        assert accounts.find_account(dash.services.db, email).credit_balance == 50
        again = client.post("/admin/invitations", data={**form, "email": email, "plan": "pro"})
        assert again.status_code == 400 and "exists already" in again.text
    path = httpx.URL(link.group(1)).path.removeprefix("/dashboard")
    with browser_like(dash, "10.6.251.3") as invitee:
        page = invitee.get(path)
        assert page.status_code == 200 and email in page.text
        # The link's secret never travels to another site in a Referer.
        assert page.headers["referrer-policy"] == "same-origin"
        differ = invitee.post(path, data={"password": "x" * 12, "repeat": "y" * 12})
        assert differ.status_code == 400 and "differ" in differ.text
        accepted = invitee.post(
            path, data={"password": "a long password", "repeat": "a long password"}
        )
        assert accepted.status_code == 303 and accepted.headers["location"] == "/dashboard/jobs"
        assert email in invitee.get("/jobs").text  # signed in
        assert invitee.get(path).status_code == 404  # once only
        used = invitee.post(
            path, data={"password": "another password", "repeat": "another password"}
        )
        assert used.status_code == 404
    with browser_like(dash, "10.6.251.4") as fresh:
        assert attempt(fresh, email, "a long password").status_code == 303
        assert attempt(fresh, email, "another password").status_code == 401
