"""docs/testing.md's examples run as written: each ``# test file:`` block is a test file.

The blocks are written into a fresh project and run with pytest and the plugin (what a
user's project does after ``pip install 'trio-broker[testing]'``); every test in them
must pass, so the page cannot drift from what the broker and the clients do.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .test_plugin import outcome, run_pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCKS = re.findall(r"```python\n# test file: (\S+)\n(.*?)```", DOC.read_text(), re.S)


def test_the_page_has_its_examples() -> None:
    names = [name for name, _ in BLOCKS]
    assert len(names) == len(set(names)) >= 8
    for client in ("confluent", "kafka_python", "aiokafka"):
        assert any(client in n for n in names), client


@pytest.mark.parametrize(("name", "code"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_an_example_passes_as_written(name: str, code: str, tmp_path: Path) -> None:
    (tmp_path / name).write_text(code)
    status, out = run_pytest(tmp_path)
    assert status == 0, out
    counts = outcome(out)
    assert counts["passed"] >= 1 and set(counts) <= {"passed", "warnings"}, out
