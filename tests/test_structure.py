"""The code's shape, as docs/architecture.md draws it: modules import each other one way
(no cycle among trio_broker, admin and spark_jobs, imports under ``TYPE_CHECKING``
counted), and no module of the broker is longer than a reader can hold in mind."""

from __future__ import annotations

from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 600


def import_cycles() -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan's algorithm)."""
    graph = grimp.build_graph("trio_broker", "admin", "spark_jobs")
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for m in modules:
        if m not in index:
            visit(m)
    return groups


def test_no_import_cycles() -> None:
    assert import_cycles() == []


def test_a_cycle_would_be_found() -> None:
    """The check itself: grimp sees imports made only for type checking."""
    graph = grimp.build_graph("trio_broker")
    assert "trio_broker.apis.services" in graph.find_modules_directly_imported_by(
        "trio_broker.apis.context"
    )  # context imports services under TYPE_CHECKING only


def test_no_broker_module_is_longer_than_600_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "trio_broker").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
