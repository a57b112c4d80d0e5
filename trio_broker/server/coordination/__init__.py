"""ZooKeeper coordination of a cluster (``zookeeper.connect``), as a ZooKeeper-era Kafka.

Owns: the session (``session``: kazoo's calls awaited with a deadline, its states and
watches as trio events), Kafka's node layout (``layout``), the broker's registration and
the controller election (``coordinator``, ``membership``), the elected controller's work
(``controller``, ``elections``, ``reassignment``, ``controller_requests``,
``controlled_shutdown``), the ISR writes of a leader (``isr_writer``), producer id blocks
(``producer_ids``), and the cluster's topics, configs, credentials and quotas in
ZooKeeper (``topics``, ``topic_configs``, ``broker_configs``, ``user_credentials``,
``client_quotas``, ``client_metrics``, ``config_changes``), joined to a broker by ``wiring``.

Face: what ``__all__`` names. Uses of the server: ``topics``, ``replication``, ``access``,
``quotas``, ``telemetry``, ``config``, ``datadir``. A broker without ``zookeeper.connect`` opens no
session: of all this it builds only ``ControllerRequests``, whose answers for a cluster of
one need no controller.
"""

from .controller_requests import ControllerRequests
from .layout import Registration
from .membership import ZkMembership
from .producer_ids import claim_block
from .wiring import join_cluster

__all__ = [
    "ControllerRequests",
    "Registration",
    "ZkMembership",
    "claim_block",
    "join_cluster",
]
