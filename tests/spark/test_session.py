"""Starting a job where Spark cannot run: one line that says what to install, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import ROOT


def test_a_job_without_java_stops_with_one_line_saying_what_to_install(tmp_path: Path) -> None:
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)}  # no java there
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs.trends", "--in", str(tmp_path), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Java 17" in lines[0] and "openjdk-17-jre-headless" in lines[0]
