"""Compiles a ``Struct`` description into one decoder and one encoder per version.

Owns: turning the declarative schema (``schema``) into straight-line Python functions,
as Kafka generates Java from its JSON schemas, but at run time and on first use. For one
struct and version the generated code unpacks runs of fixed-width fields with a single
``struct`` call, inlines the one-byte varint case, slices record data as a memoryview of
the frame (no copy), skips unknown tagged fields, and on output appends record data to the
list of parts instead of copying it. Inspect the source with ``source_of(cls, version)``.

Decoder: ``dec(data, mv, pos) -> (obj, pos)`` where ``mv`` is ``memoryview(data)``.
Encoder: ``enc(obj, parts) -> None``; it appends to ``parts[-1]`` (a bytearray) and may add
parts. Malformed input raises ``CorruptRequest``; unknown versions ``UnsupportedApiVersion``.
No I/O here.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from . import primitives
from .errors import CorruptRequest, LocalProtocolError, UnsupportedApiVersion
from .schema import ZERO_UUID, ArrayOf, FieldSpec, Message, Struct

Decoder = Callable[[Any, memoryview, int], tuple[Any, int]]
Encoder = Callable[[Any, list[Any]], None]

_FIXED = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}

_decoders: dict[tuple[type, int, bool], Decoder] = {}
_encoders: dict[tuple[type, int, bool], Encoder] = {}
_sources: dict[tuple[str, type, int, bool], str] = {}


def _uuid_from(raw: bytes) -> uuid.UUID:
    return ZERO_UUID if raw == b"\x00" * 16 else uuid.UUID(bytes=raw)


def _short(what: str) -> CorruptRequest:
    return CorruptRequest(f"buffer ends inside {what}")


_ENV_BASE: dict[str, Any] = {
    "_unpack_from": struct.unpack_from,
    "_pack": struct.pack,
    "_uvarint": primitives.uvarint,
    "_uvarint_rest": primitives.uvarint_rest,
    "_read_uvarint": primitives.read_uvarint,
    "_uuid_from": _uuid_from,
    "_ZERO_UUID_BYTES": b"\x00" * 16,
    "_CorruptRequest": CorruptRequest,
    "_LocalProtocolError": LocalProtocolError,
    "_short": _short,
    "_records_length": primitives.records_length,
    "_append_records": primitives.append_records,
    "_INLINE": primitives.INLINE_RECORDS_LIMIT,
    "_new": object.__new__,
    "_bytes_types": (bytes, bytearray, memoryview),
}


def _contains_records(cls: type[Struct], version: int, seen: frozenset[type] = frozenset()) -> bool:
    """Whether encoding ``cls`` at ``version`` may add parts (record data) to the output."""
    if cls in seen:
        return False
    for f in cls.__fields__:
        if not f.exists_in(version):
            continue
        t = f.type
        if t == "records":
            return True
        item = t.item if isinstance(t, ArrayOf) else t
        if isinstance(item, type) and _contains_records(item, version, seen | {cls}):
            return True
    return False


class _Src:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def tmp(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"_{prefix}{self.counter}"

    def indent(self) -> _Indent:
        return _Indent(self)


class _Indent:
    def __init__(self, src: _Src) -> None:
        self.src = src

    def __enter__(self) -> None:
        self.src.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.src.depth -= 1


# ---------------------------------------------------------------------------- decoding


def decoder(cls: type[Struct], version: int, flexible: bool | None = None) -> Decoder:
    """The decoder of ``cls`` at ``version`` (compiled on first use)."""
    if flexible is None:
        flexible = _flexible_of(cls, version)
    key = (cls, version, flexible)
    fn = _decoders.get(key)
    if fn is None:
        fn = _compile_decoder(cls, version, flexible)
        _decoders[key] = fn
    return fn


def _flexible_of(cls: type[Struct], version: int) -> bool:
    if issubclass(cls, Message):
        if version not in cls.valid_versions:
            raise UnsupportedApiVersion(
                f"{cls.__name__} has no version {version} (we answer {cls.valid_versions})"
            )
        return cls.is_flexible(version)
    return False


def _compile_decoder(cls: type[Struct], version: int, flexible: bool) -> Decoder:
    env = dict(_ENV_BASE)
    env["_cls"] = cls
    src = _Src()
    present = [f for f in cls.__fields__ if f.exists_in(version)]
    regular = [f for f in present if not (flexible and f.is_tagged_in(version))]
    tagged = [f for f in present if flexible and f.is_tagged_in(version)]
    values: dict[str, str] = {}

    i = 0
    while i < len(regular):
        run = []
        while i < len(regular) and regular[i].type in _FIXED:
            run.append(regular[i])
            i += 1
        if run:
            fmt = ">" + "".join(_FIXED[f.type][0] for f in run)  # type: ignore[index]
            size = struct.calcsize(fmt)
            names = [f"v_{f.name}" for f in run]
            env_name = f"_S{len(env)}"
            env[env_name] = struct.Struct(fmt).unpack_from
            target = ", ".join(names) + ("," if len(names) == 1 else "")
            src(f"{target} = {env_name}(data, pos)")
            src(f"pos += {size}")
            for f, n in zip(run, names, strict=True):
                if f.type == "uuid":
                    src(f"{n} = _uuid_from({n})")
                values[f.name] = n
            continue
        f = regular[i]
        i += 1
        name = f"v_{f.name}"
        _decode_value(src, env, f, f.type, name, version, flexible)
        values[f.name] = name

    if flexible:
        for f in tagged:
            values[f.name] = f"v_{f.name}"
            _assign_default(src, env, f, f"v_{f.name}")
        _decode_tagged(src, env, tagged, version, flexible)

    src("o = _new(_cls)")
    for f in cls.__fields__:
        if f.name in values:
            src(f"o.{f.name} = {values[f.name]}")
        else:
            _assign_default(src, env, f, f"o.{f.name}")
    src("return o, pos")
    body = "\n".join(src.lines)
    code = f"def decode(data, mv, pos):\n    try:\n{_reindent(body)}\n" + _DECODE_EXCEPT
    _sources[("decode", cls, version, flexible)] = code
    exec(compile(code, f"<decode {cls.__qualname__} v{version}>", "exec"), env)
    fn: Decoder = env["decode"]
    return fn


_DECODE_EXCEPT = """    except (_CorruptRequest, _LocalProtocolError):
        raise
    except Exception as e:
        raise _CorruptRequest(f"cannot decode {_cls.__name__}: {type(e).__name__}: {e}") from None
