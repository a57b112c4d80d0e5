"""Kafka's motivating experiment for a separate control plane (KIP-291), on trio-broker.

What is measured: with a deep backlog of produce requests on the data plane, the time from
sending a LeaderAndIsr (which makes this broker a follower of the partition being written)
to the broker answering a produce to that partition with NOT_LEADER_OR_FOLLOWER, and the
LeaderAndIsr's own response time. Once with a separate control-plane listener (its own
acceptor, processor, request channel of 20 and handler), once without (the LeaderAndIsr
then goes to the data listener and waits in the same request channel as the produces).

How: the broker runs as its own process with ``num.io.threads=1`` and
``log.flush.interval.messages=1`` (every append fsyncs, so each produce takes a while) and
a request channel of 500. ``--connections`` raw clients (trio tasks in this process, our
own codec) keep one acks=1 produce each in flight to partition 0, so the request channel
stays full. After ``--warmup`` seconds the controller's LeaderAndIsr goes out (leader =
broker 1, a new leader epoch); the clients record when the first NOT_LEADER_OR_FOLLOWER
comes back. Repeated ``--rounds`` times per setup on a fresh broker; medians are printed,
and the slowest LeaderAndIsr answer of each setup against the target: a separate control
plane answers within ``TARGET_MS`` (50 ms) while the data plane is full. (The unit suite
checks only the order, tests/control/: timing belongs here.)

Run: ``.venv/bin/python bench/control_plane.py [--connections 200] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import struct
import sys
import time
from typing import Any

import trio
from _common import (
    BrokerProcess,
    command_line,
    default_data_dir,
    header,
    log,
    table,
    wait_quiet,
    write_json,
)

from trio_broker.protocol import messages  # noqa: F401
from trio_broker.protocol.api import spec_for
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.header import decode_response, encode_request
from trio_broker.protocol.messages.controller import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
)
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.produce import ProduceRequest
from trio_broker.protocol.primitives import join_parts
from trio_broker.records.builder import Record, build_batch

TOPIC = "kip291"
TARGET_MS = 50.0  # a LeaderAndIsr on the control plane is answered within this, data plane full


class Client:
    """One connection, one request in flight, our own codec."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = bytearray()
        self.corr = itertools.count(1)

    @classmethod
    async def connect(cls, address: str) -> Client:
        host, port = address.rsplit(":", 1)
        return cls(await trio.open_tcp_stream(host, int(port)))

    async def request(self, body: Any, version: int) -> Any:
        corr = next(self.corr)
        await self.stream.send_all(join_parts(encode_request(version, corr, "bench", body)))
        while True:
            if len(self.buf) >= 4:
                (size,) = struct.unpack_from(">i", self.buf)
                if len(self.buf) >= 4 + size:
                    frame = bytes(self.buf[4 : 4 + size])
                    del self.buf[: 4 + size]
                    spec = spec_for(body.api_key)
                    assert spec is not None
                    return decode_response(spec, version, frame)[1]
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise ConnectionError("closed by the broker")
            self.buf += chunk


def produce_request(batch: bytes) -> ProduceRequest:
    data = ProduceRequest.TopicProduceData
    return ProduceRequest(
        acks=1,
        timeout_ms=30000,
        topic_data=[
            data(name=TOPIC, partition_data=[data.PartitionProduceData(index=0, records=batch)])
        ],
    )


def leader_and_isr(epoch: int) -> LeaderAndIsrRequest:
    state = LeaderAndIsrPartitionState(
        partition_index=0,
        controller_epoch=1,
        leader=1,
        leader_epoch=epoch,
        isr=[1],
        partition_epoch=epoch,
        replicas=[0, 1],
    )
    return LeaderAndIsrRequest(
        controller_id=1,
        controller_epoch=1,
        topic_states=[LeaderAndIsrRequest.TopicState(topic_name=TOPIC, partition_states=[state])],
    )


async def one_round(
    address: str, control_address: str, connections: int, warmup: float
) -> dict[str, float]:
    setup = await Client.connect(address)
    req = MetadataRequest(topics=[MetadataRequest.Topic(name=TOPIC)])
    await setup.request(req, 9)  # auto-creates the topic
    batch = build_batch([Record(None, b"x" * 100)])
    clients = [await Client.connect(address) for _ in range(connections)]
    first_not_leader: list[float] = []
    done = trio.Event()
    sent_at = [0.0]
    produced = [0]

    async def produce(client: Client) -> None:
        while not done.is_set():
            resp = await client.request(produce_request(batch), 8)
            code = resp.responses[0].partition_responses[0].error_code
            if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                if not first_not_leader:
                    first_not_leader.append(time.perf_counter())
                    done.set()
                return
            produced[0] += 1

    async with trio.open_nursery() as nursery:
        for c in clients:
            nursery.start_soon(produce, c)
        await trio.sleep(warmup)  # the request channel fills up
        control = await Client.connect(control_address)
        sent_at[0] = time.perf_counter()
        resp = await control.request(leader_and_isr(1), 7)
        answered = time.perf_counter()
        assert resp.topics[0].partition_errors[0].error_code == 0, resp
        with trio.fail_after(120):
            await done.wait()
    return {
        "leader_and_isr_ms": (answered - sent_at[0]) * 1000,
        "not_leader_ms": (first_not_leader[0] - sent_at[0]) * 1000,
        "produced_before": produced[0],
    }


def run_setup(separate: bool, args: argparse.Namespace) -> list[dict[str, float]]:
    results = []
    for r in range(args.rounds):
        overrides = [
            "num.io.threads=1",
            "num.network.threads=3",
            "log.flush.interval.messages=1",
            "queued.max.requests=500",
        ]
        if separate:
            overrides += [
                "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
                "control.plane.listener.name=CONTROLLER",
            ]
        with BrokerProcess(overrides, base_dir=args.data_dir or default_data_dir()) as broker:
            listeners = broker.listeners()
            control = listeners["CONTROLLER"] if separate else listeners["PLAINTEXT"]
            result = trio.run(
                one_round, listeners["PLAINTEXT"], control, args.connections, args.warmup
            )
        log(f"{'separate' if separate else 'shared'} control plane, round {r + 1}: {result}")
        results.append(result)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=200, help="producing clients")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per setup (3)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of backlog first")
    parser.add_argument("--data-dir", default=None, help="where the broker's logs go")
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        help="seconds to wait for a quiet machine first (0: don't)",
    )
    args = parser.parse_args(argv)
    options = vars(args)
    if args.wait_quiet:
        wait_quiet(args.wait_quiet)
    print(header("Control plane under a data-plane backlog (KIP-291)", options))
    results = {"separate": run_setup(True, args), "shared": run_setup(False, args)}
    rows = []
    for name, runs in results.items():
        slowest = max(r["leader_and_isr_ms"] for r in runs)
        rows.append(
            [
                name,
                len(runs),
                statistics.median(r["leader_and_isr_ms"] for r in runs),
                slowest,
                ("yes" if slowest <= TARGET_MS else "no") if name == "separate" else "-",
                statistics.median(r["not_leader_ms"] for r in runs),
            ]
        )
    print(
        table(
            [
                "control plane",
                "rounds",
                "LeaderAndIsr answered (ms, median)",
                "slowest (ms)",
                f"<= {TARGET_MS:g} ms?",
                "first NOT_LEADER_OR_FOLLOWER (ms)",
            ],
            rows,
        )
    )
    print(f"\ncommand: {command_line()}")
    write_json(args.json, "control_plane", options, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
