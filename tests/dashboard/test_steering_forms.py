"""The Advanced part of the generate form (issue 33), in Chromium against a real server on the
builtin pipelines: a seed, model and negative prompt chosen there reach the job; the job's page
shows its seed and model, and "Reuse this seed" brings the form back with the seed, which makes
the same picture again; steering the model does not take is refused on the form."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, expect

from tests.dashboard.conftest import Person, screenshot
from tests.dashboard.test_create_forms import (
    _choose,
    _completes_in_the_gallery,
    _download,
    _jobs_and_balance,
    _refused_on_the_form,
    _signed_in,
    _submitted,
    _without_the_browsers_checks,
)
from tests.support.service import Service

pytestmark = pytest.mark.slow


def test_a_seed_chosen_in_advanced_is_shown_and_reused_to_the_same_picture(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = _signed_in(dash, context, who)
    page.goto(f"{dash.url}/dashboard/create#generate")
    generate = page.locator("#generate")
    generate.get_by_label("Prompt").fill("a lighthouse on a cliff")
    generate.get_by_label("Quality").select_option("low")
    generate.get_by_text("Advanced").click()
    generate.get_by_label("Seed (empty: random)").fill("4000000000")
    _choose(generate.get_by_label("Model"), "builtin")
    generate.get_by_label("Negative: what to leave out").fill("people")
    screenshot(page, "create-generate-advanced")
    first = _submitted(page, generate.get_by_role("button", name="Generate", exact=True))
    _completes_in_the_gallery(page, dash.url, first)
    original = _download(page, dash.url, first)
    seed_line = page.locator(".seed-line")
    expect(seed_line).to_contain_text("Seed 4000000000")
    expect(seed_line).to_contain_text("model builtin")

    seed_line.get_by_role("link", name="Reuse this seed").click()
    generate = page.locator("#generate")
    expect(generate.locator("details.advanced")).to_have_attribute("open", "")
    expect(generate.get_by_label("Seed (empty: random)")).to_have_value("4000000000")
    generate.get_by_label("Prompt").fill("a lighthouse on a cliff")
    generate.get_by_label("Quality").select_option("low")
    again = _submitted(page, generate.get_by_role("button", name="Generate", exact=True))
    _completes_in_the_gallery(page, dash.url, again)
    assert _download(page, dash.url, again) == original


def test_steering_the_model_does_not_take_is_refused_on_the_form(
    dash: Service, context: BrowserContext, person: Callable[..., Person]
) -> None:
    who = person()
    page = _signed_in(dash, context, who)
    page.goto(f"{dash.url}/dashboard/create#generate")
    generate = page.locator("#generate")
    generate.get_by_label("Prompt").fill("a lighthouse")
    generate.get_by_text("Advanced").click()
    generate.get_by_label("Steps (empty: default)").fill("30")
    generate.get_by_label("Seed (empty: random)").fill("twelve")
    _without_the_browsers_checks(generate.locator("form"))
    generate.get_by_role("button", name="Generate", exact=True).click()
    _refused_on_the_form(page, "#generate", "Seed: must be an integer")
    generate.get_by_label("Seed (empty: random)").fill("12")
    generate.get_by_role("button", name="Generate", exact=True).click()
    alert = page.locator("#generate").get_by_role("alert")
    expect(alert).to_contain_text("The model builtin cannot run these settings")
    expect(alert).to_contain_text("Steps: the model builtin takes no steps")
    # The refused values stay, the Advanced part open on them.
    expect(page.locator("#generate details.advanced")).to_have_attribute("open", "")
    expect(page.locator("#generate").get_by_label("Steps (empty: default)")).to_have_value("30")
    assert _jobs_and_balance(dash, who) == (0, 1000)