"""


def _reindent(body: str) -> str:
    return "\n".join("    " + line for line in body.split("\n"))


def _assign_default(src: _Src, env: dict[str, Any], f: FieldSpec, target: str) -> None:
    if f.default_factory is not None:
        key = f"_factory_{id(f)}"
        env[key] = f.default_factory
        src(f"{target} = {key}()")
    else:
        key = f"_default_{id(f)}"
        env[key] = f.default
        src(f"{target} = {key}")


def _read_length(src: _Src, var: str, compact: bool) -> None:
    """Read an array/string length into ``var``: -1 means null."""
    if compact:
        src(f"{var} = data[pos]")
        src("pos += 1")
        src(f"if {var} >= 0x80:")
        with src.indent():
            src(f"{var}, pos = _uvarint_rest(data, pos, {var})")
        src(f"{var} -= 1")


def _decode_value(
    src: _Src,
    env: dict[str, Any],
    f: FieldSpec,
    t: Any,
    out: str,
    version: int,
    flexible: bool,
) -> None:
    """Emit code that decodes one value of type ``t`` into the variable ``out``."""
    nullable = version in f.nullable
    what = f.name
    if isinstance(t, str) and t in _FIXED:
        fmt, size = _FIXED[t]
        src(f"{out}, = _unpack_from('>{fmt}', data, pos)")
        src(f"pos += {size}")
        if t == "uuid":
            src(f"{out} = _uuid_from({out})")
        return
    if t in ("string", "bytes", "records"):
        n = src.tmp("n")
        if flexible:
            _read_length(src, n, compact=True)
        elif t == "string":
            src(f"{n}, = _unpack_from('>h', data, pos)")
            src("pos += 2")
        else:
            src(f"{n}, = _unpack_from('>i', data, pos)")
            src("pos += 4")
        src(f"if {n} < 0:")
        with src.indent():
            if nullable or t == "records":
                src(f"{out} = None")
            else:
                src(f"raise _CorruptRequest('null {what} where it is not nullable')")
        src("else:")
        with src.indent():
            end = src.tmp("e")
            src(f"{end} = pos + {n}")
            src(f"if {end} > len(data): raise _short({what!r})")
            if t == "string":
                src(f"{out} = str(data[pos:{end}], 'utf-8')")
            elif t == "bytes":
                src(f"{out} = bytes(data[pos:{end}])")
            else:
                src(f"{out} = mv[pos:{end}]")
            src(f"pos = {end}")
        return
    if isinstance(t, ArrayOf):
        n = src.tmp("n")
        if flexible:
            _read_length(src, n, compact=True)
        else:
            src(f"{n}, = _unpack_from('>i', data, pos)")
            src("pos += 4")
        src(f"if {n} < 0:")
        with src.indent():
            if nullable:
                src(f"{out} = None")
            else:
                src(f"raise _CorruptRequest('null array {what} where it is not nullable')")
        src(f"elif {n} > len(data) - pos:")
        with src.indent():
            src(f"raise _CorruptRequest('array {what} claims more items than bytes left')")
        src("else:")
        with src.indent():
            item = t.item
            if isinstance(item, str) and item in _FIXED and item != "uuid":
                fmt, size = _FIXED[item]
                src(f"{out} = list(_unpack_from('>%d{fmt}' % {n}, data, pos))")
                src(f"pos += {size} * {n}")
            else:
                src(f"{out} = []")
                src(f"for _ in range({n}):")
                with src.indent():
                    if isinstance(item, type):
                        dname = f"_dec_{item.__name__}_{id(item)}"
                        env[dname] = _Lazy(decoder, item, version, flexible, env, dname)
                        src(f"_it, pos = {dname}(data, mv, pos)")
                    else:
                        inner = FieldSpec(item, "0+", None, None, None, None, False)
                        inner.name = f"{what}[]"
                        _decode_value(src, env, inner, item, "_it", version, flexible)
                    src(f"{out}.append(_it)")
        return
    if isinstance(t, type) and issubclass(t, Struct):
        dname = f"_dec_{t.__name__}_{id(t)}"
        env[dname] = _Lazy(decoder, t, version, flexible, env, dname)
        if nullable:
            marker = src.tmp("m")
            src(f"{marker}, = _unpack_from('>b', data, pos)")
            src("pos += 1")
            src(f"if {marker} < 0:")
            with src.indent():
                src(f"{out} = None")
            src("else:")
            with src.indent():
                src(f"{out}, pos = {dname}(data, mv, pos)")
        else:
            src(f"{out}, pos = {dname}(data, mv, pos)")
        return
    raise LocalProtocolError(f"cannot decode type {t!r}")


def _decode_tagged(
    src: _Src, env: dict[str, Any], tagged: list[FieldSpec], version: int, flexible: bool
) -> None:
    """Emit the tagged-field section reader; unknown tags are skipped, known ones checked."""
    src("_nt = data[pos]")
    src("pos += 1")
    src("if _nt >= 0x80:")
    with src.indent():
        src("_nt, pos = _uvarint_rest(data, pos, _nt)")
    src("for _ in range(_nt):")
    with src.indent():
        src("_tag, pos = _read_uvarint(data, pos)")
        src("_size, pos = _read_uvarint(data, pos)")
        src("_end = pos + _size")
        src("if _end > len(data): raise _short('a tagged field')")
        first = True
        for f in sorted(tagged, key=lambda f: f.tag or 0):
            src(f"{'if' if first else 'elif'} _tag == {f.tag}:")
            first = False
            with src.indent():
                _decode_value(src, env, f, f.type, f"v_{f.name}", version, flexible)
                # A known field's value fills its declared size exactly: reading past it
                # would take bytes of the next tag, stopping short would drop some.
                src("if pos != _end:")
                with src.indent():
                    src(f"raise _CorruptRequest('tagged field {f.name} does not fill its size')")
        src("pos = _end")


class _Lazy:
    """A nested struct's decoder or encoder, compiled on first call (structs may refer to
    each other; most versions of most structs are never used), which then puts itself in
    the generated code's globals: later calls go straight to it (``bench/codec_speed.py``:
    calling through this object cost ApiVersions' response encode 1.6x)."""

    __slots__ = ("args", "env", "factory", "name")

    def __init__(self, factory: Callable[..., Any], *args: Any) -> None:
        """``args``: the struct, version and flexibility, then the globals and name."""
        self.factory, self.args, (self.env, self.name) = factory, args[:3], args[3:]

    def __call__(self, *args: Any) -> Any:
        fn = self.env[self.name] = self.factory(*self.args)
        return fn(*args)


