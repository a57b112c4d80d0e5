"""DescribeClientQuotas (48) and AlterClientQuotas (49): client quota entities and their limits."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class DescribeClientQuotasRequest(Request, api_key=48, versions="0-1", flexible="1+"):
    class ComponentData(Struct):
        entity_type: str = field("string")
        match_type: int = field("int8")
        match: str | None = field("string", nullable="0+")

    components: list[ComponentData] = field(array(ComponentData))
    strict: bool = field("bool")


class DescribeClientQuotasResponse(Response, api_key=48, versions="0-1", flexible="1+"):
    class EntryData(Struct):
        class EntityData(Struct):
            entity_type: str = field("string")
            entity_name: str | None = field("string", nullable="0+", default=None)

        class ValueData(Struct):
            key: str = field("string")
            value: float = field("float64")

        entity: list[EntityData] = field(array(EntityData))
        values: list[ValueData] = field(array(ValueData))

    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")
    error_message: str | None = field("string", nullable="0+", default=None)
    entries: list[EntryData] | None = field(array(EntryData), nullable="0+")


class AlterClientQuotasRequest(Request, api_key=49, versions="0-1", flexible="1+"):
    class EntryData(Struct):
        class EntityData(Struct):
            entity_type: str = field("string")
            entity_name: str | None = field("string", nullable="0+")

        class OpData(Struct):
            key: str = field("string")
            value: float = field("float64")
            remove: bool = field("bool")

        entity: list[EntityData] = field(array(EntityData))
        ops: list[OpData] = field(array(OpData))

    entries: list[EntryData] = field(array(EntryData))
    validate_only: bool = field("bool")


class AlterClientQuotasResponse(Response, api_key=49, versions="0-1", flexible="1+"):
    class EntryData(Struct):
        class EntityData(Struct):
            entity_type: str = field("string")
            entity_name: str | None = field("string", nullable="0+", default=None)

        error_code: int = field("int16")
        error_message: str | None = field("string", nullable="0+", default=None)
        entity: list[EntityData] = field(array(EntityData))

    throttle_time_ms: int = field("int32")
    entries: list[EntryData] = field(array(EntryData))


DESCRIBE_CLIENT_QUOTAS = register(DescribeClientQuotasRequest, DescribeClientQuotasResponse)
ALTER_CLIENT_QUOTAS = register(AlterClientQuotasRequest, AlterClientQuotasResponse)
