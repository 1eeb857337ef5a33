"""`style.extract` jobs with the rendered path through HTTP: the job contract is unchanged, and a
site that cannot be rendered within the budget fails its job with a clear message and a refund."""

from __future__ import annotations

from tests.support.service import Service
from tests.support.styles_api import FETCHING, extract


@FETCHING
def test_a_site_past_the_render_budget_fails_the_job_and_refunds(
    service: Service, base_url: str
) -> None:
    key = service.new_key()
    with service.client(key) as client:
        job = extract(client, f"{base_url}/hang/")
        after = extract(client, f"{base_url}/spa/")
    assert job["status"] == "failed"
    assert job["error"] == {
        "code": "GENERATION_FAILED",
        "message": (
            f"Could not extract a style: {base_url}/hang/ could not be rendered within the "
            "8 s budget; the credits were refunded"
        ),
    }
    assert after["status"] == "completed", "the worker's browser goes on serving"
    assert service.balance(key) == 1000 - 5
