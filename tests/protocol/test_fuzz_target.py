"""The atheris target for the request decoders (fuzz/fuzz_request.py), run bounded."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "fuzz" / "fuzz_request.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's trio_broker, not another


def load_target() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_request", TARGET)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_seed_is_one_request_the_decoders_accept() -> None:
    target = load_target()
    seeds = list(target.seeds())
    assert len(seeds) > 100  # every api key and version we answer
    for name, frame in seeds:
        assert target.decode_stream(frame) == 1, name
        target.one_input(frame[: len(frame) // 2])  # cut short: a protocol error only


def test_the_fuzzer_runs_bounded_without_a_crash(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    made = subprocess.run(
        [sys.executable, str(TARGET), "--make-corpus", str(corpus)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    run = subprocess.run(
        [sys.executable, str(TARGET), str(corpus), "-runs=5000", "-seed=1"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Done 5000 runs" in run.stderr
    replayed = subprocess.run(
        [sys.executable, str(TARGET), "--replay", str(corpus)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert replayed.returncode == 0 and "no crash" in replayed.stdout, replayed.stderr
