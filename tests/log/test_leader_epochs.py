"""The leader epoch cache: Kafka's ``leader-epoch-checkpoint`` kept by the partition log,
the OffsetForLeaderEpoch answers, and its survival of restarts, crashes and deletions."""

from __future__ import annotations

import pytest

from trio_broker.log.index.leader_epochs import EPOCH_FILE, UNDEFINED, LeaderEpochCache

from .helpers import fill, open_log, records


def _append(log, epoch: int, count: int = 1) -> None:
    for _ in range(count):
        log.append(records(1), leader_epoch=epoch, now_ms=0)


def test_the_end_offset_of_each_epoch_is_where_the_next_one_began(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    _append(log, 0, 3)  # offsets 0-2
    _append(log, 2, 4)  # 3-6
    _append(log, 5, 2)  # 7-8
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(1) == (0, 3)  # never led: the epoch below answers
    assert log.end_offset_for_epoch(2) == (2, 7)
    assert log.end_offset_for_epoch(4) == (2, 7)
    assert log.end_offset_for_epoch(5) == (5, 9)  # the latest epoch ends at the log end
    assert log.end_offset_for_epoch(6) == UNDEFINED  # newer than any known
    assert log.end_offset_for_epoch(-1) == UNDEFINED
    log.close()


def test_the_file_is_kafkas_format_and_survives_a_restart(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    _append(log, 0, 2)
    _append(log, 3, 1)
    log.close()
    assert (tmp_path / "t-0" / EPOCH_FILE).read_text() == "0\n2\n0 0\n3 2\n"
    log = open_log(tmp_path / "t-0")
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.end_offset_for_epoch(3) == (3, 3)
    log.close()


def test_a_clean_restart_reads_the_file_and_leaves_it_as_it_was(tmp_path) -> None:
    """Loading finds the file through the folder's one listing: it reads it and, finding
    it right, does not write it again (a rebuilt one is a new file)."""
    log = open_log(tmp_path / "t-0")
    _append(log, 0, 2)
    _append(log, 3, 1)
    log.close()
    before = (tmp_path / "t-0" / EPOCH_FILE).stat()
    log = open_log(tmp_path / "t-0")
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.latest_epoch == 3
    log.close()
    after = (tmp_path / "t-0" / EPOCH_FILE).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_lost_file_is_rebuilt_from_the_batches(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=200)
    _append(log, 1, 4)
    _append(log, 4, 4)
    log.close()
    (tmp_path / "t-0" / EPOCH_FILE).write_text("garbage")
    log = open_log(tmp_path / "t-0", recover=True)
    assert log.end_offset_for_epoch(1) == (1, 4)
    assert log.end_offset_for_epoch(4) == (4, 8)
    log.close()
    assert (tmp_path / "t-0" / EPOCH_FILE).read_text() == "0\n2\n1 0\n4 4\n"


def test_an_epoch_recorded_for_a_batch_the_crash_lost_is_dropped(tmp_path) -> None:
    # The file is written before the batch: a crash between the two leaves an epoch
    # that starts at the log end, which must not survive the restart.
    log = open_log(tmp_path / "t-0")
    _append(log, 0, 2)
    log.close()
    (tmp_path / "t-0" / EPOCH_FILE).write_text("0\n2\n0 0\n7 2\n")
    log = open_log(tmp_path / "t-0", recover=True)
    assert log.end_offset_for_epoch(7) == UNDEFINED
    assert log.end_offset_for_epoch(0) == (0, 2)
    _append(log, 7, 1)
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.end_offset_for_epoch(7) == (7, 3)
    log.close()


def test_deleting_records_moves_the_first_epoch_to_the_log_start(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=150)
    _append(log, 0, 3)
    _append(log, 1, 3)
    _append(log, 2, 3)
    log.delete_records_before(4)
    assert log.end_offset_for_epoch(0) == (0, 4)  # older than the oldest kept: its start
    assert log.end_offset_for_epoch(1) == (1, 6)
    log.close()
    assert (tmp_path / "t-0" / EPOCH_FILE).read_text() == "0\n2\n1 4\n2 6\n"


def test_a_new_log_answers_undefined_and_writes_nothing(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    assert log.end_offset_for_epoch(0) == UNDEFINED
    assert not (tmp_path / "t-0" / EPOCH_FILE).exists()
    fill(log, 1)
    assert log.end_offset_for_epoch(0) == (0, 1)
    log.close()


def test_an_older_epoch_appended_later_adds_no_entry(tmp_path) -> None:
    cache = LeaderEpochCache(tmp_path)
    cache.assign(3, 0)
    cache.assign(2, 5)
    cache.assign(3, 9)
    assert cache.entries == ((3, 0),)
    cache.assign(4, 0)  # begins where 3 began: 3 held nothing
    assert cache.entries == ((4, 0),)


def test_an_epoch_the_file_could_not_take_is_not_recorded(tmp_path) -> None:
    """A new epoch is durable before its batch: when the file cannot be written the cache
    forgets it, so that the next try writes it again (not only memory holding it)."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    cache = LeaderEpochCache(folder)
    cache.assign(0, 0)
    gone = tmp_path / "gone"
    folder.rename(gone)  # the folder vanishes: the checkpoint's temporary file cannot be made
    with pytest.raises(OSError):
        cache.assign(1, 5)
    with pytest.raises(OSError):
        cache.assign_all([(1, 5), (2, 7)])
    assert cache.latest_epoch == 0
    gone.rename(folder)
    cache.assign(1, 5)
    assert (folder / EPOCH_FILE).read_text() == "0\n2\n0 0\n1 5\n"
