"""The authorization checks handlers make, in Kafka's terms (KafkaApis' AuthHelper).

Owns: ``allowed`` (one check for the request's principal and host), ``cluster_allowed``,
``authorized_operations`` (the bit field of Metadata and DescribeGroups) and the resource
and operation names handlers use. Every check goes through ``BrokerView.authorize``, which
allows everything when no authorizer is configured. Only client requests are checked: the
broker's own writes (``__consumer_offsets``) never pass through here. No trio.

For APIs added later, Kafka's rules: DescribeUserScramCredentials needs
``cluster_allowed(ctx, Op.DESCRIBE)``, AlterUserScramCredentials ``cluster_allowed(ctx,
Op.ALTER)`` (each result CLUSTER_AUTHORIZATION_FAILED otherwise); AlterConfigs and
IncrementalAlterConfigs ``ALTER_CONFIGS`` on the topic (TOPIC_AUTHORIZATION_FAILED) or the
cluster for a broker (CLUSTER_AUTHORIZATION_FAILED); ApiVersions, SaslHandshake and
SaslAuthenticate are never checked.
"""

from __future__ import annotations

from ..security.acl import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType
from .context import RequestContext

__all__ = [
    "CLUSTER",
    "GROUP",
    "NOT_REQUESTED_OPERATIONS",
    "TOPIC",
    "TRANSACTIONAL_ID",
    "Op",
    "allowed",
    "authorized_operations",
    "cluster_allowed",
]

Op = AclOperation
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
NOT_REQUESTED_OPERATIONS = -(2**31)  # Kafka's INT32_MIN: "not asked for"


def allowed(
    ctx: RequestContext,
    operation: AclOperation,
    resource_type: ResourceType,
    name: str,
    *,
    log_denied: bool = True,
) -> bool:
    return ctx.broker.authorize(
        ctx.principal, ctx.client_host, operation, resource_type, name, log_denied=log_denied
    )


def cluster_allowed(
    ctx: RequestContext, operation: AclOperation, *, log_denied: bool = True
) -> bool:
    return allowed(ctx, operation, CLUSTER, CLUSTER_NAME, log_denied=log_denied)


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """Kafka's authorized-operations bit field: bit ``op`` set for each operation of the
    resource type the principal may do (checked without logging denials)."""
    bits = 0
    for op in SUPPORTED_OPERATIONS[resource_type]:
        if allowed(ctx, op, resource_type, name, log_denied=False):
            bits |= 1 << op
    return bits
