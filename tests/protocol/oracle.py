"""Test-only oracles for the codec: Kafka's JSON schemas (as shipped in kafka-python, plus
Kafka 3.9's for the controller APIs 4.0 removed), kafka-python's encoder/decoder and kio's.
Nothing here is used by the broker at run time.

- ``kafka_schema(name, version)``: Kafka's JSON message definition, the specification, with its
  ``commonStructs`` resolved in place.
- ``our_structure(cls, version, flexible)`` / ``kafka_structure(fields, version, flexible)``:
  the fields a version has, in order, with type, nullability, tag, default and
  ignorability, so our declaration can be compared with Kafka's version by version.
- ``sample(cls, version, variant)``: an instance of one of our messages where every field
  that exists in ``version`` holds a non-default value (variant 0) or its edge value:
  null where nullable, empty arrays, negative numbers (variant 1).
- ``to_kafka_python(obj, kp_cls, json_fields, version)``: the same value as a
  kafka-python object.
- ``to_kio(obj, kio_cls)``: the same value as a kio entity (frozen dataclasses).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import functools
import json
import re
import types
import typing
import uuid
from pathlib import Path
from typing import Any

import kafka.protocol
from kafka.protocol.api_message import ApiMessage

from trio_broker.protocol.schema import (
    ArrayOf,
    FieldSpec,
    Message,
    Request,
    Struct,
    VersionRange,
)

from . import kafka3_schemas, kafka4_3_schemas

RESOURCES = Path(kafka.protocol.__file__).parent / "schemas" / "resources"
# The specification, newest release first: Kafka 4.3's definitions of every API served at
# a 4.x version; Kafka 3.9's of the controller APIs that Kafka 4.0 removed (LeaderAndIsr,
# StopReplica, UpdateMetadata, ControlledShutdown) and of the versions 4.0 removed from
# APIs we serve (DescribeConfigs v0, WriteTxnMarkers v0), and the group heartbeats' that
# the broker lists only to refuse.
KAFKA4_RESOURCES = Path(kafka4_3_schemas.__file__).parent
KAFKA3_RESOURCES = Path(kafka3_schemas.__file__).parent
SCHEMA_DIRS = (KAFKA4_RESOURCES, KAFKA3_RESOURCES)


def schema_path(name: str, version: int | None = None) -> Path:
    """The newest release's definition of ``name`` that has ``version`` (None: any)."""
    for folder in SCHEMA_DIRS:
        path = folder / f"{name}.json"
        if path.exists() and (version is None or version in _valid_versions(path)):
            return path
    raise LookupError(f"no definition of {name} v{version}")


@functools.cache
def _valid_versions(path: Path) -> VersionRange:
    return VersionRange.parse(_read_json(path)["validVersions"])


def _read_json(path: Path) -> dict[str, Any]:
    text = re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M)
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def _load_schema(path: Path) -> dict[str, Any]:
    schema = _read_json(path)
    common = {s["name"]: s["fields"] for s in schema.get("commonStructs", ())}
    _resolve_common(schema["fields"], common)
    return schema


def kafka_schema(name: str, version: int | None = None) -> dict[str, Any]:
    """Kafka's definition of message ``name`` (the newest release's that has ``version``);
    references to common structs are inlined."""
    return copy.deepcopy(_load_schema(schema_path(name, version)))


def _resolve_common(fields: list[dict[str, Any]], common: dict[str, Any]) -> None:
    for f in fields:
        item = f["type"].removeprefix("[]")
        if "fields" not in f and item in common:
            f["fields"] = copy.deepcopy(common[item])
        if "fields" in f:
            _resolve_common(f["fields"], common)


def norm(name: str) -> str:
    return name.replace("_", "").lower()


def _versions(text: str | None, default: str = "none") -> VersionRange:
    return VersionRange.parse(text if text is not None else default)


# ------------------------------------------------------------------- structure check

_IMPLICIT = {
    "bool": False,
    "string": "",
    "bytes": b"",
    "float64": 0.0,
    "records": None,
    "uuid": uuid.UUID(int=0),
}


def _json_default(f: dict[str, Any], response: bool = False) -> Any:
    """A JSON field's default as our declarations express it.

    One deliberate difference: in a response, a string that is nullable in every version
    it exists in and has no default in the JSON defaults to null in ours, where Kafka's
    generated class starts at "". Kafka's handlers set such a field to null unless they
    have something to say ("null if there was no error"); a handler of ours that forgets
    it sends null, not "" (tests/protocol/test_null_defaults.py)."""
    typ: str = f["type"]
    raw = f.get("default")
    if typ.startswith("[]"):
        return None if raw == "null" else "[]"
    if "fields" in f:
        return None if raw == "null" else "struct"
    if raw is None and response and typ == "string" and _null_wherever_present(f):
        return None
    if raw is None:
        return _IMPLICIT.get(typ, 0)
    raw = str(raw)
    if raw == "null":
        return None
    if typ == "bool":
        return raw.lower() == "true"
    if typ == "string":
        return raw
    if typ == "float64":
        return float(raw)
    return int(raw, 0)


