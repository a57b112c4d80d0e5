"""A confluent-kafka consumer in its own process, for tests that kill one with SIGKILL.

Usage: python -m tests.data.group_member BOOTSTRAP GROUP TOPIC SESSION_MS [INSTANCE_ID]
Prints one JSON line per assignment it receives: {"assigned": [partitions...]}.
"""

from __future__ import annotations

import json
import sys

from confluent_kafka import Consumer


def main() -> None:
    bootstrap, group, topic, session_ms = sys.argv[1:5]
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": int(session_ms),
        "heartbeat.interval.ms": 200,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    if len(sys.argv) > 5:
        conf["group.instance.id"] = sys.argv[5]
    consumer = Consumer(conf)

    def on_assign(c, partitions):  # type: ignore[no-untyped-def]
        print(json.dumps({"assigned": sorted(p.partition for p in partitions)}), flush=True)

    consumer.subscribe([topic], on_assign=on_assign)
    while True:
        consumer.poll(0.1)


if __name__ == "__main__":
    main()
