"""Property-based tests of the admin API against its own OpenAPI document (schemathesis).

Schemathesis takes the document a broker serves at ``/v1/openapi.json`` (built here as
the app builds it, and checked equal to what a real broker serves) and, for every
operation, generates requests from it (valid ones, and invalid ones that must be refused
with a 4xx), sends them over HTTP with the bearer token and checks each answer: no 5xx,
a documented status, content type and headers, a body that fits its schema, and that the
token is really required. Bounded by count, never by time, so that every operation is
covered on every run however busy the machine: schemathesis's deterministic coverage
cases plus ``EXAMPLES`` generated ones per operation (derandomized: the same requests on
every run); an operation that received no request fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from admin.openapi import openapi_document
from trio_broker import __version__
from trio_broker.network.mute import MuteState
from trio_broker.server.quotas.store import QUOTA_KEYS

from ..support.brokers import BrokerThread
from .conftest import ADMIN, TOKEN

EXAMPLES = 10  # generated per operation, beside its coverage cases: ~1,000 requests in all


@pytest.fixture(scope="module")
def admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("fuzz") / "data"
    # Fault injection on, so that /v1/faults is fuzzed past its 403 (its rules act on
    # Kafka requests only, and no Kafka client talks to this broker).
    settings = {**ADMIN, "admin.token": TOKEN, "testing.faults.enable": "true"}
    b = BrokerThread(data, settings).start()
    yield b.admin_url
    b.stop()


@pytest.fixture
def sent(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """The requests one operation's test sent; none at all fails that operation."""
    calls: list[str] = []
    yield calls
    if not calls:
        pytest.fail(f"{request.node.name}: no request was sent to this operation")


def served_document() -> dict[str, Any]:
    """The document a broker with a token serves (checked against the real one below)."""
    return openapi_document(
        mute_states=[s.value for s in MuteState],
        quota_keys=list(QUOTA_KEYS),
        token_required=True,
        version=__version__,
    )


# Loaded at import (schemathesis generates one test per operation at collection time);
# the broker is only up at run time, so each call names its base URL.
schema = schemathesis.openapi.from_dict(served_document())


def test_the_fuzzed_document_is_the_one_served(admin_url: str) -> None:
    served = httpx.get(f"{admin_url}/v1/openapi.json", timeout=10).json()
    assert served == served_document()


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
def test_the_admin_api_keeps_its_documented_contract(
    case: Any, admin_url: str, sent: list[str]
) -> None:
    sent.append(case.operation.label)
    case.call_and_validate(
        base_url=admin_url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
        # Every other check runs. This one assumes the document says all that makes a
        # request acceptable; here it cannot: 2.0 is a JSON Schema integer but the
        # contract refuses floats as sizes, and whether a config key is dynamic or a
        # value valid is the broker's to judge (the 400 then names the key).
        excluded_checks=[positive_data_acceptance],
    )
