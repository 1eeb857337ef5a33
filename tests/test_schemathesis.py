"""Property-based requests from the OpenAPI document against the implemented endpoints:
no 5xx, every status documented, every body as the schema says. On each deployment of the
`service` fixture: SQLite accepts strings PostgreSQL refuses (NUL), so both are fuzzed."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from tests.support.service import Service

IMPLEMENTED = (
    r"^/v1/(images/(generate|edit|resize|upscale)|images/\{id\}|videos/\{id\}"
    r"|videos/(image-to-video|frames)|styles/extractions/\{id\}|styles|styles/extract|styles/\{id\}"
    r"|styles/\{id\}/(search|assets)"
    r"|jobs|jobs/\{id\}|jobs/\{id\}/cancel|account|uploads|uploads/\{uploadId\}"
    r"|uploads/\{uploadId\}/complete)$"
)
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]


@pytest.mark.slow
def test_fuzzed_requests_are_answered_as_documented(service: Service) -> None:
    key = service.new_key(credits=10**8, plan="enterprise")
    schema = schemathesis.openapi.from_url(f"{service.api}/openapi.json")
    schema.config.update(base_url=service.url, headers={"x-api-key": key})
    operations = [
        result.ok() for result in schema.include(path_regex=IMPLEMENTED).get_all_operations()
    ]
    assert len(operations) == 24
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=30,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case: schemathesis.Case) -> None:
            case.call_and_validate(checks=CHECKS, timeout=30)

        fuzz()
