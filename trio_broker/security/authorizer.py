"""The ACL authorizer: Kafka's rules for who may do what, over an in-memory set of bindings.

Owns: ``Authorizer`` — the bindings (indexed by resource pattern), ``authorize`` (one
decision), ``authorize_any`` (KIP-679's "may this principal do OP on some resource of a
type", used by InitProducerId), ``find`` (a filter's matches) and the copy-on-change
``with_added`` / ``without`` that the store persists before swapping in.

Kafka's semantics: ``super.users`` may do everything; the bindings that apply to a resource
are its LITERAL name, the LITERAL ``*`` and every PREFIXED pattern its name starts with;
when none applies, ``allow.everyone.if.no.acl.found`` decides; otherwise a DENY matching
the principal (or ``User:*``), the host (or ``*``) and the operation (or ALL) wins; else an
ALLOW of the operation, ALL, or an operation implying it (READ/WRITE/DELETE/ALTER imply
DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows; else it is denied.

Decisions are cached per (principal, host, operation, resource), so the check on a hot
path (Produce, Fetch) is one dict lookup; any change of the bindings makes a new
authorizer with empty caches. Pure logic: no I/O, no trio.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .acl import (
    IMPLIED_BY,
    WILDCARD,
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

__all__ = ["Authorizer", "principal_matches"]

_CACHE_LIMIT = 100_000  # decisions (and per-resource lists) kept before starting over
_ALLOW, _DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
_ALL = AclOperation.ALL
_WILDCARD_PRINCIPAL = "User:*"

Key = tuple[ResourceType, PatternType, str]


def principal_matches(acl_principal: str, principal: str) -> bool:
    return acl_principal in (principal, _WILDCARD_PRINCIPAL)


class Authorizer:
    def __init__(
        self,
        bindings: Iterable[AclBinding] = (),
        *,
        super_users: Sequence[str] = (),
        allow_if_no_acl: bool = False,
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._by_pattern: dict[Key, frozenset[AclBinding]] = {}
        for b in bindings:
            key = (b.resource_type, b.pattern_type, b.resource_name)
            self._by_pattern[key] = self._by_pattern.get(key, frozenset()) | {b}
        self._types = {k[0] for k in self._by_pattern}
        # prefix lengths in use per resource type, so a lookup tries only those
        self._prefix_lengths: dict[ResourceType, tuple[int, ...]] = {}
        for rtype, ptype, name in self._by_pattern:
            if ptype == PatternType.PREFIXED:
                lengths = set(self._prefix_lengths.get(rtype, ())) | {len(name)}
                self._prefix_lengths[rtype] = tuple(sorted(lengths))
        self._applying: dict[tuple[ResourceType, str], tuple[AclBinding, ...]] = {}
        self._decisions: dict[tuple[str, str, AclOperation, ResourceType, str], bool] = {}

    # ---------------------------------------------------------------- queries

    def bindings(self) -> list[AclBinding]:
        return sorted(
            (b for group in self._by_pattern.values() for b in group), key=AclBinding.sort_key
        )

    def __len__(self) -> int:
        return sum(len(g) for g in self._by_pattern.values())

    def find(self, f: AclFilter) -> list[AclBinding]:
        return [b for b in self.bindings() if f.matches(b)]

    def applying(self, resource_type: ResourceType, name: str) -> tuple[AclBinding, ...]:
        """Every binding that applies to the resource (cached)."""
        key = (resource_type, name)
        found = self._applying.get(key)
        if found is not None:
            return found
        if resource_type not in self._types:
            return ()
        out: list[AclBinding] = []
        get = self._by_pattern.get
        for pattern in (name, WILDCARD):
            out.extend(get((resource_type, PatternType.LITERAL, pattern), ()))
        for n in self._prefix_lengths.get(resource_type, ()):
            if n <= len(name):
                out.extend(get((resource_type, PatternType.PREFIXED, name[:n]), ()))
        found = tuple(out)
        if len(self._applying) >= _CACHE_LIMIT:
            self._applying.clear()
        self._applying[key] = found
        return found

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        key = (principal, host, operation, resource_type, name)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decide(principal, host, operation, resource_type, name)
            if len(self._decisions) >= _CACHE_LIMIT:
                self._decisions.clear()
            self._decisions[key] = decision
        return decision

    def _decide(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        acls = self.applying(resource_type, name)
        if not acls:
            return self.allow_if_no_acl
        mine = [
            b
            for b in acls
            if principal_matches(b.principal, principal) and b.host in (host, WILDCARD)
        ]
        if any(b.permission == _DENY and b.operation in (operation, _ALL) for b in mine):
            return False
        granting = {operation, _ALL} | IMPLIED_BY.get(operation, frozenset())
        return any(b.permission == _ALLOW and b.operation in granting for b in mine)

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether ``principal`` may do ``operation`` on at least one resource of the type
        (Kafka's authorizeByResourceType): an ALLOW not covered by a DENY of the same
        principal, host and operation."""
        if principal in self.super_users:
            return True
        if resource_type not in self._types:
            return self.allow_if_no_acl
        allows: list[AclBinding] = []
        denies: list[AclBinding] = []
        for (rtype, _, _), group in self._by_pattern.items():
            if rtype != resource_type:
                continue
            for b in group:
                if (
                    principal_matches(b.principal, principal)
                    and b.host in (host, WILDCARD)
                    and b.operation in (operation, _ALL)
                ):
                    (allows if b.permission == _ALLOW else denies).append(b)
        for d in denies:
            if d.pattern_type == PatternType.LITERAL and d.resource_name == WILDCARD:
                return False
        for a in allows:
            covered = False
            for d in denies:
                if d.pattern_type == PatternType.PREFIXED:
                    covered = a.resource_name.startswith(d.resource_name)
                else:
                    covered = a.pattern_type == PatternType.LITERAL and (
                        a.resource_name == d.resource_name
                    )
                if covered:
                    break
            if not covered:
                return True
        return False

    # --------------------------------------------------------------- changes

    def with_added(self, bindings: Iterable[AclBinding]) -> Authorizer:
        return self._replaced([*self.bindings(), *bindings])

    def without(self, bindings: Iterable[AclBinding]) -> Authorizer:
        gone = set(bindings)
        return self._replaced([b for b in self.bindings() if b not in gone])

    def with_settings(self, *, super_users: Sequence[str], allow_if_no_acl: bool) -> Authorizer:
        return Authorizer(self.bindings(), super_users=super_users, allow_if_no_acl=allow_if_no_acl)

    def _replaced(self, bindings: list[AclBinding]) -> Authorizer:
        return Authorizer(
            bindings, super_users=tuple(self.super_users), allow_if_no_acl=self.allow_if_no_acl
        )
