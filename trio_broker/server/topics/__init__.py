"""Topics: which exist, and how they are created, deleted and grown.

Owns: the topic catalog (``topics.json``: ids, partition counts, configs; ``catalog``),
the one path that creates and grows topics, on one broker and in a cluster (``creation``:
``TopicCreation`` over a ``TopicStore``), ``TopicAdmin``, the broker's topic service and
the store of a broker on its own (``admin``), and where a topic's replicas are placed on
the brokers (``placement``, Kafka's rack-aware assignment).

Face: what ``__all__`` names. Uses of the server: ``replication``, ``config``, ``datadir``;
ZooKeeper's side of topic changes is ``coordination``'s.
"""

from .admin import TopicAdmin, side_by_side
from .catalog import TopicCatalog
from .creation import GrowthPlan, TopicCreation, TopicStore

__all__ = [
    "GrowthPlan",
    "TopicAdmin",
    "TopicCatalog",
    "TopicCreation",
    "TopicStore",
    "side_by_side",
]
