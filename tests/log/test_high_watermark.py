"""The high watermark: the log end of the only replica; what the partition says for a
replicated log, kept within the log, persisted in the partition checkpoint."""

from __future__ import annotations

import pytest

from trio_broker.log import OffsetOutOfRange
from trio_broker.log.checkpoint import CHECKPOINT_FILE, read_checkpoint

from .helpers import fill, open_log, records


def test_the_only_replicas_high_watermark_is_its_log_end(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    assert not log.replicated
    fill(log, 3)
    assert log.high_watermark == log.last_stable_offset == log.log_end_offset == 3
    log.set_high_watermark(1)  # stored, but a single replica commits everything
    assert log.high_watermark == 3
    info = log.read(0, 1 << 20)
    assert (info.high_watermark, info.last_stable_offset) == (3, 3)
    info.release()
    log.close()


def test_a_replicated_log_keeps_the_high_watermark_it_is_given(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    log.replicated = True
    fill(log, 5)
    assert log.high_watermark == 0  # nothing acknowledged by the other replicas yet
    assert log.set_high_watermark(3) and not log.set_high_watermark(3)
    fill(log, 2)
    assert (log.high_watermark, log.last_stable_offset, log.log_end_offset) == (3, 3, 7)
    info = log.read(0, 1 << 20)
    assert (info.high_watermark, info.last_stable_offset, info.log_end_offset) == (3, 3, 7)
    info.release()
    assert log.set_high_watermark(100) and log.high_watermark == 7  # clamped to the end
    assert log.set_high_watermark(2) and log.high_watermark == 2  # a follower told less
    log.delete_records_before(2)
    assert not log.set_high_watermark(0) and log.high_watermark == 2  # not below the start
    with pytest.raises(OffsetOutOfRange):  # DeleteRecords stops at the high watermark
        log.delete_records_before(3)
    log.close()


def test_retention_keeps_what_is_above_the_high_watermark(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=200, retention_bytes=0)
    log.replicated = True
    fill(log, 8, value=b"x" * 50)
    bases = log.segment_base_offsets
    log.set_high_watermark(bases[2])
    log.apply_retention(now_ms=0)
    assert log.log_start_offset == bases[2]  # not past the high watermark
    log.set_high_watermark(log.log_end_offset)
    log.apply_retention(now_ms=0)
    assert log.segment_base_offsets == bases[-1:]
    log.close()


def test_the_high_watermark_survives_a_restart(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    log.replicated = True
    fill(log, 6)
    log.set_high_watermark(4)
    log.close()
    assert read_checkpoint(tmp_path / "t-0").high_watermark == 4  # type: ignore[union-attr]
    assert (tmp_path / "t-0" / CHECKPOINT_FILE).read_text().splitlines()[0] == "1"
    for recover in (False, True):
        log = open_log(tmp_path / "t-0", recover=recover)
        log.replicated = True
        assert (log.high_watermark, log.log_end_offset) == (4, 6)
        log.close()


def test_checkpoint_persists_it_without_a_close(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    log.replicated = True
    fill(log, 6)
    log.flush()
    log.set_high_watermark(5)
    log.checkpoint()
    assert read_checkpoint(tmp_path / "t-0").high_watermark == 5  # type: ignore[union-attr]
    log.close()


def test_on_open_it_is_clamped_to_the_log_end(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 3)
    log.close()
    path = tmp_path / "t-0" / CHECKPOINT_FILE
    path.write_text("1\nrecovery_point 3\nlog_start_offset 0\nhigh_watermark 50\n")
    log = open_log(tmp_path / "t-0", recover=True)
    log.replicated = True
    assert log.high_watermark == 3
    log.close()


def test_a_version_0_checkpoint_loads_with_the_recovery_point_as_high_watermark(
    tmp_path,
) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 6)
    log.close()
    (tmp_path / "t-0" / CHECKPOINT_FILE).write_text("0\nrecovery_point 4\nlog_start_offset 1\n")
    log = open_log(tmp_path / "t-0", recover=True)
    log.replicated = True
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (1, 4, 6)
    log.close()
    cp = read_checkpoint(tmp_path / "t-0")
    assert cp is not None and (cp.log_start_offset, cp.high_watermark) == (1, 4)


def test_truncation_clamps_it(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    log.replicated = True
    for _ in range(4):
        log.append(records(3), leader_epoch=0, now_ms=0)
    log.flush()
    log.set_high_watermark(11)
    log.truncate_to(7)
    assert (log.high_watermark, log.log_end_offset, log.recovery_point) == (6, 6, 6)
    log.close()
    log = open_log(tmp_path / "t-0", recover=True)
    log.replicated = True
    assert log.high_watermark == 6
    log.close()
