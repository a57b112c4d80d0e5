"""Small-request rate of trio-broker against a bare Trio echo server (the ceiling).

What it measures: requests per second and latency (p50, p99) of many small requests,
each kind on its own: ApiVersions v3, Metadata v12 for one topic, and Produce v9 of one
100-byte record with acks=1 (what a producer with ``linger.ms=0`` sends per message),
from 1, 8 and 64 connections. Every connection keeps exactly one request in flight (it
sends the next as soon as the answer arrives): the broker answers a connection's requests
one at a time anyway, so deeper pipelining would only queue them in the socket.

The ceiling is a bare Trio server written in this script (``--serve-echo``), run in its
own process on the same Python: per connection one task that reads a 4-byte size, reads
the frame and writes a 6-byte frame back (the correlation id and a zero error code) -
what Python and Trio can do with no broker logic at all. Both servers get the same request
bytes from the same client, alternately (echo, broker, echo, broker...) per cell, and the
ratio broker/echo is the median of the per-pair ratios. The issue's target is >= 0.6.

Between the two, the **skeleton** (``--serve-skeleton``, also its own process): the
broker's request path with no Kafka in it. A connection task puts each frame on one
bounded request channel and waits on its own mailbox before it reads the next; handler
tasks answer with the echo's 6 bytes, after an empty job on the broker's own ``IoPool``
for a Produce. So skeleton/echo is what the design's hand-offs (two per request, plus the
io hop for storage) leave of the echo's rate before the broker parses, validates, stores
or counts anything: the most the broker could reach. It uses Trio's own stream calls,
where the broker reads and writes the descriptor directly when it can, so the skeleton's
figure is, if anything, a little low.

The client: one process (this one), separate from the servers, with non-blocking sockets
on an epoll selector and request frames encoded once in advance (only the bytes are sent
again; the correlation id does not change). Threads would contend for the GIL and a Trio
client would spend on its own scheduling what we want to measure in the server; a bare
selector loop costs a few microseconds per request, and its CPU use is reported
(``client CPU``) so one can see that the server, not the client, is the limit - on 2 cores
the client and the server each get about one.

Run from the repository (``scripts/test`` sets up ``.venv``)::

    .venv/bin/python bench/request_rate.py                       # about 2 minutes
    .venv/bin/python bench/request_rate.py --seconds 1 --repeats 1   # about 30 s
    .venv/bin/python bench/request_rate.py --kinds produce --connections 64 --json out.json

Before each pair of runs the script waits up to ``--wait-quiet`` s for other work on
the machine to stop (under 10% of the CPUs busy), and records how busy it was.
Every load is bounded: ``--warmup`` + ``--seconds`` per cell, ``--repeats`` pairs per cell.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _common import (
    BrokerProcess,
    Profiler,
    child_setup,
    cpu_seconds,
    default_data_dir,
    header,
    log,
    median,
    percentile,
    table,
    wait_quiet,
    write_json,
)

import trio_broker.protocol.messages  # noqa: F401  (registers the message classes)
from trio_broker.protocol.api import spec_for
from trio_broker.protocol.header import decode_response, encode_request
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.produce import ProduceRequest
from trio_broker.protocol.messages.topics import CreateTopicsRequest
from trio_broker.protocol.primitives import join_parts
from trio_broker.records.builder import Record, build_batch

TITLE = "request rate: small requests, trio-broker vs a bare Trio echo server and the skeleton"
TOPIC = "bench-requests"
KINDS = ("api_versions", "metadata", "produce")
_SIZE = struct.Struct(">i")


# ------------------------------------------------------------------ the ceiling


async def _echo_connection(stream: Any) -> None:
    """Read a 4-byte size, read the frame, write a small frame back; until EOF."""
    import trio

    buf = bytearray()
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        async with stream:
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return
                buf += data
                while len(buf) >= 4:
                    end = 4 + _SIZE.unpack_from(buf, 0)[0]
                    if len(buf) < end:
                        break
                    correlation = bytes(buf[8:12])
                    del buf[:end]
                    await stream.send_all(b"\x00\x00\x00\x06" + correlation + b"\x00\x00")


def serve_echo() -> None:
    """``--serve-echo``: listen on 127.0.0.1, print the port, serve until killed."""
    import trio

    async def main() -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        print(json.dumps({"port": port}), flush=True)
        await trio.serve_listeners(_echo_connection, listeners)

    trio.run(main)


# ------------------------------------------------------------ the design's floor

# The broker's defaults that shape its request path: ``num.io.threads`` io threads, twice
# as many handler tasks (``HANDLERS_PER_IO_THREAD``), ``queued.max.requests`` slots.
SKELETON_IO_THREADS = 8
SKELETON_QUEUE = 500
PRODUCE_KEY = 0


def _nothing() -> None:
    """The skeleton's storage job: none; only the hop to an io thread and back."""


