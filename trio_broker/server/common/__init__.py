"""The event loop's machinery every subsystem of the server shares, as in Kafka's
``server-common``.

Owns: the purgatory, where requests wait for something without holding a handler task
(``purgatory``), and the io pool, ``num.io.threads`` threads for the request path's
blocking storage work (``io_pool``).

Face: what ``__all__`` names. Uses of the server: nothing.
"""

from .io_pool import GIL_SWITCH_INTERVAL_S, HANDLERS_PER_IO_THREAD, IoPool
from .purgatory import DelayedOperation, Purgatory

__all__ = [
    "GIL_SWITCH_INTERVAL_S",
    "HANDLERS_PER_IO_THREAD",
    "DelayedOperation",
    "IoPool",
    "Purgatory",
]
