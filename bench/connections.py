"""Memory per idle connection and accept rate of trio-broker (and of a bare Trio server).

What it measures, for each connection count (1,000 and 10,000 by default), on a fresh
broker process each time:

* accept rate: this process opens the connections, at most ``--concurrency`` handshakes
  at a time, and on each sends one ApiVersions v3 request, as every Kafka client does
  first; a connection counts once its answer is back, so the rate (connections/s, from the
  first connect to the last answer) covers the broker's accept, hand-over to a processor,
  connection set-up and one request - not just the kernel's handshake, which completes
  in the listen backlog whether or not the broker has called ``accept``;
* memory per idle connection: the broker's RSS (``VmRSS`` of ``/proc/<pid>/status``)
  once all connections are open and idle (after ``--settle`` seconds), minus its RSS
  just before the first connect, divided by the count. Kernel socket buffers are not in
  RSS; this is the broker's own (Python) memory per connection. The RSS after closing
  them all is shown too (does the memory come back?).

The same is measured on the bare Trio echo server of ``bench/request_rate.py`` (one task
per connection reading frames into a bytearray): the floor for a Trio server.

Limits: this process raises its open-files limit with ``resource.setrlimit`` (to the hard
limit), and the broker is started with the same (``preexec_fn``, as ``ulimit -n`` would);
10,000 connections need 10,000 descriptors on each side. Sockets are closed with
``SO_LINGER`` 0 so no TIME_WAIT ports are left behind between runs. The broker's
``max.connections`` and ``max.connections.per.ip`` default to unlimited.

Run from the repository (``scripts/test`` sets up ``.venv``)::

    .venv/bin/python bench/connections.py                  # about 1 minute
    .venv/bin/python bench/connections.py --counts 1000 --repeats 3 --json out.json

Before each pair of runs the script waits up to ``--wait-quiet`` s for other work on
the machine to stop (under 10% of the CPUs busy), and records how busy it was.
Every phase is bounded by ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import errno
import gc
import selectors
import socket
import struct
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _common import (
    BrokerProcess,
    default_data_dir,
    header,
    log,
    median,
    raise_nofile,
    rss_bytes,
    table,
    wait_quiet,
    write_json,
)
from request_rate import EchoProcess, request_frame

TITLE = "connections: memory per idle connection and accept rate"
_SIZE = struct.Struct(">i")
_LINGER_0 = struct.pack("ii", 1, 0)


@dataclass
class Result:
    server: str
    connections: int
    opened: int = 0
    seconds: float = 0.0
    per_second: float = 0.0
    rss_before: int = 0
    rss_open: int = 0
    rss_closed: int = 0
    bytes_per_connection: float = 0.0
    background_busy: float = 0.0


class _Pending:
    __slots__ = ("buf", "connected", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.connected = False


def open_connections(
    address: str, count: int, concurrency: int, frame: bytes, timeout: float
) -> tuple[list[socket.socket], float]:
    """``count`` connections that each got an answer to ``frame``; and the seconds it took."""
    host, port_s = address.rsplit(":", 1)
    target = (host, int(port_s))
    sel = selectors.EpollSelector()
    done: list[socket.socket] = []
    in_progress = 0
    started = 0
    t0 = time.perf_counter()
    deadline = t0 + timeout
    try:
        while len(done) < count:
            while in_progress < concurrency and started < count:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setblocking(False)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_0)
                err = sock.connect_ex(target)
                if err not in (0, errno.EINPROGRESS):
                    sock.close()
                    raise OSError(err, f"connect to {address}: {errno.errorcode.get(err)}")
                sel.register(sock, selectors.EVENT_WRITE, _Pending(sock))
                in_progress += 1
                started += 1
            if time.perf_counter() > deadline:
                raise TimeoutError(f"only {len(done)} of {count} connections within {timeout} s")
            for key, _ in sel.select(0.5):
                p: _Pending = key.data
                if not p.connected:
                    err = p.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        raise OSError(err, f"connect to {address}: {errno.errorcode.get(err)}")
                    p.connected = True
                    p.sock.send(frame)
                    sel.modify(p.sock, selectors.EVENT_READ, p)
                    continue
                data = p.sock.recv(65536)
                if not data:
                    raise ConnectionError(f"{address} closed a new connection")
                p.buf += data
                if len(p.buf) >= 4 and len(p.buf) >= 4 + _SIZE.unpack_from(p.buf, 0)[0]:
                    sel.unregister(p.sock)
                    done.append(p.sock)
                    in_progress -= 1
        return done, time.perf_counter() - t0
    except BaseException:
        for key in list(sel.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        for sock in done:
            sock.close()
        raise
    finally:
        sel.close()


def measure(
    server: str, address: str, pid: int, count: int, args: argparse.Namespace, frame: bytes
) -> Result:
    result = Result(server, count)
    result.background_busy = wait_quiet(args.wait_quiet)
    time.sleep(args.settle)
    result.rss_before = rss_bytes(pid)
    socks, seconds = open_connections(address, count, args.concurrency, frame, args.timeout)
    try:
        result.opened = len(socks)
        result.seconds = seconds
        result.per_second = len(socks) / seconds
        time.sleep(args.settle)
        result.rss_open = rss_bytes(pid)
        result.bytes_per_connection = (result.rss_open - result.rss_before) / len(socks)
    finally:
        for sock in socks:
            sock.close()
        del socks
        gc.collect()
    time.sleep(args.settle)
    result.rss_closed = rss_bytes(pid)
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Memory per idle connection and accept rate.")
    p.add_argument("--counts", default="1000,10000", help="connection counts (1000,10000)")
    p.add_argument("--repeats", type=int, default=1, help="fresh servers per count (1)")
    p.add_argument("--concurrency", type=int, default=200, help="handshakes at a time (200)")
    p.add_argument("--settle", type=float, default=1.0, help="seconds before RSS readings (1)")
    p.add_argument("--timeout", type=float, default=120, help="most seconds per phase (120)")
    p.add_argument("--no-echo", action="store_true", help="skip the bare Trio reference")
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
    p.add_argument(
        "--wait-quiet",
        type=float,
        default=10,
        help="before each run, wait up to this many s for other work to stop (10)",
    )
    p.add_argument("--json", help="write the results to this file")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    limit = raise_nofile(max(counts) + 256)
    if limit < max(counts) + 64:
        print(f"open-files limit {limit} is too low for {max(counts)} connections")
        return 2
    options = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    options.pop("json")
    print(header(TITLE, options), flush=True)
    frame = request_frame("api_versions")[0]
    results: list[Result] = []
    for _ in range(args.repeats):
        for count in counts:
            with BrokerProcess(args.broker_override, base_dir=args.data_dir) as broker:
                r = measure("trio-broker", broker.bootstrap, broker.pid, count, args, frame)
            results.append(r)
            log(_line(r))
            if not args.no_echo:
                with EchoProcess() as echo:
                    r = measure("bare trio", echo.address, echo.pid, count, args, frame)
                results.append(r)
                log(_line(r))
    print()
    print(results_table(results, counts))
    write_json(
        args.json,
        TITLE,
        options,
        {"runs": [asdict(r) for r in results], "summary": summary(results, counts)},
    )
    return 0


def _line(r: Result) -> str:
    return (
        f"{r.server} {r.connections}: {r.per_second:,.0f} conn/s, "
        f"{r.bytes_per_connection / 1024:.1f} KiB per connection"
    )


def summary(results: list[Result], counts: list[int]) -> list[dict[str, Any]]:
    out = []
    for server in ("trio-broker", "bare trio"):
        for count in counts:
            rs = [r for r in results if (r.server, r.connections) == (server, count)]
            if not rs:
                continue
            out.append(
                {
                    "server": server,
                    "connections": count,
                    "runs": len(rs),
                    "per_second": median(r.per_second for r in rs),
                    "kib_per_connection": median(r.bytes_per_connection / 1024 for r in rs),
                    "rss_before_mib": median(r.rss_before / 2**20 for r in rs),
                    "rss_open_mib": median(r.rss_open / 2**20 for r in rs),
                    "rss_closed_mib": median(r.rss_closed / 2**20 for r in rs),
                }
            )
    return out


def results_table(results: list[Result], counts: list[int]) -> str:
    rows = []
    for s in summary(results, counts):
        kib = s["kib_per_connection"]
        met = (
            ""
            if s["server"] != "trio-broker"
            else ("yes" if kib <= 20 else f"no ({kib / 20:.1f}x)")
        )
        rows.append(
            [
                s["server"],
                s["connections"],
                s["runs"],
                s["per_second"],
                s["rss_before_mib"],
                s["rss_open_mib"],
                s["rss_closed_mib"],
                kib,
                met,
            ]
        )
    return "Medians over the runs (RSS in MiB)\n\n" + table(
        [
            "server",
            "connections",
            "runs",
            "conn/s",
            "RSS before",
            "RSS open",
            "RSS closed",
            "KiB/conn",
            "<= 20 KiB?",
        ],
        rows,
    )


if __name__ == "__main__":
    sys.exit(main())