def _our_default(f: FieldSpec) -> Any:
    if f.default_factory is list:
        return "[]"
    if f.default_factory is not None:
        return "struct"
    return f.default


def _null_wherever_present(f: dict[str, Any]) -> bool:
    """Whether a JSON field is nullable in every version it exists in."""
    present = _versions(f.get("versions"))
    nullable = _versions(f.get("nullableVersions"))
    return not nullable.empty and nullable.lo <= present.lo and nullable.hi >= present.hi


def kafka_structure(
    fields: list[dict[str, Any]], version: int, flexible: bool, response: bool = False
) -> list[Any]:
    out: list[Any] = []
    for f in fields:
        if version not in _versions(f.get("versions")):
            continue
        tagged = "tag" in f and version in _versions(f.get("taggedVersions"), f["versions"])
        typ: str = f["type"]
        out.append(
            (
                norm(f["name"]),
                None if "fields" in f else typ,
                typ.startswith("[]"),
                version in _versions(f.get("nullableVersions")),
                f["tag"] if tagged and flexible else None,
                _json_default(f, response),
                bool(f.get("ignorable", False)),
                kafka_structure(f["fields"], version, flexible, response)
                if "fields" in f
                else None,
            )
        )
    return out


def our_structure(cls: type[Struct], version: int, flexible: bool) -> list[Any]:
    out: list[Any] = []
    for f in cls.__fields__:
        if not f.exists_in(version):
            continue
        t = f.type
        is_array = isinstance(t, ArrayOf)
        item = t.item if isinstance(t, ArrayOf) else t
        is_struct = isinstance(item, type)
        out.append(
            (
                norm(f.name),
                None if is_struct else (f"[]{item}" if is_array else item),
                is_array,
                version in f.nullable,
                f.tag if flexible and f.is_tagged_in(version) else None,
                _our_default(f),
                f.ignorable,
                our_structure(item, version, flexible) if is_struct else None,  # type: ignore[arg-type]
            )
        )
    return out


# ------------------------------------------------------------------------ sample values

_INTS = {
    "int8": (7, -1),
    "int16": (1234, -1),
    "uint16": (65000, 0),
    "int32": (123456, -1),
    "uint32": (4000000000, 0),
    "int64": (1234567890123, -1),
}


def sample(cls: type[Struct], version: int, variant: int = 0, depth: int = 0) -> Any:
    """An instance of ``cls`` with every field of ``version`` set (see module docstring)."""
    kwargs: dict[str, Any] = {}
    for i, f in enumerate(cls.__fields__):
        if not f.exists_in(version):
            continue
        kwargs[f.name] = _sample_value(f, f.type, version, variant, depth, i)
    return cls(**kwargs)


def _sample_value(f: FieldSpec, t: Any, version: int, variant: int, depth: int, i: int) -> Any:
    nullable = version in f.nullable
    if variant == 1 and nullable:
        return None
    if isinstance(t, ArrayOf):
        if variant == 1 or depth > 4:
            return []
        item = t.item
        if isinstance(item, type):
            return [sample(item, version, variant, depth + 1) for _ in range(2)]
        return [_primitive(item, 0, i + k) for k in range(3)]
    if isinstance(t, type):
        return sample(t, version, variant, depth + 1)
    if f.name.endswith("error_code") and variant == 0:
        # A real error code (kio decodes error codes into its ErrorCode enum).
        return 36 + i
    return _primitive(t, variant, i)


def _primitive(t: str, variant: int, i: int) -> Any:
    if t in _INTS:
        good, edge = _INTS[t]
        return edge if variant == 1 else good + i
    if t == "bool":
        return variant == 0
    if t == "float64":
        return 0.5 + i if variant == 0 else -1.25
    if t == "string":
        return f"s{i}-\u00e9" if variant == 0 else ""
    if t == "bytes":
        return bytes(range(i, i + 5)) if variant == 0 else b""
    if t == "uuid":
        return uuid.UUID(int=0x1234 + i) if variant == 0 else uuid.UUID(int=0)
    if t == "records":
        return bytes(range(40)) if variant == 0 else None
    raise AssertionError(t)


# ------------------------------------------------------------------ kafka-python mapping


@functools.cache
def kafka_python_class(cls: type[Message]) -> Any:
    """kafka-python's class for our message ``cls`` (same name)."""
    for sub in _all_subclasses(ApiMessage):
        if sub.__name__ == cls.__name__ and getattr(sub, "_class_version", None) is None:
            return sub
    # kafka-python builds its message classes from JSON at class creation; for the APIs it
    # has no class of (the Kafka 3 controller APIs, KIP-714's telemetry APIs) we hand it
    # the JSON kept here, so its codec (not ours) is still the second implementation.
    for folder, package in (
        (KAFKA4_RESOURCES, kafka4_3_schemas),
        (KAFKA3_RESOURCES, kafka3_schemas),
    ):
        if (folder / f"{cls.__name__}.json").exists():
            return types.new_class(
                cls.__name__, (ApiMessage,), {"load_json": package}, lambda ns: None
            )
    raise LookupError(cls.__name__)