def serve_skeleton() -> None:
    """``--serve-skeleton``: the broker's request path with no Kafka in it, to show what
    the design itself costs. Per connection one task reads a frame and puts it on one
    bounded request channel, then waits for its answer on its own mailbox before reading
    the next (one request in flight, as the broker's muting has it); handler tasks take
    requests (draining the channel before they park, as the broker's do), hop to the
    broker's own ``IoPool`` with an empty job for a Produce (storage work never runs on
    the loop), and post the echo's 6-byte answer to the connection's mailbox, whose task
    writes it. Two task hand-offs per request, plus the io hop for a Produce: what every
    request pays in the broker before any parsing, validation, storage or metrics."""
    import trio

    from trio_broker.server.common.io_pool import (
        GIL_SWITCH_INTERVAL_S,
        HANDLERS_PER_IO_THREAD,
        IoPool,
    )

    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)  # as the broker sets it
    pool = IoPool(SKELETON_IO_THREADS)
    Mailbox = trio.MemorySendChannel[bytes]
    requests_in, requests_out = trio.open_memory_channel[tuple[bytes, Mailbox]](SKELETON_QUEUE)

    async def handler() -> None:
        while True:
            try:
                frame, mailbox = requests_out.receive_nowait()
            except trio.WouldBlock:
                frame, mailbox = await requests_out.receive()
            if _SIZE.unpack_from(frame, 4)[0] >> 16 == PRODUCE_KEY:
                await pool.run(_nothing)
            mailbox.send_nowait(b"\x00\x00\x00\x06" + frame[8:12] + b"\x00\x00")

    async def connection(stream: Any) -> None:
        # The echo's framing loop, written out again rather than shared: a shared helper
        # would put a call per request into the echo, the reference every ratio is of.
        mailbox, answers = trio.open_memory_channel[bytes](1)
        buf = bytearray()
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            async with stream:
                while True:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buf += data
                    while len(buf) >= 4:
                        end = 4 + _SIZE.unpack_from(buf, 0)[0]
                        if len(buf) < end:
                            break
                        frame = bytes(buf[:end])
                        del buf[:end]
                        try:
                            requests_in.send_nowait((frame, mailbox))
                        except trio.WouldBlock:
                            await requests_in.send((frame, mailbox))
                        await stream.send_all(await answers.receive())

    async def main() -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        print(json.dumps({"port": port}), flush=True)
        async with trio.open_nursery() as nursery:
            for _ in range(SKELETON_IO_THREADS * HANDLERS_PER_IO_THREAD):
                nursery.start_soon(handler)
            await trio.serve_listeners(connection, listeners)

    trio.run(main)


class EchoProcess:
    """The echo (or, with ``mode="--serve-skeleton"``, the skeleton) in its own process."""

    def __init__(self, mode: str = "--serve-echo") -> None:
        self.mode = mode
        self.proc: subprocess.Popen[str] | None = None
        self.address = ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __enter__(self) -> EchoProcess:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, self.mode],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=child_setup,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.address = f"127.0.0.1:{json.loads(line)['port']}"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


# ---------------------------------------------------------------------- requests


def request_frame(kind: str, correlation_id: int = 1) -> tuple[bytes, Any, int]:
    """(frame bytes, request body, version) of one request of ``kind``."""
    body: Any
    if kind == "api_versions":
        body, version = (
            ApiVersionsRequest(
                client_software_name="trio-broker-bench", client_software_version="1"
            ),
            3,
        )
    elif kind == "metadata":
        topics = [MetadataRequest.Topic(name=TOPIC)]
        body, version = MetadataRequest(topics=topics, allow_auto_topic_creation=False), 12
    elif kind == "produce":
        batch = build_batch([Record(key=None, value=b"x" * 100)])
        data = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)
        body = ProduceRequest(
            acks=1,
            timeout_ms=30000,
            topic_data=[ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[data])],
        )
        version = 9
    else:
        raise ValueError(kind)
    frame = join_parts(encode_request(version, correlation_id, "bench", body))
    return frame, body, version


