"""The partitions this broker holds, their data path and their replication (Kafka's
ReplicaManager and Partition).

Owns: ``ReplicaManager`` (the partitions' logs; every request's storage work is one job
on the io pool, ``log_io``), the questions a leader answers about offsets
(``offset_queries``), writing transaction markers as the leader (``txn_markers``), the
leader's side of replication: followers' progress, ISR and high watermark (``leader``),
the followers' fetchers (``replica_fetcher``) and the throttles of both sides
(``throttles``), the cluster view and leadership the control plane sets
(``cluster_state``, ``metadata_cache``) and the control plane's requests themselves
(``control_plane``), the log cleaner's schedule (``log_cleaner``) and the log dirs as
DescribeLogDirs and the metrics see them (``log_dirs``).

Face: what ``__all__`` names. Uses of the server: ``quotas``, ``config``, ``common``,
``datadir``; the topic service it changes is reached through ``HeldTopics``, since topics
sit above.
"""

from .cluster_state import ClusterState
from .control_plane import ControlPlane, HeldTopics
from .offset_queries import OffsetQueries
from .replica_fetcher import ReplicaFetchers
from .replica_manager import ReplicaManager
from .txn_markers import TxnMarkerWriter

__all__ = [
    "ClusterState",
    "ControlPlane",
    "HeldTopics",
    "OffsetQueries",
    "ReplicaFetchers",
    "ReplicaManager",
    "TxnMarkerWriter",
]
