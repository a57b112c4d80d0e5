"""Topics: which exist, and how they are created, deleted and grown.

Owns: the topic catalog (``topics.json``: ids, partition counts, configs; ``catalog``),
``TopicAdmin``, the broker's topic service (``admin``), and where a topic's replicas are
placed on the brokers (``placement``, Kafka's rack-aware assignment).

Face: what ``__all__`` names. Uses of the server: ``replication``, ``config``, ``datadir``;
ZooKeeper's side of topic changes is ``coordination``'s.
"""

from .admin import TopicAdmin, side_by_side
from .catalog import TopicCatalog
from .placement import check_racks, place_replicas

__all__ = [
    "TopicAdmin",
    "TopicCatalog",
    "check_racks",
    "place_replicas",
    "side_by_side",
]
