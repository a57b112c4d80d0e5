"""A follower's appends: the leader's batches kept byte for byte, with their offsets and
leader epochs; duplicates skipped, gaps refused, a partial last batch left for later."""

from __future__ import annotations

from pathlib import Path

import pytest

from trio_broker.log import PartitionLog
from trio_broker.log.errors import ReplicaGap, ReplicaOverlap
from trio_broker.log.index.leader_epochs import EPOCH_FILE, UNDEFINED
from trio_broker.log.producer_state import ProducerStateError
from trio_broker.protocol.errors import ErrorCode
from trio_broker.records import Record, RecordsError, build_batch, validate_batches

from .helpers import open_log, read_headers, records, region_bytes


def log_bytes(log: PartitionLog, offset: int | None = None) -> bytes:
    info = log.read(log.log_start_offset if offset is None else offset, 1 << 30)
    try:
        return region_bytes(info)
    finally:
        info.release()


def leader_with_epochs(directory: Path, **config: object) -> PartitionLog:
    """Offsets 0-2 in epoch 0, 3-8 in epoch 2 (batches of 3), 9-10 in epoch 5."""
    leader = open_log(directory, **config)
    leader.append(records(3), leader_epoch=0, now_ms=0)
    leader.append(records(3), leader_epoch=2, now_ms=0)
    leader.append(records(3, value=b"w"), leader_epoch=2, now_ms=0)
    leader.append(records(2), leader_epoch=5, now_ms=0)
    return leader


def test_the_follower_stores_the_leaders_batches_byte_for_byte(tmp_path) -> None:
    leader = leader_with_epochs(tmp_path / "leader", message_timestamp_type="LogAppendTime")
    follower = open_log(tmp_path / "follower")  # CreateTime: no rewrite on the follower
    data = log_bytes(leader)
    info = follower.append_as_follower(data, now_ms=99_999)
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 10, 11)
    assert info.size_bytes == len(data) and info.log_append_time_ms == -1
    assert log_bytes(follower) == data
    assert follower.log_end_offset == leader.log_end_offset == 11
    assert [(h.base_offset, h.partition_leader_epoch) for h in read_headers(follower)] == [
        (0, 0),
        (3, 2),
        (6, 2),
        (9, 5),
    ]
    leader.close()
    follower.close()


def test_the_epoch_cache_answers_as_the_leaders(tmp_path) -> None:
    leader = leader_with_epochs(tmp_path / "leader")
    follower = open_log(tmp_path / "follower")
    data = log_bytes(leader)
    follower.append_as_follower(data[:200], now_ms=0)  # a partial batch at the end
    follower.append_as_follower(log_bytes(leader, follower.log_end_offset), now_ms=0)
    assert follower.latest_epoch == leader.latest_epoch == 5
    for epoch in range(-1, 8):
        assert follower.end_offset_for_epoch(epoch) == leader.end_offset_for_epoch(epoch)
    assert (tmp_path / "follower" / EPOCH_FILE).read_text() == "0\n3\n0 0\n2 3\n5 9\n"
    follower.close()
    follower = open_log(tmp_path / "follower", recover=True)
    assert follower.end_offset_for_epoch(2) == (2, 9)
    assert follower.end_offset_for_epoch(6) == UNDEFINED
    follower.close()
    leader.close()


def test_batches_the_follower_has_are_skipped(tmp_path) -> None:
    leader = leader_with_epochs(tmp_path / "leader")
    follower = open_log(tmp_path / "follower")
    data = log_bytes(leader)
    first_two = len(data) - len(log_bytes(leader, 6))
    follower.append_as_follower(data[:first_two], now_ms=0)  # offsets 0-5
    assert follower.log_end_offset == 6
    again = follower.append_as_follower(data[:first_two], now_ms=0)  # all duplicates
    assert (again.record_count, again.first_offset, again.last_offset) == (0, 6, 5)
    overlapping = follower.append_as_follower(data, now_ms=0)  # 0-10: only 6-10 are new
    assert (overlapping.first_offset, overlapping.last_offset) == (6, 10)
    assert overlapping.record_count == 5
    assert log_bytes(follower) == data
    leader.close()
    follower.close()


def test_an_empty_response_appends_nothing(tmp_path) -> None:
    follower = open_log(tmp_path / "follower")
    info = follower.append_as_follower(b"", now_ms=0)
    assert (info.record_count, info.first_offset, info.last_offset) == (0, 0, -1)
    assert follower.log_end_offset == 0
    follower.close()


def test_a_gap_is_refused_unless_allowed(tmp_path) -> None:
    leader = leader_with_epochs(tmp_path / "leader")
    follower = open_log(tmp_path / "follower")
    with pytest.raises(ReplicaGap) as info:
        follower.append_as_follower(log_bytes(leader, 3), now_ms=0)
    assert (info.value.first_offset, info.value.log_end_offset) == (3, 0)
    assert info.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert follower.log_end_offset == 0 and log_bytes(follower) == b""
    # A compacted leader answers a fetch at 0 from the first batch its cleaner kept.
    appended = follower.append_as_follower(log_bytes(leader, 3), now_ms=0, allow_gap=True)
    assert (appended.first_offset, follower.log_end_offset) == (3, 11)
    assert [h.base_offset for h in read_headers(follower)] == [3, 6, 9]
    follower.close()
    reopened = open_log(tmp_path / "follower", recover=True)
    assert [h.base_offset for h in read_headers(reopened)] == [3, 6, 9]
    reopened.close()
    leader.close()


