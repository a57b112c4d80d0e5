"""TRIO_BROKER_* variables become Kafka property overrides, as Kafka's images map them."""

from __future__ import annotations

import pytest

from trio_broker.server.config.broker_config import load_config
from trio_broker.server.config.env import env_key_to_property, overrides_from_env


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NUM_IO_THREADS", "num.io.threads"),
        ("ADMIN_TOKEN", "admin.token"),
        ("LOG_DIRS", "log.dirs"),
        ("MAX_CONNECTIONS_PER_IP_OVERRIDES", "max.connections.per.ip.overrides"),
        ("SOME__UNDER_SCORE", "some_under.score"),
        ("A___DASH", "a-dash"),
    ],
)
def test_names_map_to_keys(name: str, key: str) -> None:
    assert env_key_to_property(name) == key


def test_only_prefixed_variables_count_and_the_config_accepts_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {
        "TRIO_BROKER_NUM_IO_THREADS": "16",
        "TRIO_BROKER_ADMIN_TOKEN": "s3cret",
        "TRIO_BROKER_LOG_DIRS": str(tmp_path),
        "PATH": "/usr/bin",
        "TRIO_BROKER_": "ignored: no key",
    }
    overrides = overrides_from_env(env)
    assert overrides == [
        "admin.token=s3cret",
        f"log.dirs={tmp_path}",
        "num.io.threads=16",
    ]
    cfg = load_config(None, overrides)
    assert cfg["num.io.threads"] == 16
    assert cfg["admin.token"].value == "s3cret"
    assert cfg.effective()["admin.token"] == "[hidden]"


def test_an_unknown_variable_is_refused_by_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from trio_broker.server.config.broker_config import ConfigError

    with pytest.raises(ConfigError, match=r"num\.io\.thread"):
        load_config(None, overrides_from_env({"TRIO_BROKER_NUM_IO_THREAD": "4"}))
