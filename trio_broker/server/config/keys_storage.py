"""The broker's own keys about the log's files, which Kafka does not have.

Owns: ``STORAGE_KEYS``, which ``keys`` splices into the table after Kafka's
``num.recovery.threads.per.data.dir``. Kept apart only so that each file of the key table
stays readable.
"""

from __future__ import annotations

from .configdef import ConfigKey, Range, define
from .syntax import INT

STORAGE_KEYS: list[ConfigKey] = [
    define(
        "log.open.files.max",
        INT,
        -1,
        "trio-broker extension (Kafka has no such key: it keeps every segment's files "
        "open): the most file descriptors the log segments keep open, three an open "
        "segment (.log, .index, .timeindex); past it the least recently used segments' "
        "files are closed and reopened on their next append or read. Not a bound on the "
        "process: a segment in use by a thread right now, the files of record data being "
        "sent and everything else the broker opens come on top. -1: no bound (every "
        "segment keeps its files open, as in Kafka).",
        Range(3, allow=(-1,)),
        dynamic=True,
    ),
]
