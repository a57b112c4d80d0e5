"""Summarize a py-spy profile in collapsed-stack form: where the broker's time goes.

Reads the files the benchmarks write with ``--profile DIR`` (py-spy's ``raw`` format: one
``frame;frame;...;frame COUNT`` line per distinct stack, outermost frame first, each frame
``function (file:line)``). Prints two tables over all samples of the main thread:

* self time by area: idle, socket syscalls, thread hand-offs, trio's scheduler, and the
  broker's own layers (network, protocol, apis and server, log and records);
* self time: the innermost frame of each sample of the main thread (the Trio loop, where
  all broker code runs; line numbers dropped), top ``--top``;
* inclusive time: the share of main-thread samples with the function anywhere on the
  stack, for the broker's own functions (``trio_broker/``) and trio's run loop;
* worker threads: what the ``trio.to_thread`` workers were busy with (file writes...),
  as a share of the main thread's samples (they run in parallel, GIL released).

py-spy ran with ``--idle``, so shares are of wall time: main-thread samples whose innermost
frame is trio's epoll wait are idle time (the broker was waiting for I/O, not working). Usage::

    .venv/bin/python bench/profile_top.py PROFILE.txt [--top 20] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^():]*?)(?::(?P<line>\d+))?\)$")
_IDLE = ("get_events", "epoll.poll")


def _short_file(path: str) -> str:
    for marker in ("trio_broker/", "site-packages/", "lib/python3"):
        i = path.rfind(marker)
        if i >= 0:
            return path[i + len(marker) :] if marker != "trio_broker/" else path[i:]
    return path


def parse_frame(frame: str) -> str:
    """``func (file:line)`` as ``func (short/file.py)``."""
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip()
    return f"{m['func']} ({_short_file(m['file'])})"


def load(path: Path) -> list[tuple[str, list[str], int]]:
    """(thread name, frames outermost first, count) per line of a raw profile."""
    stacks: list[tuple[str, list[str], int]] = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        raw = [f for f in stack.split(";") if f]
        thread = "MainThread"
        if raw and raw[0].startswith("process "):
            raw = raw[1:]
        if raw and raw[0].startswith("thread "):
            thread = raw[0].partition(": ")[2] or raw[0]
            raw = raw[1:]
        stacks.append((thread, [parse_frame(f) for f in raw], int(count)))
    return stacks


def _idle_leaf(leaf: str) -> bool:
    return any(k in leaf for k in _IDLE) or leaf.startswith(
        ("Condition.wait", "Lock.acquire", "wait (threading", "Event.wait", "WorkerThread._work")
    )


_AREAS = (
    ("idle (epoll wait)", ("get_events (", "_epoll_wait (")),
    ("socket syscalls", ("_nonblocking_helper (", "wrapper (trio/_socket")),
    ("thread hand-off", ("_thread_cache", "_threads.py", "_wakeup_socketpair", "_entry_queue")),
    ("trio scheduling", ("trio/",)),
    ("broker network", ("trio_broker/network/",)),
    ("broker protocol", ("trio_broker/protocol/", "<encode ", "<decode ")),
    ("broker apis+server", ("trio_broker/apis/", "trio_broker/server/")),
    ("broker log+records", ("trio_broker/log/", "trio_broker/records/")),
)


def area(leaf: str) -> str:
    """Which part of the system an innermost frame belongs to."""
    for name, markers in _AREAS:
        if any(m in leaf for m in markers):
            return name
    return "other (stdlib, GC...)"


def summarize(stacks: list[tuple[str, list[str], int]], top: int) -> dict[str, Any]:
    """Shares of the main thread's samples (its wall time, as py-spy ran with --idle)."""
    main = [(f, c) for t, f, c in stacks if t == "MainThread"]
    workers = [(f, c) for t, f, c in stacks if t != "MainThread"]
    total = sum(c for _, c in main) or 1
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    idle = 0
    for frames, count in main:
        if not frames:
            continue
        leaf = frames[-1]
        self_time[leaf] += count
        if any(k in leaf for k in _IDLE):
            idle += count
        for f in set(frames):
            inclusive[f] += count
    areas: Counter[str] = Counter()
    for leaf, count in self_time.items():
        areas[area(leaf)] += count
    own = Counter(
        {
            f: c
            for f, c in inclusive.items()
            if "trio_broker/" in f or f.startswith(("unrolled_run", "get_events"))
        }
    )
    busy_workers: Counter[str] = Counter()
    for frames, count in workers:
        if frames and not _idle_leaf(frames[-1]):
            # the broker function that handed the work to the thread, and what it runs
            mine = [f for f in frames if "trio_broker/" in f]
            busy_workers[(mine[-1] + " > " if mine else "") + frames[-1]] += count
    return {
        "main_thread_samples": total,
        "main_thread_idle_share": idle / total,
        "areas": [(a, c / total) for a, c in areas.most_common()],
        "self": [(f, c / total) for f, c in self_time.most_common(top)],
        "inclusive": [(f, c / total) for f, c in own.most_common(top)],
        "worker_threads_busy": [(f, c / total) for f, c in busy_workers.most_common(5)],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("profiles", nargs="+", type=Path, help="py-spy raw profiles")
    p.add_argument("--top", type=int, default=20, help="rows per table (20)")
    p.add_argument("--json", help="write the summaries to this file")
    args = p.parse_args(argv)
    out = {}
    for path in args.profiles:
        summary = summarize(load(path), args.top)
        out[path.name] = summary
        print(
            f"## {path.name}: {summary['main_thread_samples']} samples of the main thread, "
            f"idle (waiting in epoll) {summary['main_thread_idle_share']:.0%}"
        )
        for title, key in (
            ("self time by area", "areas"),
            ("self time (innermost frame)", "self"),
            ("inclusive time (broker functions and the trio loop)", "inclusive"),
            ("worker threads, busy (share of the main thread's time)", "worker_threads_busy"),
        ):
            print(f"\n{title}")
            for func, share in summary[key]:
                print(f"  {share:6.1%}  {func}")
        print()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
