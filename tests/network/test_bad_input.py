"""Bad input closes that connection only, is logged once with the peer, and is counted."""

from __future__ import annotations

import logging
import struct

import pytest
import trio
import trio.testing

from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.metadata import MetadataRequest

from ..support.wire import AsyncWireClient

MAX = 4096  # socket.request.max.bytes for these tests


def header(api_key: int, version: int, corr: int = 7, client: bytes = b"bad") -> bytes:
    return struct.pack(">hhih", api_key, version, corr, len(client)) + client


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


CASES = [
    ("FrameTooLarge", struct.pack(">i", MAX + 1) + b"x" * 16, False),
    ("InvalidFrameSize", struct.pack(">i", 0), False),
    ("InvalidFrameSize", struct.pack(">i", -5), False),
    ("TruncatedFrame", struct.pack(">i", 100) + b"only part of it", True),
    ("UnknownApiKey", framed(header(999, 0)), False),
    ("UnsupportedApiVersion", framed(header(3, 99)), False),  # Metadata v99
    ("CorruptRequest", framed(header(3, 1) + b"\x00\x00\x00\x05\x00"), False),  # 5 topics, 1 byte
    ("CorruptRequest", framed(struct.pack(">hh", 3, 1)), False),  # header cut short
]


@pytest.mark.parametrize(("kind", "payload", "half_close"), CASES)
async def test_bad_input_closes_only_that_connection(
    run_broker,
    caplog,
    kind: str,
    payload: bytes,
    half_close: bool,  # type: ignore[no-untyped-def]
) -> None:
    broker = await run_broker({"socket.request.max.bytes": str(MAX)})
    host, port = broker.bound_listeners()["PLAINTEXT"]
    address = f"{host}:{port}"
    healthy = await AsyncWireClient.connect(address, client_id="healthy")
    assert (await healthy.request(MetadataRequest(topics=[]), 4)).brokers

    bad = await AsyncWireClient.connect(address, client_id="bad")
    bad_port = bad.stream.socket.getsockname()[1]
    with caplog.at_level(logging.WARNING, logger="trio_broker.network"):
        await bad.send_raw(payload)
        if half_close:
            await bad.stream.send_eof()
        with trio.fail_after(5):
            assert await bad.closed_by_peer()
        await trio.testing.wait_all_tasks_blocked()

    # Logged once, with the peer address, and counted by kind.
    lines = [r.getMessage() for r in caplog.records if f":{bad_port}" in r.getMessage()]
    assert len(lines) == 1, lines
    assert f"127.0.0.1:{bad_port}" in lines[0] and kind in lines[0]
    assert broker.socket_server.counters.bad_requests == {kind: 1}

    # The healthy client goes on undisturbed, on the same connection.
    for version in (0, 1, 2, 3):
        req = ApiVersionsRequest(client_software_name="wire", client_software_version="1.0")
        assert (await healthy.request(req, version)).error_code == 0
    assert len(broker.socket_server.all_connections()) == 1
    await healthy.aclose()


async def test_a_broker_bug_on_one_connection_closes_only_that_connection(
    run_broker,
    caplog,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    # Fault injection: parsing a request from client "doomed" raises what no code expects.
    from trio_broker.network import processor as processor_module

    real = processor_module.wire.decode_request_header

    def decode(frame):  # type: ignore[no-untyped-def]
        if b"doomed" in bytes(frame[:32]):
            raise KeyError("a bug")
        return real(frame)

    monkeypatch.setattr(processor_module.wire, "decode_request_header", decode)
    broker = await run_broker({})
    host, port = broker.bound_listeners()["PLAINTEXT"]
    address = f"{host}:{port}"
    healthy = await AsyncWireClient.connect(address, client_id="healthy")
    doomed = await AsyncWireClient.connect(address, client_id="doomed")
    with caplog.at_level(logging.ERROR, logger="trio_broker.network"):
        await doomed.send_raw(framed(header(3, 4, client=b"doomed") + b"\x00\x00\x00\x00\x00"))
        with trio.fail_after(5):
            assert await doomed.closed_by_peer()
        await trio.testing.wait_all_tasks_blocked()
    errors = [r for r in caplog.records if "broker error" in r.getMessage()]
    assert len(errors) == 1 and errors[0].exc_info is not None
    assert broker.socket_server.counters.bad_requests == {"InternalError": 1}
    assert (await healthy.request(MetadataRequest(topics=[]), 4)).brokers
    await healthy.aclose()
