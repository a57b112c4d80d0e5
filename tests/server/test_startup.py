"""Start-up as a user meets it: a locked data directory, failures in one line, and a clean
shutdown that leaves no stale ``listeners.json``. Every test runs ``python -m trio_broker``."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from trio_broker.protocol.messages.metadata import MetadataRequest

from ..support.brokers import BrokerProcess
from ..support.wire import WireClient

PORTS_ZERO = ["listeners=PLAINTEXT://127.0.0.1:0", "admin.listeners=http://127.0.0.1:0"]


def broker(data: Path, *overrides: str, **kwargs: object) -> BrokerProcess:
    return BrokerProcess(data, [*PORTS_ZERO, f"log.dirs={data}", *overrides], **kwargs)  # type: ignore[arg-type]


def snapshot(data: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mtime (ns) under ``data``, but the lock file."""
    return {
        str(p.relative_to(data)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(data.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port bound and listening on 127.0.0.1, as another server would hold it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_second_broker_on_a_locked_dir_exits_2_and_touches_no_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = broker(data).start()
    try:
        producer = Producer({"bootstrap.servers": first.bootstrap})
        for i in range(20):
            producer.produce("locked", f"message {i}".encode())
        assert producer.flush(30) == 0
        assert first.proc is not None
        assert (data / ".lock").read_text().strip() == str(first.proc.pid)
        before = snapshot(data)
        assert any(name.startswith("locked-0") for name in before)

        code, lines = broker(data).run_to_failure()

        assert code == 2
        assert len(lines) == 1, lines
        assert str(data) in lines[0] and f"pid {first.proc.pid}" in lines[0]
        assert snapshot(data) == before
        with WireClient(first.bootstrap) as client:  # the first broker still serves
            assert client.request(MetadataRequest(topics=[]), 4).brokers
    finally:
        assert first.terminate() == 0


def test_the_lock_goes_with_the_broker(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert broker(data).start().terminate() == 0
    assert broker(data).start().terminate() == 0  # the next broker takes the dir over


def test_a_busy_listener_port_is_one_line_naming_the_listener(
    tmp_path: Path, busy_port: int
) -> None:
    code, lines = broker(
        tmp_path / "data", f"listeners=PLAINTEXT://127.0.0.1:{busy_port}"
    ).run_to_failure()
    assert code == 2
    assert lines == [
        f"trio-broker: listener PLAINTEXT cannot bind 127.0.0.1:{busy_port}: address already in use"
    ]


def test_a_busy_port_is_one_line_after_loading_partitions_too(
    tmp_path: Path, busy_port: int
) -> None:
    """What loading the logs took is told once the broker has started, not before a
    failure: a start that loads partitions and then fails is still one line."""
    data = tmp_path / "data"
    first = broker(data).start()
    producer = Producer({"bootstrap.servers": first.bootstrap})
    producer.produce("kept", b"one")
    assert producer.flush(30) == 0
    assert first.terminate() == 0
    code, lines = broker(data, f"listeners=PLAINTEXT://127.0.0.1:{busy_port}").run_to_failure()
    assert code == 2 and len(lines) == 1 and "cannot bind" in lines[0], lines


def test_a_busy_admin_port_is_one_line_naming_the_admin_api(tmp_path: Path, busy_port: int) -> None:
    code, lines = broker(
        tmp_path / "data", f"admin.listeners=http://127.0.0.1:{busy_port}"
    ).run_to_failure()
    assert code == 2
    assert lines == [
        f"trio-broker: admin API (admin.listeners) cannot bind 127.0.0.1:{busy_port}: "
        "address already in use"
    ]


@pytest.mark.parametrize("flag", [["--debug"], ["--log-level", "DEBUG"]])
def test_debug_adds_the_traceback(tmp_path: Path, busy_port: int, flag: list[str]) -> None:
    code, lines = broker(
        tmp_path / "data", f"listeners=PLAINTEXT://127.0.0.1:{busy_port}", extra_args=flag
    ).run_to_failure()
    assert code == 2
    assert any("Traceback" in line for line in lines)
    assert lines[-1].startswith("trio-broker: listener PLAINTEXT cannot bind")


def test_a_log_dir_that_cannot_be_a_directory_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code, lines = broker(tmp_path / "file" / "data").run_to_failure()
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"trio-broker: log dir {blocker / 'data'}")


def test_a_bad_tls_file_is_one_line_naming_the_key(tmp_path: Path) -> None:
    missing = tmp_path / "missing.pem"
    code, lines = broker(
        tmp_path / "data",
        "listeners=SSL://127.0.0.1:0",
        "listener.security.protocol.map=SSL:SSL",
        f"ssl.keystore.location={missing}",
    ).run_to_failure()
    assert code == 2
    assert len(lines) == 1 and "ssl.keystore.location" in lines[0], lines
    assert lines[0].startswith("trio-broker: configuration error:")


def test_a_clean_shutdown_removes_listeners_json(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = broker(data).start()
    assert (data / "listeners.json").exists()
    assert proc.terminate() == 0
    assert not (data / "listeners.json").exists()
