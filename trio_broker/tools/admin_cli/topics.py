"""The topic commands of ``trio-broker-admin``: what they ask ``/v1/topics``, and how they
show the answer.

Owns: ``topics_list`` (``topics``, ``topic list``), ``topic_describe``, ``topic_create``
and ``topic_delete``, each ``(client, args) -> Output`` as in ``commands``, and the
command line's ``--assignment`` syntax (``parse_assignment``: partitions separated by
``:``, a partition's brokers by ``,``). Counts, names and configs go to the server as
given, so a refusal is the broker's own (its Kafka error and message).
Must not: import anything of the broker: the tool speaks only HTTP.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from .client import AdminClient, path_of
from .commands import Output, UsageError
from .render import EMPTY, table


def parse_assignment(items: Sequence[str]) -> list[list[int]]:
    """``["0,1:1,2", "2,0"]`` -> ``[[0, 1], [1, 2], [2, 0]]``: each item's partitions
    follow the previous item's."""
    out: list[list[int]] = []
    for item in items:
        for part in item.split(":"):
            try:
                out.append([int(b) for b in part.split(",")])
            except ValueError:
                raise UsageError(
                    f"--assignment {item}: expected broker ids, a partition's separated by "
                    "',' and partitions by ':' (0,1:1,2: partition 0 on brokers 0 and 1, "
                    "partition 1 on 1 and 2)"
                ) from None
    return out


def _configs(items: Sequence[str]) -> dict[str, str]:
    configs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--config {item}: expected KEY=VALUE, e.g. retention.ms=86400000")
        configs[key.strip()] = value
    return configs


def _configs_text(configs: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(configs.items())) or EMPTY


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids)) or EMPTY


def _topics_text(topics: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        [
            t["name"],
            t["partition_count"],
            t["replication_factor"],
            "yes" if t["internal"] else "no",
            t["topic_id"],
            _configs_text(t["configs"]),
        ]
        for t in topics
    ]
    headers = ["TOPIC", "PARTITIONS", "REPLICATION", "INTERNAL", "TOPIC ID", "CONFIGS"]
    return table(headers, rows, empty="(no topics)")


def _topic_text(t: Mapping[str, Any]) -> str:
    head = (
        f"topic {t['name']}  id {t['topic_id']}  partitions {t['partition_count']}  "
        f"replication {t['replication_factor']}" + ("  (internal)" if t["internal"] else "")
    )
    rows = [
        [
            p["partition"],
            p["leader"],
            p["leader_epoch"],
            _ids(p["replicas"]),
            _ids(p["isr"]),
            _ids(p["offline"]),
        ]
        for p in t["partitions"]
    ]
    headers = ["PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE"]
    return "\n".join(
        [
            head,
            f"configs: {_configs_text(t['configs'])}",
            "",
            table(headers, rows, empty="(no partitions)"),
        ]
    )


def topics_list(client: AdminClient, args: argparse.Namespace) -> Output:
    answer = client.call("GET", "/v1/topics")
    return Output(answer, _topics_text(answer["topics"]))


def topic_describe(client: AdminClient, args: argparse.Namespace) -> Output:
    topic = client.call("GET", path_of("v1", "topics", args.name))
    return Output(topic, _topic_text(topic))


def topic_create(client: AdminClient, args: argparse.Namespace) -> Output:
    body: dict[str, Any] = {"name": args.name}
    if args.partitions is not None:
        body["partitions"] = args.partitions
    if args.replication_factor is not None:
        body["replication_factor"] = args.replication_factor
    if args.config:
        body["configs"] = _configs(args.config)
    if args.assignment:
        body["assignment"] = parse_assignment(args.assignment)
    if args.validate_only:
        body["validate_only"] = True
    answer = client.call("POST", "/v1/topics", body=body)
    if args.validate_only:
        placed = answer["assignment"]
        where = "placed by the broker" if placed is None else ":".join(map(_ids, placed))
        text = (
            "validate only: valid, nothing was created\n"
            f"topic {answer['name']}  partitions {answer['partition_count']}  "
            f"replication {answer['replication_factor']}  replicas {where}\n"
            f"configs: {_configs_text(answer['configs'])}"
        )
        return Output(answer, text)
    return Output(answer, f"created topic {answer['name']}\n\n{_topic_text(answer)}")


def topic_delete(client: AdminClient, args: argparse.Namespace) -> Output:
    gone = client.call("DELETE", path_of("v1", "topics", args.name))
    return Output(gone, f"deleted topic {gone['name']} (id {gone['topic_id']})")