def _all_subclasses(base: type) -> list[type]:
    out = []
    stack = [base]
    while stack:
        c = stack.pop()
        for s in c.__subclasses__():
            out.append(s)
            stack.append(s)
    return out


def to_kafka_python(
    obj: Struct, kp_cls: Any, json_fields: list[dict[str, Any]], version: int
) -> Any:
    by_norm = {norm(f["name"]): f for f in json_fields}
    # kafka-python's own attribute names (it renames *AuthorizedOperations fields).
    kp_names = {
        norm(getattr(fld, "_json", {}).get("name", n)): n
        for n, fld in kp_cls._struct.fields.items()
    }
    kwargs: dict[str, Any] = {}
    for f in obj.__fields__:
        if not f.exists_in(version):
            continue
        jf = by_norm[norm(f.name)]
        py_name = kp_names.get(norm(f.name))
        if py_name is None and f.name.endswith("authorized_operations"):
            py_name = "authorized_operations"
        assert py_name is not None, f"kafka-python has no field for {f.name}"
        value = getattr(obj, f.name)
        if "fields" in jf and value is not None:
            sub_cls = getattr(kp_cls, jf["type"].removeprefix("[]"))
            if isinstance(value, list):
                value = [to_kafka_python(v, sub_cls, jf["fields"], version) for v in value]
            else:
                value = to_kafka_python(value, sub_cls, jf["fields"], version)
        elif isinstance(value, memoryview):
            value = bytes(value)
        elif kp_cls._struct.fields[py_name]._json.get("type") == "bitfield":
            value = {bit for bit in range(32) if (value & 0xFFFFFFFF) >> bit & 1}
        kwargs[py_name] = value
    return kp_cls(version=version, **kwargs)


# ---------------------------------------------------------------------------- kio mapping


def kio_class(cls: type[Message], version: int) -> Any | None:
    """kio's entity for our message ``cls`` at ``version``, or None if kio has none."""
    from kio.index import KioIndexError, load_request_schema, load_response_schema

    load = load_request_schema if issubclass(cls, Request) else load_response_schema
    try:
        return load(cls.api_key, version)
    except KioIndexError:
        return None


@functools.cache
def _kio_hints(kio_cls: type) -> dict[str, Any]:
    return typing.get_type_hints(kio_cls)


def _kio_fields(kio_cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(kio_cls)


def _matches(ours: str, theirs: str, kafka_type: str | None) -> bool:
    """kio names fields as we do, except that it drops ``_ms`` from durations and times."""
    if ours == theirs:
        return True
    return kafka_type is not None and (
        kafka_type.startswith(("timedelta", "datetime")) and ours.removesuffix("_ms") == theirs
    )


def to_kio(obj: Struct, kio_cls: type, version: int) -> Any:
    """``obj`` as an instance of the kio entity ``kio_cls`` (fields matched in order)."""
    ours = [f for f in obj.__fields__ if f.exists_in(version)]
    theirs = _kio_fields(kio_cls)
    assert len(ours) == len(theirs), (
        kio_cls.__name__,
        [f.name for f in ours],
        [f.name for f in theirs],
    )
    hints = _kio_hints(kio_cls)
    kwargs = {}
    for mine, kf in zip(ours, theirs, strict=True):
        kafka_type = kf.metadata.get("kafka_type")
        assert _matches(mine.name, kf.name, kafka_type), (kio_cls.__name__, mine.name, kf.name)
        kwargs[kf.name] = _to_kio_value(
            getattr(obj, mine.name), hints[kf.name], kafka_type, version
        )
    return kio_cls(**kwargs)


def _strip_optional(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        assert len(args) == 1, hint
        return args[0], True
    return hint, False


def _to_kio_value(value: Any, hint: Any, kafka_type: str | None, version: int) -> Any:
    from kio.schema.errors import ErrorCode
    from kio.serial.readers import tz_aware_from_i64

    hint, optional = _strip_optional(hint)
    if value is None:
        return None
    if typing.get_origin(hint) is tuple:
        item_hint = typing.get_args(hint)[0]
        return tuple(_to_kio_value(v, item_hint, kafka_type, version) for v in value)
    if dataclasses.is_dataclass(hint):
        return to_kio(value, hint, version)  # type: ignore[arg-type]
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=value)
    if kafka_type == "datetime_i64":
        return None if optional and value == -1 else tz_aware_from_i64(value)
    if kafka_type == "error_code":
        return ErrorCode(value)
    if kafka_type == "uuid":
        return None if optional and value == uuid.UUID(int=0) else value
    if kafka_type in ("records", "bytes"):
        return bytes(value)
    return value
