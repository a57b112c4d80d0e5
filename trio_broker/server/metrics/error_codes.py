"""Counting the error codes of a response body, with an accessor compiled per message.

Owns: ``error_counter(cls, version)``, which returns a function ``count(body, counts)``
that adds one to ``counts[code]`` for every field named ``error_code`` present in that
version of the response, at any depth (in nested structs and arrays of structs), or None
when the message has no such field. The function is straight-line Python generated from
the message's declaration, once per (message, version), like the codec's: no reflection
on the hot path. Kafka's ErrorsPerSec counts the same occurrences (NONE included).
Must not: encode, decode or allocate per call beyond the counts it updates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...protocol.schema import ArrayOf, Struct

ErrorCounter = Callable[[Any, dict[int, int]], None]

_cache: dict[tuple[type, int], ErrorCounter | None] = {}


def error_counter(cls: type[Struct], version: int) -> ErrorCounter | None:
    """The compiled error-code counter of ``cls`` at ``version`` (None: no error codes)."""
    key = (cls, version)
    if key not in _cache:
        _cache[key] = _compile(cls, version)
    return _cache[key]


def _struct_of(spec_type: object) -> type[Struct] | None:
    item = spec_type.item if isinstance(spec_type, ArrayOf) else spec_type
    return item if isinstance(item, type) and issubclass(item, Struct) else None


def _has_codes(cls: type[Struct], version: int, seen: frozenset[type] = frozenset()) -> bool:
    if cls in seen:
        return False
    for f in cls.__fields__:
        if not f.exists_in(version):
            continue
        if f.name == "error_code" and f.type == "int16":
            return True
        sub = _struct_of(f.type)
        if sub is not None and _has_codes(sub, version, seen | {cls}):
            return True
    return False


def _compile(cls: type[Struct], version: int) -> ErrorCounter | None:
    if not _has_codes(cls, version):
        return None
    lines: list[str] = []
    names = iter(range(1, 1 << 30))

    def emit(struct: type[Struct], var: str, depth: int, seen: frozenset[type]) -> None:
        pad = "    " * depth
        for f in struct.__fields__:
            if not f.exists_in(version):
                continue
            if f.name == "error_code" and f.type == "int16":
                lines.append(f"{pad}c = {var}.error_code")
                lines.append(f"{pad}counts[c] = counts.get(c, 0) + 1")
                continue
            sub = _struct_of(f.type)
            if sub is None or sub in seen or not _has_codes(sub, version, seen):
                continue
            item = f"x{next(names)}"
            if isinstance(f.type, ArrayOf):
                lines.append(f"{pad}for {item} in {var}.{f.name} or ():")
                emit(sub, item, depth + 1, seen | {struct})
            else:
                lines.append(f"{pad}{item} = {var}.{f.name}")
                lines.append(f"{pad}if {item} is not None:")
                emit(sub, item, depth + 1, seen | {struct})

    emit(cls, "body", 1, frozenset())
    source = "def count(body, counts):\n" + "\n".join(lines) + "\n"
    env: dict[str, Any] = {}
    exec(compile(source, f"<error codes {cls.__qualname__} v{version}>", "exec"), env)
    fn: ErrorCounter = env["count"]
    fn.__doc__ = source
    return fn
