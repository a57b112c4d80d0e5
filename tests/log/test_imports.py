"""The log and records packages run in worker threads: they must not import trio."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_trio_import() -> None:
    code = (
        "import sys, trio_broker.log, trio_broker.records; "
        "bad = sorted(m for m in sys.modules if m == 'trio' or m.startswith('trio.')); "
        "assert not bad, bad"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
