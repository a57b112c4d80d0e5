"""Who may do what: client quotas, ACLs and SCRAM credentials, as the Kafka APIs use them.

Owns: ``AccessControl``, the broker's service over the three stores the admin API shares
(``QuotaStore``, ``AclStore`` with its ``Authorization``, ``ScramStore``): reads answer
from memory; every change is written on a worker thread (ACL changes in order, under one
lock) and logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import trio

from ...protocol.errors import ErrorCode
from ...security.acl import AclBinding, AclFilter
from ...security.scram import ScramCredential
from ..quotas import QuotaEntity, QuotaError, QuotaStore
from .acl_store import AclStore, Authorization
from .scram_store import ScramStore

log = logging.getLogger("trio_broker.server")


class AccessControl:
    def __init__(
        self, quotas: QuotaStore, acls: AclStore, authorization: Authorization, scram: ScramStore
    ) -> None:
        self.quotas = quotas
        self.acls = acls
        self.authorization = authorization
        self.scram = scram
        self._acl_lock = trio.Lock()

    def client_quotas(self) -> list[tuple[dict[str, str | None], dict[str, float]]]:
        return [(e.as_dict(), dict(v)) for e, v in self.quotas.entries()]

    async def alter_client_quota(
        self,
        entity: dict[str, str | None],
        changes: dict[str, float | None],
        *,
        validate_only: bool,
    ) -> tuple[int, str | None]:
        try:
            quota_entity = QuotaEntity.of(entity)
            if validate_only:
                self.quotas.validate(quota_entity, changes)
            else:
                await trio.to_thread.run_sync(self.quotas.alter, quota_entity, changes)
        except QuotaError as exc:
            return ErrorCode.INVALID_REQUEST, str(exc)
        return ErrorCode.NONE, None

    def find_acls(self, acl_filter: AclFilter) -> list[AclBinding]:
        return self.acls.find(acl_filter)

    async def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        async with self._acl_lock:
            await trio.to_thread.run_sync(self.acls.add, list(bindings))
        log.info("ACLs added: %s", ", ".join(_acl_text(b) for b in bindings))

    async def delete_acls(self, filters: Sequence[AclFilter]) -> list[list[AclBinding]]:
        async with self._acl_lock:
            matched = await trio.to_thread.run_sync(self.acls.remove, list(filters))
        gone = {b for group in matched for b in group}
        if gone:
            log.info("ACLs removed: %s", ", ".join(_acl_text(b) for b in gone))
        return matched

    def scram_credentials(self) -> Mapping[str, Mapping[str, ScramCredential]]:
        return self.scram.users()

    async def alter_scram_credentials(
        self,
        upserts: Sequence[tuple[str, ScramCredential]],
        deletions: Sequence[tuple[str, str]],
    ) -> None:
        await trio.to_thread.run_sync(self.scram.apply, upserts, deletions)
        for user, _ in upserts:
            log.info("SCRAM credentials of user %r changed", user)
        for user, mechanism in deletions:
            log.info("SCRAM credential %s of user %r deleted", mechanism, user)


def _acl_text(b: AclBinding) -> str:
    return (
        f"{b.permission.name} {b.principal}@{b.host} {b.operation.name} "
        f"{b.resource_type.name}:{b.pattern_type.name}:{b.resource_name}"
    )
