"""compose.yaml brought up and down with podman-compose, on the images the image tests
built: the broker answers a Kafka client on the published port, the scraper writes the
broker's metrics into its volume, and `down` leaves no container or volume behind.

Run by ``scripts/image-test`` (marked ``image``: the plain suite deselects them)."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from .engine import ROOT, free_port, run, unique_name, wait_ready

pytestmark = pytest.mark.image

SERVICES = ("broker", "scraper", "trends")


def compose(project: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run(
        ["podman-compose", "--project-name", project, "--file", str(ROOT / "compose.yaml"), *args],
        env=env,
        timeout=300,
    )


def containers(project: str) -> dict[str, str]:
    """The project's containers: name -> status ("Up 5 seconds ago", "Exited (1) ...")."""
    out = run(
        [
            "podman", "ps", "--all",
            "--filter", f"label=io.podman.compose.project={project}",
            "--format", "{{.Names}} {{.State}}",
        ]
    ).stdout  # fmt: skip
    return dict(line.split(None, 1) for line in out.splitlines() if line.strip())


def first_snapshot(container: str, timeout: float = 90) -> str:
    """The scraper's first JSON Lines file (it polls every 10 s, retrying while the broker
    starts: compose's `service_healthy` is not waited on by podman-compose)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = run(
            [
                "podman",
                "exec",
                container,
                "find",
                "/var/lib/trio-broker/metrics",
                "-name",
                "*.jsonl",
            ]
        ).stdout.split()
        if found:
            return found[0]
        time.sleep(1)
    raise AssertionError(f"the scraper wrote nothing in {timeout} s")


def test_compose_up_serves_clients_scrapes_and_down_removes_everything(
    images: dict[str, str],
) -> None:
    project = unique_name("trio-broker-compose")
    kafka_port, admin_port = free_port(), free_port()
    env = {"KAFKA_PORT": str(kafka_port), "ADMIN_PORT": str(admin_port)}
    volumes: set[str] = set()
    try:
        # Named: Debian's podman-compose (1.0.3) predates profiles and would start the
        # "cluster" profile's services too.
        compose(project, env, "up", "--detach", "--no-build", *SERVICES)
        names = containers(project)
        for name in names:
            mounts = run(
                ["podman", "inspect", "--format", "{{range .Mounts}}{{.Name}} {{end}}", name]
            )
            volumes.update(mounts.stdout.split())
        assert {n.split("_")[-2] for n in names} == set(SERVICES), names
        wait_ready(f"http://127.0.0.1:{admin_port}")

        kafka = f"localhost:{kafka_port}"  # as advertised
        subprocess.run(
            ["kcat", "-P", "-b", kafka, "-t", "composed"],
            input="one\ntwo\n",
            text=True,
            check=True,
            timeout=30,
        )
        got = subprocess.run(
            ["kcat", "-C", "-b", kafka, "-t", "composed", "-o", "beginning", "-e", "-q"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        assert got.stdout.splitlines() == ["one", "two"]

        scraper = next(n for n in names if n.split("_")[-2] == "scraper")
        line = run(["podman", "exec", scraper, "head", "-n1", first_snapshot(scraper)]).stdout
        assert json.loads(line)["broker_id"] == 0
        status = containers(project)
        assert all(s.startswith("Up ") for s in status.values()), status

        compose(project, env, "down", "--volumes")
        assert containers(project) == {}
        named = {v for v in volumes if v.startswith(project)}  # broker-data, metrics, trends
        assert len(named) == 3, volumes
        left = set(run(["podman", "volume", "ls", "--format", "{{.Name}}"]).stdout.split())
        assert not named & left, named & left
    finally:
        if containers(project):
            compose(project, env, "down", "--volumes")
        # podman-compose's `down -v` leaves the images' anonymous volumes, and its network.
        for volume in volumes:
            run(["podman", "volume", "rm", "--force", volume], check=False)
        run(["podman", "network", "rm", "--force", f"{project}_default"], check=False)
