"""Micro-benchmark of the hot pure-Python paths: the codec, framing, record validation
and the request handler, in one tree or several (pure Python vs mypyc-compiled).

What it measures: nanoseconds of CPU time per call (the thread's, so that the time spent
waiting for a CPU on a busy machine does not count), the best of ``--rounds`` timed loops
of about ``--budget`` s each, of what the broker does per request outside the event loop:

* ``frame.*``: ``FrameDecoder.receive_data`` + ``next_frame`` of one small request, and
  of 16 small requests arriving in one read;
* ``decode.*``: ``decode_request_header`` + ``decode_request_body`` of ApiVersions v3,
  Metadata v12 (one topic), Produce v9 (one 100-byte record) and Fetch v12 (one
  partition), as a processor decodes a frame;
* ``encode.*``: ``encode_response`` of ApiVersions v3 (every key we answer), Metadata v12
  (one broker, one topic of one partition), Produce v9 and Fetch v12 (1 KiB of records);
* ``records.*``: ``validate_batches`` of a one-record batch, of 100 records (16 KiB) and
  of 1 MiB (8 batches of 128 KiB: the CRC-32C dominates);
* ``handler.*``: ``RequestHandler.handle`` of an ApiVersions request with a handler that
  returns a ready response (context, table look-up, encoding, the response action).

With ``--tree NAME=DIR`` (repeatable) each tree is measured in its own child process that
imports ``trio_broker`` from ``DIR`` (a checkout, possibly with mypyc's extension modules
built in place), alternately (A, B, A, B ...) ``--repeats`` times; each figure is the best
over the repeats and the table shows the ratio of the first tree to every other. The
child reports which of the modules it imported are compiled (``.so``), so a tree that
silently fell back to ``.py`` shows. Without ``--tree`` it measures this checkout only.
``--codec-dir DIR`` adds two columns: the codec functions that ``protocol/codegen.py``
generates at run time, written into one module in ``DIR`` and run from there as plain
Python and compiled by mypyc (see "the generated codec as a module" below).

Run from the repository::

    .venv/bin/python bench/codec_speed.py                              # about 40 s
    .venv/bin/python bench/codec_speed.py --tree pure=. --tree mypyc=BUILD \
        --codec-dir CODEC --repeats 8 --rounds 3 --budget 0.05         # about 3 min

Before each child run the script waits up to ``--wait-quiet`` s for other work on the
machine to stop (under 10% of the CPUs busy), and records how busy it was. Bounded:
cases x rounds x budget per child, ``--repeats`` children per tree.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TITLE = "codec speed: the hot pure-Python paths, per call"
HERE = Path(__file__).resolve().parent

# The modules whose compiled or pure form the child reports.
WATCHED = (
    "trio_broker.protocol.framing",
    "trio_broker.protocol.primitives",
    "trio_broker.protocol.header",
    "trio_broker.protocol.codegen",
    "trio_broker.records.header",
    "trio_broker.records.validation",
    "trio_broker.network.send",
    "trio_broker.server.handlers.request_handler",
)


# ------------------------------------------------------------------ the cases (child)


def _cases() -> dict[str, Callable[[], Any]]:
    """Every case as a no-argument callable; set-up work is done here, not timed."""
    import trio_broker.protocol.messages  # noqa: F401  (registers the message classes)
    from trio_broker.apis.table import ApiEntry, ApiTable
    from trio_broker.network.request import Request, RequestTimes
    from trio_broker.protocol.api import all_specs, spec_for
    from trio_broker.protocol.framing import FrameDecoder
    from trio_broker.protocol.header import (
        decode_request_body,
        decode_request_header,
        encode_request,
        encode_response,
    )
    from trio_broker.protocol.messages.api_versions import (
        ApiVersionsRequest,
        ApiVersionsResponse,
    )
    from trio_broker.protocol.messages.fetch import FetchRequest, FetchResponse
    from trio_broker.protocol.messages.metadata import MetadataRequest, MetadataResponse
    from trio_broker.protocol.messages.produce import ProduceRequest, ProduceResponse
    from trio_broker.protocol.primitives import join_parts
    from trio_broker.records.builder import Record, build_batch
    from trio_broker.records.validation import validate_batches
    from trio_broker.server.handlers.request_handler import RequestHandler

    def frame_of(version: int, body: Any) -> bytes:
        return join_parts(encode_request(version, 7, "bench", body))

    one_record = build_batch([Record(key=None, value=b"x" * 100)])
    requests = {
        "api_versions": frame_of(
            3,
            ApiVersionsRequest(
                client_software_name="trio-broker-bench", client_software_version="1"
            ),
        ),
        "metadata": frame_of(
            12,
            MetadataRequest(
                topics=[MetadataRequest.Topic(name="bench")], allow_auto_topic_creation=False
            ),
        ),
        "produce": frame_of(
            9,
            ProduceRequest(
                acks=1,
                timeout_ms=30000,
                topic_data=[
                    ProduceRequest.TopicProduceData(
                        name="bench",
                        partition_data=[
                            ProduceRequest.TopicProduceData.PartitionProduceData(
                                index=0, records=one_record
                            )
                        ],
                    )
                ],
            ),
        ),
        "fetch": frame_of(
            12,
            FetchRequest(
                max_wait_ms=500,
                min_bytes=1,
                session_id=0,
                session_epoch=-1,
                topics=[
                    FetchRequest.Topic(
                        topic="bench",
                        partitions=[
                            FetchRequest.Topic.Partition(
                                partition=0, fetch_offset=100, partition_max_bytes=1 << 20
                            )
                        ],
                    )
                ],
                forgotten_topics_data=[],
                rack_id="",
            ),
        ),
    }

    cases: dict[str, Callable[[], Any]] = {}

    framer = FrameDecoder(100 << 20)
    small = requests["api_versions"]
    burst = small * 16

    def frame_one() -> Any:
        framer.receive_data(small)
        return framer.next_frame()

    def frame_burst() -> Any:
        framer.receive_data(burst)
        while framer.next_frame() is not None:
            pass

    cases["frame.one_small"] = frame_one
    cases["frame.burst_16_small"] = frame_burst

    def decoding(frame: bytes) -> Callable[[], Any]:
        data = frame[4:]

        def run() -> Any:
            header, spec, pos = decode_request_header(data)
            return decode_request_body(spec, header.api_version, data, pos)

        return run

    for kind, frame in requests.items():
        cases[f"decode.{kind}"] = decoding(frame)

    api_versions = ApiVersionsResponse(
        error_code=0,
        api_keys=[
            ApiVersionsResponse.ApiVersion(
                api_key=s.key, min_version=s.versions.lo, max_version=min(s.versions.hi, 0x7FFF)
            )
            for s in all_specs()
        ],
        throttle_time_ms=0,
    )
    metadata = MetadataResponse(
        brokers=[MetadataResponse.Broker(node_id=0, host="localhost", port=9092)],
        cluster_id="bench-cluster",
        controller_id=0,
        topics=[
            MetadataResponse.Topic(
                error_code=0,
                name="bench",
                partitions=[
                    MetadataResponse.Topic.Partition(
                        error_code=0,
                        partition_index=0,
                        leader_id=0,
                        leader_epoch=0,
                        replica_nodes=[0],
                        isr_nodes=[0],
                        offline_replicas=[],
                    )
                ],
            )
        ],
    )
    Partition = ProduceResponse.TopicProduceResponse.PartitionProduceResponse
    produce = ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name="bench",
                partition_responses=[
                    Partition(index=0, error_code=0, base_offset=100, record_errors=[])
                ],
            )
        ]
    )
    kib = memoryview(build_batch([Record(key=None, value=b"y" * 1000)]))
    fetch = FetchResponse(
        error_code=0,
        session_id=0,
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="bench",
                partitions=[
                    FetchResponse.FetchableTopicResponse.PartitionData(
                        partition_index=0,
                        error_code=0,
                        high_watermark=101,
                        last_stable_offset=101,
                        log_start_offset=0,
                        aborted_transactions=None,
                        records=kib,
                    )
                ],
            )
        ],
    )
    for kind, body in (
        ("api_versions", api_versions),
        ("metadata", metadata),
        ("produce", produce),
        ("fetch", fetch),
    ):
        spec = spec_for(body.api_key)
        assert spec is not None
        version = 3 if kind == "api_versions" else 12 if kind in ("metadata", "fetch") else 9
        cases[f"encode.{kind}"] = lambda spec=spec, version=version, body=body: encode_response(
            spec, version, 7, body
        )

    hundred = build_batch([Record(key=b"k%d" % i, value=b"v" * 140) for i in range(100)])
    mib = b"".join(
        build_batch([Record(key=None, value=b"z" * 1000) for _ in range(130)], base_offset=i * 130)
        for i in range(8)
    )
    for name, data in (("one_record", one_record), ("16k", hundred), ("1m", mib)):
        view = memoryview(data)
        cases[f"records.validate_{name}"] = lambda view=view: validate_batches(
            view, max_batch_bytes=1 << 20
        )

    # The request handler, driven without an event loop: its API handler returns a ready
    # response without awaiting, so one ``send(None)`` runs ``handle`` to the end.
    av_spec = spec_for(18)
    assert av_spec is not None

    async def answer(ctx: Any, body: Any) -> Any:
        return api_versions

    class Sink:
        __slots__ = ("last",)

        def __init__(self) -> None:
            self.last: Any = None

        def deliver(self, action: Any) -> None:
            self.last = action

    handler = RequestHandler(ApiTable([ApiEntry(av_spec, answer)]), broker=None)  # type: ignore[arg-type]
    av_data = requests["api_versions"][4:]
    av_header, _, av_pos = decode_request_header(av_data)
    av_body = decode_request_body(av_spec, 3, av_data, av_pos)
    sink = Sink()

    def handle() -> Any:
        request = Request(sink, "c", 0, av_header, av_spec, av_body, len(av_data), RequestTimes(0))
        coro = handler.handle(request)
        try:
            coro.send(None)
        except StopIteration:
            pass
        else:
            raise RuntimeError("the handler awaited")
        return sink.last

    cases["handler.api_versions"] = handle
    return cases


def _time(fn: Callable[[], Any], budget: float, rounds: int) -> float:
    """Best ns per call over ``rounds`` loops of about ``budget`` s.

    Timed in this thread's CPU time, not wall time: on a shared machine the time the
    process waits for a CPU would otherwise count as its own."""
    clock = time.thread_time_ns
    fn()
    n = 1
    while True:  # calibrate: a loop of n calls takes at least a tenth of the budget
        start = clock()
        for _ in range(n):
            fn()
        took = clock() - start
        if took >= budget * 1e8:
            break
        n *= 4
    n = max(1, int(n * budget * 1e9 / took))
    best = float("inf")
    for _ in range(rounds):
        start = clock()
        for _ in range(n):
            fn()
        best = min(best, (clock() - start) / n)
    return best


# ------------------------------------------- the generated codec as a module (--codec-dir)
#
# protocol/codegen.py writes each decoder and encoder as Python source and exec()s it on
# first use, so mypyc never sees it. To measure what compiling it would give, the functions
# the cases use are written into one module (each function's globals renamed to module
# globals; the names carry no object ids, so every process writes the same text), that
# module is compiled with mypyc, and its functions replace the exec'd ones. The same module
# imported as plain Python is measured too: it also replaces codegen's lazy nested-struct
# wrappers (``_Lazy``) by direct references, a pure-Python difference.


def _codec_functions() -> list[tuple[str, Any, Any]]:
    from trio_broker.protocol import codegen

    out = [("decode", key, fn) for key, fn in codegen._decoders.items()]
    return out + [("encode", key, fn) for key, fn in codegen._encoders.items()]


def _codec_source(functions: list[tuple[str, Any, Any]]) -> tuple[str, list[dict[str, str]]]:
    """The module's text and, per function, its module globals -> exec globals."""
    import re

    from trio_broker.protocol import codegen

    lines = ['"""Generated by bench/codec_speed.py: codegen\'s functions, for mypyc."""', ""]
    lines += ["from typing import Any", ""]
    names = []
    for i, (kind, key, fn) in enumerate(functions):
        source = codegen._sources[(kind, *key)]
        env = fn.__globals__
        keys = sorted((k for k in env if k.startswith("_") and k[1] != "_"), key=len)
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, reversed(keys))) + r")\b")
        order = list(dict.fromkeys(pattern.findall(source)))
        mapping = {k: f"g{i}_{j}" for j, k in enumerate(order)}
        source = pattern.sub(lambda m, mapping=mapping: mapping[m.group(1)], source)
        lines += [f"{name}: Any = None" for name in mapping.values()]
        lines += [source.replace(f"def {kind}(", f"def f{i}(", 1)]
        names.append({name: k for k, name in mapping.items()})
    return "\n".join(lines) + "\n", names


