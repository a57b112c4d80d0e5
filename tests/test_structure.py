"""The code's shape, as docs/architecture.md draws it: modules import each other one way
(no cycle among trio_broker, admin and spark_jobs, imports under ``TYPE_CHECKING``
counted), no module of the broker is longer than a reader can hold in mind, no folder
holds more modules than a reader can scan, and each subsystem of the server is a package
that the others import only through its face (import-linter's contracts in
pyproject.toml, checked here to cover every subsystem and to catch a breach)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from typing import Any

import grimp
import pytest
from importlinter.contracts.protected import ProtectedContract

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 600
MAX_MODULES_PER_PACKAGE = 25
SERVER = ROOT / "trio_broker" / "server"
SUBSYSTEMS = sorted(p.parent.name for p in SERVER.glob("*/__init__.py"))


def contracts() -> list[dict[str, Any]]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        found: list[dict[str, Any]] = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    return found


def face_contract(subsystem: str) -> dict[str, Any] | None:
    package = f"trio_broker.server.{subsystem}"
    return next(
        (
            c
            for c in contracts()
            if c["type"] == "protected"
            and c["protected_modules"] == [f"{package}.*"]
            and c["allowed_importers"] == [package]
        ),
        None,
    )


def import_cycles() -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan's algorithm)."""
    graph = grimp.build_graph("trio_broker", "admin", "spark_jobs", cache_dir=None)
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
    graph = grimp.build_graph("trio_broker", cache_dir=None)
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


def test_no_package_directory_holds_more_than_25_modules() -> None:
    crowded = {
        str(d.relative_to(ROOT)): n
        for d in [ROOT / "trio_broker", *(ROOT / "trio_broker").rglob("*")]
        if (d / "__init__.py").is_file()
        and (n := len(list(d.glob("*.py")))) > MAX_MODULES_PER_PACKAGE
    }
    assert crowded == {}


def test_the_server_is_subsystems_only() -> None:
    """Beside its subsystems, server/ holds only the command and the composition root."""
    assert sorted(p.name for p in SERVER.glob("*.py")) == [
        "__init__.py",
        "main.py",
        "node.py",
        "startup.py",
    ]
    assert len(SUBSYSTEMS) >= 10


@pytest.mark.parametrize("subsystem", SUBSYSTEMS)
def test_every_subsystem_has_a_face_and_a_floor(subsystem: str) -> None:
    """A new subsystem cannot slip past the contracts: each one has its face contract and
    a place in the server's layers."""
    assert face_contract(subsystem) is not None
    (layers,) = [
        c["layers"]
        for c in contracts()
        if c["type"] == "layers" and c.get("containers") == ["trio_broker.server"]
    ]
    floors = [name.strip() for layer in layers for name in layer.split("|")]
    assert subsystem in floors


@pytest.mark.parametrize("subsystem", SUBSYSTEMS)
def test_a_face_contract_catches_an_import_of_an_internal(subsystem: str) -> None:
    """Kept on the code as it is; broken once another subsystem imports one of its inner
    modules instead of its face."""
    options = face_contract(subsystem)
    assert options is not None
    contract = ProtectedContract(
        name=subsystem,
        session_options={"root_packages": ["trio_broker", "admin", "spark_jobs"]},
        contract_options={k: v for k, v in options.items() if k not in ("name", "type")},
    )
    graph = grimp.build_graph("trio_broker", "admin", "spark_jobs", cache_dir=None)
    assert contract.check(graph, verbose=False).kept
    package = f"trio_broker.server.{subsystem}"
    inner = min(m for m in graph.find_children(package))
    graph.add_import(importer="trio_broker.server.main", imported=inner)
    assert not contract.check(graph, verbose=False).kept


def test_each_face_says_which_subsystems_it_uses() -> None:
    """A face's docstring names the parts of the server its subsystem imports ("Uses of
    the server: ..."); the names are what the code imports, so the sentence cannot drift."""
    graph = grimp.build_graph("trio_broker", cache_dir=None)
    said: dict[str, set[str]] = {}
    used: dict[str, set[str]] = {}
    for subsystem in SUBSYSTEMS:
        package = f"trio_broker.server.{subsystem}"
        doc = face_docstring(subsystem)
        sentence = re.split(r"[;.](\s|$)", doc.split("Uses of the server:", 1)[1], maxsplit=1)[0]
        said[subsystem] = set(re.findall(r"``([a-z_]+)``", sentence))
        used[subsystem] = {
            imported.split(".")[2]
            for module in graph.find_descendants(package) | {package}
            for imported in graph.find_modules_directly_imported_by(module)
            if imported.startswith("trio_broker.server.")
            and not imported.startswith(f"{package}.")
            and imported != package
        }
    assert said == used


def face_docstring(subsystem: str) -> str:
    source = (SERVER / subsystem / "__init__.py").read_text(encoding="utf-8")
    return ast.get_docstring(ast.parse(source)) or ""


def test_the_architecture_page_matches_the_tree() -> None:
    """docs/architecture.md names only files and folders that exist, and has a paragraph
    for every server subsystem."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([a-z_][a-z0-9_/]*(?:\.py|/))`", page))
    # a path from the repository, from trio_broker/, or from a package (a paragraph about
    # a package names its modules by their own names)
    bases = [ROOT, *(p.parent for p in (ROOT / "trio_broker").rglob("__init__.py"))]
    missing = sorted(p for p in named if not any((base / p).exists() for base in bases))
    assert missing == []
    assert len(named) > 30
    without_paragraph = [s for s in SUBSYSTEMS if f"**`{s}`**" not in page]
    assert without_paragraph == []
