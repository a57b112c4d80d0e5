"""``trio-broker-cluster start N`` (what ``scripts/cluster`` runs): one ZooKeeper and N
brokers that form one cluster, their addresses printed, all stopped by one signal."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from .test_zookeeper_cluster import until

ROOT = Path(__file__).resolve().parents[2]


def test_three_brokers_start_form_a_cluster_and_stop_together(tmp_path: Path) -> None:
    tool = subprocess.Popen(
        [sys.executable, "-m", "trio_broker.tools.cluster", "start", "3", "--dir", str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert tool.stdout is not None
    lines = []
    try:
        for line in tool.stdout:  # it prints bootstrap.servers once all have started
            lines.append(line)
            if line.startswith("bootstrap.servers="):
                break
        else:
            raise AssertionError("".join(lines))
        bootstrap = lines[-1].strip().split("=", 1)[1]
        assert len(bootstrap.split(",")) == 3
        assert [ln.split(":")[0] for ln in lines if ln.startswith("broker ")] == [
            "broker 0",
            "broker 1",
            "broker 2",
        ]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        until(
            "all three in Metadata",
            lambda: sorted(admin.list_topics(timeout=10).brokers) == [0, 1, 2],
        )
        admin.create_topics([NewTopic("spread", 3, 1)])["spread"].result(30)

        def leaders() -> set[int]:
            parts = admin.list_topics("spread", timeout=10).topics["spread"].partitions
            return {p.leader for p in parts.values()}

        until("one partition led by each broker", lambda: leaders() == {0, 1, 2})

        # trio-broker-controller, a thin client of the cluster's own Kafka APIs.
        def ctl(*args: str) -> subprocess.CompletedProcess[str]:
            listeners = str(tmp_path / "broker0" / "listeners.json")
            command = [sys.executable, "-m", "trio_broker.tools.controller"]
            return subprocess.run(
                [*command, "--cluster", listeners, *args],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=60,
            )

        def replicas() -> list[int]:
            parts = admin.list_topics("spread", timeout=10).topics["spread"].partitions
            return list(parts[0].replicas)

        (first,) = replicas()
        target = (first + 1) % 3
        moved = ctl("reassign", "spread", "0", "--to", str(target))
        assert moved.returncode == 0 and moved.stdout.strip() == "spread-0: ok", moved
        until("partition 0 moved", lambda: replicas() == [target])
        assert ctl("reassignments").stdout.strip() == "{}"
        elected = ctl("elect", "spread:0")
        assert elected.returncode == 0, elected
        assert '"spread-0": "ELECTION_NOT_NEEDED"' in elected.stdout
        refused = ctl("reassign", "spread", "0", "--to", "7")
        # (the controller's message names the broker that does not exist)
        assert refused.stdout.startswith("spread-0: ") and "7" in refused.stdout, refused
        assert replicas() == [target]
    finally:
        tool.send_signal(signal.SIGTERM)
        rest, _ = tool.communicate(timeout=120)
    assert tool.returncode == 0, rest
    assert rest.strip().endswith("stopped")
    for i in range(3):  # the data dirs stay: the same command starts the same cluster
        assert (tmp_path / f"broker{i}" / "meta.properties").exists()
