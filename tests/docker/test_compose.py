"""compose.yaml fits together, checked as data (with the defaults of its ${VAR:-default}
host ports), its "cluster" profile included (ZooKeeper and three brokers): no container
engine needed. tests/docker/test_compose_up.py brings the default services up with
podman-compose."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from trio_broker.server.config.broker_config import BrokerConfig, load_config
from trio_broker.server.config.env import overrides_from_env

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    """compose.yaml as Compose reads it when no variable is set: each default taken."""
    text = (ROOT / "compose.yaml").read_text()
    return yaml.safe_load(re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", text))


def test_host_ports_default_to_kafkas_and_are_published_on_loopback_only() -> None:
    assert compose()["services"]["broker"]["ports"] == [
        "127.0.0.1:9092:9092",
        "127.0.0.1:9644:9644",
    ]


CLUSTER = ("broker-0", "broker-1", "broker-2")


def test_services_use_the_dockerfiles_targets() -> None:
    stages = set(re.findall(r"^FROM \S+ AS (\S+)$", (ROOT / "Dockerfile").read_text(), re.M))
    services = compose()["services"]
    assert set(services) == {"broker", "scraper", "trends", "zookeeper", *CLUSTER}
    for name, service in services.items():
        assert service["build"]["target"] in stages, name
    # Plain `compose up` starts the single broker and its pipeline; the cluster is opt-in.
    assert {n for n, s in services.items() if "profiles" not in s} == {
        "broker",
        "scraper",
        "trends",
    }
    assert all(services[n]["profiles"] == ["cluster"] for n in ("zookeeper", *CLUSTER))


def cluster_config(name: str) -> BrokerConfig:
    env = compose()["services"][name]["environment"]
    overrides = [*overrides_from_env(env), "log.dirs=/tmp/unused"]
    return load_config(ROOT / "docker" / "server.properties", overrides)


def test_the_cluster_brokers_are_three_of_one_zookeeper() -> None:
    services = compose()["services"]
    configs = {name: cluster_config(name) for name in CLUSTER}
    assert sorted(c["broker.id"] for c in configs.values()) == [0, 1, 2]
    # ZooKeeper where the zookeeper service listens (the Dockerfile's zookeeper CMD).
    dockerfile = (ROOT / "Dockerfile").read_text()
    zk_cmd = dockerfile.split("FROM base AS zookeeper", 1)[1].split("\nFROM ", 1)[0]
    assert '.ZooKeeperServerMain", "2181", "/var/lib/zookeeper/data"' in zk_cmd
    assert {c["zookeeper.connect"] for c in configs.values()} == {"zookeeper:2181"}
    for name in CLUSTER:
        depends = services[name]["depends_on"]["zookeeper"]
        assert depends == {"condition": "service_healthy"}
    mounts = services["zookeeper"]["volumes"][0].split(":")
    assert mounts[1] in zk_cmd and mounts[0] in compose()["volumes"]


def test_each_cluster_broker_is_reachable_inside_the_network_and_from_the_host() -> None:
    services = compose()["services"]
    published: list[str] = []
    for name in CLUSTER:
        cfg, service = cluster_config(name), services[name]
        # Inside: PLAINTEXT (the listener followers fetch from) at the service's name; the
        # CONTROLLER listener is registered under the hostname, which is that name too.
        assert service["hostname"] == name
        assert cfg.control_plane_listener_name == "CONTROLLER"
        advertised = {a.name: (a.host, a.port) for a in cfg.advertised_listeners}
        bound = {lc.name: lc.port for lc in cfg.listeners}
        assert advertised["PLAINTEXT"] == (name, bound["PLAINTEXT"])
        # The host: EXTERNAL advertised as localhost at the port published on loopback.
        kafka, admin = service["ports"]
        host_ip, host_port, container_port = kafka.split(":")
        assert host_ip == "127.0.0.1" and int(container_port) == bound["EXTERNAL"]
        assert advertised["EXTERNAL"] == ("localhost", int(host_port))
        assert admin.startswith("127.0.0.1:") and admin.endswith(":9644")
        published += [kafka.split(":")[1], admin.split(":")[1]]
    single = [p.split(":")[1] for p in services["broker"]["ports"]]
    assert len(set(published + single)) == len(published + single)  # all up at once


def test_each_cluster_broker_has_a_volume_of_its_own() -> None:
    services, declared = compose()["services"], compose()["volumes"]
    data = [services[n]["volumes"][0].split(":") for n in CLUSTER]
    assert all(target == "/var/lib/trio-broker/data" for _, target in data)
    assert len({source for source, _ in data}) == 3
    assert all(source in declared for source, _ in data)


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
