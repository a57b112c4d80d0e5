"""docs/operations.md's TLS/SASL example, run as written: its properties block added to the
shipped config/server.properties, the broker started on it (as ``scripts/start`` does, the
ports moved to 0), and its shell commands (curl and kcat) run against that broker. SASL_SSL
works without a client certificate although ``ssl.client.auth=required``; SSL needs one;
the admin API shows the example's listener setting."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme

from trio_broker.server.config.broker_config import BrokerConfig
from trio_broker.server.config.properties import parse_properties
from trio_broker.server.config.syntax import parse_admin_listener, parse_listener

from ..support.brokers import BrokerProcess
from .clients import first_error

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "operations.md"
SHIPPED = ROOT / "config" / "server.properties"
HEADING = "### Trying it: SSL and SASL_SSL beside the shipped listeners"
# librdkafka's _TRANSPORT, _SSL and _ALL_BROKERS_DOWN: the client cannot connect
CANNOT_CONNECT = (-195, -181, -187)


@dataclass(frozen=True)
class Example:
    properties: str  # the lines the doc adds to config/server.properties
    script: str  # the doc's shell commands

    @property
    def config_text(self) -> str:
        return SHIPPED.read_text() + "\n" + self.properties


def doc_example() -> Example:
    text = DOC.read_text()
    section = text[text.index(HEADING) :]
    following = re.search(r"^##+ ", section[len(HEADING) :], re.M)  # the next heading
    assert following is not None
    section = section[: len(HEADING) + following.start()]
    properties = re.findall(r"```properties\n(.*?)```", section, re.S)
    scripts = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert len(properties) == 1 and len(scripts) == 1, "the example's blocks moved"
    return Example(properties[0], scripts[0])


def test_the_example_is_consistent_with_the_shipped_config_as_written() -> None:
    example = doc_example()
    config = BrokerConfig(parse_properties(example.config_text))  # no ConfigError
    names = {lis.name: lis for lis in config.listeners}
    assert set(names) == {"PLAINTEXT", "CONTROLLER", "SSL", "SASL_SSL"}
    assert config.control_plane_listener_name == "CONTROLLER"
    ports = [lis.port for lis in config.listeners] + [p for _, p in config.admin_endpoints]
    assert len(set(ports)) == len(ports), f"ports clash: {ports}"
    assert config.listener_security_settings("SSL")["ssl.client.auth"] == "required"
    assert config.listener_security_settings("SASL_SSL")["ssl.client.auth"] == "none"
    # the commands talk to the example's own listeners
    used = {int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", example.script)}
    assert used and used <= set(ports)


@dataclass(frozen=True)
class Running:
    broker: BrokerProcess
    home: Path  # the broker's working directory, laid out like a checkout
    addresses: dict[int, str]  # the doc's port -> where that listener really is


@pytest.fixture(scope="module")
def doc_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    example = doc_example()
    home = tmp_path_factory.mktemp("checkout")
    tls = home / "config" / "tls"
    tls.mkdir(parents=True)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tls / "ca.pem"))
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(tls / "broker.pem"))
    alice = ca.issue_cert(common_name="alice")
    alice.private_key_pem.write_to_path(str(tls / "alice.key"))
    alice.cert_chain_pems[0].write_to_path(str(tls / "alice.pem"))
    config_file = home / "config" / "server.properties"
    config_file.write_text(example.config_text)

    # The file as the doc has it; only the ports move to 0 (the suite runs anywhere).
    settings = parse_properties(example.config_text)
    doc_listeners = [parse_listener(t) for t in settings["listeners"].split(",")]
    _, admin_port = parse_admin_listener(settings["admin.listeners"])
    zero = [
        "listeners=" + ",".join(f"{name}://{host}:0" for name, host, _ in doc_listeners),
        "admin.listeners=http://127.0.0.1:0",
    ]
    broker = BrokerProcess(
        home / settings["log.dirs"], zero, config_file=config_file, cwd=home
    ).start()
    addresses = {port: broker.listeners[name] for name, _, port in doc_listeners}
    assert broker.admin_url is not None
    addresses[admin_port] = broker.admin_url.removeprefix("http://").rstrip("/")
    yield Running(broker, home, addresses)
    assert broker.terminate() == 0


def test_the_docs_commands_round_trip_over_sasl_ssl_and_ssl(doc_broker: Running) -> None:
    script = doc_example().script
    for port, address in doc_broker.addresses.items():
        script = script.replace(f"127.0.0.1:{port}", address)
    out = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=doc_broker.home,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    # the last command consumes over SASL_SSL what both listeners produced
    assert out.stdout.endswith("over SASL_SSL\nover SSL\n"), out.stdout


def test_the_ssl_listener_refuses_a_client_without_a_certificate(doc_broker: Running) -> None:
    conf = {
        "bootstrap.servers": doc_broker.broker.listeners["SSL"],
        "security.protocol": "SSL",
        "ssl.ca.location": str(doc_broker.home / "config" / "tls" / "ca.pem"),
    }
    assert first_error(conf).code() in CANNOT_CONNECT


def test_the_broker_says_the_broker_wide_client_auth_skips_sasl_ssl(doc_broker: Running) -> None:
    lines = [line for line in doc_broker.broker.log if "does not apply to SASL_SSL" in line]
    assert len(lines) == 1
    assert "listener.name.sasl_ssl.ssl.client.auth" in lines[0]


def test_the_admin_api_shows_the_listener_setting_and_where_it_came_from(
    doc_broker: Running,
) -> None:
    assert doc_broker.broker.admin_url is not None
    url = doc_broker.broker.admin_url.rstrip("/") + "/v1/config"
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    key = "listener.name.sasl_ssl.sasl.enabled.mechanisms"
    assert body["config"][key] == "SCRAM-SHA-512"
    assert body["sources"][key] == "file"
