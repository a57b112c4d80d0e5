"""Fuzz target: the request path's decoders (framing, request header, request body).

``one_input`` is what the broker does with the bytes a client sends: split them into
frames (``FrameDecoder``, as ``Connection`` does), then parse each frame's header and
body (``decode_request_header`` / ``decode_request_body``, as ``Connection._parse``). Bad
bytes must raise a ``RemoteProtocolError`` (which closes that connection); anything else
escaping is a bug, and the fuzzer reports it as a crash.

Run it under atheris (libFuzzer), from the repository root::

    python fuzz/fuzz_request.py --make-corpus fuzz/corpus       # seed inputs, once
    python fuzz/fuzz_request.py fuzz/corpus -max_total_time=60   # fuzz for a minute

or without atheris, as a plain replay of a corpus through the same entry point::

    python fuzz/fuzz_request.py --replay fuzz/corpus
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

try:
    import atheris
except ImportError:  # replay and corpus making need no atheris
    atheris = None

# Instrumented for coverage under atheris; plain imports without it.
with atheris.instrument_imports(include=["trio_broker"]) if atheris else contextlib.nullcontext():
    import trio_broker.protocol.messages  # noqa: F401  (registers every message)
    from trio_broker.protocol.api import all_specs
    from trio_broker.protocol.errors import RemoteProtocolError
    from trio_broker.protocol.framing import FrameDecoder
    from trio_broker.protocol.header import (
        decode_request_body,
        decode_request_header,
        encode_request,
    )
    from trio_broker.protocol.primitives import join_parts

MAX_FRAME = 1 << 20  # socket.request.max.bytes for the fuzzer: keeps inputs small


def decode_stream(data: bytes) -> int:
    """Frame and decode every request in ``data``, fed in two chunks split where its
    first byte says; returns how many requests decoded. Raises ``RemoteProtocolError``
    (and nothing else) for bad bytes."""
    framer = FrameDecoder(MAX_FRAME)
    cut = data[0] % (len(data) + 1) if data else 0
    decoded = 0
    for chunk in (data[:cut], data[cut:]):
        framer.receive_data(chunk)
        while (frame := framer.next_frame()) is not None:
            header, spec, pos = decode_request_header(frame)
            decode_request_body(spec, header.api_version, frame, pos)
            decoded += 1
    framer.receive_eof()
    return decoded


def one_input(data: bytes) -> None:
    with contextlib.suppress(RemoteProtocolError):
        decode_stream(data)


def seeds() -> Iterator[tuple[str, bytes]]:
    """One framed request per api key and version (default field values)."""
    for spec in all_specs():
        for version in range(spec.min_version, spec.max_version + 1):
            frame = join_parts(encode_request(version, 7, "fuzz", spec.request()))
            yield f"{spec.name}-v{version}", frame


def make_corpus(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    n = 0
    for name, frame in seeds():
        (directory / name).write_bytes(frame)
        n += 1
    return n


def replay(paths: list[Path]) -> int:
    """Run every file under ``paths`` through ``one_input``; returns how many."""
    n = 0
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            one_input(f.read_bytes())
            n += 1
    return n


def main(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[1] == "--make-corpus":
        print(f"{make_corpus(Path(argv[2]))} seed inputs in {argv[2]}")
    elif len(argv) >= 3 and argv[1] == "--replay":
        print(f"replayed {replay([Path(a) for a in argv[2:]])} inputs: no crash")
    elif atheris is None:
        raise SystemExit("atheris is not installed (pip install atheris); use --replay")
    else:
        atheris.Setup(argv, one_input)
        atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
