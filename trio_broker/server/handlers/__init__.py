"""The request path past the network (Kafka's KafkaRequestHandler).

Owns: the handler pool, Trio tasks that take requests from the request channel
(``handler_pool``), the request handler that runs one request through the API table and
turns its outcome into a response action (``request_handler``), a handler's delayed
response (``delayed``), and fault injection for test suites (``faults``, ``fault_rules``).

Face: what ``__all__`` names. Uses of the server: ``quotas`` (throttling), ``common``.
"""

from .delayed import DelayedResponse
from .fault_rules import FaultSpecError
from .faults import FaultInjector, install_faults
from .handler_pool import HandlerPool
from .request_handler import RequestHandler

__all__ = [
    "DelayedResponse",
    "FaultInjector",
    "FaultSpecError",
    "HandlerPool",
    "RequestHandler",
    "install_faults",
]
