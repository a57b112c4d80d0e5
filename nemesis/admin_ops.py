"""The admin workload and its checks: topics created, changed and deleted under faults.

Owns: ``AdminWorker``, a confluent-kafka AdminClient that, once a second, in turn creates a
topic ``adm-N`` (one partition, three replicas), sets ``retention.ms`` of the topic made
before it to a value of its own, and deletes the topic made two steps before, recording
each operation's outcome (acknowledged, refused with an error, or unknown: timed out);
``metadata_of``, one broker's own view of the topics (the answer's broker id is checked);
and ``check_admin``, after the heal, once the cluster settled:

- **lost topic**: a creation acknowledged, whose topic no deletion could have removed (none
  acknowledged or unknown), missing from ZooKeeper or from a broker's metadata;
- **zombie topic**: a deletion acknowledged, and the topic still in ZooKeeper or in a
  broker's metadata (Kafka deletes asynchronously: the check waits, bounded, first);
- **config lost**: a topic whose ``retention.ms`` is not the last value acknowledged for it
  (or a value of a later change whose outcome is unknown);
- **divergent metadata**: two brokers that list different ``adm-`` topics, once settled;
- **stuck**: no creation acknowledged in the minute after the heal.

An operation whose answer was an error other than a timeout did nothing; one that timed
out is unknown: either outcome is allowed. It must not know about faults.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from .checker import Findings
from .worker import Worker

PREFIX = "adm-"
UNKNOWN_CODES = {
    KafkaError._TIMED_OUT,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError.NETWORK_EXCEPTION,
}


@dataclass
class Op:
    kind: str  # create, alter, delete
    topic: str
    value: int = 0  # alter: the retention.ms set
    sent: float = 0.0
    outcome: str = "unknown"  # ok, refused, unknown
    error: str | None = None


@dataclass
class AdminHistory:
    ops: list[Op] = field(default_factory=list)

    def of(self, kind: str, outcome: str | None = None) -> list[Op]:
        return [o for o in self.ops if o.kind == kind and (outcome is None or o.outcome == outcome)]


class AdminWorker(Worker):
    def __init__(self, bootstrap: str, history: AdminHistory, every_s: float = 1.0) -> None:
        super().__init__("nemesis-admin")
        self.history, self.every_s = history, every_s
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log.connection.close": False})

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(self.every_s):
            step = n % 3
            if step == 0:
                self._do(Op("create", f"{PREFIX}{n // 3}"))
            elif step == 1 and n >= 4:
                self._do(Op("alter", f"{PREFIX}{n // 3 - 1}", value=3_600_000 + n))
            elif step == 2 and n >= 8:
                self._do(Op("delete", f"{PREFIX}{n // 3 - 2}"))
            n += 1

    def _do(self, op: Op) -> None:
        op.sent = time.monotonic()
        self.history.ops.append(op)
        try:
            if op.kind == "create":
                new = NewTopic(op.topic, 1, 3)
                self.admin.create_topics([new], request_timeout=10)[op.topic].result(15)
            elif op.kind == "alter":
                entry = ConfigEntry(
                    "retention.ms", str(op.value), incremental_operation=AlterConfigOpType.SET
                )
                resource = ConfigResource("topic", op.topic, incremental_configs=[entry])
                changes = self.admin.incremental_alter_configs([resource], request_timeout=10)
                changes[resource].result(15)
            else:
                self.admin.delete_topics([op.topic], request_timeout=10)[op.topic].result(15)
        except KafkaException as exc:
            err = exc.args[0]
            op.error = str(err)
            code = err.code() if isinstance(err, KafkaError) else None
            op.outcome = "unknown" if code in UNKNOWN_CODES else "refused"
            return
        except Exception as exc:  # the future's own timeout: no answer
            op.error = repr(exc)
            return
        op.outcome = "ok"

    def close(self) -> None:
        self.halt(60)  # an operation under way may take its 15 s wait to end
        self.release("admin")


def metadata_of(address: str, broker_id: int, timeout: float = 10) -> set[str] | None:
    """The ``adm-`` topics broker ``broker_id`` (at ``address``) lists in its own Metadata
    answer, or None if it did not answer itself within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        admin = AdminClient({"bootstrap.servers": address})
        try:
            md = admin.list_topics(timeout=5)
        except KafkaException:
            continue
        finally:
            del admin
        if md.orig_broker_id == broker_id:  # a fresh client asks its bootstrap broker
            return {t for t in md.topics if t.startswith(PREFIX)}
    return None


