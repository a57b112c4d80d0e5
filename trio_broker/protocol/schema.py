"""The declarative message description: one class per Kafka message, all versions at once.

Owns: ``Struct``, ``Request``, ``Response``, ``field()``, ``array()`` and ``VersionRange``.
A message is written the way Kafka's JSON schemas describe it::

    class MetadataRequest(Request, api_key=3, versions="0-12", flexible="9+"):
        class Topic(Struct):
            topic_id: uuid.UUID = field("uuid", "10+")
            name: str | None = field("string", "0+", nullable="10+")

        topics: list[Topic] | None = field(array(Topic), "0+", nullable="1+")
        allow_auto_topic_creation: bool = field("bool", "4+", default=True)

The class statement is the whole description: field order, types, the versions each field
exists in, nullability, defaults and tagged fields. ``Struct``'s metaclass turns the
annotations into ``__slots__`` and an ``__init__``; the codec (``codegen``) compiles one
decoder and one encoder per struct and version from the same description, on first use.
No I/O and no trio here.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

PRIMITIVES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "float64",
        "string",
        "bytes",
        "uuid",
        "records",
    }
)

ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class VersionRange:
    """An inclusive version range as Kafka writes it: ``"0+"``, ``"3-9"``, ``"5"``, ``"none"``."""

    lo: int
    hi: int  # inclusive; 0x7FFF for "and up"

    NONE: ClassVar[VersionRange]

    @classmethod
    def parse(cls, text: str | VersionRange | None) -> VersionRange:
        if isinstance(text, VersionRange):
            return text
        if text is None or text == "none":
            return cls(1, 0)
        m = re.fullmatch(r"(\d+)(\+|-(\d+))?", text.strip())
        if m is None:
            raise ValueError(f"bad version range {text!r}")
        lo = int(m.group(1))
        if m.group(2) is None:
            return cls(lo, lo)
        if m.group(2) == "+":
            return cls(lo, 0x7FFF)
        return cls(lo, int(m.group(3)))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == 0x7FFF:
            return f"{self.lo}+"
        return f"{self.lo}-{self.hi}" if self.lo != self.hi else str(self.lo)


VersionRange.NONE = VersionRange(1, 0)


class ArrayOf:
    """The type of an array field: ``array(Topic)`` or ``"[]int32"``."""

    __slots__ = ("item",)

    def __init__(self, item: str | type[Struct]) -> None:
        self.item = item

    def __repr__(self) -> str:
        name = self.item if isinstance(self.item, str) else self.item.__name__
        return f"[]{name}"


def array(item: str | type[Struct]) -> ArrayOf:
    """The type of an array of ``item`` (a primitive type name or a ``Struct`` class)."""
    return ArrayOf(item)


_MISSING: Any = object()


class FieldSpec:
    """One field of a struct, as declared (``field()`` returns one)."""

    __slots__ = (
        "default",
        "default_factory",
        "ignorable",
        "name",
        "nullable",
        "tag",
        "tagged_versions",
        "type",
        "versions",
    )

    def __init__(
        self,
        type_: str | ArrayOf | type[Struct],
        versions: str,
        nullable: str | None,
        default: Any,
        tag: int | None,
        tagged_versions: str | None,
        ignorable: bool,
    ) -> None:
        if isinstance(type_, str) and type_.startswith("[]"):
            type_ = ArrayOf(type_[2:])
        if isinstance(type_, str) and type_ not in PRIMITIVES:
            raise ValueError(f"unknown field type {type_!r}")
        if (
            isinstance(type_, ArrayOf)
            and isinstance(type_.item, str)
            and (type_.item not in PRIMITIVES or type_.item == "records")
        ):
            raise ValueError(f"unknown array item type {type_.item!r}")
        self.name = ""
        self.type = type_
        self.versions = VersionRange.parse(versions)
        self.nullable = VersionRange.parse(nullable)
        self.tag = tag
        self.tagged_versions = (
            VersionRange.parse(tagged_versions or versions)
            if tag is not None
            else VersionRange.NONE
        )
        self.ignorable = ignorable
        self.default, self.default_factory = _default_for(type_, default, self.nullable)

    def exists_in(self, version: int) -> bool:
        return version in self.versions

    def is_tagged_in(self, version: int) -> bool:
        return version in self.tagged_versions

    def __repr__(self) -> str:
        return f"<field {self.name}: {self.type} v{self.versions}>"


def _default_for(
    type_: str | ArrayOf | type[Struct], default: Any, nullable: VersionRange
) -> tuple[Any, Callable[[], Any] | None]:
    """Kafka's implicit defaults: 0, false, "", empty arrays, the zero UUID, null records."""
    if default is not _MISSING:
        if isinstance(default, list | dict):
            raise ValueError("mutable defaults are not allowed; arrays default to []")
        return default, None
    if isinstance(type_, ArrayOf):
        return None, list
    if isinstance(type_, type):
        return None, type_
    if type_ in ("string",):
        return "", None
    if type_ in ("bytes",):
        return b"", None
    if type_ == "records":
        return None, None
    if type_ == "uuid":
        return ZERO_UUID, None
    if type_ == "bool":
        return False, None
    if type_ == "float64":
        return 0.0, None
    return 0, None


