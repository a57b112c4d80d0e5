"""The pytest plugin, as a user's project sees it: a test file, pytest, and the fixtures.

Each test writes a small project into ``tmp_path`` and runs pytest on it in a subprocess
with the plugin (``-p trio_broker.testing.plugin``, what the ``pytest11`` entry point
loads once the package is installed), then reads pytest's outcome.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_pytest(project: Path, *args: str) -> tuple[int, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "trio_broker.testing.plugin",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rA",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=project,
        env={**os.environ, "PYTHONPATH": path},
    )
    return out.returncode, out.stdout + out.stderr


def outcome(text: str) -> dict[str, int]:
    last = text.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last)}


FIXTURES = """
import json
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient


@pytest.mark.kafka_config({"num.partitions": 4})
def test_marker_sets_the_config(kafka_broker, tmp_path):
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    p.produce("auto", b"x")
    assert p.flush(30) == 0
    md = AdminClient({"bootstrap.servers": kafka_broker.bootstrap}).list_topics(timeout=10)
    assert len(md.topics["auto"].partitions) == 4
    assert kafka_broker.topics() == {"auto": 4}
    assert kafka_broker.data_dir.parent == tmp_path


def test_a_fresh_broker_per_test(kafka_broker):
    assert kafka_broker.topics() == {}
    kafka_broker.create_topic("mine", partitions=2)
    assert kafka_broker.topics() == {"mine": 2}


@pytest.mark.parametrize("n", [1, 2])
def test_one_session_broker(kafka_broker_session, n):
    Path(f"session-{n}.json").write_text(json.dumps(kafka_broker_session.bootstrap))
"""


def test_the_fixtures_and_the_marker(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(FIXTURES)
    code, out = run_pytest(tmp_path)
    assert code == 0, out
    assert outcome(out) == {"passed": 4}, out
    seen = {json.loads((tmp_path / f"session-{n}.json").read_text()) for n in (1, 2)}
    assert len(seen) == 1


PROCESS = """
import pytest

@pytest.fixture(scope="session")
def kafka_broker_mode():
    return "process"

@pytest.fixture(scope="session")
def kafka_broker_session_config():
    return {"num.partitions": 3}
"""

PROCESS_TEST = """
def test_process_broker(kafka_broker, kafka_broker_session):
    assert kafka_broker.mode == "process" and kafka_broker_session.mode == "process"
    assert kafka_broker.bootstrap != kafka_broker_session.bootstrap
    rule = kafka_broker.faults.error("CreateTopics", "POLICY_VIOLATION")
    try:
        kafka_broker.create_topic("refused")
    except Exception as exc:
        assert "POLICY_VIOLATION" in str(exc)
    assert rule.hits == 1
    kafka_broker_session.create_topic("three")
    assert kafka_broker_session.topics() == {"three": 1}
"""


def test_conftest_chooses_process_mode_and_the_session_config(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(PROCESS)
    (tmp_path / "test_process.py").write_text(PROCESS_TEST)
    code, out = run_pytest(tmp_path)
    assert code == 0, out
    assert outcome(out) == {"passed": 1}, out


MEMORY = """
import pytest

@pytest.fixture(scope="session")
def kafka_broker_storage():
    return "memory"
"""

MEMORY_TEST = """
from trio_broker.testing.harness import memory_root

def test_memory(kafka_broker, kafka_broker_session, tmp_path):
    for b in (kafka_broker, kafka_broker_session):
        assert str(b.data_dir).startswith(memory_root() + "/")
        b.create_topic("t")
    assert not (tmp_path / "kafka-broker").exists()
"""


def test_conftest_chooses_memory_storage(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(MEMORY)
    (tmp_path / "test_memory.py").write_text(MEMORY_TEST)
    code, out = run_pytest(tmp_path)
    assert code == 0, out
    assert outcome(out) == {"passed": 1}, out


BROKER_ERROR = """
import logging

def test_provokes_a_broker_error(kafka_broker):
    log = logging.getLogger("trio_broker.server")
    # as the request handler logs a bug, from the broker's own event loop
    kafka_broker._runner.call(log.error, "broker error handling a request: boom")

def test_forgives_it(kafka_broker):
    log = logging.getLogger("trio_broker.server")
    kafka_broker._runner.call(log.error, "expected by this test")
    kafka_broker.errors.clear()

def test_session_broker_error(kafka_broker_session):
    log = logging.getLogger("trio_broker.server")
    kafka_broker_session._runner.call(log.error, "session boom")

def test_unaffected(kafka_broker_session):
    pass
"""


def test_a_broker_error_is_a_test_error_at_teardown(tmp_path: Path) -> None:
    (tmp_path / "test_errors.py").write_text(BROKER_ERROR)
    code, out = run_pytest(tmp_path)
    assert code == 1, out
    assert outcome(out) == {"passed": 4, "errors": 2}, out
    assert "ERROR at teardown of test_provokes_a_broker_error" in out
    assert "the broker logged 1 error(s)" in out and "boom" in out
    assert "ERROR at teardown of test_session_broker_error" in out
    assert "test_forgives_it" not in out.split("short test summary")[1].split("PASSED")[0]


XDIST = """
import json, os
from pathlib import Path

import pytest

@pytest.mark.parametrize("n", range(6))
def test_session_broker_per_worker(kafka_broker_session, n):
    worker = os.environ["PYTEST_XDIST_WORKER"]
    Path(f"seen-{n}.json").write_text(json.dumps([worker, kafka_broker_session.bootstrap]))
    kafka_broker_session.create_topic(f"t{n}")
"""


def test_pytest_xdist_gives_each_worker_its_own_broker(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    (tmp_path / "test_xdist.py").write_text(XDIST)
    code, out = run_pytest(tmp_path, "-n", "2", "--dist", "load")
    assert code == 0, out
    seen = [json.loads((tmp_path / f"seen-{n}.json").read_text()) for n in range(6)]
    by_worker: dict[str, set[str]] = {}
    for worker, bootstrap in seen:
        by_worker.setdefault(worker, set()).add(bootstrap)
    assert all(len(b) == 1 for b in by_worker.values()), by_worker
    brokers = [b for bs in by_worker.values() for b in bs]
    assert len(brokers) == len(set(brokers)) == len(by_worker)
