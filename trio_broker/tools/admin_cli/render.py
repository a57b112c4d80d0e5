"""Plain-text tables for ``trio-broker-admin``'s human output.

Owns: ``table`` (left-aligned text, right-aligned numbers, a header row, columns two
spaces apart, like ``kafka-consumer-groups --describe``), ``number`` and ``ratio`` (how
figures are written) and ``duration``. Pure functions of data; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

EMPTY = "-"


def number(value: Any) -> str:
    """Integers whole, other numbers with up to 3 decimals; ``None`` as ``-``."""
    if value is None:
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


def ratio(value: Any) -> str:
    """A 0..1 ratio as a percentage."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return EMPTY
    return f"{value * 100:.0f}%"


def duration(seconds: float) -> str:
    """``93784.2`` -> ``1d 2h 3m 4s``."""
    left = int(seconds)
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if left >= size or parts:
            parts.append(f"{left // size}{unit}")
            left %= size
    parts.append(f"{left}s")
    return " ".join(parts)


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else number(value)


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], empty: str = "") -> str:
    """A text table; ``empty`` (e.g. ``"(no connections)"``) when there are no rows."""
    if not rows and empty:
        return empty
    cells = [[_cell(v) for v in row] for row in rows]
    right = [
        bool(rows) and all(_numeric(row[i]) or row[i] is None for row in rows)
        for i in range(len(headers))
    ]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(items: Sequence[str]) -> str:
        out = [
            s.rjust(w) if r else s.ljust(w) for s, w, r in zip(items, widths, right, strict=True)
        ]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), *(line(r) for r in cells)])
