"""Who a client is and what it may do.

Owns: the ACLs as stored and the authorization switch, denial log and counters
(``acl_store``), SCRAM credentials (``scram_store``), ``AccessControl``, the APIs' one door
to quotas, ACLs and SCRAM (``control``), TLS contexts (``tls``), what each listener's
security protocol asks of its clients (``listener_security``), and how this broker logs
in to its peers (``inter_broker``).

Face: what ``__all__`` names. Uses of the server: ``quotas``, ``config``, ``datadir``.
"""

from .acl_store import AclStore, Authorization
from .control import AccessControl
from .inter_broker import peer_listeners
from .listener_security import security_by_listener
from .scram_store import ScramStore

__all__ = [
    "AccessControl",
    "AclStore",
    "Authorization",
    "ScramStore",
    "peer_listeners",
    "security_by_listener",
]
