"""Shared pieces of the benchmark scripts: processes, /proc readings, tables, JSON, py-spy.

Nothing here is measured itself. ``BrokerProcess`` starts ``python -m trio_broker`` from
this checkout (``PYTHONPATH`` points at the repository, so the broker measured is the code
next to the script, whatever the virtualenv's editable install points at) on port 0 in a
temporary directory, with the open-files limit raised to its hard limit. ``MockCluster``
starts ``bench/mock_cluster.py``, librdkafka's C mock broker in its own process.
CPU seconds and RSS come from ``/proc/<pid>/stat`` and ``/proc/<pid>/status`` (Linux).
"""

from __future__ import annotations

import json
import os
import platform
import queue
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
if str(REPO) not in sys.path:
    # Import trio_broker from this checkout, not from wherever .venv was installed from.
    sys.path.insert(0, str(REPO))

_CLK_TCK = os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------- /proc readings


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    fields = data[data.rindex(b")") + 2 :].split()
    # fields[0] is the state (field 3 of proc(5)); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def rss_bytes(pid: int) -> int:
    """Resident set size of a process (``VmRSS`` of ``/proc/<pid>/status``)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def default_data_dir() -> str | None:
    """tmpfs (``/dev/shm``) when there is one, else the system's temporary directory.

    The reference broker keeps its log in memory; on tmpfs ours writes its segment files
    to memory too, so the comparison is of the brokers, not of the machine's disk
    (``--data-dir`` chooses another place, e.g. a real disk).
    """
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return str(shm)
    return None


def raise_nofile(wanted: int | None = None) -> int:
    """Raise this process's open-files soft limit (to the hard limit at most); the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if wanted is None else min(max(wanted, soft), hard)
    if hard == resource.RLIM_INFINITY and wanted is None:
        target = 1 << 20
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _cpu_times() -> tuple[int, int]:
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def machine_busy(interval: float = 0.5) -> float:
    """Share of all CPUs busy over ``interval`` seconds (``/proc/stat``), 0..1."""
    busy0, total0 = _cpu_times()
    time.sleep(interval)
    busy1, total1 = _cpu_times()
    return (busy1 - busy0) / max(1, total1 - total0)


def wait_quiet(max_wait: float, threshold: float = 0.1) -> float:
    """Wait (at most ``max_wait`` s) until the machine is under ``threshold`` busy.

    Called between runs, when this benchmark has nothing running: whatever is busy then is
    someone else's load, which would be measured along with the broker on a small machine.
    Returns the last reading, which the scripts record with each run.
    """
    deadline = time.monotonic() + max_wait
    busy = machine_busy()
    while busy >= threshold and time.monotonic() < deadline:
        busy = machine_busy(1.0)
    if busy >= threshold:
        log(f"machine still {busy:.0%} busy with other work; measuring anyway")
    return busy


