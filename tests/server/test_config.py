"""Broker and topic configuration: the properties format, types, precedence, cross-key
checks, masking, run-time updates, topic configs and the shipped server.properties."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trio_broker.server.config.broker_config import (
    BROKER_CONFIG_DEF,
    DYNAMIC_KEYS,
    ORIGINS,
    BrokerConfig,
    ConfigError,
    ListenerConfig,
    SecurityProtocol,
    load_config,
    parse_listener,
)
from trio_broker.server.config.configdef import (
    Check,
    ConfigKey,
    ConfigSource,
    ConfigType,
    Password,
    Range,
    render,
)
from trio_broker.server.config.properties import parse_properties
from trio_broker.server.config.topic_config import (
    TOPIC_BROKER_KEYS,
    TOPIC_CONFIG_DEF,
    effective_topic_config,
    validate_topic_configs,
)

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "config" / "server.properties"


def error_of(settings: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        BrokerConfig(settings)
    return info.value


# ----------------------------------------------------------------------- properties format

PROPERTIES_CASES = [
    ("a=b", {"a": "b"}),
    ("a = b", {"a": "b"}),
    ("a:b", {"a": "b"}),
    ("a : b", {"a": "b"}),
    ("a b", {"a": "b"}),
    ("a\t\tb", {"a": "b"}),
    ("   a=b", {"a": "b"}),
    ("\f a=b", {"a": "b"}),
    ("a=b  ", {"a": "b  "}),
    ("a", {"a": ""}),
    ("a=", {"a": ""}),
    ("a=b=c", {"a": "b=c"}),
    ("a==b", {"a": "=b"}),
    ("a = : b", {"a": ": b"}),
    ("a b=c", {"a": "b=c"}),
    ("# comment\n! also a comment\n\n   \n  # indented comment", {}),
    ("a=b # not a comment", {"a": "b # not a comment"}),
    ("a=b\\\n   c", {"a": "bc"}),
    ("a=b\\\n  c\\\n\td", {"a": "bcd"}),
    ("a=b, \\\n    c", {"a": "b, c"}),
    ("a=b\\\\", {"a": "b\\"}),
    ("a=b\\\\\nc=d", {"a": "b\\", "c": "d"}),
    ("a=b\\\\\\\nc", {"a": "b\\c"}),
    ("# comment ends in backslash \\\na=b", {"a": "b"}),
    ("a=b\\\n# continued, not a comment", {"a": "b# continued, not a comment"}),
    ("a=b\\\n\nc=d", {"a": "b", "c": "d"}),
    ("a=b\\", {"a": "b"}),
    ("key\\ with\\ spaces=v", {"key with spaces": "v"}),
    ("k\\:x=v", {"k:x": "v"}),
    ("k\\=x=v", {"k=x": "v"}),
    ("a=\\t\\n\\r\\f", {"a": "\t\n\r\f"}),
    ("a=\\q\\ \\#", {"a": "q #"}),
    ("a=\\u00e9t\\u00C9", {"a": "étÉ"}),
    ("a=\\uD83D\\uDE00", {"a": "\U0001f600"}),
    ("a=héllo", {"a": "héllo"}),
    ("a=1\r\nb=2\rc=3\n", {"a": "1", "b": "2", "c": "3"}),
    ("a=1\na=2", {"a": "2"}),
    ("", {}),
]


@pytest.mark.parametrize(("text", "expected"), PROPERTIES_CASES)
def test_parse_properties(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


@pytest.mark.parametrize("text", ["a=\\u12", "a=\\u12zz", "x=1\nb=\\uXYZW"])
def test_parse_properties_malformed_unicode_escape(text: str) -> None:
    with pytest.raises(ConfigError, match=r"f\.properties, line \d+: malformed \\uXXXX"):
        parse_properties(text, "f.properties")


def test_parse_properties_keeps_file_order() -> None:
    assert list(parse_properties("b=1\na=2\nc=3")) == ["b", "a", "c"]


# ----------------------------------------------------------------------- types and values

BAD_VALUES = [
    # (key, value, the exact message)
    ("num.io.threads", "zero", "num.io.threads=zero: expected an integer between 1 and 256"),
    ("num.io.threads", "0", "num.io.threads=0: expected an integer between 1 and 256"),
    ("num.io.threads", "1.5", "num.io.threads=1.5: expected an integer between 1 and 256"),
    ("num.io.threads", "1_000", "num.io.threads=1_000: expected an integer between 1 and 256"),
    ("num.io.threads", "0x10", "num.io.threads=0x10: expected an integer between 1 and 256"),
    (
        "num.io.threads",
        "2147483648",
        "num.io.threads=2147483648: expected an integer between 1 and 256 "
        "(out of range: -2147483648 to 2147483647)",
    ),
    ("log.retention.bytes", "lots", "log.retention.bytes=lots: expected an integer >= -1"),
    (
        "zookeeper.connect",
        "zk1:2181,zk2",
        "zookeeper.connect=zk1:2181,zk2: 'zk2' is not host:port",
    ),
    (
        "zookeeper.connect",
        "zk1:2181/kafka/",
        "zookeeper.connect=zk1:2181/kafka/: '/kafka/' is not a ZooKeeper path (e.g. /kafka)",
    ),
    (
        "request.read.timeout.ms",
        "-1",
        "request.read.timeout.ms=-1: expected an integer >= 0",
    ),
    (
        "log.retention.bytes",
        "9223372036854775808",
        "log.retention.bytes=9223372036854775808: expected an integer >= -1 "
        "(out of range: -9223372036854775808 to 9223372036854775807)",
    ),
    (
        "socket.send.buffer.bytes",
        "-2",
        "socket.send.buffer.bytes=-2: expected -1 or an integer >= 1",
    ),
    (
        "default.replication.factor",
        "40000",
        "default.replication.factor=40000: expected an integer between 1 and 32767",
    ),
    ("log.retention.ms", "0", "log.retention.ms=0: expected -1 or an integer >= 1"),
    ("log.retention.hours", "0", "log.retention.hours=0: expected -1 or an integer >= 1"),
    (
        "auto.create.topics.enable",
        "yes",
        "auto.create.topics.enable=yes: expected true or false",
    ),
    ("metrics.enabled", "1", "metrics.enabled=1: expected true or false"),
    (
        "log.dirs",
        "a,,b",
        "log.dirs=a,,b: expected a comma-separated list of directories (empty item)",
    ),
    ("log.dirs", "a,b,a", "log.dirs=a,b,a: log directory listed more than once: a"),
    (
        "log.message.timestamp.type",
        "Create",
        "log.message.timestamp.type=Create: expected one of CreateTime, LogAppendTime",
    ),
    (
        "ssl.client.auth",
        "maybe",
        "ssl.client.auth=maybe: expected one of required, requested, none",
    ),
    (
        "log.cleanup.policy",
        "delete,shred",
        "log.cleanup.policy=delete,shred: expected a non-empty comma-separated list of delete, "
        "compact",
    ),
    (
        "log.cleaner.min.cleanable.ratio",
        "1.5",
        "log.cleaner.min.cleanable.ratio=1.5: expected a number between 0 and 1",
    ),
    (
        "compression.type",
        "brotli",
        "compression.type=brotli: expected one of producer, uncompressed, gzip, snappy, lz4, zstd",
    ),
    (
        "ssl.keystore.type",
        "JKS",
        "ssl.keystore.type=JKS: JKS stores are not supported; convert them to PEM",
    ),
    (
        "sasl.enabled.mechanisms",
        "PLAIN,KERBEROS",
        "sasl.enabled.mechanisms=PLAIN,KERBEROS: expected a comma-separated list of "
        "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI",
    ),
    (
        "listeners",
        "PLAINTEXT://host:99999",
        "listeners=PLAINTEXT://host:99999: 'PLAINTEXT://host:99999': "
        "port 99999 is not between 0 and 65535",
    ),
    (
        "admin.listeners",
        "https://127.0.0.1:9644",
        "admin.listeners=https://127.0.0.1:9644: 'https://127.0.0.1:9644' is not "
        "http://host:port (e.g. http://127.0.0.1:9644)",
    ),
    (
        "super.users",
        "User:alice;bob",
        "super.users=User:alice;bob: 'bob' is not Type:name (e.g. User:alice)",
    ),
    (
        "max.connections.per.ip.overrides",
        "10.0.0.1:many",
        "max.connections.per.ip.overrides=10.0.0.1:many: '10.0.0.1:many' is not host:count",
    ),
    (
        "listener.security.protocol.map",
        "PLAINTEXT:TLS",
        "listener.security.protocol.map=PLAINTEXT:TLS: 'PLAINTEXT:TLS': unknown security "
        "protocol (expected PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)",
    ),
]


@pytest.mark.parametrize(("key", "value", "message"), BAD_VALUES)
def test_bad_value_names_key_value_and_expectation(key: str, value: str, message: str) -> None:
    err = error_of({key: value})
    assert str(err) == message
    assert (err.key, err.value) == (key, value)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("num.io.threads", " 4 ", 4),
        ("num.io.threads", "+4", 4),
        ("log.retention.bytes", "9223372036854775807", 2**63 - 1),
        ("auto.create.topics.enable", "FALSE", False),
        ("auto.create.topics.enable", " True ", True),
        ("log.dirs", " a , b ", ("a", "b")),
        ("sasl.enabled.mechanisms", "", ()),
        ("log.message.timestamp.type", "LogAppendTime", "LogAppendTime"),
        ("cluster.id", "MkU3OEVBNTcwNTJENDM2Qk", "MkU3OEVBNTcwNTJENDM2Qk"),
        ("cluster.id", "", None),
        ("advertised.listeners", "  ", None),
    ],
)
def test_good_values_are_typed(key: str, value: str, expected: object) -> None:
    assert BrokerConfig({key: value})[key] == expected


DOUBLE = ConfigKey("x.ratio", ConfigType.DOUBLE, 0.5, "A ratio.", Range(0, 1))


@pytest.mark.parametrize(
    ("raw", "value"), [("0.25", 0.25), ("1", 1.0), ("5e-1", 0.5), (".5", 0.5), ("+0", 0.0)]
)
def test_double_parses(raw: str, value: float) -> None:
    assert DOUBLE.parse(raw) == value


@pytest.mark.parametrize("raw", ["half", "nan", "inf", "1_0", "1.5", "-0.1", "0x1"])
def test_double_errors_name_key_and_value(raw: str) -> None:
    with pytest.raises(ConfigError) as info:
        DOUBLE.parse(raw)
    assert str(info.value).startswith(f"x.ratio={raw}: expected a number between 0 and 1")


def test_password_errors_never_echo_the_secret() -> None:
    key = ConfigKey(
        "x.password",
        ConfigType.PASSWORD,
        None,
        "A secret.",
        Check("8+ characters", lambda p: None if len(p.value) >= 8 else "too short"),
    )
    with pytest.raises(ConfigError) as info:
        key.parse("hunter2")
    assert str(info.value) == "x.password=[hidden]: too short"
    assert "hunter2" not in repr(info.value.args)
    assert key.parse("correct horse").value == "correct horse"


def test_unknown_key() -> None:
    err = error_of({"num.io.thread": "4"})
    assert str(err) == "num.io.thread=4: unknown configuration key (did you mean num.io.threads?)"
    assert err.key == "num.io.thread"


def test_unknown_secret_looking_key_hides_its_value() -> None:
    err = error_of({"ssl.keystore.password": "s3cret"})
    assert "s3cret" not in str(err)
    assert str(err).startswith("ssl.keystore.password=[hidden]: unknown configuration key")


# ----------------------------------------------------------------------- the table itself

_REQUIRED_KEYS_TEXT = """
broker.id node.id cluster.id listeners advertised.listeners listener.security.protocol.map
control.plane.listener.name num.network.threads num.io.threads queued.max.requests
queued.max.request.bytes socket.request.max.bytes socket.send.buffer.bytes
socket.receive.buffer.bytes connections.max.idle.ms max.connections max.connections.per.ip
max.connections.per.ip.overrides max.connection.creation.rate log.dirs log.dir
auto.create.topics.enable num.partitions default.replication.factor message.max.bytes
log.segment.bytes log.roll.ms log.roll.hours log.retention.bytes log.retention.ms
log.retention.minutes log.retention.hours log.retention.check.interval.ms
log.index.interval.bytes log.index.size.max.bytes log.flush.interval.messages
log.flush.interval.ms log.flush.scheduler.interval.ms log.message.timestamp.type
delete.topic.enable offsets.retention.minutes offsets.topic.num.partitions
group.initial.rebalance.delay.ms group.min.session.timeout.ms group.max.session.timeout.ms
group.max.size transactional.id.expiration.ms producer.id.expiration.ms quota.window.num
quota.window.size.seconds connection.failed.authentication.delay.ms connections.max.reauth.ms
sasl.enabled.mechanisms ssl.keystore.type ssl.keystore.location ssl.key.password
ssl.keystore.certificate.chain ssl.keystore.key ssl.truststore.location ssl.truststore.type
ssl.client.auth super.users allow.everyone.if.no.acl.found admin.listeners admin.token
dashboard.data.dir metrics.enabled metrics.window.seconds shutdown.timeout.ms
testing.faults.enable
"""
REQUIRED_KEYS = _REQUIRED_KEYS_TEXT.split()

REQUIRED_DYNAMIC = {
    "num.network.threads",
    "num.io.threads",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "max.connection.creation.rate",
}


def test_table_covers_the_required_keys() -> None:
    assert set(REQUIRED_KEYS) <= set(BROKER_CONFIG_DEF)
    assert set(REQUIRED_DYNAMIC) <= DYNAMIC_KEYS
    assert BrokerConfig().dynamic_keys == DYNAMIC_KEYS
    for name in ("ssl.key.password", "admin.token"):
        assert BROKER_CONFIG_DEF[name].type is ConfigType.PASSWORD


@pytest.mark.parametrize("key", list(BROKER_CONFIG_DEF.values()), ids=lambda k: k.name)
def test_every_default_is_valid_and_round_trips(key: ConfigKey) -> None:
    assert key.doc and "\n" not in key.doc
    key.check(key.default)
    if key.default is not None:
        assert key.parse(render(key.default) or "") == key.default


@pytest.mark.parametrize(
    ("key", "default"),
    [
        ("broker.id", 0),
        ("listeners", ("PLAINTEXT://127.0.0.1:9092",)),
        ("advertised.listeners", None),
        ("control.plane.listener.name", None),
        ("num.network.threads", 3),
        ("num.io.threads", 8),
        ("queued.max.requests", 500),
        ("queued.max.request.bytes", -1),
        ("socket.request.max.bytes", 104857600),
        ("connections.max.idle.ms", 600000),
        ("request.read.timeout.ms", 30000),
        ("max.connections", 2**31 - 1),
        ("log.dirs", ("data/kafka-logs",)),
        ("auto.create.topics.enable", True),
        ("num.partitions", 1),
        ("default.replication.factor", 1),
        ("message.max.bytes", 1048588),
        ("admin.listeners", ("http://127.0.0.1:9644",)),
        ("admin.token", None),
        ("metrics.enabled", True),
        ("metrics.window.seconds", 60),
        ("shutdown.timeout.ms", 10000),
    ],
)
def test_defaults(key: str, default: object) -> None:
    assert BrokerConfig()[key] == default


def test_default_security_protocol_map() -> None:
    assert dict(BrokerConfig().security_protocol_map) == {
        "PLAINTEXT": SecurityProtocol.PLAINTEXT,
        "SSL": SecurityProtocol.SSL,
        "SASL_PLAINTEXT": SecurityProtocol.SASL_PLAINTEXT,
        "SASL_SSL": SecurityProtocol.SASL_SSL,
        "CONTROLLER": SecurityProtocol.PLAINTEXT,
    }


def test_config_modules_do_not_import_trio() -> None:
    code = (
        "import sys, trio_broker.server.config.broker_config, trio_broker.server.config.topic_config; "
        "sys.exit('trio' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


# ----------------------------------------------------------------------- precedence

HOUR, MINUTE = 3_600_000, 60_000

PRECEDENCE = [
    # (settings, key, resolved value)
    ({}, "log.retention.ms", 168 * HOUR),
    ({"log.retention.hours": "1"}, "log.retention.ms", HOUR),
    ({"log.retention.minutes": "5", "log.retention.hours": "1"}, "log.retention.ms", 5 * MINUTE),
    (
        {"log.retention.ms": "100", "log.retention.minutes": "5", "log.retention.hours": "1"},
        "log.retention.ms",
        100,
    ),
    ({"log.retention.ms": "100", "log.retention.hours": "1"}, "log.retention.ms", 100),
    ({"log.retention.hours": "-1"}, "log.retention.ms", -1),
    ({"log.retention.minutes": "-1"}, "log.retention.ms", -1),
    ({"log.retention.ms": "-1", "log.retention.hours": "5"}, "log.retention.ms", -1),
    ({"log.retention.ms": "", "log.retention.hours": "2"}, "log.retention.ms", 2 * HOUR),
    ({}, "log.roll.ms", 168 * HOUR),
    ({"log.roll.hours": "2"}, "log.roll.ms", 2 * HOUR),
    ({"log.roll.ms": "10", "log.roll.hours": "2"}, "log.roll.ms", 10),
    ({}, "log.flush.interval.ms", 2**63 - 1),
    ({"log.flush.scheduler.interval.ms": "500"}, "log.flush.interval.ms", 500),
    (
        {"log.flush.scheduler.interval.ms": "500", "log.flush.interval.ms": "20"},
        "log.flush.interval.ms",
        20,
    ),
    ({}, "log.dirs", ("data/kafka-logs",)),
    ({"log.dir": "/x"}, "log.dirs", ("/x",)),
    ({"log.dir": "/x", "log.dirs": "a,b"}, "log.dirs", ("a", "b")),
    ({"log.dirs": "a,b"}, "log.dirs", ("a", "b")),
    ({"node.id": "3"}, "broker.id", 3),
    ({"broker.id": "3"}, "node.id", 3),
    ({"broker.id": "3", "node.id": "3"}, "broker.id", 3),
]


@pytest.mark.parametrize(("settings", "key", "value"), PRECEDENCE)
def test_precedence(settings: dict[str, str], key: str, value: object) -> None:
    assert BrokerConfig(settings)[key] == value


def test_log_dirs_are_paths_relative_to_the_working_directory() -> None:
    assert BrokerConfig().log_dirs == [Path("data/kafka-logs")]
    assert BrokerConfig({"log.dirs": "/abs, rel/x"}).log_dirs == [Path("/abs"), Path("rel/x")]
    assert BrokerConfig({"log.dir": "one"}).log_dirs == [Path("one")]


def test_node_id_and_broker_id_must_agree() -> None:
    err = error_of({"broker.id": "1", "node.id": "2"})
    assert str(err) == "node.id=2: must equal broker.id (1)"


def test_override_beats_file(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("num.io.threads=2\nnum.network.threads=5\n", encoding="utf-8")
    loaded = load_config(path, ["num.io.threads=6", "ssl.keystore.location=/a=b"])
    assert loaded["num.io.threads"] == 6
    assert loaded["num.network.threads"] == 5
    assert loaded["ssl.keystore.location"] == "/a=b"
    assert loaded.originals["num.io.threads"] == "6"
    assert loaded.source("num.io.threads") is ConfigSource.STATIC_BROKER_CONFIG
    assert loaded.source("num.partitions") is ConfigSource.DEFAULT_CONFIG


def test_file_then_environment_then_override_and_each_key_knows_its_layer(
    tmp_path: Path,
) -> None:
    path = tmp_path / "server.properties"
    path.write_text("num.io.threads=2\nnum.network.threads=5\nqueued.max.requests=50\n")
    env = {
        "TRIO_BROKER_NUM_IO_THREADS": "3",
        "TRIO_BROKER_QUEUED_MAX_REQUESTS": "60",
        "TRIO_BROKER_LOG_RETENTION_HOURS": "1",
        "OTHER": "x",
    }
    loaded = load_config(path, ["num.io.threads=6"], env)
    assert (loaded["num.io.threads"], loaded.origin("num.io.threads")) == (6, "override")
    assert (loaded["queued.max.requests"], loaded.origin("queued.max.requests")) == (60, "env")
    assert (loaded["num.network.threads"], loaded.origin("num.network.threads")) == (5, "file")
    assert loaded.origin("num.partitions") == "default"
    assert loaded.origin("log.retention.ms") == "env"  # set through a synonym
    assert loaded.source("queued.max.requests") is ConfigSource.STATIC_BROKER_CONFIG
    changed = loaded.with_updates({"num.io.threads": "4"})
    assert changed.origin("num.io.threads") == "dynamic"
    assert changed.origin("queued.max.requests") == "env"
    assert set(loaded.origins().values()) <= set(ORIGINS)
    assert load_config(path, [], None).origin("queued.max.requests") == "file"  # no environ


def test_the_admin_api_names_the_same_origins() -> None:
    from admin.view import CONFIG_ORIGINS

    assert CONFIG_ORIGINS == ORIGINS


def test_later_override_wins_and_can_unset_an_optional_key(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("advertised.listeners=PLAINTEXT://h:1\n", encoding="utf-8")
    loaded = load_config(path, ["num.io.threads=2", "num.io.threads=3", "advertised.listeners="])
    assert loaded["num.io.threads"] == 3
    assert loaded["advertised.listeners"] is None


def test_load_without_file_gives_defaults() -> None:
    assert load_config(None, [])["num.io.threads"] == 8
    assert load_config(None)["listeners"] == ("PLAINTEXT://127.0.0.1:9092",)


@pytest.mark.parametrize("item", ["num.io.threads", "=4", " =4"])
def test_malformed_override(item: str) -> None:
    with pytest.raises(ConfigError, match="expected key=value"):
        load_config(None, [item])


def test_bad_value_in_file_or_override_names_key_and_value(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("num.io.threads = zero\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"^num\.io\.threads=zero: expected an integer between 1 and 256$"
    ):
        load_config(path, [])
    with pytest.raises(
        ConfigError, match=r"^num\.io\.threads=-3: expected an integer between 1 and 256$"
    ):
        load_config(None, ["num.io.threads=-3"])


def test_missing_or_undecodable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read .*nope\.properties"):
        load_config(tmp_path / "nope.properties", [])
    latin1 = tmp_path / "latin1.properties"
    latin1.write_bytes(b"cluster.id=caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(latin1, [])


# ----------------------------------------------------------------------- listeners

LISTENERS = [
    ("PLAINTEXT://127.0.0.1:9092", ("PLAINTEXT", "127.0.0.1", 9092)),
    ("plaintext://localhost:0", ("PLAINTEXT", "localhost", 0)),
    ("PLAINTEXT://[::1]:9092", ("PLAINTEXT", "::1", 9092)),
    ("PLAINTEXT://[::]:9092", ("PLAINTEXT", "::", 9092)),
    ("PLAINTEXT://[fe80::1%eth0]:9092", ("PLAINTEXT", "fe80::1%eth0", 9092)),
    ("PLAINTEXT://[::ffff:10.0.0.1]:9092", ("PLAINTEXT", "::ffff:10.0.0.1", 9092)),
    ("PLAINTEXT://:9092", ("PLAINTEXT", "", 9092)),
    ("PLAINTEXT://0.0.0.0:9092", ("PLAINTEXT", "0.0.0.0", 9092)),
    ("Internal_1://broker-1.example.com:19092", ("INTERNAL_1", "broker-1.example.com", 19092)),
    ("  SSL://h:65535 ", ("SSL", "h", 65535)),
]


@pytest.mark.parametrize(("text", "parsed"), LISTENERS)
def test_parse_listener(text: str, parsed: tuple[str, str, int]) -> None:
    assert parse_listener(text) == parsed


@pytest.mark.parametrize(
    "text",
    [
        "PLAINTEXT://::1:9092",
        "127.0.0.1:9092",
        "PLAINTEXT://host",
        "PLAINTEXT://host:",
        "PLAINTEXT://host:65536",
        "PLAINTEXT://host:-1",
        "://host:1",
        "PLAINTEXT://[::1:9092",
        "PLAINTEXT://ho st:1",
        "PLAINTEXT://host:1/path",
    ],
)
def test_bad_listener(text: str) -> None:
    with pytest.raises(ValueError):
        parse_listener(text)
    err = error_of({"listeners": text})
    assert err.key == "listeners" and err.value == text


def test_listener_views() -> None:
    c = BrokerConfig(
        {
            "listeners": "PLAINTEXT://[::1]:9092,ctl://:0,SSL://:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CTL:PLAINTEXT,ssl:ssl",
            "control.plane.listener.name": "ctl",
            "ssl.keystore.location": "broker.pem",
        }
    )
    assert c.listeners == (
        ListenerConfig("PLAINTEXT", "::1", 9092, SecurityProtocol.PLAINTEXT),
        ListenerConfig("CTL", "", 0, SecurityProtocol.PLAINTEXT),
        ListenerConfig("SSL", "", 0, SecurityProtocol.SSL),
    )
    assert [lis.url for lis in c.listeners] == [
        "PLAINTEXT://[::1]:9092",
        "CTL://:0",
        "SSL://:0",
    ]
    assert c.control_plane_listener_name == "CTL"
    assert c.control_plane_listener == c.listeners[1]
    # advertised.listeners unset: the listeners, without the control plane
    assert [lis.name for lis in c.advertised_listeners] == ["PLAINTEXT", "SSL"]
    assert c.advertised_listener("ssl") == c.listeners[2]
    assert c.advertised_listener("CTL") is None


def test_advertised_listeners() -> None:
    c = BrokerConfig(
        {
            "listeners": "PLAINTEXT://:9092,CONTROLLER://127.0.0.1:9093",
            "advertised.listeners": "PLAINTEXT://kafka.example.com:9092",
            "control.plane.listener.name": "CONTROLLER",
        }
    )
    assert c.advertised_listeners == (
        ListenerConfig("PLAINTEXT", "kafka.example.com", 9092, SecurityProtocol.PLAINTEXT),
    )
    assert c.listeners[0].host == ""


def test_admin_endpoint() -> None:
    assert BrokerConfig().admin_endpoint == ("127.0.0.1", 9644)
    assert BrokerConfig({"admin.listeners": "http://[::1]:0"}).admin_endpoint == ("::1", 0)
    assert BrokerConfig({"admin.listeners": "HTTP://:8080/"}).admin_endpoint == ("", 8080)
    assert BrokerConfig({"admin.listeners": ""}).admin_endpoint is None
    many = BrokerConfig({"admin.listeners": "http://a:1,http://b:0,http://c:0"})
    assert many.admin_endpoints == (("a", 1), ("b", 0), ("c", 0))


def test_port_zero_may_repeat() -> None:
    c = BrokerConfig(
        {"listeners": "PLAINTEXT://:0,CONTROLLER://:0", "admin.listeners": "http://:0"}
    )
    assert [lis.port for lis in c.listeners] == [0, 0]


# A broker of a ZooKeeper cluster whose only listener (so the inter-broker one) is SASL.
_TLS = {"ssl.keystore.location": "broker.pem"}
_OWN_JAAS = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
_SASL_CLUSTER = {
    "listeners": "SASL_PLAINTEXT://:9092",
    "zookeeper.connect": "zk:2181",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
        'password="broker-secret";'
    ),
}
CROSS_KEY_ERRORS = [
    # (settings, key named, text in the reason)
    (
        {"listeners": "PLAINTEXT://:9092,FOO://:9093"},
        "listeners",
        "listener name FOO has no security protocol in listener.security.protocol.map",
    ),
    (
        {
            "listeners": "PLAINTEXT://:9092",
            "listener.security.protocol.map": "SSL:SSL",
        },
        "listeners",
        "listener name PLAINTEXT has no security protocol",
    ),
    (
        {"control.plane.listener.name": "NOPE"},
        "control.plane.listener.name",
        "expected one of the listener names in listeners (PLAINTEXT)",
    ),
    (
        {"listeners": "PLAINTEXT://:9092,plaintext://:9093"},
        "listeners",
        "listener name PLAINTEXT is used more than once",
    ),
    (
        {"listeners": "PLAINTEXT://a:9092,CONTROLLER://b:9092"},
        "listeners",
        "port 9092 is used by more than one listener",
    ),
    (
        {"advertised.listeners": "SSL://x:1"},
        "advertised.listeners",
        "listener name SSL is not in listeners (PLAINTEXT)",
    ),
    (
        {"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
        "advertised.listeners",
        "cannot advertise the non-routable address 0.0.0.0",
    ),
    (
        {"advertised.listeners": "PLAINTEXT://a:1,PLAINTEXT://b:2"},
        "advertised.listeners",
        "listener name PLAINTEXT is used more than once",
    ),
    (
        {
            "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "control.plane.listener.name": "CONTROLLER",
            "advertised.listeners": "CONTROLLER://h:9093",
        },
        "advertised.listeners",
        "no listener for clients besides CONTROLLER",
    ),
    (
        {"listeners": "CONTROLLER://:9093", "control.plane.listener.name": "CONTROLLER"},
        "listeners",
        "no listener for clients besides CONTROLLER",
    ),
    (
        {"admin.listeners": "http://127.0.0.1:9092"},
        "admin.listeners",
        "port 9092 is already used by another listener",
    ),
    (
        {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,plaintext:SSL"},
        "listener.security.protocol.map",
        "listener name PLAINTEXT is mapped more than once",
    ),
    (
        {"listeners": ""},
        "listeners",
        "at least one listener is required",
    ),
    (
        {"group.min.session.timeout.ms": "10", "group.max.session.timeout.ms": "5"},
        "group.min.session.timeout.ms",
        "must not exceed group.max.session.timeout.ms (5)",
    ),
    (
        {"queued.max.request.bytes": "1000"},
        "queued.max.request.bytes",
        "at least socket.request.max.bytes (104857600)",
    ),
    (
        {"connection.failed.authentication.delay.ms": "600000"},
        "connection.failed.authentication.delay.ms",
        "must be less than connections.max.idle.ms (600000)",
    ),
    (
        {"max.connections.per.ip": "0"},
        "max.connections.per.ip",
        "unless max.connections.per.ip.overrides is set",
    ),
    (
        {"listeners": "SSL://:9093"},
        "listeners",
        "listener SSL uses SSL, which needs a key store",
    ),
    (
        {
            "ssl.keystore.location": "a.pem",
            "ssl.keystore.key": "k",
            "ssl.keystore.certificate.chain": "c",
        },
        "ssl.keystore.location",
        "not both",
    ),
    (
        {"ssl.keystore.key": "k"},
        "ssl.keystore.certificate.chain",
        "go together",
    ),
    (
        {"listeners": "SASL_PLAINTEXT://:9092", "sasl.enabled.mechanisms": ""},
        "sasl.enabled.mechanisms",
        "listener SASL_PLAINTEXT uses SASL_PLAINTEXT, which needs a mechanism",
    ),
    # ---- the inter-broker listener (config.inter_broker)
    (
        {
            "inter.broker.listener.name": "PLAINTEXT",
            "security.inter.broker.protocol": "PLAINTEXT",
        },
        "inter.broker.listener.name",
        "set only one of inter.broker.listener.name and security.inter.broker.protocol",
    ),
    (
        {"inter.broker.listener.name": "internal"},
        "inter.broker.listener.name",
        "expected a listener name in listeners (PLAINTEXT)",
    ),
    (
        {"security.inter.broker.protocol": "SASL_SSL"},
        "security.inter.broker.protocol",
        "expected the name of a listener in listeners (PLAINTEXT)",
    ),
    (
        {
            "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "control.plane.listener.name": "CONTROLLER",
            "inter.broker.listener.name": "CONTROLLER",
        },
        "inter.broker.listener.name",
        "the control plane's listener",
    ),
    (
        {**_SASL_CLUSTER, "sasl.mechanism.inter.broker.protocol": "GSSAPI"},
        "sasl.mechanism.inter.broker.protocol",
        "brokers log in to each other with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512",
    ),
    (
        {**_SASL_CLUSTER, "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"},
        "sasl.mechanism.inter.broker.protocol",
        "listener SASL_PLAINTEXT does not enable it (sasl.enabled.mechanisms=PLAIN)",
    ),
    (
        {**_SASL_CLUSTER, "listener.name.sasl_plaintext.plain.sasl.jaas.config": ""},
        "listener.name.sasl_plaintext.plain.sasl.jaas.config",
        "brokers need the username and password they log in with there",
    ),
    (
        {
            **_SASL_CLUSTER,
            _OWN_JAAS: "",
            "sasl.jaas.config": "PlainLoginModule required username=x;",
        },
        "sasl.jaas.config",
        "needs password",
    ),
    (
        {
            **_SASL_CLUSTER,
            _OWN_JAAS: "",
            "sasl.jaas.config": 'PlainLoginModule required password="x"',
        },
        "sasl.jaas.config",
        "must end with ';'",
    ),
    (
        {"listener.name.plaintext.plain.sasl.jaas.config": "M required;"},
        "listener.name.plaintext.plain.sasl.jaas.config",
        "listener PLAINTEXT uses PLAINTEXT, which has no SASL",
    ),
]


@pytest.mark.parametrize(("settings", "key", "reason"), CROSS_KEY_ERRORS)
def test_cross_key_errors(settings: dict[str, str], key: str, reason: str) -> None:
    err = error_of(settings)
    assert err.key == key
    assert reason in err.reason
    assert str(err).startswith(f"{key}")


@pytest.mark.parametrize(
    "settings",
    [
        {"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:5"},
        {"listeners": "SSL://:9093", "ssl.keystore.location": "broker.pem"},
        {
            "listeners": "SASL_SSL://:9093",
            "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----",
            "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----",
        },
        {"queued.max.request.bytes": "0"},
        {"queued.max.request.bytes": "104857600"},
        {"advertised.listeners": "plaintext://kafka:9092"},
    ],
)
def test_consistent_settings_pass(settings: dict[str, str]) -> None:
    BrokerConfig(settings)


@pytest.mark.parametrize(
    ("settings", "listener"),
    [
        ({}, "PLAINTEXT"),  # neither key: the PLAINTEXT listener, as before them
        ({"listeners": "SSL://:9093,PLAINTEXT://:9092", **_TLS}, "PLAINTEXT"),
        ({"listeners": "SSL://:9093,SASL_SSL://:9094", **_TLS}, "SSL"),  # else the first
        (
            {
                "listeners": "CONTROLLER://:9093,SSL://:9094",
                "control.plane.listener.name": "CONTROLLER",
                **_TLS,
            },
            "SSL",  # never the control plane's
        ),
        (
            {
                "listeners": "SSL://:9093,PLAINTEXT://:9092",
                "inter.broker.listener.name": "ssl",
                **_TLS,
            },
            "SSL",
        ),
        (
            {
                "listeners": "SSL://:9093,PLAINTEXT://:9092",
                "security.inter.broker.protocol": "SSL",
                **_TLS,
            },
            "SSL",
        ),
    ],
)
def test_the_inter_broker_listener(settings: dict[str, str], listener: str) -> None:
    assert BrokerConfig(settings).inter_broker_listener_name == listener


def test_the_inter_broker_login_comes_from_the_listeners_jaas_entry() -> None:
    config = BrokerConfig(
        {**_SASL_CLUSTER, "sasl.jaas.config": 'M required username="other" password="o";'}
    )
    login = config.peer_login("SASL_PLAINTEXT")
    assert login is not None
    assert (login.mechanism, login.username, login.password) == ("PLAIN", "broker", "broker-secret")
    assert "broker-secret" not in repr(login) and "broker-secret" not in repr(config)
    # Without ZooKeeper there is no other broker to log in to: no JAAS entry needed.
    alone = BrokerConfig({"listeners": "SASL_PLAINTEXT://:9092"})
    assert alone.peer_login("SASL_PLAINTEXT") is None


def test_convenience_parsers() -> None:
    c = BrokerConfig(
        {
            "max.connections.per.ip.overrides": "10.0.0.1:5, ::1:7,host.example:0",
            "super.users": "User:alice; User:CN=bob,OU=x",
        }
    )
    assert c.max_connections_per_ip_overrides == {"10.0.0.1": 5, "::1": 7, "host.example": 0}
    assert c.super_users == ("User:alice", "User:CN=bob,OU=x")
    assert BrokerConfig().super_users == ()
    assert BrokerConfig().dashboard_data_dir == Path("data/dashboard")
    assert BrokerConfig({"broker.id": "7"}).broker_id == 7


# ----------------------------------------------------------------------- masking

SECRETS = {
    "ssl.key.password": "s3cret-key-pass",
    "admin.token": "tok-12345",
    "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----xyz",
    "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----xyz",
}


def test_passwords_are_masked_everywhere() -> None:
    c = BrokerConfig(SECRETS)
    effective = c.effective()
    for name, secret in SECRETS.items():
        assert effective[name] == "[hidden]"
        assert c.originals[name] == "[hidden]"
        assert isinstance(c[name], Password)
        assert c[name].value == secret
        assert str(c[name]) == "[hidden]"
        entry = c.describe()[name]
        assert entry.is_sensitive and entry.text is None
        assert secret not in repr(c)
        assert secret not in repr(c[name])
        assert secret not in str(effective)
    assert effective["admin.listeners"] == "http://127.0.0.1:9644"
    assert BrokerConfig().effective()["admin.token"] is None


def test_effective_renders_every_key_as_text() -> None:
    effective = BrokerConfig({"log.retention.hours": "1", "log.dirs": "a, b"}).effective()
    assert set(effective) == set(BROKER_CONFIG_DEF)
    assert effective["log.retention.ms"] == "3600000"
    assert effective["log.dirs"] == "a,b"
    assert effective["auto.create.topics.enable"] == "true"
    assert effective["advertised.listeners"] is None


def test_describe_flags_and_sources() -> None:
    entries = BrokerConfig({"num.io.threads": "4", "log.retention.hours": "1"}).describe()
    assert entries["num.io.threads"].source is ConfigSource.STATIC_BROKER_CONFIG
    assert entries["num.io.threads"].read_only is False
    assert entries["broker.id"].read_only is True
    assert entries["broker.id"].source is ConfigSource.DEFAULT_CONFIG
    assert entries["log.retention.ms"].source is ConfigSource.STATIC_BROKER_CONFIG
    assert entries["log.retention.ms"].text == "3600000"


# ----------------------------------------------------------------------- run-time updates


def test_with_updates_changes_a_dynamic_key() -> None:
    before = BrokerConfig({"num.io.threads": "2"})
    after = before.with_updates({"num.io.threads": "4", "max.connections": "100"})
    assert (before["num.io.threads"], after["num.io.threads"]) == (2, 4)
    assert after["max.connections"] == 100
    assert after.source("num.io.threads") is ConfigSource.DYNAMIC_BROKER_CONFIG
    assert dict(after.dynamic_settings) == {"num.io.threads": "4", "max.connections": "100"}
    assert after.originals["num.io.threads"] == "2"
    reverted = after.with_updates({"num.io.threads": None})
    assert reverted["num.io.threads"] == 2
    assert reverted.source("num.io.threads") is ConfigSource.STATIC_BROKER_CONFIG
    assert reverted["max.connections"] == 100


def test_with_updates_refuses_a_static_key() -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig().with_updates({"broker.id": "1"})
    assert info.value.key == "broker.id"
    assert str(info.value) == (
        "broker.id=1: cannot be changed at run time; set it in server.properties and restart"
    )
    with pytest.raises(ConfigError, match=r"^admin\.token=\[hidden\]: cannot be changed"):
        BrokerConfig().with_updates({"admin.token": "new-secret"})


@pytest.mark.parametrize(
    ("updates", "message"),
    [
        ({"num.io.threads": "zero"}, "num.io.threads=zero: expected an integer between 1 and 256"),
        ({"num.io.threadz": "1"}, "num.io.threadz=1: unknown configuration key"),
        ({"max.connections.per.ip": "0"}, "max.connections.per.ip=0: 0 refuses every address"),
        ({"log.cleaner.threads": "0"}, "log.cleaner.threads=0: expected an integer between 1"),
    ],
)
def test_with_updates_validates(updates: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig().with_updates(updates)
    assert str(info.value).startswith(message)


def test_dynamic_retention_beats_static_hours() -> None:
    static = BrokerConfig({"log.retention.hours": "1"})
    dynamic = static.with_updates({"log.retention.ms": "5000"})
    assert dynamic["log.retention.ms"] == 5000
    assert dynamic.with_updates({"log.retention.ms": None})["log.retention.ms"] == HOUR


def test_dynamic_settings_must_be_dynamic_keys() -> None:
    with pytest.raises(ConfigError, match=r"^broker\.id=1: cannot be changed at run time"):
        BrokerConfig({}, dynamic_settings={"broker.id": "1"})


# ----------------------------------------------------------------------- topic configs

REQUIRED_TOPIC_KEYS = {
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "message.format.version": "log.message.format.version",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "segment.index.bytes": "log.index.size.max.bytes",
    "index.interval.bytes": "log.index.interval.bytes",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "cleanup.policy": "log.cleanup.policy",
    "min.insync.replicas": "min.insync.replicas",
    "compression.type": "compression.type",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}


def test_topic_keys_and_their_broker_keys() -> None:
    assert dict(TOPIC_BROKER_KEYS) == REQUIRED_TOPIC_KEYS
    for name, broker_key in TOPIC_BROKER_KEYS.items():
        assert TOPIC_CONFIG_DEF[name].type is BROKER_CONFIG_DEF[broker_key].type
        assert TOPIC_CONFIG_DEF[name].doc


def test_validate_topic_configs_types_values() -> None:
    assert validate_topic_configs(
        {
            "retention.ms": "1000",
            "retention.bytes": "-1",
            "cleanup.policy": "delete",
            "unclean.leader.election.enable": "TRUE",
            "message.timestamp.type": "LogAppendTime",
            "segment.ms": None,
        }
    ) == {
        "retention.ms": 1000,
        "retention.bytes": -1,
        "cleanup.policy": ("delete",),
        "unclean.leader.election.enable": True,
        "message.timestamp.type": "LogAppendTime",
        "segment.ms": None,
    }
    assert validate_topic_configs({}) == {}


TOPIC_ERRORS = [
    ({"retention.ms": "a week"}, "retention.ms=a week: expected -1 or an integer >= 1"),
    ({"segment.bytes": "1"}, "segment.bytes=1: expected an integer >= 14"),
    ({"max.message.bytes": "-5"}, "max.message.bytes=-5: expected an integer >= 0"),
    ({"min.insync.replicas": "0"}, "min.insync.replicas=0: expected an integer >= 1"),
    (
        {"cleanup.policy": "shred"},
        "cleanup.policy=shred: expected a non-empty comma-separated list of delete, compact",
    ),
    (
        {"min.cleanable.dirty.ratio": "-0.1"},
        "min.cleanable.dirty.ratio=-0.1: expected a number between 0 and 1",
    ),
    (
        {"compression.zstd.level": "99"},
        "compression.zstd.level=99: expected an integer between -131072 and 22",
    ),
    (
        {"message.timestamp.type": "Now"},
        "message.timestamp.type=Now: expected one of CreateTime, LogAppendTime",
    ),
    (
        {"unclean.leader.election.enable": "sure"},
        "unclean.leader.election.enable=sure: expected true or false",
    ),
    (
        {"retention.msx": "1"},
        "retention.msx=1: unknown topic configuration key (did you mean retention.ms?)",
    ),
    (
        {"log.retention.ms": "1"},
        "log.retention.ms=1: unknown topic configuration key "
        "(the topic-level name of log.retention.ms is retention.ms)",
    ),
    ({"preallocate": "true"}, "preallocate=true: unknown topic configuration key"),
]


@pytest.mark.parametrize(("configs", "message"), TOPIC_ERRORS)
def test_topic_config_errors(configs: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_topic_configs(configs)
    assert str(info.value).startswith(message)
    assert info.value.key == next(iter(configs))


def test_effective_topic_config_sources() -> None:
    broker = BrokerConfig({"log.retention.hours": "1", "log.segment.bytes": "4096"})
    broker = broker.with_updates({"message.max.bytes": "2000"})
    entries = effective_topic_config(broker, {"segment.bytes": "8192", "flush.ms": None})
    expect = {
        "segment.bytes": (8192, ConfigSource.TOPIC_CONFIG),
        "retention.ms": (HOUR, ConfigSource.STATIC_BROKER_CONFIG),
        "max.message.bytes": (2000, ConfigSource.DYNAMIC_BROKER_CONFIG),
        "retention.bytes": (-1, ConfigSource.DEFAULT_CONFIG),
        "segment.ms": (168 * HOUR, ConfigSource.DEFAULT_CONFIG),
        "flush.ms": (2**63 - 1, ConfigSource.DEFAULT_CONFIG),
        "cleanup.policy": (("delete",), ConfigSource.DEFAULT_CONFIG),
        "compression.type": ("producer", ConfigSource.DEFAULT_CONFIG),
    }
    for name, (value, source) in expect.items():
        assert (entries[name].value, entries[name].source) == (value, source), name
    assert set(entries) == set(TOPIC_CONFIG_DEF)
    for entry in entries.values():
        assert entry.is_sensitive is False and entry.read_only is False
    assert entries["cleanup.policy"].text == "delete"
    assert entries["segment.bytes"].text == "8192"


def test_effective_topic_config_rejects_bad_overrides() -> None:
    with pytest.raises(ConfigError, match=r"^cleanup\.policy=shred"):
        effective_topic_config(BrokerConfig(), {"cleanup.policy": "shred"})


@pytest.mark.parametrize("policy", ["compact", "compact,delete", "delete,compact"])
def test_compact_policies_are_accepted(policy: str) -> None:
    typed = validate_topic_configs({"cleanup.policy": policy, "min.compaction.lag.ms": "5"})
    assert set(typed["cleanup.policy"]) == set(policy.split(","))
    assert BrokerConfig().with_updates({"log.cleanup.policy": policy})["log.cleanup.policy"]


# ----------------------------------------------------------------------- shipped file


def test_shipped_server_properties_loads() -> None:
    c = load_config(SHIPPED, [])
    assert c.broker_id == 0
    assert [lis.url for lis in c.listeners] == [
        "PLAINTEXT://127.0.0.1:9092",
        "CONTROLLER://127.0.0.1:9093",
    ]
    assert c.control_plane_listener_name == "CONTROLLER"
    assert [lis.name for lis in c.advertised_listeners] == ["PLAINTEXT"]
    assert c["num.network.threads"] == 3 and c["num.io.threads"] == 8
    assert c.log_dirs == [Path("data/kafka-logs")]
    assert c.admin_endpoint == ("127.0.0.1", 9644)
    assert set(c.originals) <= set(BROKER_CONFIG_DEF)


def test_shipped_server_properties_with_overrides() -> None:
    c = load_config(SHIPPED, ["listeners=PLAINTEXT://:0,CONTROLLER://:0", "num.io.threads=2"])
    assert [lis.port for lis in c.listeners] == [0, 0]
    assert c["num.io.threads"] == 2


def test_the_consumer_group_migration_policy() -> None:
    """Kafka's values, any case (ConsumerGroupMigrationPolicy.parse), bidirectional by
    default; anything else is refused naming the values."""
    assert BrokerConfig({})["group.consumer.migration.policy"] == "bidirectional"
    assert (
        BrokerConfig({"group.consumer.migration.policy": "Downgrade"})[
            "group.consumer.migration.policy"
        ].lower()
        == "downgrade"
    )
    error = error_of({"group.consumer.migration.policy": "sideways"})
    assert str(error) == (
        "group.consumer.migration.policy=sideways: expected one of bidirectional, upgrade, "
        "downgrade, disabled"
    )
