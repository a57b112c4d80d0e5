"""The machinery behind configuration tables, in the manner of Kafka's ConfigDef.

Owns: ``ConfigType`` (how a text value is parsed), the validators (``Range``, ``OneOf``,
``ListOf``, ``Check``), ``ConfigKey`` (one row of a definition table: type, default,
validator, dynamic flag, one-line doc), ``Password`` (a value that never prints itself),
``ConfigError``, and what DescribeConfigs reports about a value (``ConfigSource``,
``ConfigEntry``). It knows no key names: the broker table lives in ``broker_config`` and the
topic table in ``topic_config``. Pure functions and frozen values; no I/O.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "HIDDEN",
    "INT_MAX",
    "LONG_MAX",
    "Check",
    "ConfigEntry",
    "ConfigError",
    "ConfigKey",
    "ConfigSource",
    "ConfigType",
    "ListOf",
    "OneOf",
    "Password",
    "Range",
    "Validator",
    "looks_sensitive",
    "render",
]

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1

HIDDEN = "[hidden]"
"""What a password shows instead of its value, wherever it is displayed."""

_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_SENSITIVE_NAME = re.compile(r"password|secret|token|jaas|credential|\.key$", re.IGNORECASE)


class ConfigError(ValueError):
    """A configuration key or value that cannot be accepted.

    ``key`` and ``value`` name what was refused (either may be ``None`` for errors about a
    file as a whole); ``reason`` says why. ``str()`` gives ``key=value: reason``, the
    message CreateTopics/AlterConfigs send back with INVALID_CONFIG.
    """

    def __init__(self, key: str | None, value: str | None, reason: str) -> None:
        self.key = key
        self.value = value
        self.reason = reason
        if key is None:
            message = reason
        elif value is None:
            message = f"{key}: {reason}"
        else:
            message = f"{key}={value}: {reason}"
        super().__init__(message)


class ConfigSource(enum.IntEnum):
    """Where a value came from, numbered as in DescribeConfigs responses."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@dataclass(frozen=True, slots=True)
class Password:
    """A secret value: ``str()`` and ``repr()`` show ``[hidden]``; ``.value`` holds it."""

    value: str = field(repr=False)

    def __str__(self) -> str:
        return HIDDEN

    def __repr__(self) -> str:
        return f"Password({HIDDEN})"


class ConfigType(enum.Enum):
    """The value types a key may have (Kafka's, minus CLASS)."""

    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    STRING = "string"
    LIST = "list"
    PASSWORD = "password"

    @property
    def noun(self) -> str:
        """What a value of this type is called in an error message."""
        return _NOUNS[self]


_NOUNS = {
    ConfigType.INT: "an integer",
    ConfigType.LONG: "an integer",
    ConfigType.DOUBLE: "a number",
    ConfigType.BOOLEAN: "true or false",
    ConfigType.STRING: "a string",
    ConfigType.LIST: "a comma-separated list",
    ConfigType.PASSWORD: "a string",
}

_BOUNDS = {ConfigType.INT: (INT_MIN, INT_MAX), ConfigType.LONG: (LONG_MIN, LONG_MAX)}


