"""The data directory's own small files.

Owns: the JSON documents of the broker's state (``json_store``: ``topics.json``, the ACLs,
credentials, quotas, dynamic config, cluster state and producer ids), Kafka's
``meta.properties``, the cluster id kept in every log dir (``meta_properties``), and
``listeners.json``, the addresses a running broker bound (``listeners_file``).

Face: what ``__all__`` names. Uses of the server: nothing. Blocking file I/O, no event
loop.
"""

from .json_store import JsonDocument, StoreError
from .listeners_file import remove_listeners_file, write_listeners_file
from .meta_properties import local_cluster_id, new_cluster_id, write_meta_properties

__all__ = [
    "JsonDocument",
    "StoreError",
    "local_cluster_id",
    "new_cluster_id",
    "remove_listeners_file",
    "write_listeners_file",
    "write_meta_properties",
]
