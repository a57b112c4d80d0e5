"""``trio_broker.testing.running``: a real broker for a test, in a thread or a process.

What a user of the in-process API notices: real clients produce and consume through
``bootstrap``, topics are created, listed and deleted, ``restart`` keeps the data and the
address, ``storage="memory"`` keeps the same log in RAM, an exception inside the broker ends up in ``errors``, 200 start/stop cycles leave
no thread and no file descriptor behind, and nothing of Spark (nor, without the admin
API, of the admin app) is imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer

from trio_broker.apis.table import API_TABLE
from trio_broker.protocol.api import ApiKey
from trio_broker.testing import RunningBroker, TopicAdminError, running

ROOT = Path(__file__).resolve().parents[2]


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        p.produce(topic, v)
    assert p.flush(30) == 0


def consume(bootstrap: str, topic: str, n: int, group: str = "g") -> list[bytes]:
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    )
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    return got


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_a_broker_serves_real_clients_and_manages_topics(mode: Any, tmp_path: Path) -> None:
    with running({"num.partitions": 2}, mode=mode, data_dir=tmp_path / "d") as b:
        host, port = b.bootstrap.split(":")
        assert host == "127.0.0.1" and int(port) > 0
        assert b.admin_url is not None
        config = httpx.get(f"{b.admin_url}/v1/config", timeout=10).json()["config"]
        assert config["testing.faults.enable"] == "true"
        b.create_topic("orders", partitions=3, config={"retention.ms": "60000"})
        assert b.topics() == {"orders": 3}
        with pytest.raises(TopicAdminError, match="TOPIC_ALREADY_EXISTS"):
            b.create_topic("orders")
        produce(b.bootstrap, "orders", [b"a", b"b"])
        assert sorted(consume(b.bootstrap, "orders", 2)) == [b"a", b"b"]
        b.delete_topic("orders")
        assert "orders" not in b.topics()
        assert b.errors == []
    assert not (tmp_path / "d" / "listeners.json").exists()  # stopped cleanly


def test_restart_keeps_the_data_and_the_address() -> None:
    with running() as b:
        b.create_topic("kept")
        produce(b.bootstrap, "kept", [b"before"])
        before = (b.bootstrap, b.admin_url)
        b.restart()
        assert (b.bootstrap, b.admin_url) == before
        produce(b.bootstrap, "kept", [b"after"])
        assert consume(b.bootstrap, "kept", 2) == [b"before", b"after"]


def test_an_exception_inside_the_broker_is_collected_in_errors() -> None:
    async def broken(ctx: Any, body: Any) -> Any:
        raise RuntimeError("a bug in the broker")

    table = API_TABLE.with_handler(ApiKey.CreateTopics, broken)
    with running(api_table=table) as b:
        with pytest.raises(TopicAdminError, match="UNKNOWN_SERVER_ERROR"):
            b.create_topic("t")
        assert any("a bug in the broker" in e for e in b.errors)


def test_the_default_data_dir_is_removed_after_the_broker() -> None:
    with running() as b:
        data_dir = b.data_dir
        assert (data_dir / "listeners.json").exists()
    assert not data_dir.exists()


def _file_system_of(path: Path) -> str:
    """The type of the file system that holds ``path`` (the longest mount point)."""
    best, kind = "", ""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, point, fs = line.split()[:3]
        inside = str(path) == point or str(path).startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, kind = point, fs
    return kind


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_memory_storage_keeps_the_log_in_ram_with_the_same_behaviour(mode: Any) -> None:
    with running(mode=mode, storage="memory") as b:
        data_dir = b.data_dir
        assert _file_system_of(data_dir) == "tmpfs"
        assert _file_system_of(Path(tempfile.gettempdir())) != "tmpfs"  # the default is not
        b.create_topic("m", partitions=2)
        produce(b.bootstrap, "m", [b"x", b"y"])
        assert sorted(consume(b.bootstrap, "m", 2)) == [b"x", b"y"]
        assert any(p.name == "m-0" for p in data_dir.iterdir())  # the file log's own layout
        b.restart()  # same RAM dir: a restart keeps the data, as on disk
        produce(b.bootstrap, "m", [b"z"])
        assert sorted(consume(b.bootstrap, "m", 3, group="after")) == [b"x", b"y", b"z"]
        assert b.errors == []
    assert not data_dir.exists()  # nothing left in RAM
    with (
        pytest.raises(ValueError, match="give no data_dir"),
        running(storage="memory", data_dir=data_dir),
    ):
        pass


def _threads_and_fds() -> tuple[int, int]:
    return threading.active_count(), len(os.listdir("/proc/self/fd"))


def test_200_start_stop_cycles_leak_no_threads_and_no_file_descriptors() -> None:
    for _ in range(5):  # warm up: trio's worker thread cache, lazily opened files
        with running():
            pass
    threads, fds = _threads_and_fds()
    for i in range(200):
        with running(admin=i % 2 == 0) as b:
            assert b.bootstrap
    # The io pool's threads retire once the broker stops; give them a moment to end.
    deadline = time.monotonic() + 10
    while _threads_and_fds() > (threads, fds) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _threads_and_fds() <= (threads, fds), [t.name for t in threading.enumerate()]


IMPORTS = """
import sys
from trio_broker.testing import running
with running(admin={admin}) as b:
    b.create_topic("t")
print(sorted({{m.split(".")[0] for m in sys.modules}} & {{"pyspark", "spark_jobs", "quart", "admin"}}))
"""


@pytest.mark.parametrize(("admin", "loaded"), [(False, "[]"), (True, "['admin', 'quart']")])
def test_spark_is_never_imported_and_the_admin_app_only_when_used(admin: bool, loaded: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", IMPORTS.format(admin=admin)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == loaded


def test_the_handle_says_when_it_is_not_running() -> None:
    with running() as b:
        pass
    assert isinstance(b, RunningBroker) and not b.running
    with pytest.raises(RuntimeError, match="not running"):
        _ = b.bootstrap