class Validator:
    """Checks a parsed value. Subclasses say what they expect and what is wrong."""

    def expected(self, noun: str) -> str:
        """The phrase after "expected", given the type's noun ("an integer")."""
        raise NotImplementedError

    def problem(self, value: Any, noun: str) -> str | None:
        """Why ``value`` is refused, or ``None`` when it is acceptable."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Range(Validator):
    """A number within ``[low, high]``; ``allow`` lists extra accepted values (e.g. -1)."""

    low: float | None = None
    high: float | None = None
    allow: tuple[float, ...] = ()

    def expected(self, noun: str) -> str:
        if self.low is not None and self.high is not None:
            text = f"{noun} between {_num(self.low)} and {_num(self.high)}"
        elif self.low is not None:
            text = f"{noun} >= {_num(self.low)}"
        elif self.high is not None:
            text = f"{noun} <= {_num(self.high)}"
        else:
            text = noun
        if self.allow:
            extra = " or ".join(_num(a) for a in self.allow)
            text = f"{extra} or {text}"
        return text

    def problem(self, value: Any, noun: str) -> str | None:
        if value in self.allow:
            return None
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            return f"expected {self.expected(noun)}"
        return None


@dataclass(frozen=True, slots=True)
class OneOf(Validator):
    """A string among ``choices``; ``unsupported`` maps known-but-refused values to why."""

    choices: tuple[str, ...]
    case_sensitive: bool = True
    unsupported: tuple[tuple[str, str], ...] = ()

    def expected(self, noun: str) -> str:
        return "one of " + ", ".join(self.choices)

    def problem(self, value: Any, noun: str) -> str | None:
        why = _choice_problem(value, self.choices, self.case_sensitive, self.unsupported)
        return None if why is None else why or f"expected {self.expected(noun)}"


@dataclass(frozen=True, slots=True)
class ListOf(Validator):
    """A list whose every item is among ``choices`` (``unsupported`` as for ``OneOf``)."""

    choices: tuple[str, ...]
    case_sensitive: bool = True
    unsupported: tuple[tuple[str, str], ...] = ()
    non_empty: bool = False

    def expected(self, noun: str) -> str:
        some = "a non-empty" if self.non_empty else "a"
        return f"{some} comma-separated list of " + ", ".join(self.choices)

    def problem(self, value: Any, noun: str) -> str | None:
        if self.non_empty and not value:
            return f"expected {self.expected(noun)}"
        for item in value:
            why = _choice_problem(item, self.choices, self.case_sensitive, self.unsupported)
            if why is not None:
                return why or f"expected {self.expected(noun)}"
        return None


@dataclass(frozen=True, slots=True)
class Check(Validator):
    """A custom check: ``test(value)`` returns a reason to refuse, or ``None``.

    ``expectation`` is what an unparsable value is told was expected.
    """

    expectation: str
    test: Callable[[Any], str | None] = field(compare=False)

    def expected(self, noun: str) -> str:
        return self.expectation

    def problem(self, value: Any, noun: str) -> str | None:
        return self.test(value)


def _choice_problem(
    value: str,
    choices: Sequence[str],
    case_sensitive: bool,
    unsupported: Sequence[tuple[str, str]],
) -> str | None:
    """``None`` if accepted, the reason if known but unsupported, else ``""``."""
    fold = (lambda s: s) if case_sensitive else str.casefold
    if any(fold(value) == fold(c) for c in choices):
        return None
    for name, why in unsupported:
        if fold(value) == fold(name):
            return why
    return ""


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One configuration key: its type, default, validator, whether it is dynamic, its doc.

    ``default`` is the typed value used when the key is not set (``None`` means unset).
    Setting a key whose default is ``None`` to an empty value unsets it.
    """

    name: str
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None
    dynamic: bool = False

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD

    @property
    def expected(self) -> str:
        """What a valid value looks like, e.g. ``an integer >= 1``."""
        noun = self.type.noun
        return self.validator.expected(noun) if self.validator is not None else noun

    def parse(self, raw: str) -> Any:
        """Parse and validate a text value (surrounding whitespace ignored, as Kafka does).

        Raises ``ConfigError`` naming this key and the value (masked for passwords).
        """
        text = raw.strip()
        if not text and self.default is None:
            return None
        try:
            value = self._parse_type(text)
        except ValueError as exc:
            detail = f" ({exc})" if str(exc) else ""
            raise self.error(raw, f"expected {self.expected}{detail}") from None
        self.check(value, raw)
        return value

    def check(self, value: Any, raw: str | None = None) -> None:
        """Validate an already typed value; ``raw`` is what to quote in the error."""
        if value is None or self.validator is None:
            return
        why = self.validator.problem(value, self.type.noun)
        if why is not None:
            raise self.error(render(value) if raw is None else raw, why)

    def error(self, raw: str | None, reason: str) -> ConfigError:
        """A ``ConfigError`` for this key, never echoing a secret."""
        return ConfigError(self.name, HIDDEN if self.sensitive and raw else raw, reason)

    def _parse_type(self, text: str) -> Any:
        kind = self.type
        if kind in _BOUNDS:
            if not _INTEGER.fullmatch(text):
                raise ValueError("")
            number = int(text)
            low, high = _BOUNDS[kind]
            if not low <= number <= high:
                raise ValueError(f"out of range: {low} to {high}")
            return number
        if kind is ConfigType.DOUBLE:
            if not _DOUBLE.fullmatch(text):
                raise ValueError("")
            real = float(text)
            if not math.isfinite(real):
                raise ValueError("out of range")
            return real
        if kind is ConfigType.BOOLEAN:
            lowered = text.lower()
            if lowered not in ("true", "false"):
                raise ValueError("")
            return lowered == "true"
        if kind is ConfigType.LIST:
            if not text:
                return ()
            items = tuple(item.strip() for item in text.split(","))
            if "" in items:
                raise ValueError("empty item")
            return items
        if kind is ConfigType.PASSWORD:
            return Password(text)
        return text


def render(value: Any) -> str | None:
    """A typed value as configuration text (``None`` stays ``None``; passwords hidden)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def looks_sensitive(name: str) -> bool:
    """Whether an unknown key's name suggests a secret (so its value is not echoed)."""
    return bool(_SENSITIVE_NAME.search(name))


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One value as DescribeConfigs reports it."""

    name: str
    value: Any
    source: ConfigSource
    is_sensitive: bool
    read_only: bool

    @property
    def text(self) -> str | None:
        """The value as sent on the wire: ``None`` when unset or sensitive."""
        return None if self.is_sensitive else render(self.value)


def define(
    name: str,
    type_: ConfigType,
    default: Any,
    doc: str,
    validator: Any = None,
    *,
    dynamic: bool = False,
) -> ConfigKey:
    return ConfigKey(name, type_, default, doc, validator, dynamic)
