"""Transactions in one partition log: producer-state rules, the last stable offset, the
aborted transaction index (its file format, its life with segments) and recovery."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from trio_broker.log.cleaner.compaction import clean
from trio_broker.log.index.transactions import ENTRY_SIZE, AbortedTxn, read_entries, txn_index_path
from trio_broker.log.producer_state import ProducerStateError
from trio_broker.protocol.errors import ErrorCode
from trio_broker.records import ValidatedRecords, validate_batches
from trio_broker.records.control import EndTxnMarker, marker_batch, read_marker
from trio_broker.records.reader import iter_batches, iter_records

from ..records.kafka_oracle import kp_batch
from .helpers import open_log, read_headers, records, region_bytes

A, B = 11, 12
NOW = 1_000


def txn(pid: int, seq: int, n: int = 1, *, epoch: int = 0, key: bytes = b"k") -> ValidatedRecords:
    """A transactional batch built by kafka-python (an independent encoder)."""
    data = kp_batch(
        [(NOW, key, b"%d-%d" % (pid, seq + i), []) for i in range(n)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=True,
    )
    return validate_batches(memoryview(data), max_batch_bytes=1 << 20)


def marker(pid: int, commit: bool, *, epoch: int = 0, coordinator: int = 0) -> ValidatedRecords:
    data = marker_batch(pid, epoch, EndTxnMarker(commit, coordinator), NOW)
    return validate_batches(memoryview(data), max_batch_bytes=1 << 20)


def put(log, batch: ValidatedRecords) -> int:  # type: ignore[no-untyped-def]
    return log.append(batch, leader_epoch=0, now_ms=NOW).first_offset  # type: ignore[no-any-return]


# -- the index file ------------------------------------------------------------------------


def test_entry_is_kafkas_34_bytes() -> None:
    entry = AbortedTxn(producer_id=7, first_offset=100, last_offset=250, last_stable_offset=101)
    assert entry.pack() == struct.pack(">hqqqq", 0, 7, 100, 250, 101)
    assert ENTRY_SIZE == 34
    assert AbortedTxn.unpack(entry.pack()) == entry


def test_a_torn_or_unknown_tail_is_left_out(tmp_path: Path) -> None:
    one = AbortedTxn(1, 2, 3, 4)
    path = tmp_path / "x.txnindex"
    path.write_bytes(one.pack() + one.pack()[:20])
    assert read_entries(path) == [one]
    path.write_bytes(one.pack() + struct.pack(">hqqqq", 9, 1, 2, 3, 4))
    assert read_entries(path) == [one]


def test_marker_bytes() -> None:
    data = marker_batch(5, 2, EndTxnMarker(True, 9), NOW)
    (h, batch), *_ = iter_batches(data)
    assert h.is_control and h.is_transactional and (h.producer_id, h.producer_epoch) == (5, 2)
    (r,) = iter_records(batch)
    assert r.key == struct.pack(">hh", 0, 1) and r.value == struct.pack(">hi", 0, 9)
    assert read_marker(batch) == EndTxnMarker(True, 9)


# -- producer-state rules --------------------------------------------------------------------

# (appends, the error of the last one or None); ("t", pid, seq, epoch) a transactional batch,
# ("m", pid, commit, epoch, coordinator epoch) a marker, ("d", pid, seq, epoch) idempotent data.
RULES = [
    ("a marker of an older producer epoch", [("t", A, 0, 2), ("m", A, 1, 1, 0)], 47),
    ("an older coordinator epoch", [("t", A, 0, 0), ("m", A, 1, 0, 5), ("m", A, 1, 0, 4)], 52),
    ("the same coordinator epoch", [("t", A, 0, 0), ("m", A, 1, 0, 5), ("m", A, 0, 0, 5)], None),
    ("a newer producer epoch fences", [("t", A, 0, 0), ("m", A, 0, 1, 0), ("t", A, 1, 0)], 47),
    ("data outside the transaction", [("t", A, 0, 0), ("d", A, 1, 0)], 48),
    ("a marker without a transaction", [("m", B, 1, 0, 0)], None),
]


@pytest.mark.parametrize("restart", [False, True], ids=["", "after a restart"])
@pytest.mark.parametrize(("appends", "error"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_producer_state_rules(
    tmp_path: Path, appends: list, error: int | None, restart: bool
) -> None:
    log = open_log(tmp_path)

    def one(step: tuple) -> None:  # type: ignore[type-arg]
        kind, pid, *rest = step
        if kind == "m":
            commit, epoch, coordinator = rest
            put(log, marker(pid, bool(commit), epoch=epoch, coordinator=coordinator))
        elif kind == "t":
            put(log, txn(pid, rest[0], epoch=rest[1]))
        else:
            data = kp_batch([(NOW, b"k", b"v", [])], producer_id=pid, producer_epoch=rest[1],
                            base_sequence=rest[0])  # fmt: skip
            put(log, validate_batches(memoryview(data), max_batch_bytes=1 << 20))

    *before, last = appends
    for step in before:
        one(step)
    if restart:  # the rules hold on what the snapshot and the replay rebuild
        log.close()
        log = open_log(tmp_path)
    if error is None:
        one(last)
    else:
        with pytest.raises(ProducerStateError) as info:
            one(last)
        assert info.value.error_code == ErrorCode(error)


# -- the last stable offset and the index ---------------------------------------------------


def layout(log) -> None:  # type: ignore[no-untyped-def]
    """0 plain, 1-2 A, 3 B, 4 abort A, | roll | 5 plain, 6 B, 7 abort B, | roll | 8 A open"""
    put(log, records(1))
    assert put(log, txn(A, 0, 2)) == 1
    assert put(log, txn(B, 0)) == 3
    assert log.last_stable_offset == 1
    assert put(log, marker(A, False)) == 4
    assert log.last_stable_offset == 3
    log.roll(NOW)
    put(log, records(1))
    put(log, txn(B, 1))
    assert put(log, marker(B, False)) == 7
    log.roll(NOW)
    assert put(log, txn(A, 2)) == 8


def test_last_stable_offset_and_aborted_list_across_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    layout(log)
    assert (log.high_watermark, log.last_stable_offset) == (9, 8)
    assert log.aborted_between(0, 9) == [(A, 1), (B, 3)]
    assert log.aborted_between(5, 9) == [(B, 3)]
    assert log.aborted_between(0, 3) == [(A, 1)]
    assert read_entries(txn_index_path(tmp_path, 0)) == [AbortedTxn(A, 1, 4, 3)]
    assert read_entries(txn_index_path(tmp_path, 5)) == [AbortedTxn(B, 3, 7, 8)]
    assert not txn_index_path(tmp_path, 8).exists()
    info = log.read(0, 1 << 20)
    info.release()
    assert (info.high_watermark, info.last_stable_offset) == (9, 8)
    put(log, marker(A, True))
    assert log.last_stable_offset == log.log_end_offset == 10


@pytest.mark.parametrize("crash", [False, True])
def test_a_restart_keeps_lso_index_and_open_transactions(tmp_path: Path, crash: bool) -> None:
    log = open_log(tmp_path)
    layout(log)
    log.close()
    if crash:  # no snapshot and no index: everything is rebuilt from the log
        for p in [*tmp_path.glob("*.snapshot"), *tmp_path.glob("*.txnindex")]:
            p.unlink()
    log = open_log(tmp_path, recover=crash)
    assert log.last_stable_offset == 8
    assert log.aborted_between(0, 9) == [(A, 1), (B, 3)]
    assert read_entries(txn_index_path(tmp_path, 5)) == [AbortedTxn(B, 3, 7, 8)]
    put(log, marker(A, True))  # the open transaction was remembered
    assert log.last_stable_offset == 10
    with pytest.raises(ProducerStateError):  # and the coordinator epoch
        put(log, marker(B, True, coordinator=-1))


def test_retention_and_delete_records_take_the_index_along(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    layout(log)
    assert log.delete_records_before(5) == 5
    assert not txn_index_path(tmp_path, 0).exists()
    assert log.aborted_between(0, 9) == [(B, 3)]
    log.close()
    log = open_log(tmp_path, retention_bytes=0)
    assert log.apply_retention(NOW) == 1
    assert not txn_index_path(tmp_path, 5).exists()
    assert log.aborted_between(0, 9) == []
    assert log.last_stable_offset == 8  # A's open transaction outlives its segments' removal


def test_truncation_rewrites_the_index(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    layout(log)
    log.truncate_to(6)  # B's second batch and its abort marker go: B is open again from 3
    assert log.aborted_between(0, 9) == [(A, 1)]
    assert not txn_index_path(tmp_path, 5).exists()
    assert (log.last_stable_offset, log.log_end_offset) == (3, 6)
    log.truncate_to(4)  # A's abort marker goes: A is open again from 1
    assert log.aborted_between(0, 9) == []
    assert not txn_index_path(tmp_path, 0).exists()
    assert log.last_stable_offset == 1


def test_a_follower_rebuilds_the_same_state_from_the_leaders_bytes(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    layout(leader)
    info = leader.read(0, 1 << 20)
    try:
        data = region_bytes(info)
    finally:
        info.release()
    follower = open_log(tmp_path / "follower")
    follower.append_as_follower(data, now_ms=NOW)
    assert follower.last_stable_offset == 8
    assert follower.aborted_between(0, 9) == leader.aborted_between(0, 9)


def test_a_replicated_log_waits_for_the_high_watermark_past_the_marker(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.replicated = True
    put(log, records(1))
    put(log, txn(A, 0))
    put(log, marker(A, True))
    assert log.last_stable_offset == 0  # the high watermark
    log.set_high_watermark(2)
    assert log.last_stable_offset == 1  # A's marker (2) is not below the high watermark
    log.set_high_watermark(3)
    assert log.last_stable_offset == 3


def test_the_cleaner_removes_aborted_records_and_stops_at_the_lso(tmp_path: Path) -> None:
    log = open_log(tmp_path, cleanup_policy=("compact",))
    put(log, records(1, key=b"k", value=b"committed"))  # 0
    put(log, txn(A, 0, key=b"k"))  # 1, aborted below
    put(log, marker(A, False))  # 2
    put(log, txn(B, 0, key=b"k"))  # 3, open
    log.roll(NOW)
    put(log, records(1, key=b"x"))
    log.roll(NOW)
    clean(log, NOW + 1, 1024, force=True)
    kept = {h.base_offset: h.records_count for h in read_headers(log)}
    # Nothing before the segment holding the LSO (1) is cleaned: the first segment stays.
    assert kept[0] == 1 and kept[1] == 1
    put(log, marker(B, True))
    log.roll(NOW)
    clean(log, NOW + 2, 1024, force=True)
    kept = {h.base_offset: h.records_count for h in read_headers(log)}
    assert 0 not in kept  # replaced by B's committed record
    assert kept.get(1, 0) == 0  # A's aborted record is gone
    assert kept[2] == 1 and kept[3] == 1  # the marker and B's record stay
