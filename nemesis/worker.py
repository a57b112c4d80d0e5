"""The thread every workload client runs on.

Owns: ``Worker``, a daemon thread running the subclass's ``_run`` until ``_stop`` is set
(``start``, ``halt``), and ``release``, which destroys the client a worker holds (closing a
consumer first, so that it leaves its group), once: a librdkafka client left alive keeps
reconnecting. It must not know what a workload does.
"""

from __future__ import annotations

import threading
from typing import Self


class Worker:
    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        self._thread.start()
        return self

    def halt(self, timeout: float = 10) -> None:
        """Stop the thread (if not yet) and wait for it, at most ``timeout`` seconds."""
        self._stop.set()
        self._thread.join(timeout)

    def release(self, attribute: str, close: bool = False) -> None:
        """Destroy the client held in ``attribute`` (``close()`` it first with ``close``)."""
        client = self.__dict__.pop(attribute, None)
        if client is not None and close:
            client.close()
