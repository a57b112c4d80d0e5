"""Disk failures: a failed append leaves no trace, errors map to KAFKA_STORAGE_ERROR; a
full disk is retried, an I/O error takes the log offline."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trio_broker.log import LogStorageError
from trio_broker.protocol.errors import ErrorCode

from .helpers import fill, open_log, read_headers, records

ROOT = Path(__file__).resolve().parents[2]


def test_file_size_limit_in_a_subprocess(tmp_path) -> None:
    """A real EFBIG from the kernel (RLIMIT_FSIZE), partway through a write."""
    script = textwrap.dedent(
        """
        import os, resource, signal, sys
        from pathlib import Path
        from trio_broker.log import LogStorageError
        from tests.log.helpers import fill, open_log, read_headers, records

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        log = open_log(Path(sys.argv[1]) / "t-0", flush_interval_messages=1)
        fill(log, 5)
        active = log.directory / f"{0:020d}.log"
        size = active.stat().st_size
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, hard))
        try:
            log.append(records(3, value=b"z" * 500), leader_epoch=0, now_ms=0)
        except LogStorageError as exc:
            assert exc.error_code == 56, exc
            print("storage error:", exc)
        else:
            raise SystemExit("no error")
        assert active.stat().st_size == size, "half a batch left behind"
        assert log.log_end_offset == 5 and not log.offline
        assert [h.base_offset for h in read_headers(log)] == [0, 1, 2, 3, 4]
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        assert log.append(records(2), leader_epoch=0, now_ms=0).first_offset == 5
        log.close()
        print("ok")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "storage error" in proc.stdout and "File too large" in proc.stdout
    again = open_log(tmp_path / "t-0", recover=True)
    assert again.load_stats.bytes_truncated == 0 and again.log_end_offset == 7
    again.close()


def _failing(err: int):
    def fail(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    return fail


def test_enospc_on_write(tmp_path, monkeypatch) -> None:
    log = open_log(tmp_path / "t-0", index_interval_bytes=0)
    fill(log, 3)
    before = read_headers(log)
    index = log._view.segments[0].offset_index
    entries = index.entries()
    real = os.pwritev

    def partial_then_fail(fd, buffers, offset):
        real(fd, [bytes(buffers[0])[:5]], offset)  # a few bytes reach the file first
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwritev", partial_then_fail)
    with pytest.raises(LogStorageError) as info:
        log.append(records(1), leader_epoch=0, now_ms=0)
    assert info.value.error_code is ErrorCode.KAFKA_STORAGE_ERROR
    monkeypatch.undo()
    assert read_headers(log) == before and log.log_end_offset == 3
    assert os.path.getsize(log.directory / f"{0:020d}.log") == sum(h.size for h in before)
    assert index.entries() == entries
    assert log.append(records(1), leader_epoch=0, now_ms=0).first_offset == 3
    log.close()


def test_index_write_failure_rolls_back_the_log_write(tmp_path, monkeypatch) -> None:
    log = open_log(tmp_path / "t-0", index_interval_bytes=0)
    fill(log, 3)
    size = os.path.getsize(log.directory / f"{0:020d}.log")
    monkeypatch.setattr(os, "pwrite", _failing(errno.EIO))
    with pytest.raises(LogStorageError):
        log.append(records(1), leader_epoch=0, now_ms=0)
    monkeypatch.undo()
    assert os.path.getsize(log.directory / f"{0:020d}.log") == size
    assert log.log_end_offset == 3
    log.close()
    again = open_log(tmp_path / "t-0", recover=True, index_interval_bytes=0)
    assert again.load_stats.bytes_truncated == 0 and again.log_end_offset == 3
    again.close()


def test_fsync_failure_with_flush_every_message(tmp_path, monkeypatch) -> None:
    log = open_log(tmp_path / "t-0", flush_interval_messages=1)
    synced: list[int] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    info = log.append(records(2), leader_epoch=0, now_ms=0)
    assert synced and log.recovery_point == info.last_offset + 1 == 2  # fsynced before returning
    assert log.unflushed_messages == 0
    monkeypatch.setattr(os, "fsync", _failing(errno.EIO))
    with pytest.raises(LogStorageError):
        log.append(records(1), leader_epoch=0, now_ms=0)
    assert log.log_end_offset == 2
    # A failed fsync is not retried: the kernel may have dropped the pages it could not
    # write, and a second fsync would succeed without them. The log goes offline.
    monkeypatch.setattr(os, "fsync", spy)
    assert log.offline
    with pytest.raises(LogStorageError, match="offline"):
        log.append(records(1), leader_epoch=0, now_ms=0)
    log.close()
    again = open_log(tmp_path / "t-0", recover=True, flush_interval_messages=1)
    assert [h.base_offset for h in read_headers(again)] == [0]
    assert again.append(records(1), leader_epoch=0, now_ms=0).first_offset == 2
    again.close()


def test_failed_rollback_takes_the_log_offline(tmp_path, monkeypatch) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 2)
    monkeypatch.setattr(os, "pwritev", _failing(errno.EIO))
    monkeypatch.setattr(os, "ftruncate", _failing(errno.EIO))
    with pytest.raises(LogStorageError):
        log.append(records(1), leader_epoch=0, now_ms=0)
    monkeypatch.undo()
    assert log.offline
    for call in (
        lambda: log.append(records(1), leader_epoch=0, now_ms=0),
        lambda: log.read(0, 100),
    ):
        with pytest.raises(LogStorageError):
            call()
    log.close()
    # the partial write is cut by recovery at the next start
    again = open_log(tmp_path / "t-0", recover=True)
    assert again.log_end_offset == 2
    again.close()


def test_flush_interval_messages_counts(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", flush_interval_messages=5)
    fill(log, 2, per_batch=2)
    assert log.unflushed_messages == 4 and log.recovery_point == 0
    fill(log, 1)
    assert log.unflushed_messages == 0 and log.recovery_point == 5
    log.close()


def test_flush_by_time(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", flush_interval_ms=1_000, now_ms=0)
    fill(log, 2, now_ms=10)
    assert not log.flush_if_due(999)
    assert log.flush_if_due(1_000) and log.recovery_point == 2
    assert not log.flush_if_due(5_000)  # nothing new to flush
    log.close()
