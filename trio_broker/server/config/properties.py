"""Reading Java ``.properties`` text, the format of Kafka's ``server.properties``.

Owns: ``parse_properties``, which turns the text into an ordered ``dict`` of key to value
following ``java.util.Properties.load``: lines end at LF, CR or CRLF; blank lines and lines
whose first non-blank character is ``#`` or ``!`` are skipped; a key ends at the first
unescaped ``=``, ``:`` or blank, after which blanks and one ``=``/``:`` are skipped; a line
ending in an odd number of backslashes continues on the next line (whose leading blanks
are dropped); ``\\t \\n \\r \\f \\uXXXX`` are escapes and a backslash before any other
character stands for that character. A key given twice keeps its last value. Values are
returned as written (trailing blanks included); typing and trimming are the config
layer's job. No I/O: the caller reads the file (as UTF-8).
"""

from __future__ import annotations

import re

from .configdef import ConfigError

__all__ = ["parse_properties"]

_NATURAL_LINES = re.compile(r"\r\n|\r|\n")
_BLANKS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Parse ``.properties`` text into ``{key: value}``; ``source`` names it in errors."""
    result: dict[str, str] = {}
    for line_no, logical in _logical_lines(text):
        key, value = _split_key_value(logical)
        try:
            result[_unescape(key)] = _unescape(value)
        except ValueError as exc:
            raise ConfigError(None, None, f"{source}, line {line_no}: {exc}") from None
    return result


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continued lines; drop blank and comment lines. Yields (first line no, text)."""
    lines: list[tuple[int, str]] = []
    parts: list[str] = []
    start = 0
    for number, natural in enumerate(_NATURAL_LINES.split(text), start=1):
        stripped = natural.lstrip(_BLANKS)
        if not parts:
            if not stripped or stripped[0] in "#!":
                continue
            start = number
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2:
            parts.append(stripped[:-1])
            continue
        parts.append(stripped)
        lines.append((start, "".join(parts)))
        parts = []
    if parts:
        lines.append((start, "".join(parts)))
    return lines


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line at the first unescaped separator (``=``, ``:`` or blanks)."""
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=:" or c in _BLANKS:
            break
        i += 1
    key = line[:i]
    j = i
    while j < n and line[j] in _BLANKS:
        j += 1
    if j < n and line[j] in "=:":
        j += 1
        while j < n and line[j] in _BLANKS:
            j += 1
    return key, line[j:]


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:  # a lone backslash at the very end stands for nothing
            break
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"malformed \\uXXXX escape: \\u{digits}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    joined = "".join(out)
    try:  # \uD83D\uDE00: a surrogate pair written as two escapes is one character
        return joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        return joined
