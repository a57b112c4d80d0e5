"""The response that answers a request the broker failed on (Kafka's ``getErrorResponse``).

Owns: ``error_response(spec, version, request_body, code, message)``. Kafka answers a
request whose handling threw with the request's own error response: every error code of
the response set to UNKNOWN_SERVER_ERROR, for every topic, partition or resource the
request named. Kafka writes that per API; here it is derived from the message
descriptions, so no API is left out:

- a response with a top-level ``error_code`` (in that version) carries the error there
  (and ``error_message``, where the version has one);
- otherwise each array of the response whose items hold an error code mirrors an array of
  the request: one item per request item, with the request item's identifiers copied
  (topic name or id, partition index, group id, resource type and name, quota entity) and
  the error in every ``error_code`` inside it. An array of names in the request (the
  topics of DeleteTopics v1-5, the groups of DescribeGroups) gives items with that name.

When the result would carry no error code at all (a Metadata request for all topics: an
empty answer would read as "no topics"), there is no error response: ``None``, and the
caller closes the connection instead. Never raises for a well-formed request body.
"""

from __future__ import annotations

from typing import Any

from .api import ApiSpec
from .schema import ArrayOf, FieldSpec, Struct

# Field names that identify what an item of a request is about, grouped by meaning: the
# response item gets the request item's value under its own name for the same meaning.
_IDENTIFIERS: tuple[frozenset[str], ...] = (
    frozenset({"name", "topic", "topic_name"}),
    frozenset({"topic_id"}),
    frozenset({"partition_index", "partition", "index", "partition_id"}),
    frozenset({"group_id"}),
    frozenset({"resource_type"}),
    frozenset({"resource_name"}),
    frozenset({"entity_type"}),
    frozenset({"entity_name"}),
    frozenset({"user", "name"}),
    frozenset({"member_id"}),
    frozenset({"transactional_id"}),
)
# AddPartitionsToTxn's results name theirs partition_error_code.
_ERROR_CODES = frozenset({"error_code", "partition_error_code"})
_STRING_KEYS = ("name", "topic", "group_id", "resource_name", "user", "key", "transactional_id")
_INT_KEYS = ("partition_index", "partition", "partition_id")


def error_response(
    spec: ApiSpec, version: int, request_body: Any, code: int, message: str | None = None
) -> Any | None:
    """The response body telling the client ``code`` for everything ``request_body``
    asked, or None when the response of ``version`` has no place for an error code."""
    if version not in spec.versions:
        return None
    response, errors = _mirror(spec.response, request_body, version, code, message)
    return response if errors else None


def _fields(cls: type[Struct], version: int) -> list[FieldSpec]:
    return [f for f in cls.__fields__ if f.exists_in(version)]


def _mirror(
    cls: type[Struct], source: Any, version: int, code: int, message: str | None
) -> tuple[Any, int]:
    """An instance of ``cls`` for ``source`` (a request struct or a name), and how many
    error codes it carries."""
    out: Any = cls()
    errors = 0
    fields = _fields(cls, version)
    if isinstance(source, str | int):
        # the item of an array of names (or partition indexes): it goes in the key field
        keys, kind = (_STRING_KEYS, "string") if isinstance(source, str) else (_INT_KEYS, "int32")
        for f in fields:
            if f.type == kind and f.name in keys:
                setattr(out, f.name, source)
                break
        source = None
    src_fields = _fields(type(source), version) if isinstance(source, Struct) else []
    for f in fields:
        if f.name in _ERROR_CODES and f.type == "int16":
            setattr(out, f.name, code)
            errors += 1
        elif f.name == "error_message" and f.type == "string":
            out.error_message = message
        elif isinstance(f.type, ArrayOf) and isinstance(f.type.item, type):
            match = _matching_array(f, src_fields, _holds_error(f.type.item, version))
            if match is None or source is None:
                continue
            items = getattr(source, match.name) or []
            built = [_mirror(f.type.item, item, version, code, message) for item in items]
            setattr(out, f.name, [b for b, _ in built])
            errors += sum(n for _, n in built)
        elif isinstance(f.type, type) and issubclass(f.type, Struct):
            # a struct field (AlterClientQuotas' entity): mirror the request's same field
            src = next((s for s in src_fields if s.name == f.name), None)
            value = getattr(source, f.name) if src is not None and source is not None else None
            if value is not None:
                built_one, n = _mirror(f.type, value, version, code, message)
                setattr(out, f.name, built_one)
                errors += n
        elif source is not None:
            _copy_identifier(out, f, source, src_fields)
    return out, errors


def _holds_error(cls: type[Struct], version: int, depth: int = 0) -> bool:
    for f in _fields(cls, version):
        if f.name in _ERROR_CODES:
            return True
        t = f.type.item if isinstance(f.type, ArrayOf) else f.type
        if isinstance(t, type) and depth < 4 and _holds_error(t, version, depth + 1):
            return True
    return False


def _matching_array(
    f: FieldSpec, src_fields: list[FieldSpec], holds_error: bool
) -> FieldSpec | None:
    """The request array a response array answers: the one whose items share the most
    identifiers with the response's items (an array of names or partition indexes counts
    as sharing its key). An array without error codes is mirrored only from the request's
    array of the same name (AlterClientQuotas' entity)."""
    assert isinstance(f.type, ArrayOf) and isinstance(f.type.item, type)
    item = f.type.item
    names = {g.name for g in item.__fields__}
    best: tuple[int, FieldSpec] | None = None
    for s in src_fields:
        if not isinstance(s.type, ArrayOf) or (not holds_error and s.name != f.name):
            continue
        if isinstance(s.type.item, type):
            src_names = {g.name for g in s.type.item.__fields__}
            score = sum(1 for group in _IDENTIFIERS if group & names and group & src_names) + (
                1 if s.name == f.name else 0
            )
        elif s.type.item == "string":
            score = 1 if names & set(_STRING_KEYS) else 0
        elif s.type.item == "int32":
            score = 1 if names & set(_INT_KEYS) else 0
        else:
            continue
        if score and (best is None or score > best[0]):
            best = (score, s)
    if best is None and holds_error:
        arrays = [s for s in src_fields if isinstance(s.type, ArrayOf)]
        # positional answers (CreateAcls' results for its creations): the only array
        if len(arrays) == 1 and isinstance(arrays[0].type, ArrayOf):
            return arrays[0] if isinstance(arrays[0].type.item, type) else None
    return None if best is None else best[1]


def _copy_identifier(out: Struct, f: FieldSpec, source: Any, src_fields: list[FieldSpec]) -> None:
    for group in _IDENTIFIERS:
        if f.name not in group:
            continue
        for s in src_fields:
            if s.name in group and s.type == f.type:
                setattr(out, f.name, getattr(source, s.name))
                return
