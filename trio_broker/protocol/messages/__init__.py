"""Every message this broker speaks, one module per API family.

Importing this package registers them all with ``protocol.api``.
"""

from . import (
    acls,
    api_versions,
    cluster,
    configs,
    controller,
    elections,
    fetch,
    group_heartbeats,
    group_offsets,
    groups,
    log_dirs,
    metadata,
    offsets,
    produce,
    quotas,
    reassignments,
    sasl,
    scram,
    telemetry,
    topics,
    transactions,
    txn_markers,
)

__all__ = [
    "acls",
    "api_versions",
    "cluster",
    "configs",
    "controller",
    "elections",
    "fetch",
    "group_heartbeats",
    "group_offsets",
    "groups",
    "log_dirs",
    "metadata",
    "offsets",
    "produce",
    "quotas",
    "reassignments",
    "sasl",
    "scram",
    "telemetry",
    "topics",
    "transactions",
    "txn_markers",
]
