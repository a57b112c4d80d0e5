"""librdkafka's own integration suite against one trio-broker: the compatibility yardstick.

    .venv/bin/python compat/librdkafka/run.py --src LIBRDKAFKA_SOURCE_TREE
        [--tests 0001,0011,...] [--no-build] [--timeout-per-test 300] [--out report.md]
        [--cluster N] [--scenario noautocreate]

Builds librdkafka's test runner from the source tree given (``./configure``, ``make
libs``, ``make -C tests build``; skipped with ``--no-build``), starts a broker as a process
(``trio_broker.testing.running(mode="process")``, every listener on port 0, with the
settings of ``BROKER`` below, which are what librdkafka's suite expects of a Kafka 3.9
broker), points the suite at it (``RDKAFKA_TEST_CONF``), and runs it in full mode against
the broker (``-L``: no local-only tests; ``-E``: no socket-emulation tests, which need
librdkafka's sockem build), one test id at a time so that one test that hangs costs only
its timeout. It writes a Markdown table (id, name, result, first failing line) to
``--out`` and prints it. Every run is bounded: ``--timeout-per-test`` seconds per test.

``--cluster N`` runs the suite against N brokers and a local ZooKeeper instead
(``trio-broker-cluster``: replication, ``offsets.topic.replication.factor`` min(3, N));
``--scenario`` picks librdkafka's scenario (``noautocreate``: the tests that create their
topics themselves, such as 0107 and 0111, on brokers with auto-creation off).

Not part of ``.ci/run``: it needs a C tool chain and a librdkafka source tree.
``docs/COMPATIBILITY.md`` keeps the latest table and the reason for each test that does
not pass.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from trio_broker.testing import running  # noqa: E402

KAFKA_VERSION = "3.9.0"
BROKER = {
    "num.partitions": 4,
    "auto.create.topics.enable": "true",
    # 0, as in the config/server.properties Kafka ships (its key default is 3000): the
    # suite's group tests wait that long for each new group, and 0081 runs 17 of them
    # within its 180 s.
    "group.initial.rebalance.delay.ms": 0,
    "testing.faults.enable": "false",
}
# Tests that need a broker of their own, with these settings over ``BROKER``:
# 0113's l_unsubscribe relies on the first rebalance of a new group waiting
# group.initial.rebalance.delay.ms for its second consumer (librdkafka's CI brokers,
# started by trivup, run with Kafka's default 3000, as its mock cluster does; with 0,
# Kafka 3.9 forms the same one-member generation and fails the same check). 0102's
# static members likewise expect their first joins in one generation (with 0 it failed
# once in 23 runs on its own).
OWN_SETTINGS: dict[str, dict[str, object]] = {
    "0102": {"group.initial.rebalance.delay.ms": 3000},
    "0113": {"group.initial.rebalance.delay.ms": 3000},
}
# librdkafka's scenarios (a test names the ones it runs in; the runner runs those of
# TEST_SCENARIO) and the broker settings each stands for, as trivup sets them.
SCENARIOS: dict[str, dict[str, object]] = {
    "default": {},
    "noautocreate": {"auto.create.topics.enable": "false"},
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextlib.contextmanager
def brokers(settings: dict[str, object], cluster: int) -> Iterator[str]:
    """One broker process (``cluster`` 0), or a local ZooKeeper and ``cluster`` brokers
    started by ``trio-broker-cluster``; yields the bootstrap servers."""
    if not cluster:
        with running(settings, mode="process") as broker:
            yield broker.bootstrap
        return
    with tempfile.TemporaryDirectory(prefix="rdk-cluster-") as tmp:
        args = [sys.executable, "-m", "trio_broker.tools.cluster", "start", str(cluster)]
        args += ["--dir", tmp]
        for key, value in settings.items():
            args += ["--override", f"{key}={value}"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("bootstrap.servers="):
                    break
            else:
                raise RuntimeError(f"the cluster did not start (exit {proc.wait()})")
            yield line.split("=", 1)[1].strip()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(120)


@dataclass
class Result:
    test_id: str
    name: str
    state: str
    first_failure: str
    seconds: float


def build(src: Path) -> None:
    for cmd, where in (
        (["./configure"], src),
        (["make", "-j2", "libs"], src),
        (["make", "-j2", "build"], src / "tests"),
    ):
        print(f"== {' '.join(cmd)} in {where}", file=sys.stderr)
        subprocess.run(cmd, cwd=where, check=True)


def test_ids(src: Path, wanted: list[str] | None) -> list[tuple[str, str]]:
    """(id, name) of the suite's tests, from tests/test.c's table (``_TEST(0001_...``)."""
    text = (src / "tests" / "test.c").read_text(errors="replace")
    found = re.findall(r"_TEST\((\d{4})_(\w+?)\s*,", text)
    tests = sorted({(i, n) for i, n in found})
    if wanted:
        tests = [(i, n) for i, n in tests if i in wanted]
    return tests


def run_one(
    src: Path,
    test_id: str,
    name: str,
    conf: Path,
    timeout: float,
    seen: dict[str, str],
    scenario: str = "default",
) -> Result:
    """Run one test; ``seen`` collects the state of the other tests a run ran (the runner
    runs every test whose id is in TESTS, so 0113_cooperative_rebalance also runs
    ..._local)."""
    if f"{test_id}_{name}" in seen:
        return Result(test_id, name, seen[f"{test_id}_{name}"], "(ran with the test above)", 0)
    report = Path(tempfile.mkstemp(prefix=f"rdk-{test_id}-", suffix=".json")[1])
    env = {
        **os.environ,
        "TESTS": f"{test_id}_{name}",  # a substring of the test name: this test only
        "TEST_KAFKA_VERSION": KAFKA_VERSION,
        "TEST_SCENARIO": scenario,
        "RDKAFKA_TEST_CONF": str(conf),
        "TEST_REPORT": str(report),
        # the runner links the libraries just built, as the suite's run-test.sh arranges
        "LD_LIBRARY_PATH": os.pathsep.join(
            p
            for p in (str(src / "src"), str(src / "src-cpp"), os.environ.get("LD_LIBRARY_PATH"))
            if p
        ),
    }
    began = time.monotonic()
    try:
        done = subprocess.run(
            ["./test-runner", "-L", "-E", "-p1"],
            cwd=src / "tests",
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
        output, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        output = out.decode(errors="replace") if isinstance(out, bytes) else out
        return Result(test_id, name, "TIMEOUT", f"no result within {timeout:.0f} s", timeout)
    seconds = time.monotonic() - began
    state = "PASSED" if code == 0 else "FAILED"
    try:
        data = json.loads(report.read_text() or "{}")
        # The report lists every test of the suite, those TESTS filtered out as SKIPPED:
        # only the others with this test's id (the runner matches TESTS by id) ran.
        for other, found in data.get("tests", {}).items():
            state_of = str(found.get("state", "")) if isinstance(found, dict) else ""
            if (
                other != f"{test_id}_{name}"
                and other.startswith(f"{test_id}_")
                and state_of in ("PASSED", "FAILED")
            ):
                seen[other] = state_of
        own = data.get("tests", {}).get(f"{test_id}_{name}")  # TESTS matches substrings
        if own is not None:
            state = str(own.get("state", state))
    except (OSError, ValueError):
        pass
    finally:
        report.unlink(missing_ok=True)
    if state != "FAILED" and re.search(rf"{test_id}_{name}\s.*SKIPPED", output):
        state = "SKIPPED"
    first = ""
    if state != "PASSED":
        lines = [_ANSI.sub("", line).strip() for line in output.splitlines()]
        lines = [line for line in lines if line]
        for i, line in enumerate(lines):
            if line.startswith("### Test") and "failed at" in line:
                detail = lines[i + 1] if i + 1 < len(lines) else ""
                where = line.split("failed at", 1)[1].split(" at ", 1)[0].strip()
                first = f"{where}: {detail}"[:200]
                break
            if "SKIPPED" in line:
                first = line.strip(" |")[:200]
                break
        if not first:
            first = lines[-1][:200] if lines else f"exit status {code}"
    return Result(test_id, name, state, first, seconds)


def table(results: list[Result], src: Path, where: str = "one broker") -> str:
    version = subprocess.run(
        ["git", "describe", "--tags", "--always"], cwd=src, capture_output=True, text=True
    ).stdout.strip()
    counts: dict[str, int] = {}
    for r in results:
        counts[r.state] = counts.get(r.state, 0) + 1
    lines = [
        f"librdkafka `{version or 'unknown'}`, TEST_KAFKA_VERSION={KAFKA_VERSION}, "
        f"{where}, broker settings {BROKER} (own broker for {OWN_SETTINGS}); "
        + ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items())),
        "",
        "| id | name | result | s | first failing line |",
        "|---|---|---|--:|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.test_id} | {r.name} | {r.state} | {r.seconds:.0f} | "
            f"{r.first_failure.replace('|', '/')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", type=Path, required=True, help="a librdkafka source tree")
    p.add_argument("--tests", help="comma-separated test ids (default: all)")
    p.add_argument("--no-build", action="store_true", help="the runner is built already")
    p.add_argument("--timeout-per-test", type=float, default=300.0)
    p.add_argument("--out", type=Path, default=Path("librdkafka-report.md"))
    p.add_argument(
        "--cluster", type=int, default=0, help="N brokers and a ZooKeeper (default: one broker)"
    )
    p.add_argument("--scenario", choices=sorted(SCENARIOS), default="default")
    args = p.parse_args(argv)
    # A run stopped with SIGTERM stops its broker too (the with block below ends).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    src = args.src.resolve()
    if not (src / "tests" / "test.c").exists():
        p.error(f"{src} is not a librdkafka source tree (no tests/test.c)")
    if not args.no_build:
        build(src)
    wanted = args.tests.split(",") if args.tests else None
    tests = test_ids(src, wanted)
    results: list[Result] = []
    seen: dict[str, str] = {}
    # The suite's tests on one broker, then each test that needs its own on a fresh one.
    base = {**BROKER, **SCENARIOS[args.scenario]}
    where = f"{args.cluster} brokers and ZooKeeper" if args.cluster else "one broker"
    where += f", scenario {args.scenario}"
    batches = [(base, [t for t in tests if t[0] not in OWN_SETTINGS])]
    batches += [({**base, **OWN_SETTINGS[t[0]]}, [t]) for t in tests if t[0] in OWN_SETTINGS]
    for settings, batch in batches:
        if not batch:
            continue
        with brokers(settings, args.cluster) as bootstrap:
            conf = Path(tempfile.mkstemp(prefix="rdk-test-", suffix=".conf")[1])
            conf.write_text(f"bootstrap.servers={bootstrap}\n")
            for test_id, name in batch:
                r = run_one(src, test_id, name, conf, args.timeout_per_test, seen, args.scenario)
                print(
                    f"{r.test_id} {r.name}: {r.state} ({r.seconds:.0f} s) {r.first_failure}",
                    file=sys.stderr,
                )
                results.append(r)
                args.out.write_text(table(results, src, where))  # a stopped run keeps its part
            conf.unlink(missing_ok=True)
    report = table(results, src, where)
    args.out.write_text(report)
    print(report)
    return 0 if all(r.state in ("PASSED", "SKIPPED") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