def _use_codec_module(directory: str) -> str:
    """Replace codegen's functions by those of ``directory``/codec_module; how it loaded."""
    import importlib

    from trio_broker.protocol import codegen

    functions = _codec_functions()
    source, names = _codec_source(functions)
    path = Path(directory) / "codec_module.py"
    if path.read_text() != source:
        raise RuntimeError(f"{path} was written from other sources: write it again")
    sys.path.insert(0, directory)
    module = importlib.import_module("codec_module")
    compiled = not str(module.__file__).endswith(".py")
    own = {(kind, key): getattr(module, f"f{i}") for i, (kind, key, _) in enumerate(functions)}
    for i, (kind, key, fn) in enumerate(functions):
        for name, k in names[i].items():
            value = fn.__globals__[k]
            if isinstance(value, codegen._Lazy):
                which = "decode" if k.startswith("_dec") else "encode"
                value = own.get((which, value.args), value)
            setattr(module, name, value)
        (codegen._decoders if kind == "decode" else codegen._encoders)[key] = own[(kind, key)]
    return "compiled" if compiled else "pure module"


def child(args: argparse.Namespace, only: list[str]) -> None:
    """Measure every case in this process, importing trio_broker from ``args.child``;
    print JSON. With ``--codec-dir`` run the codec from the module there (see above)."""
    sys.path.insert(0, args.child)
    import importlib

    cases = _cases()
    for name, fn in cases.items():  # generates the codec functions the cases use
        if name.startswith(("decode.", "encode.", "handler.")):
            fn()
    if args.write_codec:
        Path(args.write_codec).write_text(_codec_source(_codec_functions())[0])
        return
    compiled = {}
    for name in WATCHED:
        mod = importlib.import_module(name)
        compiled[name] = getattr(mod, "__file__", "").endswith((".so", ".pyd"))
    if args.codec_dir:
        compiled["generated codec: " + _use_codec_module(args.codec_dir)] = True
    results = {
        name: _time(fn, args.budget, args.rounds)
        for name, fn in cases.items()
        if not only or any(name.startswith(o) for o in only)
    }
    print(json.dumps({"compiled": compiled, "ns": results}))


