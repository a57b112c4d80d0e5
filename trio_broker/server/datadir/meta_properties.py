"""Kafka's ``meta.properties``: the cluster id (and node id) kept in every log dir.

Owns: reading the cluster id the data dirs (and ``cluster.id``) name, refusing dirs of
another cluster, generating a new id as Kafka does (a URL-safe base64 UUID), and writing
the file into dirs that lack it. Blocking file I/O: callers run it on a worker thread.
With ZooKeeper the cluster's id is ZooKeeper's; the dirs' id must match it.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from pathlib import Path

from ...log.files import atomic_write

META = "meta.properties"


def new_cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def local_cluster_id(log_dirs: Sequence[Path], configured: str | None) -> str | None:
    """The id ``cluster.id`` or the dirs' files name (None: a new broker); ``RuntimeError``
    when they disagree."""
    cluster_id = configured or None
    for d in log_dirs:
        meta = d / META
        if not meta.exists():
            continue
        props = dict(
            line.split("=", 1)
            for line in meta.read_text().splitlines()
            if "=" in line and not line.startswith("#")
        )
        found = props.get("cluster.id")
        if cluster_id is not None and found and found != cluster_id:
            raise RuntimeError(f"{meta} belongs to cluster {found}, not to cluster {cluster_id}")
        cluster_id = cluster_id or found
    return cluster_id


def write_meta_properties(log_dirs: Sequence[Path], cluster_id: str, broker_id: int) -> None:
    """Write ``meta.properties`` into the dirs that lack it."""
    for d in log_dirs:
        meta = d / META
        if not meta.exists():
            atomic_write(
                meta, f"version=1\ncluster.id={cluster_id}\nnode.id={broker_id}\n".encode()
            )
