"""Transactions: the transaction coordinator, its ``__transaction_state`` topic, and the
markers it sends to the partitions (Kafka's ``transaction-coordinator``).

Owns: the coordinator (``coordinator``: Kafka's TransactionCoordinator and
TransactionStateManager in one), what it tells of its ids (``introspection``), the states
and their records (``state``), the markers it writes and sends (``markers``,
``marker_channel``, which also carries a leader's AddPartitionsToTxn to another broker's
coordinator under transaction version 2), the broker's producer ids
(``producer_ids``), and ``TransactionService``, which builds the coordinator over the
broker's parts and is what the transaction APIs reach (``service``).

Face: what ``__all__`` names. Uses of the server: ``groups`` (the internal topic and the
locator), ``config``, ``datadir``.
"""

from .coordinator import TransactionCoordinator, TxnConfig
from .markers import MarkerWriter, TxnMarker
from .producer_ids import BLOCK_SIZE, ProducerIdManager
from .service import TXN_STATE, TransactionService

__all__ = [
    "BLOCK_SIZE",
    "TXN_STATE",
    "MarkerWriter",
    "ProducerIdManager",
    "TransactionCoordinator",
    "TransactionService",
    "TxnConfig",
    "TxnMarker",
]
