"""Property tests: random appends, a crash at a random point, and what recovery keeps.

A crash is the partition folder as a crashed broker leaves it (copied while the log is
open: what the page cache held), with the active segment's tail then damaged at a random
byte: cut there (a torn write), overwritten from there on (garbage where the write did not
land), or followed by garbage. Recovery must keep exactly the batches that were whole
before the damage, byte for byte, lose nothing before them, and go on appending from there.
A second test kills a real writer process at a random moment: every append it reported
done is still there. A third crashes a cleaner pass before a random step of its swaps:
every key's latest record survives at its offset and nothing else appears.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trio_broker.log.cleaner.compaction import clean
from trio_broker.records import batch_crc, iter_batches

from .helpers import open_log, read_headers, records, region_bytes
from .test_cleaner import SLOTS, compacted_log, contents, put
from .test_cleaner_groups import at_each_step, latest, load_crashed

ROOT = Path(__file__).resolve().parents[2]

_BATCHES = st.lists(
    st.tuples(st.integers(1, 5), st.integers(0, 120)),  # records per batch, value size
    min_size=1,
    max_size=40,
)


def _segments(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.endswith(".log"))


def _log_bytes(log) -> bytes:  # type: ignore[no-untyped-def]
    info = log.read(log.log_start_offset, 1 << 30)
    try:
        return region_bytes(info)
    finally:
        info.release()


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    batches=_BATCHES,
    segment_bytes=st.integers(300, 3000),
    flush_every=st.sampled_from([1, 7, 2**63 - 1]),
    damage=st.sampled_from(["cut", "overwrite", "append"]),
    where=st.floats(0, 1),
    garbage=st.binary(min_size=1, max_size=64),
)
def test_recovery_keeps_exactly_the_whole_batches_before_the_damage(
    batches: list[tuple[int, int]],
    segment_bytes: int,
    flush_every: int,
    damage: str,
    where: float,
    garbage: bytes,
) -> None:
    config = {
        "segment_bytes": segment_bytes,
        "index_interval_bytes": 100,
        "segment_index_bytes": 4096,
        "flush_interval_messages": flush_every,
    }
    with tempfile.TemporaryDirectory() as tmp:
        log = open_log(Path(tmp) / "t-0", **config)
        ends = []  # the log end offset after each append
        for n, size in batches:
            log.append(records(n, value=b"x" * size), leader_epoch=0, now_ms=0)
            ends.append(log.log_end_offset)
        crashed = Path(tmp) / "crash-0"
        shutil.copytree(log.directory, crashed)
        written = _log_bytes(log)
        log.close()

        active = _segments(crashed)[-1]
        data = active.read_bytes()
        before = len(written) - len(data)  # the bytes of the older segments
        point = round(where * len(data))
        if damage == "cut":
            os.truncate(active, point)
        elif damage == "overwrite":
            # every byte from the point on differs: xor with a non-zero byte
            tail = bytes(b ^ (garbage[i % len(garbage)] | 1) for i, b in enumerate(data[point:]))
            active.write_bytes(data[:point] + tail)
        else:
            point = len(data)
            with open(active, "ab") as f:
                f.write(garbage)

        # What must survive: every batch that ends at or before the damage point.
        kept = 0
        for header, _raw in iter_batches(data):
            if kept + header.size > point:
                break
            kept += header.size
        expected = written[: before + kept]
        expected_end = ([0] + [h.last_offset + 1 for h, _ in iter_batches(expected)])[-1]

        again = open_log(crashed, recover=True, **config)
        try:
            assert again.log_end_offset == expected_end
            assert _log_bytes(again) == expected
            for header, raw in iter_batches(expected):
                assert batch_crc(raw) == header.crc
            assert again.append(records(1), leader_epoch=1, now_ms=0).first_offset == expected_end
        finally:
            again.close()
        assert expected_end in [0, *ends]  # a prefix of what was appended, batch-aligned


def test_a_writer_killed_at_random_moments_loses_no_acknowledged_append(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A real process appends (fsync every message) and reports each append once it has
    returned; it is killed with SIGKILL mid-stream; recovery holds every reported one."""
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from tests.log.helpers import open_log, records

        log = open_log(Path(sys.argv[1]), recover=True, segment_bytes=4000,
                       segment_index_bytes=4096, flush_interval_messages=1)
        while True:
            info = log.append(records(3, value=b"y" * 50), leader_epoch=0, now_ms=0)
            print(info.last_offset, flush=True)
        """
    )
    directory = tmp_path / "t-0"
    acknowledged = -1
    for round_ in range(3):  # kill, recover, write on, kill again
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(directory)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        # kill after a different number of appends each round
        for seen, line in enumerate(proc.stdout, 1):
            acknowledged = int(line)
            if seen == 150 + 97 * round_:
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        log = open_log(directory, recover=True, segment_bytes=4000, segment_index_bytes=4096)
        try:
            assert log.log_end_offset > acknowledged
            headers = read_headers(log)
            assert [h.base_offset for h in headers] == list(range(0, log.log_end_offset, 3))
        finally:
            log.close()


# -- the cleaner: a crash at any step of a pass's swaps -------------------------------------

_UPDATES = st.lists(
    st.tuples(
        st.integers(0, 5),  # key
        st.one_of(st.none(), st.integers(0, 90)),  # a tombstone, or a value of that size
        st.booleans(),  # roll after it
    ),
    min_size=1,
    max_size=40,
)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(updates=_UPDATES, segment_bytes=st.integers(150, 1500), crash_at=st.integers(0, 150))
def test_a_cleaner_pass_crashed_at_any_step_keeps_every_keys_latest_record(
    updates: list[tuple[int, int | None, bool]], segment_bytes: int, crash_at: int
) -> None:
    """Random updates over a few keys in segments of random sizes; a cleaner pass is
    'crashed' before a random step of its swaps (the folder copied there). Recovery keeps
    every key's latest record at its offset, adds nothing, leaves no segment overlapping
    the next, and a pass after it ends where an uncrashed pass ends."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t-0"
        log = compacted_log(path, segment_bytes=segment_bytes)
        for key, size, roll in updates:
            put(log, [(b"key-%d" % key, None if size is None else b"v" * size)])
            if roll:
                log.roll(1_000)
        log.roll(1_000)
        put(log, [(b"active", b"x")])
        original = contents(log)
        log.close()
        kept = latest(original)
        steps: list[int] = []
        crashed = Path(tmp) / "crash" / "t-0"

        def step() -> None:
            if len(steps) == crash_at:
                shutil.copytree(path, crashed)
            steps.append(1)

        with at_each_step(step):
            log = compacted_log(path, segment_bytes=segment_bytes)
            clean(log, 5_000, SLOTS)
            log.close()
        if not crashed.exists():  # fewer steps than ``crash_at``: the finished pass
            shutil.copytree(path, crashed)
        for recover in (True, False):
            again = load_crashed(crashed, recover)
            try:
                got = contents(again)
                assert set(kept) <= set(got) <= set(original)
                assert again.log_end_offset == original[-1][0] + 1
                clean(again, 6_000, SLOTS)
                assert contents(again) == kept
                sealed = list(again.directory.glob("*.log"))[:-1]
                assert all(p.stat().st_size for p in sorted(sealed)[1:])
            finally:
                again.close()
