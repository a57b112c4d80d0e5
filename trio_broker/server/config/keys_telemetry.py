"""The keys of client telemetry (KIP-714).

Owns: ``TELEMETRY_KEYS``, which ``keys`` splices into the table: Kafka's
``telemetry.max.bytes`` and two of this broker's own (``client.metrics.*``). Kept apart
only so that each file of the key table stays readable.
"""

from __future__ import annotations

from .configdef import ConfigKey, Range, define
from .syntax import BOOL, INT

TELEMETRY_KEYS: list[ConfigKey] = [
    define(
        "telemetry.max.bytes",
        INT,
        1048576,
        "The most bytes of metrics a client may push in one PushTelemetry request "
        "(compressed as sent, and decompressed); told to clients in "
        "GetTelemetrySubscriptions.",
        Range(1),
    ),
    define(
        "client.metrics.max.clients",
        INT,
        16384,
        "trio-broker extension: the most client instances whose telemetry is kept; past "
        "it the least recently heard from is dropped (counted in the metrics snapshot's "
        "client_telemetry.evicted). Kafka's own cache holds 16384.",
        Range(1),
        dynamic=True,
    ),
    define(
        "client.metrics.prometheus.enable",
        BOOL,
        False,
        "trio-broker extension: whether /metrics has the clients' pushed metrics, labelled "
        "with each client's instance id, client id and software (label cardinality grows "
        "with the clients: off by default).",
        dynamic=True,
    ),
]
