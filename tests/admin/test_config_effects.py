"""Run-time config changes over the admin API take effect in the running broker."""

from __future__ import annotations

import httpx

from trio_broker.protocol.messages.metadata import MetadataRequest

from ..support.brokers import BrokerThread
from ..support.wire import WireClient


def test_lowering_max_connections_closes_the_least_recently_used(
    admin_broker: BrokerThread, http: httpx.Client
) -> None:
    clients = [WireClient(admin_broker.bootstrap) for _ in range(4)]
    for c in clients:  # clients[0] is now the least recently used
        assert c.request(MetadataRequest(topics=[]), 4).brokers
    r = http.put("/v1/config", json={"settings": {"max.connections": "2"}, "dry_run": False})
    assert r.status_code == 200, r.text
    assert [c.closed_by_peer() for c in clients[:2]] == [True, True]
    for c in clients[2:]:
        assert c.request(MetadataRequest(topics=[]), 4).brokers
    snapshot = http.get("/v1/metrics").json()
    assert snapshot["connections"]["evicted"] == 2
    for c in clients:
        c.close()


def test_a_new_retention_default_reaches_existing_topics(
    admin_broker: BrokerThread, http: httpx.Client
) -> None:
    broker = admin_broker.broker
    assert broker is not None
    with WireClient(admin_broker.bootstrap) as c:
        req = MetadataRequest(topics=[MetadataRequest.Topic(name="kept")])
        assert c.request(req, 9).topics[0].error_code == 0
    r = http.put("/v1/config", json={"settings": {"log.retention.ms": "3600000"}, "dry_run": False})
    assert r.status_code == 200, r.text
    plog = admin_broker.call(lambda: broker.replica_manager.partition("kept", 0))
    assert plog.config.retention_ms == 3600000
