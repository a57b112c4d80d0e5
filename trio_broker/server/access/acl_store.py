"""The ACLs as stored, and the broker's authorization switch, denial log and counters.

Owns: ``AclStore`` — the bindings persisted as ``acls.json`` in the first log dir (written
to a temporary file, fsynced and renamed, so a crash leaves the old or the new file whole)
behind the current ``Authorizer`` (swapped for a new one after each change is on disk) —
and ``Authorization``, what the API handlers reach through ``BrokerView.authorize``:
off unless ``authorizer.class.name`` is set (Kafka's switch: empty means no
authorization); when on, each denial is counted and logged at most once per
``DENIAL_LOG_INTERVAL_S`` for the same principal, host, operation and resource.
The Kafka ACL APIs and the admin API share one store. Blocking file I/O in ``load``,
``add`` and ``remove``: the broker calls them from a worker thread, one change at a time.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...security.acl import AclBinding, AclFilter, AclOperation, ResourceType
from ...security.authorizer import Authorizer
from ...security.denials import DenialLog
from ..datadir import JsonDocument

log = logging.getLogger("trio_broker.authorizer")

DENIAL_LOG_INTERVAL_S = 60.0


class AclStore:
    FILE = "acls.json"

    def __init__(
        self, directory: Path, *, super_users: Sequence[str] = (), allow_if_no_acl: bool = False
    ) -> None:
        self.document = JsonDocument(directory / self.FILE, what="ACL")
        self.authorizer = Authorizer(super_users=super_users, allow_if_no_acl=allow_if_no_acl)
        self._lock = threading.Lock()

    def find(self, f: AclFilter) -> list[AclBinding]:
        return self.authorizer.find(f)

    def add(self, bindings: Iterable[AclBinding]) -> None:
        """Store bindings (already there: kept once). Blocking."""
        with self._lock:
            new = self.authorizer.with_added(bindings)
            self._save(new.bindings())
            self.authorizer = new

    def remove(self, filters: Sequence[AclFilter]) -> list[list[AclBinding]]:
        """Delete every binding a filter matches; per filter, what it matched. Blocking."""
        with self._lock:
            current = self.authorizer
            matched = [current.find(f) for f in filters]
            gone = {b for group in matched for b in group}
            if gone:
                new = current.without(gone)
                self._save(new.bindings())
                self.authorizer = new
            return matched

    def load(self) -> None:
        """Read ``acls.json`` if there is one; a malformed file is a start-up error."""
        data = self.document.read()
        if data is None:
            return
        with self.document.parsing():
            bindings = [AclBinding.from_dict(item) for item in data["acls"]]
        with self._lock:
            self.authorizer = self.authorizer.with_added(bindings)

    def _save(self, bindings: list[AclBinding]) -> None:
        self.document.write({"acls": [b.as_dict() for b in bindings]})


class Authorization:
    """The checks handlers ask for, over an ``AclStore``; everything allowed when off."""

    def __init__(self, store: AclStore, *, enabled: bool) -> None:
        self.store = store
        self.enabled = enabled
        self.denials = DenialLog(DENIAL_LOG_INTERVAL_S)
        self.denied: Counter[tuple[str, str]] = Counter()  # (resource type, operation)

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        *,
        log_denied: bool = True,
    ) -> bool:
        if not self.enabled:
            return True
        if self.store.authorizer.authorize(principal, host, operation, resource_type, name):
            return True
        if log_denied:
            self._denied(principal, host, operation, resource_type, name)
        return False

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        if not self.enabled:
            return True
        return self.store.authorizer.authorize_any(principal, host, operation, resource_type)

    def figures(self) -> dict[str, object]:
        """The metrics snapshot's ``authorization`` section."""
        by_resource: dict[str, dict[str, int]] = {}
        for (resource_type, operation), count in sorted(self.denied.items()):
            by_resource.setdefault(resource_type, {})[operation] = count
        return {
            "enabled": self.enabled,
            "acls": len(self.store.authorizer),
            "denied": sum(self.denied.values()),
            "denied_by_resource": by_resource,
        }

    def _denied(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> None:
        self.denied[(resource_type.name, operation.name)] += 1
        suppressed = self.denials.note((principal, host, operation, resource_type, name))
        if suppressed is None:
            return
        more = f" ({suppressed} more denials of this since the last line)" if suppressed else ""
        log.warning(
            "authorization denied: principal %s from %s may not %s %s %r%s",
            principal,
            host,
            operation.name,
            resource_type.name,
            name,
            more,
        )
