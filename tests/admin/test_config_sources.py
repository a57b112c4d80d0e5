"""One configuration story: ``TRIO_BROKER_*`` variables apply wherever the broker starts
(file < environment < ``--override``), and ``GET /v1/config`` says where each key came from.
The broker runs as a user starts it (``python -m trio_broker``)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ..support.brokers import BrokerProcess

TOKEN = "s3cret"
ADMIN_PORT_ZERO = "admin.listeners=http://127.0.0.1:0"


@pytest.mark.parametrize("extra_args", [[], ["--from-env"]], ids=["plain", "from-env-no-op"])
def test_the_admin_token_from_the_environment_protects_the_admin_api(
    tmp_path: Path, extra_args: list[str]
) -> None:
    config = tmp_path / "server.properties"
    config.write_text("num.io.threads=2\nqueued.max.requests=50\n", encoding="utf-8")
    data = tmp_path / "data"
    proc = BrokerProcess(
        data,
        [f"log.dirs={data}", ADMIN_PORT_ZERO, "num.io.threads=5"],
        config_file=config,
        env={
            "TRIO_BROKER_ADMIN_TOKEN": TOKEN,
            "TRIO_BROKER_NUM_IO_THREADS": "3",
            "TRIO_BROKER_QUEUED_MAX_REQUESTS": "60",
        },
        extra_args=extra_args,
    ).start()
    try:
        assert proc.admin_url is not None
        with httpx.Client(base_url=proc.admin_url, timeout=10) as http:
            assert http.get("/v1/config").status_code == 401
            assert http.get("/v1/broker").status_code == 401
            auth = {"Authorization": f"Bearer {TOKEN}"}
            assert http.get("/v1/broker", headers=auth).status_code == 200
            body = http.get("/v1/config", headers=auth).json()
        config_values, sources = body["config"], body["sources"]
        assert config_values["admin.token"] == "[hidden]"
        assert sources["admin.token"] == "env"
        assert (config_values["num.io.threads"], sources["num.io.threads"]) == ("5", "override")
        assert (config_values["queued.max.requests"], sources["queued.max.requests"]) == (
            "60",
            "env",
        )
        assert sources["log.dirs"] == "override"
        assert sources["message.max.bytes"] == "default"
        assert set(sources) == set(config_values)
    finally:
        assert proc.terminate() == 0


def test_a_file_setting_without_a_variable_is_from_the_file(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("num.io.threads=2\n", encoding="utf-8")
    data = tmp_path / "data"
    proc = BrokerProcess(data, [f"log.dirs={data}", ADMIN_PORT_ZERO], config_file=config).start()
    try:
        assert proc.admin_url is not None
        with httpx.Client(base_url=proc.admin_url, timeout=10) as http:
            body = http.get("/v1/config").json()  # no token: the API is open, as configured
        assert (body["config"]["num.io.threads"], body["sources"]["num.io.threads"]) == (
            "2",
            "file",
        )
        assert body["sources"]["admin.token"] == "default"
    finally:
        assert proc.terminate() == 0
