"""A produce load that saturates the broker's event loop: run as a process
(``python -m tests.spark.cpu_load BOOTSTRAP SECONDS FIRST_PARTITION COUNT``), so that
several of them are not held back by one client process's GIL. Each thread is one
confluent-kafka producer sending one 100-byte message per request (``batch.num.messages=1``,
``linger.ms=0``, acks=1) to its own partition, as fast as the broker answers, until
SECONDS have passed. The process runs at the lowest CPU priority (nice 19)."""

from __future__ import annotations

import os
import sys
import threading
import time

from confluent_kafka import Producer


def produce_until(bootstrap: str, partition: int, deadline: float) -> None:
    p = Producer(
        {"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0, "batch.num.messages": 1}
    )
    while time.monotonic() < deadline:
        try:
            p.produce("load", value=b"x" * 100, partition=partition)
        except BufferError:  # the client's queue is full: let it drain a little
            p.poll(0.001)
        p.poll(0)
    p.flush(30)


def main(argv: list[str]) -> int:
    os.nice(19)  # the broker first: the load takes the CPU the broker leaves
    bootstrap, seconds, first, count = argv[0], float(argv[1]), int(argv[2]), int(argv[3])
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(target=produce_until, args=(bootstrap, first + i, deadline))
        for i in range(count)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