# ---------------------------------------------------------------------------- encoding


def encoder(cls: type[Struct], version: int, flexible: bool | None = None) -> Encoder:
    """The encoder of ``cls`` at ``version`` (compiled on first use)."""
    if flexible is None:
        if issubclass(cls, Message) and version not in cls.valid_versions:
            raise LocalProtocolError(f"{cls.__name__} has no version {version}")
        flexible = _flexible_of(cls, version)
    key = (cls, version, flexible)
    fn = _encoders.get(key)
    if fn is None:
        fn = _compile_encoder(cls, version, flexible)
        _encoders[key] = fn
    return fn


def _compile_encoder(cls: type[Struct], version: int, flexible: bool) -> Encoder:
    env = dict(_ENV_BASE)
    env["_cls"] = cls
    src = _Src()
    present = [f for f in cls.__fields__ if f.exists_in(version)]
    regular = [f for f in present if not (flexible and f.is_tagged_in(version))]
    tagged = sorted(
        (f for f in present if flexible and f.is_tagged_in(version)), key=lambda f: f.tag or 0
    )
    src("b = parts[-1]")
    i = 0
    while i < len(regular):
        run = []
        while i < len(regular) and regular[i].type in _FIXED:
            run.append(regular[i])
            i += 1
        if run:
            fmt = ">" + "".join(_FIXED[f.type][0] for f in run)  # type: ignore[index]
            env_name = f"_P{len(env)}"
            env[env_name] = struct.Struct(fmt).pack
            args = ", ".join(
                f"o.{f.name}.bytes" if f.type == "uuid" else f"o.{f.name}" for f in run
            )
            src(f"b += {env_name}({args})")
            continue
        f = regular[i]
        i += 1
        _encode_value(src, env, f, f.type, f"o.{f.name}", version, flexible)
    if flexible:
        if not tagged:
            src("b += b'\\x00'")
        else:
            _encode_tagged(src, env, tagged, version, flexible)
    body = "\n".join(src.lines)
    code = f"def encode(o, parts):\n    try:\n{_reindent(body)}\n" + _ENCODE_EXCEPT
    _sources[("encode", cls, version, flexible)] = code
    exec(compile(code, f"<encode {cls.__qualname__} v{version}>", "exec"), env)
    fn: Encoder = env["encode"]
    return fn


