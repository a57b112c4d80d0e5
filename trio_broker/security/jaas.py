"""Kafka's ``sasl.jaas.config`` values: one JAAS login module entry, parsed.

Owns: ``parse_jaas_config`` and ``JaasEntry``. A value reads as Kafka's ``JaasConfig``
reads it: ``<login module class> <control flag> [<option>=<value> ...];`` with values
quoted (``"..."``, a backslash escapes the next character) or bare words, and ``//`` or
``/* */`` comments; exactly one entry, as Kafka requires of ``sasl.jaas.config``. The
broker takes the ``username`` and ``password`` options of its inter-broker listener's
entry as the credentials it logs in to other brokers with (the login module class is
kept, not loaded: there is no JVM here). Pure text processing: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<comment>//[^\n]*|/\*.*?\*/)
      | "(?P<quoted>(?:[^"\\]|\\.)*)"
      | (?P<word>[A-Za-z0-9_$.\-]+)
      | (?P<punct>[=;])
    )""",
    re.VERBOSE | re.DOTALL,
)
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


class JaasError(ValueError):
    """A value that is not one JAAS login module entry (the message says where)."""


@dataclass(frozen=True, slots=True)
class JaasEntry:
    login_module: str
    control_flag: str
    options: Mapping[str, str] = field(repr=False)  # may hold a password


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: ``word`` (bare or quoted) or ``punct``; comments dropped."""
    out: list[tuple[str, str]] = []
    pos, end = 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise JaasError(f"unexpected character {text[pos:].lstrip()[:1]!r}")
        pos = m.end()
        if m.group("quoted") is not None:
            out.append(("word", _ESCAPE.sub(r"\1", m.group("quoted"))))
        elif m.group("word") is not None:
            out.append(("word", m.group("word")))
        elif m.group("punct") is not None:
            out.append(("punct", m.group("punct")))
    return out


def parse_jaas_config(text: str) -> JaasEntry:
    """The one login module entry of a ``sasl.jaas.config`` value (``JaasError`` if it is
    not exactly one well-formed entry ending in ``;``)."""
    tokens = _tokens(text)
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][0] != "word":
        raise JaasError("expected: <LoginModule class> <control flag> [option=value ...];")
    module, flag = tokens[0][1], tokens[1][1]
    if flag.lower() not in CONTROL_FLAGS:
        raise JaasError(
            f"login module control flag {flag!r} is not one of {', '.join(CONTROL_FLAGS)}"
        )
    options: dict[str, str] = {}
    rest = tokens[2:]
    while rest and rest[0] != ("punct", ";"):
        if (
            len(rest) < 3
            or rest[0][0] != "word"
            or rest[1] != ("punct", "=")
            or rest[2][0] != "word"
        ):
            raise JaasError(f"expected option=value after {module}, not {rest[0][1]!r}")
        options[rest[0][1]] = rest[2][1]
        rest = rest[3:]
    if not rest:
        raise JaasError("the login module entry must end with ';'")
    if len(rest) > 1:
        raise JaasError("expected one login module entry: a value holds exactly one")
    return JaasEntry(module, flag.lower(), options)
