"""Why the pool advisor decides what it does: its comparisons as values, and each pool's
verdict (``raise``, ``lower`` or ``hold``) with the comparisons that decided it.

Owns ``Check`` (one comparison of a measured figure with a threshold: the rules decide
with ``Check.ok`` and explain with ``Check.text()``, so the explanation is the decision,
not a second account of it that could drift), ``Rule`` (the checks an action needs: all
of them, and for a tuple of checks any one of it; ``blockers`` are what kept it from
passing, ``grounds`` what let it pass) and ``Verdict`` (one per resizable pool).
Must not: read tables, decide the rules themselves (``advise_rules`` does), import Spark or
the broker.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
}
WORDS = {"<": "below", ">=": "at least", ">": "above", "<=": "at most"}
NEGATE = {"<": ">=", ">=": "<", ">": "<=", "<=": ">"}

# Why a pool holds: the first that applies.
HOLD_DATA = "not enough data"
HOLD_CPU = "CPU-bound"
HOLD_COOLDOWN = "cooldown"
HOLD_THRESHOLDS = "thresholds"
HOLD_SIZE = "size limit"


def _fmt(v: float, unit: str) -> str:
    if unit == "%":
        return f"{v:.0%}"
    if unit in ("ms", "x"):
        return f"{v:.1f} ms" if unit == "ms" else f"{v:.1f}x"
    if unit == "ms/min":
        return f"{v:+.2f} ms/min"
    if unit == "s":
        return f"{v:.0f} s"
    text = f"{v:g}"
    return f"{text} {unit}" if unit else text


@dataclass(frozen=True)
class Check:
    """``value op threshold``, e.g. io idle 0.24 < 0.2 (``io_idle_low``): not met.

    ``missing_ok`` is the outcome when nothing was measured (``value`` None)."""

    what: str
    value: float | None
    op: str
    threshold: float
    against: str  # the threshold's name (a Thresholds field) or what it is
    unit: str = ""
    missing_ok: bool = False
    data: bool = False  # a check that there is enough data to judge

    @property
    def ok(self) -> bool:
        if self.value is None:
            return self.missing_ok
        return OPS[self.op](self.value, self.threshold)

    def negated(self, *, missing_ok: bool) -> Check:
        """The opposite comparison of the same figure and threshold."""
        return Check(
            self.what,
            self.value,
            NEGATE[self.op],
            self.threshold,
            self.against,
            self.unit,
            missing_ok,
            self.data,
        )

    def text(self) -> str:
        limit = f"{_fmt(self.threshold, self.unit)} ({self.against})"
        if self.value is None:
            return f"{self.what}: not measured (compared with {limit})"
        op = self.op if OPS[self.op](self.value, self.threshold) else NEGATE[self.op]
        return f"{self.what} {_fmt(self.value, self.unit)} is {WORDS[op]} {limit}"

    def doc(self) -> dict[str, Any]:
        return {
            "check": self.what,
            "measured": None if self.value is None else round(self.value, 4),
            "op": self.op,
            "threshold": self.threshold,
            "threshold_name": self.against,
            "met": self.ok,
            "text": self.text(),
        }


Group = Check | tuple[Check, ...]  # a tuple: any one of its checks will do


def _group_ok(g: Group) -> bool:
    return g.ok if isinstance(g, Check) else any(c.ok for c in g)


@dataclass(frozen=True)
class Rule:
    """An action and every check it needs."""

    action: str
    needs: tuple[Group, ...]

    @property
    def ok(self) -> bool:
        return all(_group_ok(g) for g in self.needs)

    def blockers(self) -> list[Check]:
        out: list[Check] = []
        for g in self.needs:
            if not _group_ok(g):
                out += [g] if isinstance(g, Check) else list(g)
        return out

    def grounds(self) -> list[Check]:
        out: list[Check] = []
        for g in self.needs:
            out += [c for c in ([g] if isinstance(g, Check) else g) if c.ok]
        return out


@dataclass
class Verdict:
    broker_id: int
    pool: str
    setting: str
    listener: str | None
    verdict: str  # "raise", "lower" or "hold"
    current: int
    proposed: int | None
    because: str | None  # a hold's kind: not enough data, CPU-bound, cooldown, thresholds
    reasons: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def hold(
        cls,
        broker_id: int,
        pool: str,
        setting: str,
        listener: str | None,
        current: int,
        because: str,
        checks: Sequence[Check],
    ) -> Verdict:
        return cls(
            broker_id, pool, setting, listener, "hold", current, None, because, _docs(checks)
        )

    @classmethod
    def change(
        cls,
        broker_id: int,
        pool: str,
        setting: str,
        listener: str | None,
        rule: Rule,
        current: int,
        proposed: int,
        extra: Sequence[Check] = (),
    ) -> Verdict:
        reasons = _docs([*rule.grounds(), *extra])
        return cls(
            broker_id, pool, setting, listener, rule.action, current, proposed, None, reasons
        )

    def held(self, because: str, check: Check) -> None:
        """A change the advisor will not make now: it holds, and says what it would do."""
        would = {
            "check": "proposed change",
            "measured": self.proposed,
            "op": None,
            "threshold": None,
            "threshold_name": None,
            "met": True,
            "text": f"would {self.verdict} {self.current} -> {self.proposed}",
        }
        self.reasons = [check.doc(), would, *self.reasons]
        self.verdict, self.proposed, self.because = "hold", None, because

    def text(self) -> str:
        where = f" ({self.listener})" if self.listener else ""
        head = f"broker {self.broker_id} {self.pool} {self.setting}{where}: "
        if self.verdict == "hold":
            head += f"hold at {self.current} ({self.because})"
        else:
            head += f"{self.verdict} {self.current} -> {self.proposed}"
        return head + ": " + "; ".join(r["text"] for r in self.reasons)


def _docs(checks: Sequence[Check]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for c in checks:
        d = c.doc()
        if d["text"] not in seen:
            seen.add(d["text"])
            out.append(d)
    return out
