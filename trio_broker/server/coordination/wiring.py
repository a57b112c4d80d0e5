"""What a broker in a ZooKeeper cluster puts in place of its single-broker services.

Owns: ``join_cluster``. The cluster view becomes the controller's (authoritative, fenced
while the session is lost); topics are created, deleted and grown through ZooKeeper
(``ZkTopics`` is the creation path's store: the controller places them); topic and broker
config changes are the cluster's (``ZkTopicConfigs``, ``ZkBrokerConfigs``, one
``ZkConfigChanges`` follower beside the registration), and so are SCRAM credentials,
client quotas and client metrics subscriptions (``ZkScramCredentials``, ``ZkClientQuotas``,
``ZkClientMetrics``); a leader's ISR changes are
written to ZooKeeper (``ZkIsrWriter``).
"""

from __future__ import annotations

from typing import Any

from .broker_configs import ZkBrokerConfigs
from .client_metrics import ZkClientMetrics
from .client_quotas import ZkClientQuotas
from .config_changes import ZkConfigChanges
from .isr_writer import ZkIsrWriter
from .topic_configs import ZkTopicConfigs
from .topics import ZkTopics
from .user_credentials import ZkScramCredentials


def join_cluster(broker: Any) -> None:
    """``broker``: the ``Broker`` being built (typed loosely: the broker module imports
    this one), with its ``zk`` membership set."""
    zk = broker.zk
    assert zk is not None
    session, topics = zk.session, broker.topic_admin
    broker.cluster.authoritative = True
    broker.cluster.fenced = lambda: zk.coordinator.fenced
    zk_topics = ZkTopics(session, topics, broker.control)
    changes = ZkConfigChanges(session)
    zk.watchers.append(changes.run)
    zk_configs = ZkTopicConfigs(session, topics, changes)
    broker.config_admin.topics, zk_topics.announce = zk_configs, zk_configs.announce
    zk_brokers = ZkBrokerConfigs(session, changes, broker, broker.config_admin.lock)
    broker.update_config = broker.config_admin.update_config = zk_brokers.update_config
    broker.alter_scram_credentials = ZkScramCredentials(session, changes, broker).alter
    broker.alter_client_quota = ZkClientQuotas(session, changes, broker).alter
    ZkClientMetrics(session, changes, broker.telemetry)  # KIP-714's subscriptions
    broker.topic_creation.store = zk_topics
    isr = ZkIsrWriter(session, broker.broker_id, lambda: broker.cluster.controller_epoch)
    broker.replica_manager.replication.isr_writer = isr
