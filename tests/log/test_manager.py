"""LogManager: directories, placement, clean-shutdown markers, metadata, periodic work."""

from __future__ import annotations

import shutil
import threading
import uuid

import pytest

from trio_broker.log import (
    CLEAN_SHUTDOWN_FILE,
    LogConfig,
    LogManager,
    LogStorageError,
    parse_partition_dir,
    read_partition_metadata,
)
from trio_broker.log.descriptors import (
    DescriptorLimitError,
    FileBudget,
    check_start,
    open_files_limit,
    segments_on_disk,
)

from ..support.files import segment_fds
from .helpers import fill, read_headers, records

DAY = 24 * 3600 * 1000


def test_partition_dir_names() -> None:
    assert parse_partition_dir("my-topic.v2-12") == ("my-topic.v2", 12)
    assert parse_partition_dir("__consumer_offsets-0") == ("__consumer_offsets", 0)
    for bad in ("topic", "topic-", "-3", "t-0.abc-delete", "t-x"):
        assert parse_partition_dir(bad) is None


def test_create_spreads_over_dirs_and_reloads_cleanly(tmp_path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    mgr = LogManager(dirs, LogConfig(), now_ms=0)
    assert all(d.is_dir() for d in dirs)
    tid = uuid.uuid4()
    placed = [mgr.create("orders", p, topic_id=tid, now_ms=0) for p in range(4)]
    assert sorted(log.directory.parent.name for log in placed) == ["a", "a", "b", "b"]
    assert mgr.create("orders", 0) is placed[0]  # already there
    assert mgr.topic_id_of("orders", 2) == tid
    assert read_partition_metadata(placed[3].directory) == tid
    text = (placed[0].directory / "partition.metadata").read_text()
    assert text.startswith("version: 0\ntopic_id: ") and "=" not in text
    fill(placed[1], 5)
    mgr.close()
    assert all((d / CLEAN_SHUTDOWN_FILE).exists() for d in dirs)

    again = LogManager(dirs, LogConfig(), now_ms=0)
    assert sorted(again.partitions()) == [("orders", p) for p in range(4)]
    log = again.get("orders", 1)
    assert log is not None and log.log_end_offset == 5
    assert not log.load_stats.recovery and log.load_stats.segments_scanned == 0
    assert not any((d / CLEAN_SHUTDOWN_FILE).exists() for d in dirs)  # until the next close
    assert again.topic_id_of("orders", 1) == tid
    again.close()


def test_crash_without_marker_recovers(tmp_path) -> None:
    d = tmp_path / "logs"
    mgr = LogManager([d], LogConfig(), now_ms=0)
    log = mgr.create("t", 0, now_ms=0)
    fill(log, 4)
    shutil.copytree(d, tmp_path / "crash")  # the broker dies here: no marker
    mgr.close()
    active = tmp_path / "crash" / "t-0" / f"{0:020d}.log"
    with open(active, "ab") as f:
        f.write(b"\x00" * 30)
    again = LogManager([tmp_path / "crash"], LogConfig(), now_ms=0)
    log = again.get("t", 0)
    assert log is not None and log.load_stats.recovery
    assert log.load_stats.bytes_truncated == 30 and log.log_end_offset == 4
    again.close()


def test_topic_configs_apply_at_load(tmp_path) -> None:
    d = tmp_path / "logs"
    mgr = LogManager([d], LogConfig(), now_ms=0)
    mgr.create("small", 0, LogConfig(segment_bytes=300), now_ms=0)
    mgr.close()
    again = LogManager(
        [d], LogConfig(), topic_configs={"small": LogConfig(segment_bytes=300)}, now_ms=0
    )
    log = again.get("small", 0)
    assert log is not None and log.config.segment_bytes == 300
    again.close()


def test_delete_keeps_regions_readable(tmp_path) -> None:
    d = tmp_path / "logs"
    mgr = LogManager([d], LogConfig(), now_ms=0)
    log = mgr.create("gone", 0, now_ms=0)
    fill(log, 3)
    info = log.read(0, 1 << 20)
    assert mgr.delete("gone", 0)
    assert not mgr.delete("gone", 0)
    assert mgr.wait_removed(10)
    assert mgr.get("gone", 0) is None and not any(d.iterdir())
    from .helpers import region_bytes

    assert len(region_bytes(info)) == info.size_bytes > 0
    info.release()
    mgr.close()
    again = LogManager([d], LogConfig(), now_ms=0)
    assert again.partitions() == []
    again.close()


def test_delete_returns_before_the_folder_is_removed(tmp_path) -> None:
    """The folder is renamed and its files closed at once; a thread removes it afterwards,
    and the same partition can be created again meanwhile."""
    d = tmp_path / "logs"
    mgr = LogManager([d], LogConfig(), now_ms=0)
    fill(mgr.create("gone", 0, now_ms=0), 3)
    gate, removed = threading.Event(), []

    def gated(folder) -> None:  # type: ignore[no-untyped-def]
        assert gate.wait(10)
        shutil.rmtree(folder)
        removed.append(folder.name)

    mgr.remove_folder = gated
    assert mgr.delete("gone", 0)
    (doomed,) = [p.name for p in d.iterdir()]
    assert doomed.startswith("gone-0.") and doomed.endswith("-delete") and not removed
    again = mgr.create("gone", 0, now_ms=0)  # at once, while the old folder waits
    assert again.log_end_offset == 0 and not mgr.wait_removed(0.01)
    gate.set()
    assert mgr.wait_removed(10) and removed == [doomed]
    assert sorted(p.name for p in d.iterdir()) == ["gone-0"]
    mgr.close()


def test_leftover_delete_dirs_are_removed_at_start(tmp_path) -> None:
    d = tmp_path / "logs"
    (d / "t-0.0123abcd-delete").mkdir(parents=True)
    mgr = LogManager([d], LogConfig(), now_ms=0)
    assert not (d / "t-0.0123abcd-delete").exists() and mgr.partitions() == []
    mgr.close()


def test_periodic_flush_retention_and_roll(tmp_path) -> None:
    d = tmp_path / "logs"
    cfg = LogConfig(flush_interval_ms=1_000, segment_ms=DAY, retention_ms=DAY)
    mgr = LogManager([d], cfg, now_ms=0)
    log = mgr.create("t", 0, now_ms=0)
    log.append(records(1, ts=0), leader_epoch=0, now_ms=0)
    assert mgr.flush_dirty(500) == 0 and log.recovery_point == 0
    assert mgr.flush_dirty(1_000) == 1 and log.recovery_point == 1
    log.append(records(1, ts=10), leader_epoch=0, now_ms=10)
    assert mgr.apply_retention(DAY) == 0 and log.segment_base_offsets == (0,)
    # after segment.ms the idle segment is rolled, after retention.ms it is deleted
    assert mgr.apply_retention(DAY + 11) == 1
    assert log.segment_base_offsets == (2,) and log.log_start_offset == 2
    assert read_headers(log) == []
    mgr.close()


def test_the_descriptors_counted_are_the_ones_the_logs_hold(tmp_path) -> None:
    """``open_files`` is what the process really has open for the logs: three a segment,
    counted on /proc/self/fd as partitions are created, rolled and deleted."""
    mgr = LogManager([tmp_path / "a"], LogConfig(), now_ms=0)
    assert segment_fds(tmp_path) == 0  # the manager keeps none of its own
    logs = [mgr.create("t", p, now_ms=0) for p in range(5)]
    for _ in range(3):
        fill(logs[0], 1)
        logs[0].roll(0)
    assert mgr.open_files() == 3 * (5 + 3) == segment_fds(tmp_path)
    budget = mgr.file_budget()
    assert budget.held == 24 and budget.limit == open_files_limit()
    mgr.delete("t", 0)
    assert mgr.open_files() == 12 == segment_fds(tmp_path)
    mgr.close()
    assert segment_fds(tmp_path) == 0


def test_the_budget_names_the_limit_and_the_counts() -> None:
    budget = FileBudget(limit=400, held=30)
    assert budget.headroom == 128 and budget.free == 242
    assert budget.refusal(80) is None
    message = budget.refusal(81)
    assert message is not None
    assert "243 file descriptors" in message and "only 242 are free" in message
    assert "RLIMIT_NOFILE) is 400" in message and "hold 30" in message
    assert FileBudget(limit=20_000, held=0).headroom == 2_000


def test_start_up_refuses_logs_the_limit_cannot_hold(tmp_path) -> None:
    mgr = LogManager([tmp_path / "a"], LogConfig(), now_ms=0)
    for p in range(4):
        mgr.create("t", p, now_ms=0)
    mgr.close()
    partitions, segments = segments_on_disk(p for p in (tmp_path / "a").iterdir() if p.is_dir())
    assert (partitions, segments) == (4, 4)
    check_start(partitions, segments, limit=140)  # 12 + 128
    with pytest.raises(DescriptorLimitError, match=r"is 139, .* at least 140"):
        check_start(partitions, segments, limit=139)


def test_an_io_error_takes_its_log_dir_offline_and_spares_the_other(tmp_path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    mgr = LogManager(dirs, LogConfig(), now_ms=0)
    logs = {p: mgr.create("t", p, now_ms=0) for p in range(4)}
    in_b = [p for p, log in logs.items() if log.directory.parent == dirs[1]]
    in_a = [p for p in logs if p not in in_b]
    for log in logs.values():
        fill(log, 2)
    shutil.rmtree(logs[in_b[0]].directory)  # the folder is gone: a real ENOENT next
    with pytest.raises(LogStorageError):
        logs[in_b[0]].roll(0)
    assert mgr.offline_dirs == {dirs[1]}
    assert mgr.offline_partitions() == {("t", p) for p in in_b}
    for p in in_b:  # the dir's others too, before any failure of their own
        with pytest.raises(LogStorageError, match="offline"):
            logs[p].append(records(1), leader_epoch=0, now_ms=0)
    for p in in_a:
        assert logs[p].append(records(1), leader_epoch=0, now_ms=0).first_offset == 2
    assert mgr.create("t", 4, now_ms=0).directory.parent == dirs[0]  # not in the failed dir
    mgr.close()
    assert not (dirs[1] / CLEAN_SHUTDOWN_FILE).exists()  # its logs could not close cleanly
