"""Start-up failures a user can cause and fix, told in one line.

Owns: ``StartupError`` and ``startup_error``, which finds, in whatever start-up raised
(Trio wraps failures of nursery tasks in exception groups), the failure the user caused:
a bad key or value or an unloadable TLS file (``ConfigError``), a port in use
(``ListenerBindError``; the admin adapter raises a ``StartupError`` for its own), a
log directory that another broker holds or that cannot be used (``LogDirLockedError``,
``LogDirUnusableError``), an open files limit too low for the logs on disk
(``DescriptorLimitError``). The command prints its one line and exits 2; anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..log.descriptors import DescriptorLimitError
from ..log.dir_lock import LogDirLockedError, LogDirUnusableError
from ..network.socket_server import ListenerBindError
from .config import ConfigError

__all__ = ["StartupError", "startup_error"]

_ONE_LINE = (ListenerBindError, LogDirLockedError, LogDirUnusableError, DescriptorLimitError)


class StartupError(Exception):
    """A start-up failure the user can fix; ``str()`` is the line to print."""


def startup_error(exc: BaseException) -> StartupError | None:
    """The user's start-up error in ``exc`` (possibly inside exception groups), or None."""
    for leaf in _leaves(exc):
        if isinstance(leaf, StartupError):
            return leaf
        if isinstance(leaf, ConfigError):
            return StartupError(f"configuration error: {leaf}")
        if isinstance(leaf, _ONE_LINE):
            return StartupError(str(leaf))
    return None


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc
