"""Readers in threads during appends, rolls and retention only ever see whole batches."""

from __future__ import annotations

import threading

from trio_broker.log import OffsetOutOfRange
from trio_broker.records import batch_crc, iter_batches

from .helpers import open_log, records, region_bytes


def test_concurrent_readers_never_see_a_partial_batch(tmp_path) -> None:
    log = open_log(
        tmp_path / "t-0",
        segment_bytes=4_000,
        index_interval_bytes=200,
        retention_bytes=20_000,
        retention_ms=-1,
    )
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = [0]

    def reader() -> None:
        try:
            while not stop.is_set():
                start = log.log_start_offset
                try:
                    info = log.read(start, 1 << 20, max_offset=None)
                except OffsetOutOfRange:
                    continue  # retention moved the start between the two calls
                try:
                    data = region_bytes(info)
                finally:
                    info.release()
                batches = list(iter_batches(data))
                assert sum(len(raw) for _, raw in batches) == len(data), "partial batch"
                expected = None
                for h, raw in batches:
                    assert batch_crc(raw) == h.crc
                    assert expected is None or h.base_offset == expected
                    expected = h.next_offset
                if batches:
                    assert batches[0][0].base_offset <= start < batches[0][0].next_offset
                    assert batches[-1][0].next_offset <= info.high_watermark
                reads[0] += 1
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    def retention() -> None:
        while not stop.is_set():
            log.apply_retention(now_ms=0)

    threads = [threading.Thread(target=reader) for _ in range(3)] + [
        threading.Thread(target=retention)
    ]
    for t in threads:
        t.start()
    try:
        for i in range(800):
            if stop.is_set():
                break
            log.append(records(1 + i % 4, value=b"c" * (i % 300)), leader_epoch=0, now_ms=0)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[0]
    assert reads[0] > 10
    assert log.log_start_offset > 0 and len(log.segment_base_offsets) > 2
    log.close()


def test_concurrent_appends_are_serialized(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=3_000)
    results: list[tuple[int, int]] = []
    lock = threading.Lock()

    def writer() -> None:
        for _ in range(200):
            info = log.append(records(2), leader_epoch=0, now_ms=0)
            with lock:
                results.append((info.first_offset, info.last_offset))

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [(o, o + 1) for o in range(0, 1_600, 2)]
    info = log.read(0, 1 << 30)
    assert [h.base_offset for h, _ in iter_batches(region_bytes(info))] == list(range(0, 1_600, 2))
    info.release()
    log.close()
