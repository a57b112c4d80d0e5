"""DescribeConfigs v0-v4: a topic's or the broker's effective configuration.

Topic entries carry their source (TOPIC_CONFIG for the topic's own overrides, else the
broker key's source: DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
STATIC_BROKER_CONFIG or DEFAULT_CONFIG); broker entries are read-only unless dynamic. With
``include_synonyms`` (v1+), every setting behind a value in Kafka's precedence (the topic's
own, this broker's run-time change, the cluster-wide default's, the static setting, the
default; ``log.retention.hours`` and the like included). v0 (Kafka 3.9 serves it; 4.0
removed it) has no sources nor synonyms, only ``is_default``: the value is the key's
default (DEFAULT_CONFIG). Sensitive values are never sent (null, is_sensitive true).
``configuration_keys`` null means every key; an unknown key is simply absent, as in Kafka.
A CLIENT_METRICS resource (16, KIP-714) is a
subscription's ``metrics``, ``interval.ms`` and ``match`` (DESCRIBE_CONFIGS on the cluster;
an empty name is INVALID_REQUEST; an unknown one answers the defaults, as Kafka does).
A broker resource is named by this broker's id (every key in force), or empty for the
cluster-wide default (only the keys set at that level, as Kafka answers); any other name is
INVALID_REQUEST, in Kafka's words. A topic needs DESCRIBE_CONFIGS on it
(TOPIC_AUTHORIZATION_FAILED), the broker DESCRIBE_CONFIGS on the cluster
(CLUSTER_AUTHORIZATION_FAILED).

ListConfigResources (74) lists the resources that have configs, as Kafka 4.1+'s
``handleListConfigResources``: DESCRIBE_CONFIGS on the cluster or
CLUSTER_AUTHORIZATION_FAILED; the types asked for (none: every type of the version, v0
client metrics only, v1 topics, brokers, broker loggers, client metrics and groups), any
other type UNSUPPORTED_VERSION with nothing listed; in Kafka's order: groups with configs
(none here: group configs are not served), client metrics subscriptions, broker
loggers and brokers (each broker with an endpoint on the request's listener), topics (all,
internal ones too). Each type's names are sorted.
"""

from __future__ import annotations

from typing import Any

from ...protocol.api import ApiKey, spec_for
from ...protocol.errors import ErrorCode
from ...protocol.messages.configs import ListConfigResourcesRequest, ListConfigResourcesResponse
from ...protocol.schema import item_type
from ..authz import TOPIC as TOPIC_RESOURCE
from ..authz import Op, allowed, cluster_allowed
from ..context import RequestContext
from ..services import broker_name_problem
from ..telemetry_services import CLIENT_METRICS_CONFIG

_SPEC = spec_for(ApiKey.DescribeConfigs)
assert _SPEC is not None
DescribeConfigsResponse: Any = _SPEC.response
Result: Any = item_type(DescribeConfigsResponse, "results")
Entry: Any = item_type(Result, "configs")
Synonym: Any = item_type(Entry, "synonyms")

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
# ListConfigResources: the types each version lists (Kafka's supportedResourceTypes)
LISTED_TYPES = {0: frozenset({CLIENT_METRICS})}
LISTED_TYPES_V1 = frozenset({TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP})
DEFAULT_CONFIG = 5  # DescribeConfigsResponse.ConfigSource: v0 says only is_default

# DescribeConfigsResponse.ConfigType
_TYPES = {"boolean": 1, "string": 2, "int": 3, "long": 5, "double": 6, "list": 7, "password": 9}


