"""A broker with many partitions: a clean restart recovers nothing, a kill -9 loses nothing.

Real broker processes and confluent-kafka. A clean shutdown writes the log dir's checkpoint
files once (Kafka's ``recovery-point-offset-checkpoint`` and its two siblings) and then the
marker; the next start loads every partition from them without a scan, on
``num.recovery.threads.per.data.dir`` threads, and removes the marker, so that a kill -9
afterwards is seen as a crash and recovered.
"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from trio_broker.log.checkpoint import read_checkpoint
from trio_broker.log.dir_checkpoints import RECOVERY_POINT_FILE

from ..support.brokers import BrokerProcess
from .test_durability import consume_all

TOPICS = 3
PER_TOPIC = 100


def _overrides(tmp_path: Path) -> list[str]:
    return [f"log.dirs={tmp_path}", "num.recovery.threads.per.data.dir=2"]


def _produce(bootstrap: str, rounds: int, tag: bytes) -> dict[tuple[str, int, int], bytes]:
    """``rounds`` messages to every partition, acks=all: what was acknowledged, by
    (topic, partition, offset)."""
    acked: dict[tuple[str, int, int], bytes] = {}

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            acked[(msg.topic(), msg.partition(), msg.offset())] = msg.value()

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for r in range(rounds):
        for t in range(TOPICS):
            for part in range(PER_TOPIC):
                value = b"%s-%d-%d-%d" % (tag, t, part, r)
                p.produce(f"wide{t}", value, partition=part, on_delivery=on_delivery)
        p.poll(0)
    assert p.flush(60) == 0
    assert len(acked) == rounds * TOPICS * PER_TOPIC
    return acked


def _recovery_point(folder: Path) -> int | None:
    checkpoint = read_checkpoint(folder)
    return checkpoint.recovery_point if checkpoint is not None else None


def _stored(bootstrap: str) -> dict[tuple[str, int, int], bytes]:
    out = {}
    for t in range(TOPICS):
        for part, items in consume_all(bootstrap, f"wide{t}", PER_TOPIC).items():
            out.update({(f"wide{t}", part, o): v for o, v in items})
    return out


def test_clean_restart_recovers_nothing_and_kill_9_loses_nothing(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path, _overrides(tmp_path)).start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics([NewTopic(f"wide{t}", PER_TOPIC, 1) for t in range(TOPICS)])
    for f in futures.values():
        f.result(60)
    acked = _produce(broker.bootstrap, 2, b"a")
    assert broker.terminate() == 0
    lines = (tmp_path / RECOVERY_POINT_FILE).read_text().splitlines()  # one file, all of them
    assert lines[1] == str(len(lines) - 2)
    assert {f"wide{t} {part} 2" for t in range(TOPICS) for part in range(PER_TOPIC)} <= set(lines)

    clean = BrokerProcess(tmp_path, _overrides(tmp_path)).start()
    log = "".join(clean.log)
    assert "recovering" not in log and "clean shutdown: no recovery, 2 threads" in log
    assert _stored(clean.bootstrap) == acked
    # The partitions' own files, left as they were by the shutdown and the start, are
    # brought up to date in the background within replica.high.watermark.checkpoint.interval.ms
    # (5 s) of the start.
    deadline = time.monotonic() + 30
    folders = [tmp_path / f"wide{t}-{part}" for t in range(TOPICS) for part in range(PER_TOPIC)]
    while any(_recovery_point(f) != 2 for f in folders):
        assert time.monotonic() < deadline, "partition checkpoints not rewritten after start"
        time.sleep(0.05)
    acked |= _produce(clean.bootstrap, 3, b"b")
    clean.kill()

    crashed = BrokerProcess(tmp_path, _overrides(tmp_path)).start()
    pass
    stored = _stored(crashed.bootstrap)
    missing = [k for k, v in acked.items() if stored.get(k) != v]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
    assert crashed.terminate() == 0
