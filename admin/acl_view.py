"""What the admin API's ACL routes need of the broker: the ``AclView`` protocol.

Owns: ``AclView`` (list, create and delete ACL bindings in the broker's one ACL store, the
one Kafka's CreateAcls/DescribeAcls/DeleteAcls use), ``AclRecord`` (a binding as the HTTP
contract shows it: Kafka's names as strings) and the names that are part of the
contract (``RESOURCE_TYPES``, ``PATTERN_TYPES``, ``OPERATIONS``, ``PERMISSION_TYPES``:
Kafka's enum names; filters also take ``ANY``, and pattern types ``MATCH``). Imports
nothing of the broker, so the routes can be read and tested against any object of this
shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

RESOURCE_TYPES = ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID")
PATTERN_TYPES = ("LITERAL", "PREFIXED")
OPERATIONS = (
    "ALL",
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
    "CREATE_TOKENS",
    "DESCRIBE_TOKENS",
)
PERMISSION_TYPES = ("ALLOW", "DENY")
FILTER_PATTERN_TYPES = ("ANY", "MATCH", *PATTERN_TYPES)


@dataclass(frozen=True, slots=True)
class AclRecord:
    """One binding, or (with ``None`` and ``ANY`` values) one filter."""

    resource_type: str
    resource_name: str | None
    pattern_type: str
    principal: str | None
    host: str | None
    operation: str
    permission_type: str


class AclView(Protocol):
    def acls(self, acl_filter: AclRecord) -> Sequence[AclRecord]:
        """The bindings the filter matches."""
        ...

    async def create_acls(self, bindings: Sequence[AclRecord]) -> Sequence[AclRecord]:
        """Store every binding, or none: ``Invalid`` names the first bad one."""
        ...

    async def delete_acls(self, acl_filter: AclRecord) -> Sequence[AclRecord]:
        """Delete what the filter matches and return it."""
        ...
