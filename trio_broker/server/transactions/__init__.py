"""Transactions: the transaction coordinator, its ``__transaction_state`` topic, and the
markers it sends to the partitions (issue 19).

Owns: ``TXN_STATE`` (the topic's spec: partitions, replication, Kafka's internal configs)
and re-exports the coordinator's parts.
"""

from __future__ import annotations

from ...apis.topic_names import TXN_STATE_TOPIC
from ..config.broker_config import BrokerConfig
from ..groups.storage import InternalTopicSpec
from .coordinator import TransactionCoordinator, TxnConfig
from .markers import MarkerWriter, TxnMarker

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

__all__ = [
    "TXN_STATE",
    "MarkerWriter",
    "TransactionCoordinator",
    "TxnConfig",
    "TxnMarker",
]
