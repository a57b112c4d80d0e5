"""The images as users meet them: both Dockerfile targets built with buildah, the broker
image run with podman, its ports published on 127.0.0.1, configured by TRIO_BROKER_*
variables; a Kafka client through the published port; the healthcheck; a clean stop; and
the spark-jobs image scraping that broker and running the trends job on what it scraped.

Run by ``scripts/image-test`` (marked ``image``: the plain suite deselects them)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from .engine import SPARK_IMAGE, RunningBroker, broker_container, run, wait_ready

pytestmark = pytest.mark.image

TOKEN = "image-test-token"
BROKER_ENV = {"TRIO_BROKER_NUM_IO_THREADS": "3", "TRIO_BROKER_ADMIN_TOKEN": TOKEN}
BROKER_UID = 10001


@pytest.fixture(scope="module")
def broker(images: dict[str, str]) -> Iterator[RunningBroker]:
    with broker_container(BROKER_ENV) as b:
        yield b


def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def test_the_broker_image_is_ready_on_its_published_admin_port(broker: RunningBroker) -> None:
    r = httpx.get(f"{broker.admin}/v1/status/ready", timeout=5)
    assert (r.status_code, r.json()) == (200, {"ready": True})


def test_kcat_produces_and_consumes_through_the_published_port(broker: RunningBroker) -> None:
    values = [f"message {i}" for i in range(20)]
    subprocess.run(
        ["kcat", "-P", "-b", broker.kafka, "-t", "boxed"],
        input="\n".join(values) + "\n",
        text=True,
        check=True,
        timeout=30,
    )
    got = subprocess.run(
        ["kcat", "-C", "-b", broker.kafka, "-t", "boxed", "-o", "beginning", "-e", "-q"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert got.stdout.splitlines() == values


def test_trio_broker_variables_are_the_brokers_config(broker: RunningBroker) -> None:
    assert httpx.get(f"{broker.admin}/v1/config", timeout=5).status_code == 401  # the token
    r = httpx.get(f"{broker.admin}/v1/config", headers=auth(), timeout=5)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["config"]["num.io.threads"] == "3"
    assert body["sources"]["num.io.threads"] == "env"
    assert body["sources"]["admin.token"] == "env"
    assert body["sources"]["log.dirs"] == "file"  # docker/server.properties


def test_the_broker_runs_as_a_non_root_user(broker: RunningBroker) -> None:
    top = run(["podman", "top", broker.container.name, "user", "args"]).stdout.splitlines()[1:]
    procs = [line.split(None, 1) for line in top]
    assert any("bin/trio-broker" in args for _, args in procs), procs
    assert {user for user, _ in procs} == {"broker"}, procs  # tini and the broker
    assert broker.container.exec("id", "-u").strip() == str(BROKER_UID)


def test_the_healthcheck_says_healthy(broker: RunningBroker) -> None:
    # No systemd runs the checks here: run the image's HEALTHCHECK command once, as the
    # timer would.
    done = run(["podman", "healthcheck", "run", broker.container.name], check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert broker.container.inspect("{{.State.Health.Status}}") == "healthy"


def test_podman_stop_ends_the_broker_cleanly_and_it_restarts_without_recovery(
    images: dict[str, str],
) -> None:
    with broker_container() as b:
        subprocess.run(
            ["kcat", "-P", "-b", b.kafka, "-t", "kept"], input="kept\n", text=True, check=True
        )
        run(["podman", "stop", "--time", "30", b.container.name], timeout=60)
        assert b.container.inspect("{{.State.ExitCode}}") == "0", b.container.logs()
        assert "stopped" in b.container.logs().splitlines()[-1]
        run(["podman", "start", b.container.name])
        wait_ready(b.admin)
        after_restart = b.container.logs()
        assert "recovering" not in after_restart
        got = subprocess.run(
            ["kcat", "-C", "-b", b.kafka, "-t", "kept", "-o", "beginning", "-e", "-q"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        assert got.stdout.splitlines() == ["kept"]


def test_the_spark_image_scrapes_the_broker_and_runs_the_trends_job(
    broker: RunningBroker, tmp_path: Path
) -> None:
    scraped, out = tmp_path / "scraped", tmp_path / "out"
    for d in (scraped, out):
        d.mkdir()
        os.chown(d, 10001, 10001)  # the image's user writes there
    scrape = run(
        [
            "podman", "run", "--rm", "--network", "host",
            "--env", f"TRIO_BROKER_ADMIN_TOKEN={TOKEN}",
            "--volume", f"{scraped}:/scraped",
            SPARK_IMAGE,
            "python", "-m", "spark_jobs.scrape", "--admin", broker.admin,
            "--out", "/scraped", "--interval", "1", "--count", "3",
        ],
        timeout=120,
    )  # fmt: skip
    assert "broker 0, 3 snapshot(s), 0 failed attempt(s)" in scrape.stderr, scrape.stderr
    trends = run(
        [
            "podman", "run", "--rm", "--network", "none",
            "--volume", f"{scraped}:/in:ro", "--volume", f"{out}:/out",
            SPARK_IMAGE,
            "python", "-m", "spark_jobs.trends", "--in", "/in", "--out", "/out",
            "--bucket-seconds", "1",
        ],
        timeout=300,
    )  # fmt: skip
    assert "3 snapshots from 1 broker(s)" in trends.stdout, trends.stdout + trends.stderr
    pools = pq.read_table(out / "pools").to_pylist()
    assert {row["broker_id"] for row in pools} == {0}
    dashboard = json.loads((out / "dashboard.json").read_text())
    assert [b["broker_id"] for b in dashboard["brokers"]] == [0]
    assert dashboard["brokers"][0]["charts"], "no chart for the broker"


def test_the_spark_image_runs_java_17(images: dict[str, str]) -> None:
    done = run(["podman", "run", "--rm", SPARK_IMAGE, "java", "-version"], timeout=60)
    assert 'version "17.' in done.stderr, done.stderr