def field(
    type_: str | ArrayOf | type[Struct],
    versions: str = "0+",
    *,
    nullable: str | None = None,
    default: Any = _MISSING,
    tag: int | None = None,
    tagged: str | None = None,
    ignorable: bool = False,
) -> Any:
    """Declare a field: its wire type, the versions it exists in, and how it defaults.

    ``nullable`` is the version range in which null is allowed; ``tag`` makes the field a
    tagged field (in ``tagged`` versions, default: all its versions).
    """
    return FieldSpec(type_, versions, nullable, default, tag, tagged, ignorable)


class StructMeta(type):
    """Turns a class body of ``name: T = field(...)`` lines into a slotted record class."""

    def __new__(
        mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any], **kwargs: Any
    ) -> StructMeta:
        fields: list[FieldSpec] = []
        for base in bases:
            fields.extend(getattr(base, "__fields__", ()))
        own = [(k, v) for k, v in ns.items() if isinstance(v, FieldSpec)]
        for key, spec in own:
            del ns[key]
            spec.name = key
            fields.append(spec)
        ns["__slots__"] = tuple(spec.name for _, spec in own)
        ns["__fields__"] = tuple(fields)
        cls = super().__new__(mcs, name, bases, ns, **kwargs)
        if fields or "__init__" not in ns:
            cls.__init__ = _make_init(cls, fields)  # type: ignore[misc]
        return cls

    def __init__(
        cls, name: str, bases: tuple[type, ...], ns: dict[str, Any], **kwargs: Any
    ) -> None:
        super().__init__(name, bases, ns)


def _make_init(cls: type, fields: list[FieldSpec]) -> Callable[..., None]:
    """Build ``__init__(self, *, a=default, ...)``; mutable defaults come from factories."""
    args = []
    body = []
    env: dict[str, Any] = {}
    for f in fields:
        if f.default_factory is not None:
            env[f"_factory_{f.name}"] = f.default_factory
            args.append(f"{f.name}=_MISSING")
            body.append(
                f"    self.{f.name} = _factory_{f.name}() if {f.name} is _MISSING else {f.name}"
            )
        else:
            env[f"_default_{f.name}"] = f.default
            args.append(f"{f.name}=_default_{f.name}")
            body.append(f"    self.{f.name} = {f.name}")
    env["_MISSING"] = _MISSING
    sig = ", ".join(["self", "*", *args]) if args else "self"
    src = f"def __init__({sig}):\n" + ("\n".join(body) if body else "    pass") + "\n"
    exec(compile(src, f"<init {cls.__qualname__}>", "exec"), env)
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


class Struct(metaclass=StructMeta):
    """A record with declared fields. Equality and repr go field by field."""

    __fields__: ClassVar[tuple[FieldSpec, ...]] = ()
    __slots__ = ()

    if TYPE_CHECKING:
        # The metaclass builds a keyword-only __init__ from the declared fields.
        def __init__(self, **fields: Any) -> None: ...

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in self.__fields__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.__fields__)
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """A plain-data view (nested structs become dicts), for logs and the admin API."""
        return {f.name: _plain(getattr(self, f.name)) for f in self.__fields__}


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return value


class Message(Struct):
    """A top-level request or response body, with its api key and version ranges."""

    api_key: ClassVar[int] = -1
    valid_versions: ClassVar[VersionRange] = VersionRange.NONE
    flexible_versions: ClassVar[VersionRange] = VersionRange.NONE
    __slots__ = ()

    def __init_subclass__(
        cls,
        api_key: int | None = None,
        versions: str | None = None,
        flexible: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if api_key is not None:
            cls.api_key = api_key
        if versions is not None:
            cls.valid_versions = VersionRange.parse(versions)
        if flexible is not None:
            cls.flexible_versions = VersionRange.parse(flexible)

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return version in cls.flexible_versions


class Request(Message):
    """A request body. Its header is decoded separately (``header``)."""

    __slots__ = ()


class Response(Message):
    """A response body."""

    __slots__ = ()


def item_type(cls: type[Struct], field_name: str) -> Any:
    """The struct class of an array (or struct) field: ``item_type(ProduceResponse,
    "responses")``. Lets code build nested values without naming nested classes."""
    for f in cls.__fields__:
        if f.name == field_name:
            t = f.type.item if isinstance(f.type, ArrayOf) else f.type
            if isinstance(t, type):
                return t
            raise TypeError(f"{cls.__name__}.{field_name} holds {t}, not structs")
    raise AttributeError(f"{cls.__name__} has no field {field_name}")
