"""Idempotent producers: the sequence rules, duplicates, and state across restarts."""

from __future__ import annotations

from pathlib import Path

import pytest

from trio_broker.log.producer_state import ProducerStateError
from trio_broker.protocol.errors import ErrorCode
from trio_broker.records import Record, build_batch, validate_batches

from .helpers import open_log

PID = 7


def batch(seq: int, n: int = 1, *, epoch: int = 0, pid: int = PID) -> object:
    data = build_batch(
        [Record(None, b"s%d" % (seq + i)) for i in range(n)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        timestamp_ms=1_000,
    )
    return validate_batches(memoryview(data), max_batch_bytes=1 << 20)


def append(log, seq: int, n: int = 1, **kw: int):  # type: ignore[no-untyped-def]
    return log.append(batch(seq, n, **kw), leader_epoch=0, now_ms=1_000)


# (sequence of appends as (seq, n, epoch), expected error of the last one or None)
RULES = [
    ("a new producer may start anywhere", [(42, 1, 0)], None),
    ("in sequence", [(0, 3, 0), (3, 2, 0), (5, 1, 0)], None),
    ("a gap", [(0, 3, 0), (4, 1, 0)], ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    ("going back", [(0, 3, 0), (3, 1, 0), (1, 1, 0)], ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    ("an older epoch", [(0, 1, 2), (1, 1, 1)], ErrorCode.INVALID_PRODUCER_EPOCH),
    ("a new epoch at 0", [(0, 5, 0), (0, 1, 1)], None),
    ("a new epoch not at 0", [(0, 5, 0), (3, 1, 1)], ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    ("sequences wrap", [(2**31 - 2, 2, 0), (0, 1, 0)], None),
]


@pytest.mark.parametrize(("appends", "error"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_sequence_rules(tmp_path: Path, appends: list, error: ErrorCode | None) -> None:
    log = open_log(tmp_path)
    *before, last = appends
    for seq, n, epoch in before:
        append(log, seq, n, epoch=epoch)
    end = log.log_end_offset
    if error is None:
        append(log, *last[:2], epoch=last[2])
        assert log.log_end_offset == end + last[1]
    else:
        with pytest.raises(ProducerStateError) as info:
            append(log, *last[:2], epoch=last[2])
        assert info.value.error_code == error
        assert log.log_end_offset == end  # nothing written


def test_a_retry_of_any_of_the_last_five_batches_gets_its_first_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    firsts = [append(log, seq, 2) for seq in range(0, 14, 2)]  # 7 batches of 2
    end = log.log_end_offset
    for first in firsts[-5:]:
        again = append(log, first.first_offset, 2)  # seq == offset here
        assert again.duplicate
        assert (again.first_offset, again.last_offset) == (first.first_offset, first.last_offset)
    assert log.log_end_offset == end
    with pytest.raises(ProducerStateError):  # too old to be remembered
        append(log, 0, 2)


@pytest.mark.parametrize("clean", [True, False])
def test_state_survives_a_restart(tmp_path: Path, clean: bool) -> None:
    log = open_log(tmp_path, segment_bytes=300)  # several rolls: snapshots on the way
    for seq in range(20):
        append(log, seq)
    first_of_last = log.log_end_offset - 1
    if clean:
        log.close()
    reopened = open_log(tmp_path, recover=not clean, segment_bytes=300)
    again = append(reopened, 19)
    assert again.duplicate and again.first_offset == first_of_last
    with pytest.raises(ProducerStateError):
        append(reopened, 25)
    assert not append(reopened, 20).duplicate
    reopened.close()


def test_a_snapshot_is_written_once_an_offset_and_the_list_is_kept(tmp_path: Path) -> None:
    """Nothing appended since the newest snapshot: closing again writes none (Kafka's
    rule), and the snapshot files are what ``snapshot_offsets`` says without a listing."""
    log = open_log(tmp_path / "t-0")
    append(log, 0)
    log.close()
    snapshot = tmp_path / "t-0" / f"{1:020d}.snapshot"
    written = snapshot.stat().st_mtime_ns, snapshot.stat().st_ino
    again = open_log(tmp_path / "t-0")
    again.close()  # nothing appended: the snapshot at 1 stays as it was
    assert (snapshot.stat().st_mtime_ns, snapshot.stat().st_ino) == written
    third = open_log(tmp_path / "t-0", segment_bytes=200)
    for seq in range(1, 12):
        append(third, seq)  # rolls: a snapshot a roll, the oldest deleted past the kept ones
    offsets = third._producers.snapshot_offsets()
    on_disk = sorted(int(p.name[:20]) for p in (tmp_path / "t-0").glob("*.snapshot"))
    assert offsets == on_disk and len(offsets) >= 2
    third.close()


def test_the_log_manager_syncs_the_snapshots_once_and_keeps_the_state(tmp_path: Path) -> None:
    """At shutdown the logs' snapshots are written unsynced and the manager syncs once
    before the marker: the next clean start has every producer's state."""
    from trio_broker.log import LogConfig, LogManager

    mgr = LogManager([tmp_path], LogConfig(), now_ms=0)
    logs = [mgr.create("t", p, now_ms=0) for p in range(3)]
    for p, log in enumerate(logs):
        for seq in range(3):
            log.append(batch(seq, pid=PID + p), leader_epoch=0, now_ms=1_000)
    mgr.close()
    assert all((tmp_path / f"t-{p}" / f"{3:020d}.snapshot").exists() for p in range(3))
    again = LogManager([tmp_path], LogConfig(), now_ms=0)
    for p in range(3):
        log = again.get("t", p)
        assert log is not None and log.load_stats.recovery is False
        retry = log.append(batch(2, pid=PID + p), leader_epoch=0, now_ms=1_000)
        assert retry.duplicate and retry.first_offset == 2
    again.close()
