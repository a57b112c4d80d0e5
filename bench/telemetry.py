"""The cost of receiving client telemetry (KIP-714): broker CPU per push, and the memory
of many client instances, with and without fault injection.

What it measures, on one broker process per setting (``bench/_common.BrokerProcess``,
admin API on, one ``CLIENT_METRICS`` subscription ``*`` at the longest interval so no
instance expires during the run):

- **reference**: ``--instances`` pairs of ApiVersions v3 requests (the cheapest request:
  what any two requests cost on the request path);
- **empty push**: per new client instance, GetTelemetrySubscriptions (zero id: the broker
  makes the instance) then a PushTelemetry with no metrics (the protocol's bookkeeping);
- **push**: the same with a payload like librdkafka 2.16's producer sends (its ten
  ``org.apache.kafka.producer.*`` metrics, one with a ``node.id`` attribute, zstd,
  ``trio_broker.testing.otlp``): what the request path does with a payload (decompression
  and a check that it parses as OTLP; before the lazy decoding, the decoding too);
- **reads**: then ``GET /v1/client-metrics`` twice, wall time and broker CPU: the first
  decodes every payload pushed and not read yet, the second finds them decoded (both
  include the JSON of every instance kept).

Each is the broker's CPU seconds (``/proc``) over the phase, divided by the pairs sent,
the phase cut into ``--rounds`` chunks (the median of the chunks' figures is given; the
mean too, in the JSON); "push - reference" is what telemetry adds over two plain
requests. The client is this process, one connection per broker, one request at a time
(its CPU is not counted). RSS is read
after the reference (the base) and after each telemetry phase; with ``--cap`` below
``--instances`` the broker keeps ``--cap`` instances and evicts the rest, and the RSS says
whether memory stays bounded. ``--faults`` runs every setting twice: fault injection off
(the default, no hook on the request path) and on (``testing.faults.enable=true``, no rule
set: the hook's cost alone). ``--compare-src DIR`` runs every setting with a second
broker, of another checkout (``PYTHONPATH=DIR``; the client side stays this one's), beside
this one's: the two take turns chunk by chunk, so a before/after sees the same load from
the rest of the machine and is measured against its own reference phase:

    git worktree add --detach ../base <commit>
    .venv/bin/python bench/telemetry.py --faults --compare-src ../base

    .venv/bin/python bench/telemetry.py                       # 10,000 instances, ~1-2 min
    .venv/bin/python bench/telemetry.py --instances 200 --json out.json

Every load is bounded by ``--instances``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
import urllib.request
import uuid
from typing import Any

from _common import (
    BrokerProcess,
    cpu_seconds,
    default_data_dir,
    header,
    http,
    log,
    rss_bytes,
    table,
    wait_quiet,
    write_json,
)

import trio_broker.protocol.messages  # noqa: F401  (registers the message classes)
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.telemetry import (
    GetTelemetrySubscriptionsRequest,
    PushTelemetryRequest,
)
from trio_broker.records import Compression
from trio_broker.records.codec import compress
from trio_broker.testing.otlp import LIBRDKAFKA_PRODUCER, otlp_metrics
from trio_broker.tools.client import WireClient

ZERO = uuid.UUID(int=0)


def librdkafka_like_payload() -> bytes:
    return compress(Compression.ZSTD, otlp_metrics(LIBRDKAFKA_PRODUCER))


def phase(b: BrokerProcess, client: WireClient, n: int, kind: str, payload: bytes) -> float:
    """Broker CPU seconds for ``n`` request pairs of ``kind``."""
    before = cpu_seconds(b.pid)
    for _ in range(n):
        if kind == "reference":
            client.request(ApiVersionsRequest(), 3)
            client.request(ApiVersionsRequest(), 3)
            continue
        got = client.request(GetTelemetrySubscriptionsRequest(client_instance_id=ZERO), 0)
        assert got.error_code == ErrorCode.NONE, got
        pushed = client.request(
            PushTelemetryRequest(
                client_instance_id=got.client_instance_id,
                subscription_id=got.subscription_id,
                terminating=False,
                compression_type=Compression.ZSTD if payload else 0,
                metrics=payload,
            ),
            0,
        )
        assert pushed.error_code == ErrorCode.NONE, pushed
    return cpu_seconds(b.pid) - before


def get_json(b: BrokerProcess, path: str) -> Any:
    with urllib.request.urlopen(f"{b.admin_url}{path}", timeout=120) as resp:
        return json.loads(resp.read())


def read_clients(b: BrokerProcess) -> tuple[float, float, int]:
    """One ``GET /v1/client-metrics``: wall ms, broker CPU ms, clients listed."""
    cpu, wall = cpu_seconds(b.pid), time.perf_counter()
    clients = len(get_json(b, "/v1/client-metrics")["clients"])
    return (time.perf_counter() - wall) * 1e3, (cpu_seconds(b.pid) - cpu) * 1e3, clients


KINDS = ("reference", "empty", "push")


def run_setting(args: argparse.Namespace, faults: bool, cap: int) -> list[dict[str, Any]]:
    """One row per broker: this checkout's, and first ``--compare-src``'s if given. The
    brokers run side by side and take turns: every phase is cut into ``--rounds`` chunks,
    each chunk run on one broker then the other (the order swapped every round), so both
    see the same load from the rest of the machine; a phase's figure per pair is the
    median of its chunks' (and the mean, ``*_mean_us``, in the JSON)."""
    overrides = [
        "admin.listeners=http://127.0.0.1:0",
        f"client.metrics.max.clients={cap}",
        f"testing.faults.enable={'true' if faults else 'false'}",
    ]
    payload = librdkafka_like_payload()
    n = args.instances
    rounds = max(1, min(args.rounds, n))
    chunks = [n // rounds + (1 if i < n % rounds else 0) for i in range(rounds)]
    sources = [args.compare_src, None] if args.compare_src else [None]
    rows: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        runs = []
        for source in sources:
            b = stack.enter_context(BrokerProcess(overrides, base_dir=args.data_dir, source=source))
            url = f"{b.admin_url}/v1/client-metrics/subscriptions/all"
            http("PUT", url, {"metrics": "*", "interval.ms": 3_600_000})
            client = stack.enter_context(WireClient(b.bootstrap, client_id="bench"))
            phase(b, client, min(200, n), "reference", b"")  # warm up
            per_pair: dict[str, list[float]] = {kind: [] for kind in KINDS}
            runs.append((source, b, client, per_pair, {}))
        for kind in KINDS:
            for i, size in enumerate(chunks):
                for _, b, client, per_pair, _ in runs if i % 2 == 0 else runs[::-1]:
                    cpu = phase(b, client, size, kind, payload if kind == "push" else b"")
                    per_pair[kind].append(cpu / size)
            for _, b, _, _, rss in runs:
                rss[kind] = rss_bytes(b.pid)
        for source, b, _, per_pair, rss in runs:
            # read with the connection open (an instance goes with the connection it was
            # made on: the last one made would go when it closes)
            first_read = read_clients(b)  # decodes what was pushed and never read (lazily)
            second_read = read_clients(b)  # what is decoded stays so
            kept = get_json(b, "/v1/metrics")["client_telemetry"]
            med = {kind: statistics.median(per_pair[kind]) * 1e6 for kind in KINDS}
            mean = {kind: sum(per_pair[kind]) / len(per_pair[kind]) * 1e6 for kind in KINDS}
            rows.append(
                {
                    "code": "compared" if source else "this",
                    "faults": faults,
                    "cap": cap,
                    "rounds": rounds,
                    "instances_made": 2 * n,
                    "payload_bytes": len(payload),
                    "reference_us": med["reference"],
                    "empty_push_us": med["empty"],
                    "push_us": med["push"],
                    "push_minus_reference_us": med["push"] - med["reference"],
                    "reference_mean_us": mean["reference"],
                    "empty_push_mean_us": mean["empty"],
                    "push_mean_us": mean["push"],
                    "rss_base_mb": rss["reference"] / 2**20,
                    "rss_after_empty_mb": rss["empty"] / 2**20,
                    "rss_after_push_mb": rss["push"] / 2**20,
                    "first_read_ms": first_read[0],
                    "first_read_cpu_ms": first_read[1],
                    "second_read_ms": second_read[0],
                    "second_read_cpu_ms": second_read[1],
                    "clients_read": first_read[2],
                    "rss_after_read_mb": rss_bytes(b.pid) / 2**20,
                    "instances_kept": kept["instances"],
                    "evicted": kept["evicted"],
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=10_000, help="pairs per phase")
    parser.add_argument(
        "--cap", default="16384,5000", help="client.metrics.max.clients values, comma-separated"
    )
    parser.add_argument("--faults", action="store_true", help="also with fault injection on")
    parser.add_argument(
        "--compare-src",
        help="another checkout (e.g. a git worktree of the base commit): each setting runs "
        "its broker too, just before this one's",
    )
    parser.add_argument(
        "--rounds", type=int, default=10, help="chunks of each phase, taken in turns"
    )
    parser.add_argument("--data-dir", default=default_data_dir())
    parser.add_argument("--wait-quiet", type=float, default=10.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    options = {k: v for k, v in vars(args).items() if k != "json"}
    print(header("client telemetry: CPU per push, memory of instances", options))
    rows: list[dict[str, Any]] = []
    for cap in [int(c) for c in str(args.cap).split(",")]:
        for faults in (False, True) if args.faults else (False,):
            busy = wait_quiet(args.wait_quiet)
            log(f"cap {cap}, faults {'on' if faults else 'off'} (machine {busy:.0%} busy)")
            for row in run_setting(args, faults, cap):
                row["machine_busy"] = busy
                rows.append(row)
    print(
        table(
            [
                "code",
                "cap",
                "faults",
                "ref us/pair",
                "empty push us",
                "push us",
                "push-ref us",
                "RSS base MB",
                "RSS +empty MB",
                "RSS +push MB",
                "1st read ms",
                "1st read CPU ms",
                "2nd read ms",
                "kept",
                "evicted",
            ],
            [
                [
                    r["code"],
                    r["cap"],
                    "on" if r["faults"] else "off",
                    r["reference_us"],
                    r["empty_push_us"],
                    r["push_us"],
                    r["push_minus_reference_us"],
                    r["rss_base_mb"],
                    r["rss_after_empty_mb"],
                    r["rss_after_push_mb"],
                    r["first_read_ms"],
                    r["first_read_cpu_ms"],
                    r["second_read_ms"],
                    r["instances_kept"],
                    r["evicted"],
                ]
                for r in rows
            ],
        )
    )
    write_json(args.json, "telemetry", options, {"rows": rows})


if __name__ == "__main__":
    main()
