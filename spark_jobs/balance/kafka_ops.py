"""Kafka's own APIs, as the balance job calls them (kafka-python's admin client).

Owns ``KafkaOps``: AlterPartitionReassignments and ListPartitionReassignments, ElectLeaders
(preferred), IncrementalAlterConfigs and DescribeConfigs of brokers and topics (a broker's
own settings are sent to that broker, as Kafka's tools do), DescribeLogDirs (log sizes
per replica, each log dir's total and usable bytes) and ListOffsets (latest offsets). The
broker's controller does the work and the checks; errors come back by name.
Must not: decide anything (the executor and the sampler do).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from .model import Key

BROKER, TOPIC = "BROKER", "TOPIC"

# kafka-python logs a reconnect to a broker that went away at ERROR: the executor reports
# what matters itself.
logging.getLogger("kafka").setLevel(logging.CRITICAL)


def _error_name(err: Any) -> str:
    if err is None:
        return "ok"
    name = getattr(err, "__name__", None) or type(err).__name__
    return str(name)


class KafkaOps:
    def __init__(self, bootstrap: str, timeout_s: float = 30.0) -> None:
        from kafka import KafkaAdminClient

        self.timeout_ms = int(timeout_s * 1000)
        self.admin = KafkaAdminClient(
            bootstrap_servers=bootstrap.split(","),
            client_id="trio-broker-balance",
            request_timeout_ms=self.timeout_ms,
        )

    def close(self) -> None:
        self.admin.close()

    def __enter__(self) -> KafkaOps:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ reassignments

    def reassign(self, targets: Mapping[Key, list[int] | None]) -> dict[Key, str]:
        """AlterPartitionReassignments: each partition's outcome ("ok" or the error)."""
        from kafka import TopicPartition

        result = self.admin.alter_partition_reassignments(
            {TopicPartition(t, p): r for (t, p), r in targets.items()}, timeout_ms=self.timeout_ms
        )
        return {(tp.topic, tp.partition): _error_name(err) for tp, err in result.items()}

    def ongoing(self) -> dict[Key, dict[str, list[int]]]:
        """ListPartitionReassignments: every move under way."""
        found = self.admin.list_partition_reassignments(timeout_ms=self.timeout_ms)
        return {(tp.topic, tp.partition): v for tp, v in found.items()}

    def elect_preferred(self, keys: Iterable[Key]) -> dict[Key, str]:
        """ElectLeaders (preferred): each partition's outcome: "ok", "not needed" (its
        preferred replica leads already) or the error."""
        wanted: dict[str, list[int]] = {}
        for t, p in sorted(keys):
            wanted.setdefault(t, []).append(p)
        if not wanted:
            return {}
        import kafka.errors as errors

        response = self.admin.elect_leaders(
            0, wanted, timeout_ms=self.timeout_ms, raise_errors=False
        )
        out = {}
        for r in response.replica_election_results:
            for p in r.partition_result:
                err = errors.for_code(p.error_code)
                if err is errors.NoError:
                    outcome = "ok"
                elif err is errors.ElectionNotNeededError:
                    outcome = "not needed"
                else:
                    outcome = p.error_message or _error_name(err)
                out[(r.topic, p.partition_id)] = outcome
        return out

    # ------------------------------------------------------------------ configs

    def configs(self, kind: str, name: str, keys: list[str]) -> dict[str, str | None]:
        """The values of ``keys`` set on a broker (its own dynamic settings) or a topic;
        None where none is set at that level."""
        from kafka.admin import ConfigResource, ConfigResourceType

        res = ConfigResource(ConfigResourceType[kind], name, keys)
        found = self.admin.describe_configs([res])
        entries = found.get(kind.lower(), {}).get(name, {})
        out: dict[str, str | None] = {}
        for k in keys:
            e = entries.get(k)
            level = "DYNAMIC_TOPIC_CONFIG" if kind == TOPIC else "DYNAMIC_BROKER_CONFIG"
            out[k] = e["value"] if e and e.get("config_source") == level else None
        return out

    def alter(self, kind: str, name: str, ops: Mapping[str, tuple[str, str | None]]) -> str:
        """IncrementalAlterConfigs of one broker (sent to it) or topic: ``{key: (op,
        value)}`` with op SET, DELETE, APPEND or SUBTRACT; "ok" or the error."""
        from kafka.admin import ConfigResource, ConfigResourceType

        res = ConfigResource(ConfigResourceType[kind], name, dict(ops))
        found = self.admin.alter_configs([res], incremental=True, raise_on_unknown=False)
        outcome = found.get(kind.lower(), {}).get(name, "missing answer")
        return "ok" if outcome == "OK" else str(outcome)

    # ------------------------------------------------------------------ reading

    def log_dirs(self, brokers: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Per broker: ``sizes`` {partition: bytes} and ``total``, ``usable``, ``used``
        bytes over its log dirs (None where a broker does not say)."""
        out: dict[int, dict[str, Any]] = {}
        for answer in self.admin.describe_log_dirs(brokers=sorted(brokers)):
            sizes: dict[Key, int] = {}
            total = usable = 0
            known = True
            for d in answer["log_dirs"]:
                if d.get("error_code"):
                    continue
                for t in d.get("topics", []):
                    for p in t.get("partitions", []):
                        if not p.get("is_future_key"):
                            sizes[(t["name"], int(p["partition_index"]))] = int(p["partition_size"])
                if d.get("total_bytes", -1) < 0:
                    known = False
                else:
                    total += int(d["total_bytes"])
                    usable += int(d["usable_bytes"])
            out[int(answer["broker"])] = {
                "sizes": sizes,
                "used": sum(sizes.values()),
                "total": total if known else None,
                "usable": usable if known else None,
            }
        return out

    def latest_offsets(self, keys: Iterable[Key]) -> dict[Key, int]:
        """ListOffsets (latest) of each partition, from its leader."""
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        specs = {TopicPartition(t, p): OffsetSpec.LATEST for t, p in keys}
        if not specs:
            return {}
        found = self.admin.list_partition_offsets(specs, timeout_ms=self.timeout_ms)
        return {(tp.topic, tp.partition): int(o.offset) for tp, o in found.items()}