def _read_frame(sock: socket.socket) -> bytes:
    def exact(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return bytes(buf)

    return exact(_SIZE.unpack(exact(4))[0])


def call(address: str, body: Any, version: int) -> Any:
    """One blocking request/response with our codec (set-up and sanity checks)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(join_parts(encode_request(version, 7, "bench", body)))
        spec = spec_for(body.api_key)
        assert spec is not None
        return decode_response(spec, version, _read_frame(sock))[1]


def prepare_broker(address: str) -> None:
    """Create the topic, then check that one request of each kind is answered without error."""
    topic = CreateTopicsRequest.CreatableTopic(
        name=TOPIC, num_partitions=1, replication_factor=1, assignments=[], configs=[]
    )
    created = call(address, CreateTopicsRequest(topics=[topic], timeout_ms=30000), 7)
    assert created.topics[0].error_code == 0, created
    for kind in KINDS:
        _, body, version = request_frame(kind)
        response = call(address, body, version)
        if kind == "produce":
            errors = [p.error_code for t in response.responses for p in t.partition_responses]
        elif kind == "metadata":
            errors = [t.error_code for t in response.topics]
        else:
            errors = [response.error_code]
        if any(errors):
            raise RuntimeError(f"{kind}: the broker answered errors {errors}: {response}")


# ------------------------------------------------------------------------ client


@dataclass
class Cell:
    target: str
    kind: str
    connections: int
    requests: int = 0
    seconds: float = 0.0
    rps: float = 0.0
    p50_us: float = 0.0
    p99_us: float = 0.0
    server_cpu: float = 0.0  # CPU seconds per second: 1.0 is one core busy
    client_cpu: float = 0.0
    background_busy: float = 0.0  # share of the CPUs busy with other work just before


class _Conn:
    __slots__ = ("buf", "sent_ns", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.sent_ns = 0


def drive(
    address: str, frame: bytes, connections: int, warmup: float, seconds: float, server_pid: int
) -> Cell:
    """``connections`` sockets, one request in flight each, for ``warmup`` + ``seconds``."""
    host, port = address.rsplit(":", 1)
    sel = selectors.EpollSelector()
    conns = []
    for _ in range(connections):
        sock = socket.create_connection((host, int(port)), timeout=10)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        conn = _Conn(sock)
        conns.append(conn)
        sel.register(sock, selectors.EVENT_READ, conn)
    latencies: list[int] = []
    now_ns = time.perf_counter_ns
    for conn in conns:
        conn.sent_ns = now_ns()
        conn.sock.send(frame)
    start = time.perf_counter()
    measure_from = start + warmup
    end = measure_from + seconds
    measuring = False
    count = 0
    cpu0 = ccpu0 = 0.0
    t0 = 0.0
    try:
        while True:
            now = time.perf_counter()
            if not measuring and now >= measure_from:
                measuring = True
                t0, cpu0, ccpu0 = now, cpu_seconds(server_pid), time.process_time()
            if now >= end:
                break
            for key, _ in sel.select(0.5):
                conn = key.data
                data = conn.sock.recv(65536)
                if not data:
                    raise ConnectionError(f"{address} closed a connection")
                buf = conn.buf
                buf += data
                if len(buf) < 4 or len(buf) < 4 + _SIZE.unpack_from(buf, 0)[0]:
                    continue
                buf.clear()  # one request in flight: this is its whole answer
                t = now_ns()
                if measuring:
                    latencies.append(t - conn.sent_ns)
                    count += 1
                conn.sent_ns = t
                conn.sock.send(frame)
        elapsed = time.perf_counter() - t0
        server = cpu_seconds(server_pid) - cpu0
        client = time.process_time() - ccpu0
    finally:
        for conn in conns:
            sel.unregister(conn.sock)
            conn.sock.close()
        sel.close()
    return Cell(
        target="",
        kind="",
        connections=connections,
        requests=count,
        seconds=elapsed,
        rps=count / elapsed,
        p50_us=percentile(latencies, 50) / 1000,
        p99_us=percentile(latencies, 99) / 1000,
        server_cpu=server / elapsed,
        client_cpu=client / elapsed,
    )


# -------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Small-request rate, trio-broker vs a bare Trio echo server."
    )
    p.add_argument("--kinds", default=",".join(KINDS), help="request kinds to run")
    p.add_argument("--connections", default="1,8,64", help="connection counts (1,8,64)")
    p.add_argument("--seconds", type=float, default=2.0, help="measured seconds per run (2)")
    p.add_argument("--warmup", type=float, default=0.5, help="unmeasured seconds first (0.5)")
    p.add_argument("--repeats", type=int, default=3, help="echo/broker pairs per cell (3)")
    p.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="where the broker's log directory goes (default: /dev/shm if any)",
    )
    p.add_argument(
        "--broker-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra trio-broker setting (repeatable)",
    )
    p.add_argument("--profile", type=Path, help="write py-spy profiles of the broker here")
    p.add_argument(
        "--wait-quiet",
        type=float,
        default=10,
        help="before each pair, wait up to this many s for other work to stop (10)",
    )
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--serve-echo", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--serve-skeleton", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_echo:
        serve_echo()
        return 0
    if args.serve_skeleton:
        serve_skeleton()
        return 0
    kinds = [k.strip() for k in args.kinds.split(",")]
    counts = [int(c) for c in args.connections.split(",")]
    options = {
        k: (str(v) if isinstance(v, Path) else v)
        for k, v in vars(args).items()
        if k not in ("json", "serve_echo", "serve_skeleton")
    }
    print(header(TITLE, options), flush=True)
    frames = {kind: request_frame(kind)[0] for kind in kinds}
    cells: list[Cell] = []
    broker = BrokerProcess(args.broker_override, base_dir=args.data_dir)
    with broker, EchoProcess() as echo, EchoProcess("--serve-skeleton") as skeleton:
        prepare_broker(broker.bootstrap)
        log(
            f"trio-broker pid {broker.pid} at {broker.bootstrap}; echo pid {echo.pid}; "
            f"skeleton pid {skeleton.pid}"
        )
        for repeat in range(args.repeats):
            for kind in kinds:
                for n in counts:
                    busy = wait_quiet(args.wait_quiet)
                    for name, address, pid in (
                        ("echo", echo.address, echo.pid),
                        ("skeleton", skeleton.address, skeleton.pid),
                        ("broker", broker.bootstrap, broker.pid),
                    ):
                        profile: Profiler | contextlib.nullcontext[None] = contextlib.nullcontext()
                        if args.profile is not None and name == "broker" and repeat == 0:
                            profile = Profiler(pid, args.profile / f"requests-{kind}-{n}.txt")
                        with profile:
                            cell = drive(address, frames[kind], n, args.warmup, args.seconds, pid)
                        cell.target, cell.kind, cell.background_busy = name, kind, busy
                        cells.append(cell)
                        log(
                            f"{kind} x{n} {name}: {cell.rps:,.0f} req/s p99 "
                            f"{cell.p99_us:,.0f} us server CPU {cell.server_cpu:.2f} "
                            f"client CPU {cell.client_cpu:.2f}"
                        )
    print()
    busiest = max(c.background_busy for c in cells)
    print(f"Other work on the machine before the pairs: at most {busiest:.0%} of the CPUs\n")
    print(results_table(cells, kinds, counts))
    write_json(
        args.json,
        TITLE,
        options,
        {"cells": [asdict(c) for c in cells], "summary": summary(cells, kinds, counts)},
    )
    return 0


def summary(cells: list[Cell], kinds: list[str], counts: list[int]) -> list[dict[str, Any]]:
    out = []
    for kind in kinds:
        for n in counts:
            echo = [c for c in cells if (c.target, c.kind, c.connections) == ("echo", kind, n)]
            mine = [c for c in cells if (c.target, c.kind, c.connections) == ("broker", kind, n)]
            floor = [c for c in cells if (c.target, c.kind, c.connections) == ("skeleton", kind, n)]
            row: dict[str, Any] = {"kind": kind, "connections": n}
            for name, cs in (("echo", echo), ("skeleton", floor), ("broker", mine)):
                for metric in ("rps", "p50_us", "p99_us", "server_cpu", "client_cpu"):
                    row[f"{name}_{metric}"] = median(getattr(c, metric) for c in cs)
                # the server's CPU per request: the distance to the echo's, as a number
                row[f"{name}_cpu_us_per_request"] = median(
                    c.server_cpu / c.rps * 1e6 for c in cs if c.rps > 0
                )
            row["ratio"] = median(b.rps / e.rps for e, b in zip(echo, mine, strict=False))
            # the design's own floor against the echo: the most the broker could reach
            row["skeleton_ratio"] = median(f.rps / e.rps for e, f in zip(echo, floor, strict=False))
            row["target"] = 0.6
            out.append(row)
    return out


def results_table(cells: list[Cell], kinds: list[str], counts: list[int]) -> str:
    rows = []
    for r in summary(cells, kinds, counts):
        ratio = r["ratio"]
        met = "yes" if ratio >= 0.6 else f"no ({ratio / 0.6:.0%} of target)"
        rows.append(
            [
                r["kind"],
                r["connections"],
                r["echo_rps"],
                r["echo_p99_us"],
                r["echo_server_cpu"],
                r["echo_cpu_us_per_request"],
                r["skeleton_rps"],
                r["skeleton_cpu_us_per_request"],
                r["skeleton_ratio"],
                r["broker_rps"],
                r["broker_p50_us"],
                r["broker_p99_us"],
                r["broker_server_cpu"],
                r["broker_cpu_us_per_request"],
                r["broker_client_cpu"],
                ratio,
                met,
            ]
        )
    return "Medians over the repeats (latency in microseconds; CPU: cores busy)\n\n" + table(
        [
            "request",
            "conns",
            "echo req/s",
            "echo p99 us",
            "echo CPU",
            "echo CPU us/req",
            "skeleton req/s",
            "skeleton CPU us/req",
            "skeleton/echo",
            "broker req/s",
            "p50 us",
            "p99 us",
            "broker CPU",
            "broker CPU us/req",
            "client CPU",
            "broker/echo",
            ">= 0.6?",
        ],
        rows,
    )


if __name__ == "__main__":
    sys.exit(main())
