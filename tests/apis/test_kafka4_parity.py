"""Every API served at Kafka 4.3's newest version, or named with the reason it is not.

The specification is Kafka 4.3's JSON (tests/protocol/kafka4_3_schemas): an API's newest
version there is its ``validVersions`` maximum, less one when ``latestVersionUnstable``
(Kafka does not advertise it). The API table must serve exactly that, except the APIs
listed here, which docs/COMPATIBILITY.md names with the same reason ("Kafka 4.x API
versions"): a list that must shrink, not grow, and that the doc must keep up with.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from trio_broker.apis.table import API_TABLE
from trio_broker.protocol.api import ApiKey, spec_for

from ..protocol.oracle import KAFKA4_RESOURCES

DOC = Path(__file__).resolve().parents[2] / "docs" / "COMPATIBILITY.md"

# api key -> (the version served, why not Kafka 4.3's)
CAPPED = {
    ApiKey.WriteTxnMarkers: (
        1,
        "v2's TransactionVersion (KIP-1228) asks the partition leader for a stricter epoch "
        "check of version 2 markers, not served",
    ),
}
# Listed only to be refused (apis.unserved): their versions are Kafka 3.9's early access.
REFUSED = {ApiKey.ConsumerGroupHeartbeat, ApiKey.ShareGroupHeartbeat}


def newest_in_4_3(api_key: int) -> int | None:
    spec = spec_for(api_key)
    assert spec is not None
    path = KAFKA4_RESOURCES / f"{spec.request.__name__}.json"
    if not path.exists():
        return None  # an API Kafka 4 removed (the ZooKeeper controller's)
    schema = json.loads(re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M))
    newest = int(schema["validVersions"].split("-")[-1])
    return newest - 1 if schema.get("latestVersionUnstable") else newest


def test_every_api_is_served_at_its_kafka_4_3_version_or_named() -> None:
    behind = {}
    for entry in API_TABLE.entries():
        key = entry.spec.key
        newest = newest_in_4_3(key)
        if newest is None or key in REFUSED:
            continue
        if entry.versions.hi != newest:
            behind[ApiKey(key)] = entry.versions.hi
    assert behind == {k: served for k, (served, _) in CAPPED.items()}


def test_the_capped_apis_are_named_in_the_compatibility_doc() -> None:
    text = DOC.read_text()
    section = text[text.index("## Kafka 4.x API versions") :]
    for key, (served, _) in CAPPED.items():
        assert f"{key.name} stays at v{served}" in section, key.name
