"""The README's API table is the API table the broker answers ApiVersions from."""

from __future__ import annotations

import re
from pathlib import Path

import trio_broker.protocol.messages  # noqa: F401
from trio_broker.apis.table import API_TABLE

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_lists_exactly_the_apis_we_answer() -> None:
    rows = re.findall(r"^\| (\w+) \| (\d+) \| (\d+)-(\d+) \|$", README.read_text(), re.M)
    documented = {(name, int(k), int(lo), int(hi)) for name, k, lo, hi in rows}
    answered = {
        (e.spec.name, e.spec.key, e.versions.lo, e.versions.hi)
        for e in API_TABLE.entries()
        if not e.control_only
    }
    assert documented == answered