def test_a_partial_last_batch_is_left_for_the_next_fetch(tmp_path) -> None:
    leader = leader_with_epochs(tmp_path / "leader")
    follower = open_log(tmp_path / "follower")
    data = log_bytes(leader)
    info = follower.append_as_follower(data[:-10], now_ms=0)
    assert (info.last_offset, follower.log_end_offset) == (8, 9)
    follower.append_as_follower(data[:5], now_ms=0)  # less than a batch prefix: nothing
    follower.append_as_follower(log_bytes(leader, 9), now_ms=0)
    assert log_bytes(follower) == data
    leader.close()
    follower.close()


def test_a_damaged_batch_is_refused_and_nothing_is_written(tmp_path) -> None:
    leader = leader_with_epochs(tmp_path / "leader")
    follower = open_log(tmp_path / "follower")
    data = bytearray(log_bytes(leader))
    data[-3] ^= 0xFF  # inside the last batch's records: its CRC fails
    with pytest.raises(RecordsError) as info:
        follower.append_as_follower(bytes(data), now_ms=0)
    assert info.value.error_code == ErrorCode.CORRUPT_MESSAGE
    assert follower.log_end_offset == 0 and follower.latest_epoch == -1
    leader.close()
    follower.close()


def test_a_batch_straddling_the_log_end_restarts_an_empty_log_at_its_base(tmp_path) -> None:
    leader = leader_with_epochs(tmp_path / "leader")
    follower = open_log(tmp_path / "follower")
    follower.truncate_fully_and_start_at(4)  # the leader's log start inside batch 3-5
    follower.append_as_follower(log_bytes(leader, 3), now_ms=0)
    assert (follower.log_start_offset, follower.log_end_offset) == (4, 11)
    assert follower.segment_base_offsets == (3,)
    assert log_bytes(follower) == log_bytes(leader, 4)
    with pytest.raises(ReplicaOverlap):  # not empty: the batches do not line up
        follower.append_as_follower(_batch_at(10), now_ms=0)
    follower.close()
    reopened = open_log(tmp_path / "follower", recover=True)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (4, 11)
    reopened.close()
    leader.close()


def _batch_at(base_offset: int, n: int = 3) -> bytes:
    return build_batch([Record(b"k", b"v")] * n, base_offset=base_offset, timestamp_ms=1)


def test_rolls_and_flushes_as_the_leader_does(tmp_path) -> None:
    leader = open_log(tmp_path / "leader", segment_bytes=300)
    for _ in range(12):
        leader.append(records(2, value=b"x" * 40), leader_epoch=1, now_ms=0)
    follower = open_log(tmp_path / "follower", segment_bytes=300, flush_interval_messages=1)
    follower.append_as_follower(log_bytes(leader), now_ms=0)
    assert len(follower.segment_base_offsets) == 1  # one append, one segment
    follower.truncate_to(0)
    for offset in range(0, 24, 2):
        follower.append_as_follower(log_bytes(leader, offset)[:200], now_ms=0)
    assert follower.segment_base_offsets == leader.segment_base_offsets
    assert follower.recovery_point == follower.log_end_offset == 24
    assert log_bytes(follower) == log_bytes(leader)
    leader.close()
    follower.close()


def producer_batch(seq: int, *, pid: int = 7, epoch: int = 0) -> bytes:
    return build_batch(
        [Record(None, b"s%d" % seq)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        timestamp_ms=1_000,
    )


def test_producer_state_comes_from_the_headers(tmp_path) -> None:
    leader = open_log(tmp_path / "leader")
    for seq in range(4):
        data = producer_batch(seq)
        leader.append(validate_batches(memoryview(data), max_batch_bytes=1 << 20), **_at(0))
    follower = open_log(tmp_path / "follower")
    follower.append_as_follower(log_bytes(leader), now_ms=1_000)
    assert follower.producer_count == 1
    follower.assign_epoch(1)  # the follower becomes the leader
    retry = follower.append(_validated(producer_batch(3)), **_at(1))
    assert retry.duplicate and retry.first_offset == 3
    with pytest.raises(ProducerStateError):
        follower.append(_validated(producer_batch(6)), **_at(1))
    assert follower.append(_validated(producer_batch(4)), **_at(1)).first_offset == 4
    leader.close()
    follower.close()


def _validated(data: bytes):  # type: ignore[no-untyped-def]
    return validate_batches(memoryview(data), max_batch_bytes=1 << 20)


def _at(epoch: int) -> dict[str, int]:
    return {"leader_epoch": epoch, "now_ms": 1_000}


def test_assign_epoch_records_the_new_leaders_epoch_at_the_log_end(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append(records(3), leader_epoch=0, now_ms=0)
    log.assign_epoch(4)
    assert log.latest_epoch == 4 and log.end_offset_for_epoch(0) == (0, 3)
    log.assign_epoch(2)  # older: ignored
    assert log.latest_epoch == 4
    assert (tmp_path / "t-0" / EPOCH_FILE).read_text() == "0\n2\n0 0\n4 3\n"  # durable
    log.append(records(1), leader_epoch=4, now_ms=0)
    log.assign_epoch(6)
    log.close()
    log = open_log(tmp_path / "t-0")
    assert log.end_offset_for_epoch(4) == (4, 4)
    # As Kafka's loader: an epoch starting at the log end holds nothing and is dropped
    # (the new leader assigns its epoch again when elected).
    assert log.latest_epoch == 4
    log.close()
