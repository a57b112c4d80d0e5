"""Kafka's ACL vocabulary: resource types, pattern types, operations, permissions, bindings.

Owns: the four enums with Kafka's wire codes (``ResourceType``, ``PatternType``,
``AclOperation``, ``AclPermissionType``), ``AclBinding`` (one definite rule: a resource
pattern and an access control entry), ``AclFilter`` (what DescribeAcls and DeleteAcls
match with: ANY fields, null strings, the MATCH pattern type), ``AclError`` and the checks
that tell a definite binding or a usable filter from a bad one, with messages for the
client. Pure data and logic: no I/O, no trio.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD",
    "AclBinding",
    "AclError",
    "AclFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourceType",
]

WILDCARD = "*"
"""A literal resource name or principal name that matches every name."""

CLUSTER_NAME = "kafka-cluster"
"""The name of the one CLUSTER resource."""


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# An ALLOW of one of these grants the key too (Kafka: READ, WRITE, DELETE and ALTER imply
# DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS). A DENY implies nothing.
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}

# The operations each resource type has (the authorized-operations bit fields).
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
}


class AclError(ValueError):
    """A binding or filter that cannot be used (Kafka answers INVALID_REQUEST)."""


def _enum(kind: type[enum.IntEnum], value: Any, what: str) -> Any:
    """An enum member from its code or (case-insensitive) name; AclError if neither."""
    try:
        if isinstance(value, str):
            return kind[value.strip().upper()]
        if isinstance(value, int) and not isinstance(value, bool):
            return kind(value)
    except (KeyError, ValueError):
        pass
    names = ", ".join(m.name for m in kind)
    raise AclError(f"{what} {value!r} is not one of {names}")


def parse_principal(principal: str) -> tuple[str, str]:
    """``User:alice`` -> ("User", "alice"); AclError if it is not Type:name."""
    kind, sep, name = principal.partition(":")
    if not sep or not kind or not name:
        raise AclError(f"principal {principal!r} is not Type:name (e.g. User:alice)")
    return kind, name


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One rule: ``principal`` from ``host`` may (ALLOW) or may not (DENY) do
    ``operation`` on the resources ``pattern_type``/``resource_name`` names."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    @classmethod
    def of(
        cls,
        resource_type: Any,
        resource_name: Any,
        pattern_type: Any,
        principal: Any,
        host: Any,
        operation: Any,
        permission: Any,
    ) -> AclBinding:
        """A definite binding from codes or names; ``AclError`` says what is wrong."""
        binding = cls(
            _enum(ResourceType, resource_type, "resource type"),
            resource_name,
            _enum(PatternType, pattern_type, "pattern type"),
            principal,
            host,
            _enum(AclOperation, operation, "operation"),
            _enum(AclPermissionType, permission, "permission type"),
        )
        binding.check()
        return binding

    def check(self) -> None:
        """Refuse what a stored rule may not be (ANY, MATCH, UNKNOWN, empty names ...)."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise AclError(f"an ACL needs a definite resource type, not {self.resource_type.name}")
        if self.resource_type not in SUPPORTED_OPERATIONS:
            raise AclError(f"resource type {self.resource_type.name} is not supported")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise AclError(
                f"an ACL's pattern type is LITERAL or PREFIXED, not {self.pattern_type.name}"
            )
        if not isinstance(self.resource_name, str) or not self.resource_name:
            raise AclError("an ACL needs a non-empty resource name")
        if self.resource_type == ResourceType.CLUSTER and (
            self.resource_name != CLUSTER_NAME or self.pattern_type != PatternType.LITERAL
        ):
            raise AclError(f"the CLUSTER resource is the LITERAL name {CLUSTER_NAME!r}")
        if not isinstance(self.principal, str):
            raise AclError("an ACL needs a principal")
        parse_principal(self.principal)
        if not isinstance(self.host, str) or not self.host:
            raise AclError("an ACL needs a host ('*' for any)")
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            raise AclError(f"an ACL needs a definite operation, not {self.operation.name}")
        if self.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise AclError(f"an ACL's permission is ALLOW or DENY, not {self.permission.name}")

    def as_dict(self) -> dict[str, str]:
        """The binding with names for its enums (the admin API's and the file's form)."""
        return {
            "resource_type": self.resource_type.name,
            "resource_name": self.resource_name,
            "pattern_type": self.pattern_type.name,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation.name,
            "permission_type": self.permission.name,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AclBinding:
        return cls.of(
            data["resource_type"],
            data["resource_name"],
            data["pattern_type"],
            data["principal"],
            data["host"],
            data["operation"],
            data["permission_type"],
        )

    def sort_key(self) -> tuple[Any, ...]:
        return (
            self.resource_type,
            self.pattern_type,
            self.resource_name,
            self.principal,
            self.host,
            self.operation,
            self.permission,
        )


@dataclass(frozen=True, slots=True)
class AclFilter:
    """What DescribeAcls / DeleteAcls match: ANY (or None for strings) matches all.

    Pattern type ANY matches bindings of any pattern type with exactly ``resource_name``;
    MATCH matches the bindings that apply to a resource named ``resource_name``: the
    LITERAL name, the LITERAL ``*`` and every PREFIXED pattern the name starts with.
    """

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    @classmethod
    def of(
        cls,
        resource_type: Any = ResourceType.ANY,
        resource_name: str | None = None,
        pattern_type: Any = PatternType.ANY,
        principal: str | None = None,
        host: str | None = None,
        operation: Any = AclOperation.ANY,
        permission: Any = AclPermissionType.ANY,
    ) -> AclFilter:
        """A filter from codes or names; ``AclError`` for an UNKNOWN or unknown value."""
        f = cls(
            _enum(ResourceType, resource_type, "resource type"),
            resource_name,
            _enum(PatternType, pattern_type, "pattern type"),
            principal,
            host,
            _enum(AclOperation, operation, "operation"),
            _enum(AclPermissionType, permission, "permission type"),
        )
        for value, what in (
            (f.resource_type, "resource type"),
            (f.pattern_type, "pattern type"),
            (f.operation, "operation"),
            (f.permission, "permission type"),
        ):
            if value.name == "UNKNOWN":
                raise AclError(f"a filter's {what} may not be UNKNOWN")
        return f

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and b.resource_type != self.resource_type:
            return False
        if not self._matches_pattern(b):
            return False
        if self.principal is not None and b.principal != self.principal:
            return False
        if self.host is not None and b.host != self.host:
            return False
        if self.operation != AclOperation.ANY and b.operation != self.operation:
            return False
        return self.permission == AclPermissionType.ANY or b.permission == self.permission

    def _matches_pattern(self, b: AclBinding) -> bool:
        name = self.resource_name
        if self.pattern_type == PatternType.MATCH:
            if name is None:
                return True
            if b.pattern_type == PatternType.LITERAL:
                return b.resource_name in (name, WILDCARD)
            return name.startswith(b.resource_name)
        if self.pattern_type != PatternType.ANY and b.pattern_type != self.pattern_type:
            return False
        return name is None or b.resource_name == name