async def handle(ctx: RequestContext, req: Any) -> Any:
    broker = ctx.broker
    results = []
    for res in req.resources:
        result = Result(
            error_code=ErrorCode.NONE,
            error_message=None,
            resource_type=res.resource_type,
            resource_name=res.resource_name,
        )
        results.append(result)
        if res.resource_type == TOPIC:
            if not allowed(ctx, Op.DESCRIBE_CONFIGS, TOPIC_RESOURCE, res.resource_name):
                result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if broker.topic(res.resource_name) is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                result.error_message = f"topic {res.resource_name!r} does not exist"
                continue
            entries = broker.topic_config_entries(res.resource_name)
        elif res.resource_type == BROKER:
            if not cluster_allowed(ctx, Op.DESCRIBE_CONFIGS):
                result.error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                continue
            problem = broker_name_problem(res.resource_name, broker.broker_id)
            if problem is not None:
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = problem
                continue
            entries = broker.broker_config_entries(cluster_default=res.resource_name == "")
        elif res.resource_type == CLIENT_METRICS:
            if not cluster_allowed(ctx, Op.DESCRIBE_CONFIGS):
                result.error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            elif not res.resource_name:
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = "Client metrics subscription name must not be empty"
            else:
                result.configs = _client_metrics_entries(ctx, req, res)
            continue
        else:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = f"resource type {res.resource_type} is not supported"
            continue
        keys = res.configuration_keys
        result.configs = [
            Entry(
                name=e.name,
                value=e.text,
                read_only=e.read_only,
                is_default=e.source == DEFAULT_CONFIG,
                config_source=int(e.source),
                is_sensitive=e.is_sensitive,
                synonyms=[
                    Synonym(name=n, value=v, source=src)
                    for n, v, src in broker.config_synonyms(
                        e.name, res.resource_type, res.resource_name
                    )
                ]
                if req.include_synonyms
                else [],
                config_type=_TYPES.get(broker.config_type_name(e.name, res.resource_type), 0),
                documentation=broker.config_doc(e.name, res.resource_type)
                if req.include_documentation
                else None,
            )
            for e in entries.values()
            if keys is None or e.name in keys
        ]
    return DescribeConfigsResponse(throttle_time_ms=ctx.throttle_time_ms, results=results)


def _client_metrics_entries(ctx: RequestContext, req: Any, res: Any) -> list[Any]:
    """A subscription's three keys (an unknown one's: the defaults, as Kafka answers)."""
    keys = res.configuration_keys
    return [
        Entry(
            name=name,
            value=value,
            read_only=False,
            is_default=not explicit,
            config_source=CLIENT_METRICS_CONFIG if explicit else DEFAULT_CONFIG,
            is_sensitive=False,
            synonyms=[
                Synonym(
                    name=name,
                    value=value,
                    source=CLIENT_METRICS_CONFIG if explicit else DEFAULT_CONFIG,
                )
            ]
            if req.include_synonyms
            else [],
            config_type=_TYPES["int" if name == "interval.ms" else "list"],
            documentation=None,
        )
        for name, (value, explicit) in ctx.broker.telemetry.subscription_configs(
            res.resource_name
        ).items()
        if keys is None or name in keys
    ]


async def list_config_resources(
    ctx: RequestContext, req: ListConfigResourcesRequest
) -> ListConfigResourcesResponse:
    broker = ctx.broker
    answer = ListConfigResourcesResponse(throttle_time_ms=ctx.throttle_time_ms)
    if not cluster_allowed(ctx, Op.DESCRIBE_CONFIGS):
        answer.error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return answer
    supported = LISTED_TYPES.get(ctx.api_version, LISTED_TYPES_V1)
    wanted = set(req.resource_types) if ctx.api_version >= 1 and req.resource_types else supported
    if not wanted <= supported:
        answer.error_code = ErrorCode.UNSUPPORTED_VERSION
        return answer
    brokers = sorted({e.node_id for e in broker.endpoints(ctx.listener)})
    names: dict[int, list[str]] = {
        GROUP: [],  # group configs (KIP-848's) are not served: no group has any
        CLIENT_METRICS: list(broker.telemetry.subscription_names()),
        BROKER_LOGGER: [str(b) for b in brokers],
        BROKER: [str(b) for b in brokers],
        TOPIC: sorted(t.name for t in broker.topics()),
    }
    Resource = ListConfigResourcesResponse.ConfigResource
    answer.config_resources = [
        Resource(resource_name=name, resource_type=kind)
        for kind in (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)
        if kind in wanted
        for name in names[kind]
    ]
    return answer
