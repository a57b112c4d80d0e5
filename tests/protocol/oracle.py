"""Test-only oracles for the codec: Kafka's JSON schemas (as shipped in kafka-python),
kafka-python's encoder/decoder and kio's. Nothing here is used by the broker at run time.

- ``kafka_schema(name)``: Kafka's JSON message definition, the specification.
- ``structure(cls, version)`` / ``kafka_structure(json, version)``: the fields a version
  has, in order, with type, nullability and tag, so our declaration can be compared with
  Kafka's version by version.
- ``sample(cls, version, variant)``: an instance of one of our messages where every field
  that exists in ``version`` holds a non-default value (variant 0) or its edge value:
  null where nullable, empty arrays, negative numbers (variant 1).
- ``to_kafka_python(obj, kp_cls, version)``: the same value as a kafka-python object.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import kafka.protocol

from trio_broker.protocol.schema import ArrayOf, Message, Struct, VersionRange

RESOURCES = Path(kafka.protocol.__file__).parent / "schemas" / "resources"


def kafka_schema(name: str) -> dict[str, Any]:
    text = (RESOURCES / f"{name}.json").read_text()
    text = re.sub(r"^\s*//.*$", "", text, flags=re.M)
    return json.loads(text)  # type: ignore[no-any-return]


def norm(name: str) -> str:
    return name.replace("_", "").lower()


def _versions(text: str | None, default: str = "none") -> VersionRange:
    return VersionRange.parse(text if text is not None else default)


def kafka_structure(fields: list[dict[str, Any]], version: int, flexible: bool) -> list[Any]:
    out: list[Any] = []
    for f in fields:
        if version not in _versions(f.get("versions")):
            continue
        tagged = "tag" in f and version in _versions(f.get("taggedVersions"), f["versions"])
        nullable = version in _versions(f.get("nullableVersions"))
        typ = f["type"]
        entry: list[Any] = [norm(f["name"]), typ.removeprefix("[]") if "fields" in f else typ]
        entry.append(typ.startswith("[]"))
        entry.append(nullable)
        entry.append(f["tag"] if tagged and flexible else None)
        if "fields" in f:
            entry.append(kafka_structure(f["fields"], version, flexible))
        out.append(entry)
    return out


def our_structure(cls: type[Struct], version: int, flexible: bool) -> list[Any]:
    out: list[Any] = []
    for f in cls.__fields__:
        if not f.exists_in(version):
            continue
        t = f.type
        is_array = isinstance(t, ArrayOf)
        item = t.item if isinstance(t, ArrayOf) else t
        entry: list[Any] = [norm(f.name)]
        if isinstance(item, type):
            entry.append(None)  # struct type names are ours to choose
        else:
            entry.append(f"[]{item}" if is_array else item)
        entry.append(is_array)
        entry.append(version in f.nullable)
        entry.append(f.tag if flexible and f.is_tagged_in(version) else None)
        if isinstance(item, type):
            entry.append(our_structure(item, version, flexible))
        out.append(entry)
    return out


def strip_struct_names(structure: list[Any]) -> list[Any]:
    out = []
    for entry in structure:
        entry = list(entry)
        if len(entry) == 6:
            entry[1] = None
            entry[5] = strip_struct_names(entry[5])
        out.append(entry)
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


def _sample_value(f: Any, t: Any, version: int, variant: int, depth: int, i: int) -> Any:
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


def kafka_python_class(cls: type[Message]) -> Any:
    import kafka.protocol.api_message as api_message

    for sub in _all_subclasses(api_message.ApiMessage):
        if sub.__name__ == cls.__name__ and getattr(sub, "_class_version", None) is None:
            return sub
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
