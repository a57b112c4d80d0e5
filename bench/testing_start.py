"""Start-to-ready of ``trio_broker.testing.running``: in-process and as a subprocess.

What a test suite waits for before its first request: from ``running(...)`` being
entered to the yielded broker answering (every listener accepting, admin API included).

- ``thread, cold``: a fresh interpreter, the first broker: the import of
  ``trio_broker.testing``, the broker's own imports on first use, then the start (one
  subprocess per sample, timed inside it);
- ``thread, warm``: later brokers in the same process (what each function-scoped fixture
  pays after the first);
- ``process``: ``mode="process"``, ``python -m trio_broker`` started and ready (its
  interpreter start and imports included), from a warm test process;
- ``storage=memory``: the warm in-process start with the data dir on tmpfs, and what
  creating 10 topics of 4 partitions takes once ready, on the disk and in memory.

Each figure is the median (and the maximum) of ``--samples`` runs; a CreateTopics right
after ready checks that the broker really answers. Usage::

    python bench/testing_start.py [--samples 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

COLD = """
import time
t0 = time.perf_counter()
from trio_broker.testing import running
with running() as b:
    ready = time.perf_counter() - t0
    b.create_topic("t")
print(ready)
"""


def _cold(samples: int) -> list[float]:
    out = []
    for _ in range(samples):
        proc = subprocess.run(
            [sys.executable, "-c", COLD],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            cwd=REPO,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        )
        out.append(float(proc.stdout.strip().splitlines()[-1]))
    return out


def _warm(samples: int, mode: str, storage: str = "file") -> tuple[list[float], list[float]]:
    """Start-to-ready times, and the times of creating ``TOPICS`` topics once ready."""
    from trio_broker.testing import running

    with running(mode=mode, storage=storage):  # type: ignore[arg-type]  # imports warmed
        pass
    starts, creates = [], []
    for i in range(samples):
        t0 = time.perf_counter()
        with running(mode=mode, storage=storage) as b:  # type: ignore[arg-type]
            starts.append(time.perf_counter() - t0)
            t1 = time.perf_counter()
            for n in range(TOPICS):
                b.create_topic(f"t{i}-{n}", partitions=4)
            creates.append(time.perf_counter() - t1)
    return starts, creates


TOPICS = 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    thread_warm, thread_topics = _warm(args.samples, "thread")
    memory_warm, memory_topics = _warm(args.samples, "thread", "memory")
    process, _ = _warm(args.samples, "process")
    figures = {
        "thread, cold (import + first start)": _cold(args.samples),
        "thread, warm": thread_warm,
        "thread, warm, storage=memory": memory_warm,
        "process": process,
        f"{TOPICS} topics x 4 partitions, file": thread_topics,
        f"{TOPICS} topics x 4 partitions, memory": memory_topics,
    }
    print(f"command: {' '.join(sys.argv)}")
    print(f"{'case':38} {'median s':>9} {'max s':>7}")
    result = {}
    for name, values in figures.items():
        med, top = statistics.median(values), max(values)
        result[name] = {"median_s": round(med, 4), "max_s": round(top, 4), "samples": len(values)}
        print(f"{name:38} {med:9.3f} {top:7.3f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