_ENCODE_EXCEPT = """    except _LocalProtocolError:
        raise
    except Exception as e:
        raise _LocalProtocolError(
            f"cannot encode {_cls.__name__}: {type(e).__name__}: {e}") from e
"""


def _write_length(src: _Src, expr: str, flexible: bool, width: str) -> None:
    if flexible:
        src(f"b += _uvarint({expr} + 1)")
    else:
        src(f"b += _pack('>{width}', {expr})")


def _encode_value(
    src: _Src,
    env: dict[str, Any],
    f: FieldSpec,
    t: Any,
    expr: str,
    version: int,
    flexible: bool,
) -> None:
    """Emit code that appends the encoding of ``expr`` (of type ``t``) to ``b``."""
    nullable = version in f.nullable
    if isinstance(t, str) and t in _FIXED:
        fmt, _ = _FIXED[t]
        value = f"{expr}.bytes" if t == "uuid" else expr
        src(f"b += _pack('>{fmt}', {value})")
        return
    null_marker = "b'\\x00'" if flexible else ("b'\\xff\\xff'" if t == "string" else None)
    if null_marker is None:
        null_marker = "b'\\xff\\xff\\xff\\xff'"
    v = src.tmp("v")
    src(f"{v} = {expr}")
    if t in ("string", "bytes"):
        src(f"if {v} is None:")
        with src.indent():
            if nullable:
                src(f"b += {null_marker}")
            else:
                src(f"raise _LocalProtocolError('{f.name} is not nullable in v{version}')")
        src("else:")
        with src.indent():
            if t == "string":
                src(f"{v} = {v}.encode()")
            _write_length(src, f"len({v})", flexible, "h" if t == "string" else "i")
            src(f"b += {v}")
        return
    if t == "records":
        src(f"if {v} is None:")
        with src.indent():
            src(f"b += {null_marker}")
        src("else:")
        with src.indent():
            n = src.tmp("n")
            src(f"{n} = _records_length({v})")
            _write_length(src, n, flexible, "i")
            src(f"if {n} <= _INLINE and isinstance({v}, _bytes_types):")
            with src.indent():
                src(f"b += {v}")
            src("else:")
            with src.indent():
                src(f"b = _append_records(parts, {v})")
        return
    if isinstance(t, ArrayOf):
        src(f"if {v} is None:")
        with src.indent():
            if nullable:
                src(f"b += {null_marker}")
            else:
                src(f"raise _LocalProtocolError('{f.name} is not nullable in v{version}')")
        src("else:")
        with src.indent():
            _write_length(src, f"len({v})", flexible, "i")
            item = t.item
            if isinstance(item, str) and item in _FIXED and item != "uuid":
                fmt, _ = _FIXED[item]
                src(f"b += _pack('>%d{fmt}' % len({v}), *{v})")
            else:
                it = src.tmp("i")
                src(f"for {it} in {v}:")
                with src.indent():
                    if isinstance(item, type):
                        ename = f"_enc_{item.__name__}_{id(item)}"
                        env[ename] = _Lazy(encoder, item, version, flexible, env, ename)
                        src(f"{ename}({it}, parts)")
                        if _contains_records(item, version):
                            src("b = parts[-1]")
                    else:
                        inner = FieldSpec(item, "0+", None, None, None, None, False)
                        inner.name = f"{f.name}[]"
                        _encode_value(src, env, inner, item, it, version, flexible)
        return
    if isinstance(t, type) and issubclass(t, Struct):
        ename = f"_enc_{t.__name__}_{id(t)}"
        env[ename] = _Lazy(encoder, t, version, flexible, env, ename)
        refetch = _contains_records(t, version)
        if nullable:
            src(f"if {v} is None:")
            with src.indent():
                src("b += b'\\xff'")
            src("else:")
            with src.indent():
                src("b += b'\\x01'")
                src(f"{ename}({v}, parts)")
                if refetch:
                    src("b = parts[-1]")
        else:
            src(f"{ename}({v}, parts)")
            if refetch:
                src("b = parts[-1]")
        return
    raise LocalProtocolError(f"cannot encode type {t!r}")


