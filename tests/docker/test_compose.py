"""compose.yaml fits together, checked as data (with the defaults of its ${VAR:-default}
host ports). tests/docker/test_compose_up.py brings it up with podman-compose."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from trio_broker.server.config import load_config
from trio_broker.server.env_config import overrides_from_env

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    """compose.yaml as Compose reads it when no variable is set: each default taken."""
    text = (ROOT / "compose.yaml").read_text()
    return yaml.safe_load(re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", text))


def test_host_ports_default_to_kafkas_and_are_published_on_loopback_only() -> None:
    assert compose()["services"]["broker"]["ports"] == [
        "127.0.0.1:9092:9092",
        "127.0.0.1:9644:9644",
    ]


def test_services_use_the_dockerfiles_targets() -> None:
    stages = set(re.findall(r"^FROM \S+ AS (\S+)$", (ROOT / "Dockerfile").read_text(), re.M))
    services = compose()["services"]
    assert set(services) == {"broker", "scraper", "trends"}
    for name in ("broker", "scraper", "trends"):
        assert services[name]["build"]["target"] in stages


def test_the_brokers_environment_is_a_valid_config() -> None:
    env = compose()["services"]["broker"]["environment"]
    overrides = [*overrides_from_env(env), "log.dirs=/tmp/unused"]
    cfg = load_config(ROOT / "docker" / "server.properties", overrides)
    assert {lc.name for lc in cfg.listeners} == {"PLAINTEXT", "INTERNAL", "CONTROLLER"}
    assert {(a.name, a.host, a.port) for a in cfg.advertised_listeners} == {
        ("PLAINTEXT", "localhost", 9092),
        ("INTERNAL", "broker", 29092),
    }


def test_the_dashboard_reads_where_the_trends_job_writes() -> None:
    services = compose()["services"]
    broker_env = services["broker"]["environment"]
    dashboard_dir = broker_env["TRIO_BROKER_DASHBOARD_DATA_DIR"]
    trends_cmd = " ".join(services["trends"]["command"])
    assert f"--out {dashboard_dir}" in trends_cmd
    mounts = {m.split(":")[1]: m.split(":")[0] for m in services["broker"]["volumes"]}
    trend_mounts = {m.split(":")[1]: m.split(":")[0] for m in services["trends"]["volumes"]}
    assert mounts[dashboard_dir] == trend_mounts[dashboard_dir]  # the same volume
    scraper_out = services["scraper"]["command"][services["scraper"]["command"].index("--out") + 1]
    assert f"--in {scraper_out}" in trends_cmd
