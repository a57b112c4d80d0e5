"""Configuration from the environment, the way Kafka's container images take it.

Owns: ``overrides_from_env``, which turns ``TRIO_BROKER_*`` variables into ``key=value``
overrides: the prefix goes, the rest is lower-cased and ``_`` becomes ``.``; since some
keys hold real underscores or dashes, ``__`` stands for ``_`` and ``___`` for ``-`` (the
convention of Confluent's Kafka images). So ``TRIO_BROKER_NUM_IO_THREADS=16`` is
``num.io.threads=16``, ``TRIO_BROKER_ADMIN_TOKEN=s3cret`` is ``admin.token=s3cret`` and
``TRIO_BROKER_MAX_CONNECTIONS_PER_IP_OVERRIDES=...`` is
``max.connections.per.ip.overrides=...``. Unknown keys are not filtered here: the config
loader refuses them with a message naming the variable's key, like any other override.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PREFIX = "TRIO_BROKER_"
_SEPARATORS = re.compile(r"_{1,3}")


def env_key_to_property(name: str) -> str:
    """``NUM_IO_THREADS`` -> ``num.io.threads``; ``__`` -> ``_``; ``___`` -> ``-``."""
    return _SEPARATORS.sub(lambda m: {1: ".", 2: "_", 3: "-"}[len(m.group())], name).lower()


def overrides_from_env(environ: Mapping[str, str], prefix: str = PREFIX) -> list[str]:
    """``key=value`` overrides for every ``prefix``-ed variable, sorted by key."""
    out = []
    for name in sorted(environ):
        if name.startswith(prefix) and len(name) > len(prefix):
            out.append(f"{env_key_to_property(name[len(prefix) :])}={environ[name]}")
    return out