def retention_of(bootstrap: str, topics: list[str]) -> dict[str, int]:
    """Each topic's ``retention.ms``, as the cluster describes it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        resources = [ConfigResource("topic", t) for t in topics]
        found = {}
        for resource, future in admin.describe_configs(resources, request_timeout=10).items():
            try:
                entries = future.result(15)
            except KafkaException:  # deleted by an operation whose answer was lost
                continue
            found[resource.name] = int(entries["retention.ms"].value)
        return found
    finally:
        del admin


@dataclass
class AdminVerdict(Findings):
    KINDS = ("lost_topic", "zombie_topic", "config_lost", "divergent_metadata", "stuck")

    acknowledged: int = 0
    unknown: int = 0
    refused: int = 0
    lost_topic: list[str] = field(default_factory=list)
    zombie_topic: list[str] = field(default_factory=list)
    config_lost: list[str] = field(default_factory=list)
    divergent_metadata: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)

    refusals: dict[str, int] = field(default_factory=dict)  # refused operations by error

    def summary(self) -> str:
        why = ", ".join(f"{n} {e}" for e, n in sorted(self.refusals.items()))
        return (
            f"{self.acknowledged} admin operations acknowledged, {self.refused} refused"
            f"{f' ({why})' if why else ''}, {self.unknown} unknown; anomalies: {self.found()}"
        )


def check_admin(
    history: AdminHistory,
    in_zookeeper: set[str],
    views: dict[int, set[str] | None],
    retention: dict[str, int],
    healed: float,
) -> AdminVerdict:
    """``in_zookeeper``: the ``adm-`` topics registered there; ``views``: each broker's
    metadata (None: it did not answer); ``retention``: each existing topic's value."""
    v = AdminVerdict()
    v.acknowledged = sum(1 for o in history.ops if o.outcome == "ok")
    v.unknown = sum(1 for o in history.ops if o.outcome == "unknown")
    v.refused = sum(1 for o in history.ops if o.outcome == "refused")
    for o in history.ops:
        if o.outcome == "refused":
            error = f"{o.kind}: {(o.error or '').split(',')[0]}"
            v.refusals[error] = v.refusals.get(error, 0) + 1
    answered = {b: view for b, view in views.items() if view is not None}
    for b, view in views.items():
        if view is None:
            v.stuck.append(f"broker {b} gave no metadata of its own after the heal")
    deleted = {o.topic for o in history.of("delete", "ok")}
    maybe_deleted = deleted | {o.topic for o in history.of("delete", "unknown")}
    for op in history.of("create", "ok"):
        if op.topic in maybe_deleted:
            continue
        missing = [b for b, view in answered.items() if op.topic not in view]
        if op.topic not in in_zookeeper or missing:
            v.lost_topic.append(f"{op.topic}: created, not in ZooKeeper or on brokers {missing}")
    for topic in sorted(deleted):
        still = [b for b, view in answered.items() if topic in view]
        if topic in in_zookeeper or still:
            v.zombie_topic.append(f"{topic}: deleted, still in ZooKeeper or on brokers {still}")
    views_seen = {frozenset(view) for view in answered.values()}
    if len(views_seen) > 1:
        v.divergent_metadata.append(f"brokers list different topics: {answered}")
    for topic, value in sorted(retention.items()):
        alters = [o for o in history.of("alter") if o.topic == topic]
        acked = [o for o in alters if o.outcome == "ok"]
        if not acked:
            continue
        last = acked[-1]
        allowed = {last.value} | {o.value for o in alters if o.outcome == "unknown"}
        if value not in allowed:
            v.config_lost.append(f"{topic}: retention.ms {value}, last acknowledged {last.value}")
    after = [o for o in history.of("create") if o.sent >= healed]
    if not any(o.outcome == "ok" for o in after):
        errors = sorted({o.error or o.outcome for o in after})
        v.stuck.append(f"no topic creation acknowledged after the heal ({len(after)}: {errors})")
    return v
