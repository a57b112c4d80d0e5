"""ApiVersions answers from the API table, KIP-511 included."""

from __future__ import annotations

import struct

import pytest
import trio.testing
from confluent_kafka.admin import AdminClient

from trio_broker.apis.table import API_TABLE, ZOOKEEPER_ONLY
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest

from ..support.wire import AsyncWireClient


def address(broker) -> str:  # type: ignore[no-untyped-def]
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return f"{host}:{port}"


def expected_ranges() -> dict[int, tuple[int, int]]:
    """A broker without a control-plane listener serves the control requests on its data
    plane (as Kafka's inter-broker listener does), so it lists every API but
    ControlledShutdown, served in a ZooKeeper cluster only (a broker on its own has no
    controller to ask; ElectLeaders and the reassignment APIs it answers as its own
    controller)."""
    table = API_TABLE.versions("control")
    return {k: (v.lo, v.hi) for k, v in table.items() if k not in ZOOKEEPER_ONLY}


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_every_version_lists_the_table(run_broker, version: int) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    client = await AsyncWireClient.connect(address(broker))
    req = ApiVersionsRequest(client_software_name="wire", client_software_version="1.0")
    response = await client.request(req, version)
    assert response.error_code == ErrorCode.NONE
    got = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert got == expected_ranges()
    assert got[18] == (0, 4) and got[3] == (0, 13)


@pytest.mark.parametrize("version", [5, 99])
async def test_an_unknown_version_gets_v0_with_our_ranges(run_broker, version: int) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    client = await AsyncWireClient.connect(address(broker))
    # A future version's body may be anything: the broker must not try to parse it.
    body = b"\x07future!\x03v9\x00"
    payload = struct.pack(">hhih", 18, version, 42, 4) + b"kcat" + b"\x00" + body
    await client.send_raw(struct.pack(">i", len(payload)) + payload)
    client._pending[42] = (18, version)
    corr, response = await client.receive()
    assert corr == 42
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert {
        k.api_key: (k.min_version, k.max_version) for k in response.api_keys
    } == expected_ranges()
    # The connection stays usable: the client now retries with a version we know.
    assert (await client.request(ApiVersionsRequest(), 2)).error_code == ErrorCode.NONE


async def test_client_software_is_kept_on_the_connection(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    client = await AsyncWireClient.connect(address(broker), client_id="app-1")
    req = ApiVersionsRequest(client_software_name="my-client", client_software_version="2.5.0")
    assert (await client.request(req, 3)).error_code == ErrorCode.NONE
    await trio.testing.wait_all_tasks_blocked()
    (conn,) = broker.socket_server.all_connections()
    assert (conn.client_id, conn.client_software_name, conn.client_software_version) == (
        "app-1",
        "my-client",
        "2.5.0",
    )


async def test_an_invalid_software_name_is_an_invalid_request(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    client = await AsyncWireClient.connect(address(broker))
    req = ApiVersionsRequest(client_software_name="bad name!", client_software_version="1")
    assert (await client.request(req, 3)).error_code == ErrorCode.INVALID_REQUEST


def test_librdkafka_reports_its_name(broker) -> None:  # type: ignore[no-untyped-def]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "rdk-app"})
    # librdkafka swaps its bootstrap connection for the broker's own one; whichever is
    # open has told us its name once a metadata round trip has completed on it.
    for _ in range(20):
        admin.list_topics(timeout=10)
        conns = broker.call(broker.broker.socket_server.all_connections)
        names = {(c.client_id, c.client_software_name) for c in conns if c.requests}
        if ("rdk-app", "confluent-kafka-python") in names:
            break
    assert ("rdk-app", "confluent-kafka-python") in names


async def test_with_a_control_plane_the_data_plane_omits_the_control_requests(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "control.plane.listener.name": "CONTROLLER",
        }
    )
    data = await AsyncWireClient.connect(address(broker))
    keys = {k.api_key for k in (await data.request(ApiVersionsRequest(), 2)).api_keys}
    assert keys == set(API_TABLE.versions("data")) - set(ZOOKEEPER_ONLY) and not keys & {4, 5, 6}
    host, port = broker.bound_listeners()["CONTROLLER"]
    control = await AsyncWireClient.connect(f"{host}:{port}")
    keys = {k.api_key for k in (await control.request(ApiVersionsRequest(), 2)).api_keys}
    assert {4, 5, 6} <= keys
