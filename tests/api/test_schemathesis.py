"""Property-based requests from the OpenAPI document against every operation, with every check
Schemathesis has (no 5xx, statuses, content types, headers and bodies as documented, valid data
accepted, invalid data refused, auth not ignored, unsupported methods refused with `Allow`),
valid and invalid data both; then stateful runs following the document's links (a create's job
read, streamed and cancelled; a presigned upload completed). On each deployment of the `service`
fixture: SQLite accepts strings PostgreSQL refuses (NUL), so both are fuzzed.

`make test` sends a fixed sample, derandomized (the same requests every run, so that a failure
reproduces); `make fuzz` (SFUMATO_FUZZ=1) explores at random, ten times as many."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config._auth import OpenAPIAuthConfig
from schemathesis.config._checks import (
    NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES,
    POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES,
    NegativeDataRejectionConfig,
    PositiveDataAcceptanceConfig,
)
from schemathesis.generation import GenerationMode

from tests.support.service import Service

pytestmark = pytest.mark.slow
IMPLEMENTED = (
    r"^/v1/(images/(generate|edit|resize|upscale)|images/\{id\}|videos/\{id\}"
    r"|videos/(image-to-video|frames)|styles/extractions/\{id\}|styles|styles/extract|styles/\{id\}"
    r"|styles/\{id\}/(search|assets)"
    r"|jobs|jobs/\{id\}|jobs/\{id\}/(cancel|events)|account|uploads|uploads/\{uploadId\}"
    r"|uploads/\{uploadId\}/complete)$"
)
FUZZ = os.environ.get("SFUMATO_FUZZ") == "1"
EXAMPLES_SCALE = 10 if FUZZ else 1
load_all_checks()
ALL_CHECKS = list(CHECKS.get_all())


@pytest.fixture(scope="module")
def schema(service: Service):  # type: ignore[no-untyped-def]
    key = service.new_key(credits=10**8, plan="enterprise")
    loaded = schemathesis.openapi.from_url(f"{service.api}/openapi.json")
    loaded.config.update(base_url=service.url)
    # The key as the document's security scheme: `ignored_auth` then knows it is real, and
    # checks that requests without it, or with a spoiled one, are refused.
    loaded.config.auth.openapi = OpenAPIAuthConfig(schemes={"ApiKeyHeader": {"api_key": key}})
    # Valid by the schema is not always valid by the service: a reference that resolves to
    # nothing, an upload completed before its bytes were PUT, a cursor this service did not
    # issue are 400s a schema cannot express (docs/api.md "Errors"); an Idempotency-Key the
    # generator happens to send again with another body is the documented 422. Everything
    # else that `positive_data_acceptance` knows still holds.
    # A body over 64 KiB (SFUMATO_MAX_BODY_BYTES) is refused with 413 before anything reads it,
    # valid or not: the generator makes one now and then (a list of long strings).
    loaded.config.checks.positive_data_acceptance = PositiveDataAcceptanceConfig(
        expected_statuses=[*POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES, "400", "413", "422"]
    )
    loaded.config.checks.negative_data_rejection = NegativeDataRejectionConfig(
        expected_statuses=[*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "413"]
    )
    return loaded.include(path_regex=IMPLEMENTED)


def test_every_check_holds_on_valid_and_invalid_requests(schema) -> None:  # type: ignore[no-untyped-def]
    assert len(ALL_CHECKS) >= 14
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 25
    for operation in operations:
        for mode, examples in ((GenerationMode.POSITIVE, 25), (GenerationMode.NEGATIVE, 15)):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=examples * EXAMPLES_SCALE,
                derandomize=not FUZZ,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def fuzz(case: schemathesis.Case) -> None:
                case.call_and_validate(checks=ALL_CHECKS, timeout=30)

            fuzz()


def test_stateful_runs_follow_the_documents_links(schema) -> None:  # type: ignore[no-untyped-def]
    machine = schema.as_state_machine()
    machine.run(
        settings=settings(
            max_examples=15 * EXAMPLES_SCALE,
            stateful_step_count=5,
            derandomize=not FUZZ,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
    )