def build_codec_module(tree: str, directory: Path) -> list[list[str]]:
    """Write the generated codec into ``directory``/pure and ``directory``/mypyc, compile
    the latter with mypyc; the two extra "trees" that measure them."""
    from _common import log

    pure, compiled = directory / "pure", directory / "mypyc"
    for d in (pure, compiled):
        d.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        __file__,
        "--child",
        tree,
        "--write-codec",
        str(pure / "codec_module.py"),
    ]
    subprocess.run(cmd, check=True)
    source = (pure / "codec_module.py").read_text()
    if (
        not (compiled / "codec_module.py").exists()
        or (compiled / "codec_module.py").read_text() != source
    ):
        for old in compiled.glob("*.so"):
            old.unlink()
        (compiled / "codec_module.py").write_text(source)
        log(f"compiling the generated codec with mypyc in {compiled}")
        subprocess.run(
            [sys.executable, "-m", "mypyc", "codec_module.py"],
            cwd=compiled,
            check=True,
            capture_output=True,
        )
    return [["codec-module", f"{tree}:{pure}"], ["codec-mypyc", f"{tree}:{compiled}"]]


# ------------------------------------------------------------------------ parent


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=TITLE)
    p.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a checkout to measure (repeatable; the first is the reference). Default: this one",
    )
    p.add_argument("--repeats", type=int, default=2, help="child runs per tree, alternated (2)")
    p.add_argument("--rounds", type=int, default=5, help="timed loops per case, best kept (5)")
    p.add_argument("--budget", type=float, default=0.2, help="seconds per timed loop (0.2)")
    p.add_argument("--only", default="", help="comma-separated case name prefixes")
    p.add_argument(
        "--wait-quiet",
        type=float,
        default=10,
        help="before each child run, wait up to this many s for other work to stop (10)",
    )
    p.add_argument(
        "--codec-dir",
        help="also measure the generated codec as a module, pure and mypyc-compiled (built"
        " here; needs mypy installed), with the first tree",
    )
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--write-codec", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    only = [o for o in args.only.split(",") if o]
    if args.child:
        child(args, only)
        return 0
    from _common import header, log, table, wait_quiet, write_json

    trees = [t.split("=", 1) for t in args.tree] or [["this", str(HERE.parent)]]
    options = {k: v for k, v in vars(args).items() if k not in ("json", "child", "write_codec")}
    print(header(TITLE, options), flush=True)
    if args.codec_dir:
        first = str(Path(trees[0][1]).resolve())
        trees += build_codec_module(first, Path(args.codec_dir).resolve())
    best: dict[str, dict[str, float]] = {name: {} for name, _ in trees}
    compiled: dict[str, dict[str, bool]] = {}
    busy: list[float] = []
    for repeat in range(args.repeats):
        for name, directory in trees:
            busy.append(wait_quiet(args.wait_quiet))
            tree, _, codec_dir = directory.partition(":")
            cmd = [sys.executable, __file__, "--child", str(Path(tree).resolve())]
            cmd += ["--budget", str(args.budget), "--rounds", str(args.rounds)]
            if codec_dir:
                cmd += ["--codec-dir", codec_dir]
            if only:
                cmd += ["--only", ",".join(only)]
            env = dict(os.environ)
            env.pop("PYTHONPATH", None)
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            compiled[name] = result["compiled"]
            for case, ns in result["ns"].items():
                best[name][case] = min(best[name].get(case, float("inf")), ns)
            log(f"repeat {repeat + 1} {name}: done (machine {busy[-1]:.0%} busy before)")
    for name, _ in trees:
        done = [m.removeprefix("trio_broker.") for m, c in compiled[name].items() if c]
        print(f"{name}: compiled modules: {', '.join(done) or 'none'}")
    print(f"machine busy before the runs: {', '.join(f'{b:.0%}' for b in busy)}")
    ref = trees[0][0]
    headers = ["case"] + [f"{name} ns" for name, _ in trees]
    headers += [f"{ref}/{name}" for name, _ in trees[1:]]
    rows = []
    for case in best[ref]:
        row: list[Any] = [case] + [best[name][case] for name, _ in trees]
        row += [best[ref][case] / best[name][case] for name, _ in trees[1:]]
        rows.append(row)
    print(table(headers, rows))
    write_json(args.json, TITLE, options, {"best_ns": best, "compiled": compiled, "busy": busy})
    return 0


if __name__ == "__main__":
    sys.exit(main())
