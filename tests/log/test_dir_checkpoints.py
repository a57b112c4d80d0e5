"""A clean shutdown's checkpoints: one set of files per log dir, trusted only with the marker."""

from __future__ import annotations

from pathlib import Path

import pytest

from trio_broker.log import CLEAN_SHUTDOWN_FILE, LogConfig, LogManager
from trio_broker.log.checkpoint import CHECKPOINT_FILE, read_checkpoint
from trio_broker.log.dir_checkpoints import (
    DIR_CHECKPOINT_FILES,
    RECOVERY_POINT_FILE,
    read_dir_checkpoints,
)

from .helpers import fill


def _filled(d: Path, partitions: int, threads: int = 1) -> LogManager:
    mgr = LogManager([d], LogConfig(), now_ms=0, recovery_threads=threads)
    for p in range(partitions):
        log = mgr.create("t", p, now_ms=0)
        fill(log, p + 1)
    return mgr


def _checkpoint_files(d: Path) -> dict[Path, bytes]:
    return {f: f.read_bytes() for f in d.glob(f"*/{CHECKPOINT_FILE}")}


@pytest.mark.parametrize("threads", [1, 3])
def test_close_writes_one_set_per_dir_and_the_next_load_uses_it(tmp_path, threads) -> None:
    d = tmp_path / "logs"
    mgr = _filled(d, 6, threads)
    mgr.get("t", 5).delete_records_before(2)  # type: ignore[union-attr]
    before = _checkpoint_files(d)
    mgr.close()
    # Written once for the dir, in Kafka's format; no partition's own file was touched.
    assert _checkpoint_files(d) == before
    assert all((d / name).exists() for name in DIR_CHECKPOINT_FILES)
    lines = (d / RECOVERY_POINT_FILE).read_text().splitlines()
    assert lines[:2] == ["0", "6"] and "t 5 6" in lines
    saved = read_dir_checkpoints(d)
    assert saved is not None and saved[("t", 5)].log_start_offset == 2
    assert saved[("t", 0)].recovery_point == 1 and saved[("t", 0)].high_watermark == 1

    again = LogManager([d], LogConfig(), now_ms=0, recovery_threads=threads)
    assert not (d / CLEAN_SHUTDOWN_FILE).exists()  # a crash from now on is seen
    for p in range(6):
        log = again.get("t", p)
        assert log is not None and not log.load_stats.recovery
        assert log.log_end_offset == p + 1 and log.high_watermark == p + 1
    assert again.get("t", 5).log_start_offset == 2  # type: ignore[union-attr]
    assert _checkpoint_files(d) == before  # nor at load
    again.checkpoint_loaded()  # what the broker runs in the background after a start
    for p in range(6):
        assert read_checkpoint(d / f"t-{p}") == again.get("t", p).checkpoint_values()  # type: ignore[union-attr]
    again.close()


def test_without_the_marker_the_dir_files_are_ignored(tmp_path) -> None:
    d = tmp_path / "logs"
    _filled(d, 3).close()
    again = LogManager([d], LogConfig(), now_ms=0)
    fill(again.get("t", 0), 5)  # type: ignore[arg-type]
    # A crash now: no close, so no marker; the dir files still say the old numbers.
    recovered = LogManager([d], LogConfig(), now_ms=0)
    log = recovered.get("t", 0)
    assert log is not None and log.load_stats.recovery and log.log_end_offset == 6
    recovered.close()
    assert read_dir_checkpoints(d)[("t", 0)].recovery_point == 6  # type: ignore[index]


def test_a_damaged_dir_file_falls_back_to_the_partitions_files(tmp_path) -> None:
    d = tmp_path / "logs"
    mgr = _filled(d, 2)
    for log in (mgr.get("t", 0), mgr.get("t", 1)):
        log.checkpoint()  # type: ignore[union-attr]
    mgr.close()
    text = (d / RECOVERY_POINT_FILE).read_text()
    (d / RECOVERY_POINT_FILE).write_text(text[: len(text) // 2])  # torn
    assert read_dir_checkpoints(d) is None
    again = LogManager([d], LogConfig(), now_ms=0)
    assert [again.get("t", p).log_end_offset for p in (0, 1)] == [1, 2]  # type: ignore[union-attr]
    assert read_checkpoint(d / "t-1") is not None
    again.close()


def test_a_dir_whose_log_failed_to_close_gets_no_marker_nor_files(tmp_path) -> None:
    d = tmp_path / "logs"
    mgr = _filled(d, 2)
    mgr.get("t", 1).take_offline("test: the disk failed")  # type: ignore[union-attr]
    mgr.close()
    assert not (d / CLEAN_SHUTDOWN_FILE).exists()
    assert not any((d / name).exists() for name in DIR_CHECKPOINT_FILES)


def test_recovery_threads_must_be_positive(tmp_path) -> None:
    with pytest.raises(ValueError, match="recovery_threads"):
        LogManager([tmp_path], LogConfig(), recovery_threads=0)
