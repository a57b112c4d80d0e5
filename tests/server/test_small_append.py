"""Which appends may run on the event loop (``log_io.small_append``): one partition, a few
KiB, no fsync on the way (no new leader epoch to record, no ``flush.messages``), no
recompression and no test storage delay."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.log.helpers import open_log, records
from trio_broker.log import storage_hook
from trio_broker.server.replication import log_io


def _mv(n: int = 1, value: bytes = b"v") -> memoryview:
    return records(n, value=value).data


def test_a_small_append_in_a_recorded_epoch_may_run_on_the_loop(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    try:
        # The first append of epoch 0 records the epoch (a file written and fsynced).
        assert not log_io.small_append([(plog, _mv(), 0)])
        assert not isinstance(log_io.append(plog, _mv(), 0), Exception)
        assert log_io.small_append([(plog, _mv(), 0)])
        assert not log_io.small_append([(plog, _mv(), 1)])  # a new epoch
        assert not log_io.small_append([(plog, _mv(), 0), (plog, _mv(), 0)])  # two
        big = _mv(1, b"x" * (log_io.SMALL_APPEND_BYTES + 1))
        assert not log_io.small_append([(plog, big, 0)])
    finally:
        plog.close()


@pytest.mark.parametrize(
    "config", [{"flush_interval_messages": 1000}, {"compression_type": "gzip"}]
)
def test_an_append_that_may_fsync_or_recompress_is_not_small(
    tmp_path: Path, config: dict[str, object]
) -> None:
    plog = open_log(tmp_path / "t-0", **config)
    try:
        assert not isinstance(log_io.append(plog, _mv(), 0), Exception)
        assert not log_io.small_append([(plog, _mv(), 0)])
    finally:
        plog.close()


def test_a_test_storage_delay_keeps_appends_on_the_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plog = open_log(tmp_path / "t-0")
    try:
        assert not isinstance(log_io.append(plog, _mv(), 0), Exception)
        monkeypatch.setattr(storage_hook, "delay_seconds", 0.001)
        assert not log_io.small_append([(plog, _mv(), 0)])
    finally:
        plog.close()