# ------------------------------------------------------------------- statistics


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile (0-100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def median(values: Iterable[float]) -> float:
    vals = [v for v in values if v == v]  # drop NaN
    return statistics.median(vals) if vals else float("nan")


# ---------------------------------------------------------------- presentation


def fmt(value: Any, digits: int = 3) -> str:
    """Numbers with ``digits`` significant figures (thousands kept whole), rest as str."""
    if isinstance(value, float):
        if value != value:
            return "-"
        if abs(value) >= 10 ** (digits - 1):
            return f"{value:,.0f}"
        return f"{value:.{digits}g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (readable as plain text too)."""
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(items: Sequence[str]) -> str:
        return "| " + " | ".join(s.rjust(w) for s, w in zip(items, widths, strict=True)) + " |"

    out = [line(headers), "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"]
    out += [line(r) for r in cells]
    return "\n".join(out)


def command_line() -> str:
    """The command that is running, with paths inside the working directory made relative."""
    cwd = Path.cwd()

    def rel(arg: str) -> str:
        try:
            p = Path(arg)
            if p.is_absolute():
                return str(p.relative_to(cwd))
        except ValueError:
            pass
        return arg

    return shlex.join([rel(sys.executable), *(rel(a) for a in sys.argv)])


def environment() -> dict[str, Any]:
    import trio

    info: dict[str, Any] = {
        "load_average_1min": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "trio": trio.__version__,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "kernel": platform.release(),
    }
    try:
        import confluent_kafka

        info["confluent_kafka"] = confluent_kafka.__version__
        info["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    return info


def header(title: str, options: dict[str, Any]) -> str:
    env = environment()
    lines = [
        f"# {title}",
        f"command: {command_line()}",
        "options: " + " ".join(f"{k}={v}" for k, v in options.items()),
        "environment: " + " ".join(f"{k}={v}" for k, v in env.items()),
    ]
    return "\n".join(lines)


def write_json(path: str | None, title: str, options: dict[str, Any], results: Any) -> None:
    if not path:
        return
    doc = {
        "benchmark": title,
        "command": command_line(),
        "options": options,
        "environment": environment(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "results": results,
    }
    Path(path).write_text(json.dumps(doc, indent=2, default=str) + "\n")
    print(f"wrote {path}")


def http(method: str, url: str, body: dict[str, Any] | None = None) -> None:
    """One admin API call (JSON body); an HTTP error status raises."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------- processes


_PR_SET_PDEATHSIG = 1


def child_setup() -> None:
    """In a child before exec: the open-files limit up, and die with the parent (Linux).

    ``PR_SET_PDEATHSIG`` sends the child SIGTERM if the benchmark process dies (killed,
    Ctrl-C), so no broker, mock or echo server outlives the run that started it.
    """
    raise_nofile()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class _LineReader:
    """Reads a pipe in a thread so that waiting for a line can time out."""

    def __init__(self, stream: Any, keep: list[str]) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._keep = keep
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream: Any) -> None:
        for line in stream:
            self._keep.append(line)
            if len(self._keep) > 2000:
                del self._keep[:1000]
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, marker: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no line with {marker!r} within {timeout} s")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(f"process ended before printing {marker!r}")
            if marker in line:
                return line


class BrokerProcess:
    """``python -m trio_broker`` from this checkout, on port 0, in a temporary directory
    (with ``storage_delay_ms``, through ``bench/slow_disk_broker.py``: a slow disk;
    with ``source``, the broker of another checkout, for a before/after in one run).

    The child gets ``RLIMIT_NOFILE`` raised to its hard limit (the ``ulimit -n`` a
    production broker would be given). ``overrides`` are extra ``key=value`` settings.
    """

    def __init__(
        self,
        overrides: Sequence[str] = (),
        log_level: str = "INFO",
        base_dir: str | Path | None = None,
        storage_delay_ms: float = 0.0,
        source: str | Path | None = None,
    ) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="trio-broker-bench-", dir=base_dir))
        self.source = Path(source) if source else REPO
        settings = {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(self.dir / "logs"),
            "admin.listeners": "",
            "dashboard.data.dir": str(self.dir / "dashboard"),
        }
        for item in overrides:
            key, _, value = item.partition("=")
            settings[key.strip()] = value.strip()
        self.args = [sys.executable, "-m", "trio_broker", "--log-level", log_level]
        if storage_delay_ms:  # a slow disk (bench/slow_disk_broker.py: a test-only hook)
            launcher = str(BENCH / "slow_disk_broker.py")
            self.args = [sys.executable, launcher, str(storage_delay_ms), "--log-level", log_level]
        for key, value in settings.items():
            self.args += ["--override", f"{key}={value}"]
        self.log_dir = Path(settings["log.dirs"].split(",")[0])
        self.proc: subprocess.Popen[str] | None = None
        self.output: list[str] = []
        self.bootstrap = ""
        self.admin_url = ""  # with admin.listeners set: the admin API's base URL

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def listeners(self) -> dict[str, str]:
        """Every listener's bound address (``listeners.json``), by listener name."""
        listeners: dict[str, str] = json.loads((self.log_dir / "listeners.json").read_text())[
            "listeners"
        ]
        return listeners

    def start(self, timeout: float = 60) -> BrokerProcess:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.source), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.dir,
            env=env,
            preexec_fn=child_setup,
        )
        reader = _LineReader(self.proc.stderr, self.output)
        try:
            reader.wait_for(" started: ", timeout)
        except (TimeoutError, RuntimeError) as exc:
            self.stop()
            raise RuntimeError(f"broker did not start: {exc}\n" + "".join(self.output)) from exc
        data = json.loads((self.log_dir / "listeners.json").read_text())
        self.bootstrap = data["listeners"]["PLAINTEXT"]
        self.admin_url = data.get("admin", "")
        return self

    def restart(self, timeout: float = 60) -> BrokerProcess:
        """SIGTERM, then start again on the same data (the listeners get new ports)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)
        return self.start(timeout)

    def stop(self, timeout: float = 30) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class MockCluster:
    """librdkafka's mock cluster (C) in its own process: see ``bench/mock_cluster.py``."""

    def __init__(self, brokers: int = 1) -> None:
        self.args = [sys.executable, str(BENCH / "mock_cluster.py"), "--brokers", str(brokers)]
        self.proc: subprocess.Popen[str] | None = None
        self.output: list[str] = []
        self.bootstrap = ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 30) -> MockCluster:
        self.proc = subprocess.Popen(
            self.args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            preexec_fn=child_setup,
        )
        self._reader = _LineReader(self.proc.stdout, self.output)
        line = self._reader.wait_for("bootstrap", timeout)
        self.bootstrap = json.loads(line)["bootstrap"]
        return self

    def _command(self, line: str, timeout: float = 30) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self._reader.wait_for('"ok"', timeout))
        if not reply["ok"]:
            raise RuntimeError(f"mock cluster: {line}: {reply}")

    def create_topic(self, name: str, partitions: int = 1) -> None:
        self._command(f"create {name} {partitions}")

    def delete_topic(self, name: str) -> None:
        self._command(f"delete {name}")

    def stop(self, timeout: float = 30) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # EOF: the helper destroys the cluster and exits
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def __enter__(self) -> MockCluster:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class Profiler:
    """``py-spy record`` of one process while a ``with`` block runs (collapsed stacks).

    The output is py-spy's ``raw`` format (one ``frame;frame;... count`` line per stack,
    per thread, idle samples included), which ``bench/profile_top.py`` summarizes and
    flamegraph tools draw. ``--nonblocking`` keeps py-spy from pausing the broker. A missing py-spy
    (``pip install py-spy``) is reported once and the block runs unprofiled.
    """

    def __init__(self, pid: int, out: Path, rate: int = 200) -> None:
        self.pid = pid
        self.out = out
        self.rate = rate
        self.proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def executable() -> str | None:
        here = Path(sys.executable).parent / "py-spy"
        return str(here) if here.exists() else shutil.which("py-spy")

    def __enter__(self) -> Profiler:
        exe = self.executable()
        if exe is None:
            log("py-spy not found (pip install py-spy): running without a profile")
            return self
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                exe,
                "record",
                "--pid",
                str(self.pid),
                "--rate",
                str(self.rate),
                "--format",
                "raw",
                "--nonblocking",
                "--threads",
                "--idle",
                "-o",
                str(self.out),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.3)  # let it attach
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def watermarks(consumer: Any, tp: Any, timeout: float = 60) -> tuple[int, int]:
    """A partition's (low, high) watermarks from its leader (``Consumer.get_watermark_offsets``),
    asked again on a retriable error: after a leadership move, a new leader whose high
    watermark has not caught up yet answers OFFSET_NOT_AVAILABLE (KIP-207), and librdkafka
    hands that to the application rather than retrying."""
    from confluent_kafka import KafkaError, KafkaException

    deadline = time.perf_counter() + timeout
    while True:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=min(10.0, timeout))
            return int(low), int(high)
        except KafkaException as exc:
            error = exc.args[0]
            again = error.retriable() or error.code() == KafkaError.OFFSET_NOT_AVAILABLE
            if not again or time.perf_counter() > deadline:
                raise
            time.sleep(0.2)  # librdkafka refreshes its metadata meanwhile
