"""Kafka's BrokerTopicMetrics: messages and bytes in and out, failed requests, per topic.

Owns: ``TopicCounters`` (MessagesInPerSec, BytesInPerSec, BytesOutPerSec,
FailedProduceRequestsPerSec, FailedFetchRequestsPerSec as cumulative counts) and
``TopicMetrics``, which keeps one per topic plus the total over all topics. The data path
calls ``record_produce``, ``record_produce_failure``, ``record_fetch`` and
``record_fetch_failure`` (through ``BrokerMetrics``); ``forget`` drops a deleted topic.
Must not: read a clock or derive rates (readers difference two snapshots).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(slots=True)
class TopicCounters:
    messages_in: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    failed_produce_requests: int = 0
    failed_fetch_requests: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class TopicMetrics:
    def __init__(self) -> None:
        self.total = TopicCounters()
        self.by_topic: dict[str, TopicCounters] = {}

    def _topic(self, topic: str) -> TopicCounters:
        counters = self.by_topic.get(topic)
        if counters is None:
            counters = self.by_topic[topic] = TopicCounters()
        return counters

    def record_produce(self, topic: str, nbytes: int, messages: int) -> None:
        c = self._topic(topic)
        c.bytes_in += nbytes
        c.messages_in += messages
        self.total.bytes_in += nbytes
        self.total.messages_in += messages

    def record_produce_failure(self, topic: str) -> None:
        self._topic(topic).failed_produce_requests += 1
        self.total.failed_produce_requests += 1

    def record_fetch(self, topic: str, nbytes: int) -> None:
        self._topic(topic).bytes_out += nbytes
        self.total.bytes_out += nbytes

    def record_fetch_failure(self, topic: str) -> None:
        self._topic(topic).failed_fetch_requests += 1
        self.total.failed_fetch_requests += 1

    def forget(self, topic: str) -> None:
        """A deleted topic leaves the per-topic figures (the totals keep what it added)."""
        self.by_topic.pop(topic, None)
