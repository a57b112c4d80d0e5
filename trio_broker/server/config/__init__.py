"""The broker's configuration, under Kafka's own property names.

Owns: the key tables (``keys`` and its ``keys_*`` parts) built on ``configdef`` (Kafka's
ConfigDef), their syntax (``syntax``) and the checks across keys (``checks``), the names a
key may have (``names``), reading ``server.properties`` (``properties``) and the
environment (``env``), ``BrokerConfig`` (``broker_config``), the inter-broker listener and
login (``inter_broker``), topic-level configs (``topic_config``), run-time changes, the one
path every caller takes (``changes``), their persistence (``dynamic``) and AlterConfigs'
side of them (``admin``).

Face: what ``__all__`` names. Uses of the server: ``datadir``; no event loop (checked by
import-linter). What a change puts in force in the running broker is
``lifecycle.config_apply``'s.
"""

from .admin import ConfigAdmin, UpdateConfig
from .broker_config import BrokerConfig, ListenerSettings, load_config
from .changes import ChangeRefused, plan_broker_change, plan_topic_change
from .configdef import LONG_MAX, ConfigEntry, ConfigError, Password
from .dynamic import DynamicConfigStore
from .keys_groups import ASSIGNOR_NAMES
from .syntax import SASL, TLS, SecurityProtocol
from .topic_config import (
    FOLLOWER,
    LEADER,
    NO_FLUSH_MS,
    THROTTLED_REPLICAS,
    config_doc,
    config_type_name,
    effective_topic_config,
    log_config_for,
    throttled_replicas_problem,
    validate_topic_configs,
)

__all__ = [
    "ASSIGNOR_NAMES",
    "FOLLOWER",
    "LEADER",
    "LONG_MAX",
    "NO_FLUSH_MS",
    "SASL",
    "THROTTLED_REPLICAS",
    "TLS",
    "BrokerConfig",
    "ChangeRefused",
    "ConfigAdmin",
    "ConfigEntry",
    "ConfigError",
    "DynamicConfigStore",
    "ListenerSettings",
    "Password",
    "SecurityProtocol",
    "UpdateConfig",
    "config_doc",
    "config_type_name",
    "effective_topic_config",
    "load_config",
    "log_config_for",
    "plan_broker_change",
    "plan_topic_change",
    "throttled_replicas_problem",
    "validate_topic_configs",
]
