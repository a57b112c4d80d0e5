"""The transaction coordinator inside a broker: what it is built from and how APIs reach it.

Owns: ``TXN_STATE``, the ``__transaction_state`` topic's spec (partitions, replication,
Kafka's internal configs), and ``TransactionService``, the ``TransactionsView`` the
transaction APIs call (``BrokerView.transactions``). It builds the coordinator over the
broker's parts: ``__transaction_state`` in the broker's catalog and logs
(``LogOffsetsTopic`` with the ``TXN_STATE`` spec; the cluster's in a ZooKeeper cluster),
producer ids from the broker's producer id manager, markers written through the broker's
own ``write_txn_markers`` for partitions it leads and sent to the leaders of the others
(``MarkerChannel``), and FindCoordinator answered by a ``CoordinatorLocator`` on the same
topic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import trio

from ...apis.topic_names import OFFSETS_TOPIC, TXN_STATE_TOPIC
from ...apis.txn_services import TxnDescription
from ...protocol.errors import ErrorCode
from ..config import BrokerConfig
from ..groups import CoordinatorLocator, CreateTopic, InternalTopicSpec, LogOffsetsTopic
from . import introspection
from .coordinator import TransactionCoordinator, TxnConfig
from .marker_channel import MarkerChannel
from .markers import MarkerWriter, WriteMarkers
from .state import TxnMetadata, TxnState

TopicPartition = tuple[str, int]

# How long a __transaction_state append waits for the ISR: Kafka's coordinator uses the
# broker's request.timeout.ms, 30 s by default.
APPEND_TIMEOUT_S = 30.0


def txn_state_configs(config: BrokerConfig) -> dict[str, str]:
    """Kafka's configs of ``__transaction_state``: compacted, uncompressed, and in a
    ZooKeeper cluster ``transaction.state.log.min.isr`` in-sync replicas."""
    configs = {
        "cleanup.policy": "compact",
        "compression.type": "uncompressed",
        "segment.bytes": str(config["transaction.state.log.segment.bytes"]),
    }
    if config["zookeeper.connect"]:
        configs["min.insync.replicas"] = str(config["transaction.state.log.min.isr"])
    return configs


TXN_STATE = InternalTopicSpec(
    TXN_STATE_TOPIC,
    "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor",
    txn_state_configs,
    lambda config: APPEND_TIMEOUT_S,
)


class TransactionService:
    def __init__(
        self,
        broker: Any,  # the Broker (its config, catalog, logs, cluster view, producer ids)
        write_markers: WriteMarkers,
        create_topic: CreateTopic | None,
    ) -> None:
        """``create_topic``: ZooKeeper's (the topic is the cluster's), None on a broker on
        its own. The group coordinator hears of every marker in ``__consumer_offsets``
        (its offsets committed in a transaction count, or go)."""
        config = broker.config
        broker.replica_manager.marker_observers.append(broker.group_coordinator.on_marker)
        topic = LogOffsetsTopic(
            config,
            broker.topics_catalog,
            broker.replica_manager,
            replicated=create_topic is not None,
            spec=TXN_STATE,
        )
        cluster = broker.cluster

        def leader_of(name: str, partition: int) -> int | None:
            if create_topic is None:  # a broker on its own leads everything it holds
                return broker.broker_id
            info = cluster.cache.partitions.get(name, {}).get(partition)
            return None if info is None else int(info.leader)

        # In a ZooKeeper cluster, markers for partitions led elsewhere go to their leaders
        # over the inter-broker listener, as the followers' fetches do.
        fetchers = broker.fetchers
        timeout_s = config["request.timeout.ms"] / 1000
        self.channel = MarkerChannel(
            broker.broker_id, fetchers.address_of, lambda: fetchers.listener, timeout_s
        )
        send = self.channel.send if create_topic is not None else None
        self.markers = MarkerWriter(broker.broker_id, leader_of, write_markers, send, timeout_s)
        self.coordinator = TransactionCoordinator(
            TxnConfig.from_broker(config),
            topic,
            broker.new_producer_id,
            self.markers,
            exists=lambda: broker.topics_catalog.get(TXN_STATE.name) is not None,
        )
        self.locator = CoordinatorLocator(broker, create_topic, TXN_STATE, self.coordinator)
        self.offsets_partition = broker.group_coordinator.partition_for
        self._logs = broker.replica_manager
        self._broker_id = broker.broker_id

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self.coordinator.run(task_status=task_status)

    def stop(self) -> None:
        self.coordinator.stop()
        # (the marker channel's connections close with the loop: nothing to flush)

    # ------------------------------------------------------ TransactionsView

    async def locate(self, transactional_id: str) -> tuple[int, int, str | None]:
        return await self.locator.locate(transactional_id)

    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> tuple[int, int, int]:
        return await self.coordinator.init_producer_id(transactional_id, timeout_ms, expected)

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Sequence[TopicPartition],
    ) -> int:
        return await self.coordinator.add_partitions(
            transactional_id, producer_id, epoch, partitions
        )

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Sequence[TopicPartition],
    ) -> dict[TopicPartition, int]:
        return self.coordinator.verify_partitions(transactional_id, producer_id, epoch, partitions)

    async def add_offsets(
        self, transactional_id: str, producer_id: int, epoch: int, group_id: str
    ) -> int:
        """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins."""
        partition = (OFFSETS_TOPIC, self.offsets_partition(group_id))
        return await self.coordinator.add_partitions(
            transactional_id, producer_id, epoch, [partition]
        )

    async def add_partitions_for_leader(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Sequence[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """KIP-890 part 2: partitions whose leader (this broker) adds them to a
        transaction for its producer (Produce v12+, TxnOffsetCommit v5+), at the id's
        coordinator, here or on another broker (AddPartitionsToTxn v5)."""
        node, error, _ = await self.locator.locate(transactional_id)
        if error:
            return dict.fromkeys(partitions, error)
        if node == self._broker_id:
            code = await self.coordinator.add_partitions(
                transactional_id, producer_id, epoch, partitions
            )
            return dict.fromkeys(partitions, code)
        return await self.channel.add_partitions(
            node, transactional_id, producer_id, epoch, partitions
        )

    async def add_offsets_for_leader(
        self, transactional_id: str, producer_id: int, epoch: int, group_id: str
    ) -> int:
        """TxnOffsetCommit v5+: the group's ``__consumer_offsets`` partition joins the
        transaction, as AddOffsetsToTxn would have done it."""
        partition = (OFFSETS_TOPIC, self.offsets_partition(group_id))
        added = await self.add_partitions_for_leader(
            transactional_id, producer_id, epoch, [partition]
        )
        return added[partition]

    async def end_txn(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool, bump: bool
    ) -> tuple[int, int, int]:
        return await self.coordinator.end_transaction(
            transactional_id, producer_id, epoch, commit, bump=bump
        )

    def describe(self, transactional_id: str) -> tuple[int, TxnDescription | None]:
        error, meta = introspection.describe(self.coordinator, transactional_id)
        return error, None if meta is None else description_of(meta)

    def listing(
        self,
        states: Sequence[str],
        producer_ids: Sequence[int],
        min_duration_ms: int,
        id_pattern: str | None = None,
    ) -> tuple[int, list[str], list[TxnDescription]]:
        by_label = {s.label: s for s in TxnState}
        unknown = [s for s in states if s not in by_label]
        wanted = [by_label[s] for s in states if s in by_label]
        pattern = None
        if id_pattern:  # Kafka's Pattern.matches(): the whole id
            try:
                pattern = re.compile(id_pattern)
            except re.error:
                return ErrorCode.INVALID_REGULAR_EXPRESSION, unknown, []
        if states and not wanted:  # only unknown states asked for: none can match
            return 0, unknown, []
        error, found = introspection.listing(
            self.coordinator, wanted, producer_ids, min_duration_ms
        )
        if pattern is not None:
            found = [m for m in found if pattern.fullmatch(m.transactional_id)]
        return error, unknown, [description_of(m) for m in found]

    # ------------------------------------------------------------ figures

    def figures(self) -> dict[str, Any]:
        """The metrics snapshot's ``transactions``: the coordinator's figures, markers
        written (and sent to other brokers), and the partitions this broker leads whose
        last stable offset is below the high watermark (open transactions hold
        read_committed consumers back by that many offsets)."""
        coordinator = introspection.figures(self.coordinator)
        coordinator["markers_written"] = self.markers.written
        coordinator["marker_requests_failed"] = self.channel.failures
        coordinator["marker_sends_given_up"] = dict(self.markers.given_up)
        return {"coordinator": coordinator, "lso_lag": self._logs.lso_lags()}

    def overview(self) -> dict[str, Any]:
        """``GET /v1/transactions``: the figures and every transactional id held here."""
        return {
            **self.figures(),
            "transactions": [
                {
                    "transactional_id": d.transactional_id,
                    "state": d.state,
                    "producer_id": d.producer_id,
                    "producer_epoch": d.producer_epoch,
                    "timeout_ms": d.timeout_ms,
                    "start_ms": d.start_ms,
                    "partitions": [f"{t}-{p}" for t, p in d.partitions],
                }
                for d in map(description_of, self.coordinator.txns.values())
            ],
        }


def description_of(meta: TxnMetadata) -> TxnDescription:
    return TxnDescription(
        meta.transactional_id,
        meta.state.label,
        meta.producer_id,
        meta.producer_epoch,
        meta.timeout_ms,
        meta.start_ms,
        sorted(meta.partitions),
    )
