"""The clients of a nemesis run and the history of what each did and saw.

Owns: the queue workload (Jepsen's "queue", on Kafka): ``Writer``, an idempotent acks=all
confluent-kafka producer sending unique values at a steady pace, which records for each
value when it was sent and whether and where it was acknowledged (partition, offset) or
failed; ``Reader``, a consumer of every partition from the start that records each
``(partition, offset, value)`` in the order it saw them; and ``read_all``, the final read
of every partition up to its high watermark. It must not know about faults or replicas.

A value the producer gave up on (its delivery failed) is "unknown": it may or may not be
in the log, and neither is an anomaly. Only acknowledged values must be there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from .worker import Worker

Read = tuple[int, int, int]  # partition, offset, value


@dataclass
class Send:
    value: int
    sent: float
    acked: float | None = None
    partition: int = -1
    offset: int = -1
    error: str | None = None


@dataclass
class History:
    sends: list[Send] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)  # the concurrent reader's, in order
    read_errors: list[str] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)  # the producer's error_cb
    stuck: str | None = None  # writes did not work again after the heal: why
    unsettled: list[str] = field(default_factory=list)  # partitions not whole after the heal

    def acked(self) -> list[Send]:
        return [s for s in self.sends if s.acked is not None]

    def failed(self) -> list[Send]:
        return [s for s in self.sends if s.error is not None]


class Writer(Worker):
    """Sends ``rate`` unique values a second until stopped, then waits for every answer."""

    def __init__(self, bootstrap: str, topic: str, history: History, rate: float = 100):
        super().__init__("nemesis-writer")
        self.topic = topic
        self.history = history
        self.rate = rate
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 2,
                # A value is given up after this long: long enough to outlast a fault and the
                # election after it, short enough that the run ends within its bounds.
                "message.timeout.ms": 45000,
                "topic.metadata.refresh.interval.ms": 1000,
                "log.connection.close": False,
                "error_cb": self._error,
            }
        )

    def _error(self, err: KafkaError) -> None:
        if err.fatal():
            self.history.client_errors.append(f"fatal: {err}")

    def _delivered(self, send: Send) -> Callable[[KafkaError | None, Message], None]:
        def callback(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                send.error = str(err)
                return
            send.acked = time.monotonic()
            send.partition = msg.partition() or 0
            send.offset = msg.offset() or 0

        return callback

    def _run(self) -> None:
        n = 0
        start = time.monotonic()
        while not self._stop.is_set():
            send = Send(value=n, sent=time.monotonic())
            try:
                self.producer.produce(
                    self.topic, str(n).encode(), on_delivery=self._delivered(send)
                )
            except KafkaException as exc:  # fatal: this producer cannot send any more
                self.history.client_errors.append(f"produce refused: {exc}")
                return
            self.history.sends.append(send)
            n += 1
            self.producer.poll(0)
            # a steady pace: wait for the next value's slot, or for the stop
            self._stop.wait(max(0.0, start + n / self.rate - time.monotonic()))

    def close(self) -> None:
        """Stop sending (if not yet) and destroy the producer."""
        self.halt()
        self.release("producer")

    def stop(self, timeout: float = 60) -> int:
        """Stop sending; wait (bounded) for every sent value's answer. Values unanswered."""
        self.halt()
        try:
            return int(self.producer.flush(timeout))
        except (KafkaException, SystemError) as exc:  # a fatal error surfaces here too
            self.history.client_errors.append(f"flush: {exc}")
            return -1


class Reader(Worker):
    """Reads every partition from offset 0 while the run goes on, recording what it saw in
    ``reads`` (and the errors it got in ``errors``)."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        reads: list[Read],
        errors: list[str],
        isolation: str = "read_uncommitted",
    ):
        super().__init__("nemesis-reader")
        self.reads, self.errors = reads, errors
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"nemesis-reader-{topic}",  # assigned, not subscribed
                "enable.auto.commit": False,
                "isolation.level": isolation,
                "topic.metadata.refresh.interval.ms": 1000,
                "log.connection.close": False,
            }
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])

    def _run(self) -> None:
        while not self._stop.is_set():
            for msg in self.consumer.consume(500, timeout=0.2):
                if msg.error() is not None:
                    self.errors.append(str(msg.error()))
                    continue
                value = msg.value()
                if value is not None:
                    self.reads.append((msg.partition() or 0, msg.offset() or 0, int(value)))

    def stop(self) -> None:
        self.close()

    def close(self) -> None:
        """Stop reading (if not yet) and destroy the consumer."""
        self.halt()
        self.release("consumer", close=True)


def read_all(
    bootstrap: str,
    topic: str,
    partitions: int,
    timeout: float = 60,
    isolation: str = "read_uncommitted",
) -> list[Read]:
    """Every record of every partition from offset 0 to the high watermark, from the
    leaders (with read_committed: the committed ones; markers and aborted records are
    skipped, which the consumer's position shows)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "nemesis-final",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "log.connection.close": False,
        }
    )
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        ends = {tp.partition: _high_watermark(consumer, tp, timeout) for tp in tps}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions) if ends[p] > 0])
        got: list[Read] = []
        position = dict.fromkeys(ends, 0)
        deadline = time.monotonic() + timeout
        while any(position[p] < ends[p] for p in ends):
            if time.monotonic() > deadline:
                short = {p: (position[p], ends[p]) for p in ends if position[p] < ends[p]}
                raise TimeoutError(f"the final read stopped short (partition: at, end): {short}")
            for msg in consumer.consume(1000, timeout=0.5):
                if msg.error() is not None or msg.value() is None:
                    continue
                value = int(msg.value())  # type: ignore[arg-type]
                got.append((msg.partition() or 0, msg.offset() or 0, value))
            for tp in consumer.position([TopicPartition(topic, p) for p in ends if ends[p] > 0]):
                position[tp.partition] = max(position[tp.partition], tp.offset)
        return got
    finally:
        consumer.close()


def _high_watermark(consumer: Consumer, tp: TopicPartition, timeout: float) -> int:
    """The partition's high watermark from its leader, asked again while the leader answers
    a retriable error: a new leader whose high watermark has not caught up with its epoch
    yet answers OFFSET_NOT_AVAILABLE (KIP-207), which librdkafka hands to the caller."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return int(consumer.get_watermark_offsets(tp, timeout=min(10.0, timeout))[1])
        except KafkaException as exc:
            error = exc.args[0]
            again = error.retriable() or error.code() == KafkaError.OFFSET_NOT_AVAILABLE
            if not again or time.monotonic() > deadline:
                raise
            time.sleep(0.2)  # librdkafka refreshes its metadata meanwhile
