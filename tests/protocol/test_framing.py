"""``FrameDecoder``, table-driven: byte streams in, frames or typed errors out.

Each case is fed in every way a socket might deliver it (whole, byte by byte, in two
pieces at every split point), and must give the same frames and the same error.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import pytest

from trio_broker.protocol.errors import (
    FrameTooLarge,
    InvalidFrameSize,
    RemoteProtocolError,
    TruncatedFrame,
)
from trio_broker.protocol.framing import FrameDecoder

MAX = 64


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def size(n: int) -> bytes:
    return struct.pack(">i", n)


@dataclass
class Case:
    id: str
    stream: bytes
    frames: list[bytes]
    error: type[RemoteProtocolError] | None = None  # raised by next_frame
    eof_error: type[RemoteProtocolError] | None = None  # raised by receive_eof at the end


CASES = [
    Case("empty", b"", []),
    Case("one frame", framed(b"hello"), [b"hello"]),
    Case("one-byte frame", framed(b"x"), [b"x"]),
    Case("frame of exactly max size", framed(bytes(MAX)), [bytes(MAX)]),
    Case(
        "several frames in one chunk",
        framed(b"a") + framed(b"bc") + framed(b"def"),
        [b"a", b"bc", b"def"],
    ),
    Case("size prefix cut short", b"\x00\x00", [], eof_error=TruncatedFrame),
    Case("body cut short", framed(b"hello")[:-1], [], eof_error=TruncatedFrame),
    Case(
        "second frame cut short",
        framed(b"ok") + framed(b"never")[:6],
        [b"ok"],
        eof_error=TruncatedFrame,
    ),
    Case("size zero", size(0), [], error=InvalidFrameSize),
    Case("size negative", size(-1), [], error=InvalidFrameSize),
    Case("size most negative", size(-(2**31)), [], error=InvalidFrameSize),
    Case("size above max", size(MAX + 1), [], error=FrameTooLarge),
    # The size alone is enough to refuse: the body is never waited for.
    Case("size far above max", size(2**31 - 1) + b"abc", [], error=FrameTooLarge),
    Case("bad size after a good frame", framed(b"ok") + size(0), [b"ok"], error=InvalidFrameSize),
]


def deliveries(stream: bytes) -> list[list[bytes]]:
    """The stream whole, byte by byte, and split in two at every point."""
    out = [[stream], [stream[i : i + 1] for i in range(len(stream))]]
    out += [[stream[:i], stream[i:]] for i in range(1, len(stream))]
    return out


def run(decoder: FrameDecoder, chunks: list[bytes]) -> list[bytes]:
    frames = []
    for chunk in chunks:
        decoder.receive_data(chunk)
        while (frame := decoder.next_frame()) is not None:
            frames.append(frame)
    return frames


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_frames(case: Case) -> None:
    for chunks in deliveries(case.stream):
        decoder = FrameDecoder(MAX)
        if case.error is not None:
            with pytest.raises(case.error):
                run(decoder, chunks)
            continue
        assert run(decoder, chunks) == case.frames
        if case.eof_error is not None:
            with pytest.raises(case.eof_error):
                decoder.receive_eof()
        else:
            decoder.receive_eof()
            assert decoder.buffered == 0


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_frames_from_memoryviews_and_bytearrays(case: Case) -> None:
    decoder = FrameDecoder(MAX)
    data = bytearray(case.stream)
    if case.error is not None:
        with pytest.raises(case.error):
            run(decoder, [memoryview(data)])
    else:
        frames = run(decoder, [memoryview(data)])
        assert frames == case.frames
        assert all(type(f) is bytes for f in frames)


def test_wanted_counts_down_to_each_frame() -> None:
    stream = framed(b"abc") + framed(b"hello!")
    decoder = FrameDecoder(MAX)
    wanted = []
    for i in range(len(stream)):
        wanted.append(decoder.wanted())
        decoder.receive_data(stream[i : i + 1])
        decoder.next_frame()
    first = [4, 3, 2, 1, 3, 2, 1]  # 4 bytes of size, then the body
    second = [4, 3, 2, 1, 6, 5, 4, 3, 2, 1]
    assert wanted == [*first, *second]
    assert decoder.wanted() == 4
    assert decoder.buffered == 0


@pytest.mark.parametrize(
    ("received", "wanted"),
    [
        (b"", 4),
        (b"\x00", 3),
        (b"\x00\x00\x00", 1),
        (size(10), 10),
        (size(10) + b"abc", 7),
        (size(10) + bytes(9), 1),
        # A bad size is reported by next_frame; wanted() still asks for at least a byte.
        (size(0), 1),
        (size(-5), 1),
    ],
)
def test_wanted(received: bytes, wanted: int) -> None:
    decoder = FrameDecoder(MAX)
    decoder.receive_data(received)
    assert decoder.wanted() == wanted
    assert decoder.buffered == len(received)


def test_a_frame_is_handed_out_once_and_the_rest_stays_buffered() -> None:
    decoder = FrameDecoder(MAX)
    decoder.receive_data(framed(b"one") + framed(b"two")[:5])
    assert decoder.next_frame() == b"one"
    assert decoder.next_frame() is None
    assert decoder.buffered == 5
    decoder.receive_data(b"wo")
    assert decoder.next_frame() == b"two"
    assert decoder.next_frame() is None


def test_eof_after_whole_frames_not_yet_taken_is_not_truncation() -> None:
    decoder = FrameDecoder(MAX)
    decoder.receive_data(framed(b"one") + framed(b"two"))
    decoder.receive_eof()
    assert decoder.next_frame() == b"one"
    assert decoder.next_frame() == b"two"
    assert decoder.next_frame() is None


def test_eof_after_whole_frames_and_a_partial_one_is_truncation() -> None:
    decoder = FrameDecoder(MAX)
    decoder.receive_data(framed(b"one") + framed(b"two")[:-1])
    with pytest.raises(TruncatedFrame):
        decoder.receive_eof()


def test_take_buffer_hands_over_unparsed_bytes() -> None:
    decoder = FrameDecoder(MAX)
    decoder.receive_data(framed(b"one") + b"\x00\x00")
    assert decoder.next_frame() == b"one"
    assert decoder.take_buffer() == bytearray(b"\x00\x00")
    assert decoder.buffered == 0
    decoder.receive_eof()


def test_errors_carry_kafka_error_codes_and_close_the_connection() -> None:
    for error in (FrameTooLarge, InvalidFrameSize, TruncatedFrame):
        assert issubclass(error, RemoteProtocolError)
        assert error("x").close_connection