def _encode_tagged(
    src: _Src, env: dict[str, Any], tagged: list[FieldSpec], version: int, flexible: bool
) -> None:
    """Emit the tagged-field section: fields equal to their default are left out."""
    src("_tags = []")
    src("_outer = parts")
    for f in tagged:
        v = src.tmp("tv")
        src(f"{v} = o.{f.name}")
        if f.default_factory is list:
            cond = f"{v}"
        elif f.default_factory is not None:
            key = f"_factory_{id(f)}"
            env[key] = f.default_factory
            cond = f"{v} != {key}()"
        else:
            key = f"_default_{id(f)}"
            env[key] = f.default
            cond = f"{v} != {key}"
        src(f"if {cond}:")
        with src.indent():
            src("parts = [bytearray()]")
            src("b = parts[0]")
            _encode_value(src, env, f, f.type, v, version, flexible)
            src(f"_tags.append(({f.tag}, bytes(b)))")
    src("parts = _outer")
    src("b = parts[-1]")
    src("b += _uvarint(len(_tags))")
    src("for _tag, _data in _tags:")
    with src.indent():
        src("b += _uvarint(_tag)")
        src("b += _uvarint(len(_data))")
        src("b += _data")


def source_of(cls: type[Struct], version: int, kind: str = "decode") -> str:
    """The generated source of a decoder or encoder (for debugging and curiosity)."""
    flexible = _flexible_of(cls, version)
    (decoder if kind == "decode" else encoder)(cls, version)
    return _sources[(kind, cls, version, flexible)]
