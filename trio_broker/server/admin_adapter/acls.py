"""The broker side of the admin API's ACL routes (``admin.acl_view.AclView``).

Owns: ``AclAdmin``, the part of ``BrokerAdminView`` that turns the admin API's
``AclRecord``s into the authorizer's bindings and filters and back, and changes the ACLs
through the broker (``Broker.create_acls`` / ``delete_acls``): the same store, lock and
log lines as Kafka's CreateAcls and DeleteAcls. A binding the authorizer refuses is an
``Invalid`` naming it, and then nothing is stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from admin.acl_view import AclRecord
from admin.view import Invalid

from ...security.acl import AclBinding, AclError, AclFilter

if TYPE_CHECKING:
    from ..lifecycle import Broker


def _record(b: AclBinding) -> AclRecord:
    return AclRecord(**b.as_dict())


def _filter(r: AclRecord) -> AclFilter:
    try:
        return AclFilter.of(
            r.resource_type,
            r.resource_name,
            r.pattern_type,
            r.principal,
            r.host,
            r.operation,
            r.permission_type,
        )
    except AclError as exc:
        raise Invalid("invalid-filter", str(exc)) from None


class AclAdmin:
    broker: Broker

    def acls(self, acl_filter: AclRecord) -> Sequence[AclRecord]:
        return [_record(b) for b in self.broker.find_acls(_filter(acl_filter))]

    async def create_acls(self, bindings: Sequence[AclRecord]) -> Sequence[AclRecord]:
        checked: list[AclBinding] = []
        for i, r in enumerate(bindings):
            try:
                checked.append(
                    AclBinding.of(
                        r.resource_type,
                        r.resource_name,
                        r.pattern_type,
                        r.principal,
                        r.host,
                        r.operation,
                        r.permission_type,
                    )
                )
            except AclError as exc:
                raise Invalid("invalid-acl", f"acls[{i}]: {exc}") from None
        await self.broker.create_acls(checked)
        return [_record(b) for b in dict.fromkeys(checked)]

    async def delete_acls(self, acl_filter: AclRecord) -> Sequence[AclRecord]:
        matched = await self.broker.delete_acls([_filter(acl_filter)])
        return [_record(b) for b in matched[0]]
