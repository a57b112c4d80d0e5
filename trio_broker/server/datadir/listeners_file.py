"""``listeners.json`` in the first log dir: the addresses a running broker has bound.

Owns: writing it once the listeners are bound (scripts, the admin CLI and the cluster
tool read it to find a broker started on port 0) and removing it after a clean shutdown,
when those ports are no longer served.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...log.files import atomic_write

LISTENERS_FILE = "listeners.json"


def host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def write_listeners_file(
    data_dir: Path, broker_id: int, bound: dict[str, tuple[str, int]], admin_url: str | None
) -> None:
    data: dict[str, Any] = {
        "broker_id": broker_id,
        "listeners": {name: host_port(host, port) for name, (host, port) in bound.items()},
    }
    if admin_url:
        data["admin"] = admin_url
    atomic_write(data_dir / LISTENERS_FILE, json.dumps(data, indent=1).encode())


def remove_listeners_file(data_dir: Path) -> None:
    (data_dir / LISTENERS_FILE).unlink(missing_ok=True)
