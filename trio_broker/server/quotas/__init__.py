"""Client quotas and connection limits.

Owns: what is stored, checked and persisted of client quotas (``store``), their
enforcement as Kafka's ClientQuotaManager and its sampled rates (``manager``), throttling
clients over them, KIP-219 style (``throttling``), and the network layer's connection
limits from the config (``connection_limits``).

Face: what ``__all__`` names. Uses of the server: ``config``, ``common``, ``datadir``.
"""

from .connection_limits import CONNECTION_KEYS, connection_limits_from
from .manager import QuotaManager, SampledRate
from .store import QUOTA_KEYS, EntityType, QuotaEntity, QuotaError, QuotaStore, check_value
from .throttling import EXEMPT, Throttler

__all__ = [
    "CONNECTION_KEYS",
    "EXEMPT",
    "QUOTA_KEYS",
    "EntityType",
    "QuotaEntity",
    "QuotaError",
    "QuotaManager",
    "QuotaStore",
    "SampledRate",
    "Throttler",
    "check_value",
    "connection_limits_from",
]
