"""The pytest plugin (entry point ``pytest11``): a real Kafka-protocol broker per test.

Owns the fixtures ``kafka_broker`` (function scope: a fresh broker per test, its data
under the test's ``tmp_path``) and ``kafka_broker_session`` (one broker for the session;
with pytest-xdist one per worker, since each worker is its own session), the marker
``@pytest.mark.kafka_config({...})`` (settings of the test's ``kafka_broker``) and the
fixtures a ``conftest.py`` may override: ``kafka_broker_mode`` (``"thread"`` or
``"process"``), ``kafka_broker_storage`` (``"file"`` or ``"memory"``) and
``kafka_broker_session_config`` (the session broker's settings).

A broker's unexpected exception (an ERROR in its log) fails the test that was running as
an error at teardown, never silently; a test that provokes one on purpose clears
``broker.errors``. Loading the plugin imports nothing of the broker: that happens when a
fixture is first used.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

if TYPE_CHECKING:
    from .harness import Mode, RunningBroker


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kafka_config(settings): broker settings (Kafka's names) for this test's kafka_broker",
    )


@pytest.fixture(scope="session")
def kafka_broker_mode() -> str:
    """How the brokers run: ``"thread"`` (in this process) or ``"process"``."""
    return "thread"


@pytest.fixture(scope="session")
def kafka_broker_storage() -> str:
    """Where the brokers keep their data: ``"file"`` (under the test's ``tmp_path``) or
    ``"memory"`` (a memory-backed file system; see ``trio_broker.testing.running``)."""
    return "file"


@pytest.fixture(scope="session")
def kafka_broker_session_config() -> dict[str, Any]:
    """The session broker's settings (override this fixture in a conftest.py)."""
    return {}


def _settings(node: pytest.Item | None) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if node is None:
        return settings
    for mark in reversed(list(node.iter_markers("kafka_config"))):  # closest wins
        given = mark.args[0] if mark.args else {}
        if not isinstance(given, dict):
            raise pytest.UsageError("kafka_config takes one dict of broker settings")
        settings.update(given)
        settings.update(mark.kwargs)
    return settings


def _report(broker: RunningBroker, since: int, what: str) -> None:
    errors = broker.errors[since:]
    if errors:
        shown = "\n".join(errors[:20])
        pytest.fail(f"{what} logged {len(errors)} error(s):\n{shown}", pytrace=False)


def _place(storage: str, data_dir: Path) -> dict[str, Any]:
    if storage == "memory":
        return {"storage": "memory"}
    return {"storage": storage, "data_dir": data_dir}


@pytest.fixture
def kafka_broker(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    kafka_broker_mode: str,
    kafka_broker_storage: str,
) -> Iterator[RunningBroker]:
    """A broker for this test (``@pytest.mark.kafka_config({...})`` sets its config)."""
    from .harness import running

    settings = _settings(request.node if isinstance(request.node, pytest.Item) else None)
    mode = cast("Mode", kafka_broker_mode)
    place = _place(kafka_broker_storage, tmp_path / "kafka-broker")
    with running(settings, mode=mode, **place) as b:
        yield b
    _report(b, 0, "the broker")


@pytest.fixture(scope="session")
def kafka_broker_session(
    tmp_path_factory: pytest.TempPathFactory,
    kafka_broker_mode: str,
    kafka_broker_storage: str,
    kafka_broker_session_config: dict[str, Any],
) -> Iterator[RunningBroker]:
    """One broker for the whole session (one per pytest-xdist worker)."""
    from .harness import running

    mode = cast("Mode", kafka_broker_mode)
    if kafka_broker_storage == "memory":
        place = _place("memory", Path())
    else:
        place = _place(kafka_broker_storage, tmp_path_factory.mktemp("kafka-broker-session"))
    with running(kafka_broker_session_config, mode=mode, **place) as b:
        yield b


@pytest.fixture(autouse=True)
def _kafka_broker_session_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test using the session broker answers for the errors it logged meanwhile."""
    if "kafka_broker_session" not in request.fixturenames:
        yield
        return
    broker: RunningBroker = request.getfixturevalue("kafka_broker_session")
    since = len(broker.errors)
    yield
    _report(broker, since, "the session broker")
