"""The API table: api key -> handler and the versions we answer, per plane.

Owns: ``ApiEntry``, ``ApiTable`` and ``API_TABLE``. The table is the single source for
ApiVersions and for what the network layer accepts: a key not in a plane's table closes the
connection, a version outside its range is UNSUPPORTED_VERSION. Control-only APIs (the
inter-broker control requests) are served on the control-plane listener only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..protocol import messages
from ..protocol.api import ApiKey, ApiSpec
from ..protocol.schema import VersionRange
from . import api_versions, controller, metadata, sasl, telemetry, unserved
from .admin import (
    acls,
    alter_configs,
    client_quotas,
    cluster,
    configs,
    describe_topics,
    elections,
    reassignments,
    scram_credentials,
    topics,
)
from .context import RequestContext
from .data import delete_records, fetch, leader_epochs, list_offsets, produce
from .groups import consumer as consumer_groups
from .groups import membership as groups
from .groups import offsets as group_offsets
from .transactions import coordinator as transactions
from .transactions import init_producer_id
from .transactions import markers as txn_markers

Handler = Callable[[RequestContext, Any], Awaitable[Any]]
# Consecutive requests of one connection, in order: each one's result, in order.
PipelinedHandler = Callable[[Sequence[tuple[RequestContext, Any]]], Awaitable[list[Any]]]


@dataclass(frozen=True, slots=True)
class ApiEntry:
    spec: ApiSpec
    handler: Handler
    control_only: bool = False
    # Handles a connection's pipelined requests together (network.pipelining), with the
    # result each would have had alone; without it they pass ``handler`` one by one.
    pipelined: PipelinedHandler | None = None

    @property
    def versions(self) -> VersionRange:
        return self.spec.versions


class ApiTable:
    def __init__(self, entries: list[ApiEntry]) -> None:
        self._entries = {e.spec.key: e for e in entries}

    def get(self, api_key: int) -> ApiEntry | None:
        return self._entries.get(api_key)

    def entries(self) -> list[ApiEntry]:
        return [self._entries[k] for k in sorted(self._entries)]

    def with_handler(self, api_key: int, handler: Handler) -> ApiTable:
        """A copy of the table with one handler replaced (for tests and extensions); the
        replacement sees every request, pipelined ones one by one."""
        entries = [
            ApiEntry(e.spec, handler, e.control_only) if e.spec.key == api_key else e
            for e in self.entries()
        ]
        return ApiTable(entries)

    def without(self, *api_keys: int) -> ApiTable:
        """A copy of the table that does not serve ``api_keys``."""
        return ApiTable([e for e in self.entries() if e.spec.key not in api_keys])

    def versions(self, plane: str) -> dict[int, VersionRange]:
        return {
            key: e.versions
            for key, e in sorted(self._entries.items())
            if plane == "control" or not e.control_only
        }


API_TABLE = ApiTable(
    [
        ApiEntry(messages.produce.PRODUCE, produce.handle, pipelined=produce.handle_pipelined),
        ApiEntry(messages.fetch.FETCH, fetch.handle),
        ApiEntry(messages.offsets.LIST_OFFSETS, list_offsets.handle),
        ApiEntry(messages.metadata.METADATA, metadata.handle),
        ApiEntry(messages.api_versions.API_VERSIONS, api_versions.handle),
        ApiEntry(messages.topics.CREATE_TOPICS, topics.create_topics),
        ApiEntry(messages.topics.DELETE_TOPICS, topics.delete_topics),
        ApiEntry(messages.offsets.DELETE_RECORDS, delete_records.handle),
        ApiEntry(messages.offsets.OFFSET_FOR_LEADER_EPOCH, leader_epochs.handle),
        ApiEntry(messages.configs.DESCRIBE_CONFIGS, configs.handle),
        ApiEntry(messages.configs.LIST_CONFIG_RESOURCES, configs.list_config_resources),
        ApiEntry(
            messages.metadata.DESCRIBE_TOPIC_PARTITIONS,
            describe_topics.describe_topic_partitions,
        ),
        ApiEntry(messages.log_dirs.DESCRIBE_LOG_DIRS, cluster.describe_log_dirs),
        ApiEntry(messages.cluster.DESCRIBE_CLUSTER, cluster.describe_cluster),
        ApiEntry(messages.configs.ALTER_CONFIGS, alter_configs.handle_alter),
        ApiEntry(messages.configs.INCREMENTAL_ALTER_CONFIGS, alter_configs.handle_incremental),
        ApiEntry(messages.topics.CREATE_PARTITIONS, topics.create_partitions),
        ApiEntry(messages.produce.INIT_PRODUCER_ID, init_producer_id.handle),
        # the partition leader's part of transactions (the coordinator's are its own)
        ApiEntry(messages.txn_markers.WRITE_TXN_MARKERS, txn_markers.handle),
        ApiEntry(messages.elections.ELECT_LEADERS, elections.elect_leaders),
        ApiEntry(messages.reassignments.ALTER_PARTITION_REASSIGNMENTS, reassignments.alter),
        ApiEntry(messages.reassignments.LIST_PARTITION_REASSIGNMENTS, reassignments.list_ongoing),
        # transaction coordinator (InitProducerId above; TxnOffsetCommit: the groups')
        ApiEntry(messages.transactions.ADD_PARTITIONS_TO_TXN, transactions.add_partitions_to_txn),
        ApiEntry(messages.transactions.ADD_OFFSETS_TO_TXN, transactions.add_offsets_to_txn),
        ApiEntry(messages.transactions.END_TXN, transactions.end_txn),
        ApiEntry(messages.transactions.TXN_OFFSET_COMMIT, transactions.txn_offset_commit),
        ApiEntry(messages.transactions.DESCRIBE_PRODUCERS, transactions.describe_producers),
        ApiEntry(messages.transactions.DESCRIBE_TRANSACTIONS, transactions.describe_transactions),
        ApiEntry(messages.transactions.LIST_TRANSACTIONS, transactions.list_transactions),
        # group coordinator
        ApiEntry(messages.groups.FIND_COORDINATOR, groups.find_coordinator),
        ApiEntry(messages.groups.JOIN_GROUP, groups.join_group),
        ApiEntry(messages.groups.SYNC_GROUP, groups.sync_group),
        ApiEntry(messages.groups.HEARTBEAT, groups.heartbeat),
        ApiEntry(messages.groups.LEAVE_GROUP, groups.leave_group),
        ApiEntry(messages.groups.DESCRIBE_GROUPS, groups.describe_groups),
        ApiEntry(messages.groups.LIST_GROUPS, groups.list_groups),
        ApiEntry(messages.groups.DELETE_GROUPS, groups.delete_groups),
        ApiEntry(messages.group_offsets.OFFSET_COMMIT, group_offsets.offset_commit),
        ApiEntry(messages.group_offsets.OFFSET_FETCH, group_offsets.offset_fetch),
        ApiEntry(messages.group_offsets.OFFSET_DELETE, group_offsets.offset_delete),
        # KIP-848's consumer protocol
        ApiEntry(
            messages.group_heartbeats.CONSUMER_GROUP_HEARTBEAT,
            consumer_groups.consumer_group_heartbeat,
        ),
        ApiEntry(
            messages.group_heartbeats.CONSUMER_GROUP_DESCRIBE,
            consumer_groups.consumer_group_describe,
        ),
        # listed only to be refused at once (see apis.unserved for why)
        ApiEntry(messages.group_heartbeats.SHARE_GROUP_HEARTBEAT, unserved.share_group_heartbeat),
        ApiEntry(messages.quotas.DESCRIBE_CLIENT_QUOTAS, client_quotas.describe),
        ApiEntry(messages.quotas.ALTER_CLIENT_QUOTAS, client_quotas.alter),
        # KIP-714's client metrics
        ApiEntry(
            messages.telemetry.GET_TELEMETRY_SUBSCRIPTIONS,
            telemetry.get_subscriptions,
        ),
        ApiEntry(messages.telemetry.PUSH_TELEMETRY, telemetry.push),
        ApiEntry(messages.acls.DESCRIBE_ACLS, acls.describe),
        ApiEntry(messages.acls.CREATE_ACLS, acls.create),
        ApiEntry(messages.acls.DELETE_ACLS, acls.delete),
        # SASL: answered by the network layer on SASL listeners (see network.authentication)
        ApiEntry(messages.sasl.SASL_HANDSHAKE, sasl.handshake),
        ApiEntry(messages.sasl.SASL_AUTHENTICATE, sasl.authenticate),
        ApiEntry(messages.scram.DESCRIBE_USER_SCRAM_CREDENTIALS, scram_credentials.describe),
        ApiEntry(messages.scram.ALTER_USER_SCRAM_CREDENTIALS, scram_credentials.alter),
        # The inter-broker control requests: the control-plane listener only.
        ApiEntry(messages.controller.LEADER_AND_ISR, controller.leader_and_isr, control_only=True),
        ApiEntry(messages.controller.STOP_REPLICA, controller.stop_replica, control_only=True),
        ApiEntry(
            messages.controller.UPDATE_METADATA, controller.update_metadata, control_only=True
        ),
        # A stopping broker to the controller (ZooKeeper mode only: see Broker).
        ApiEntry(
            messages.controller.CONTROLLED_SHUTDOWN,
            controller.controlled_shutdown,
            control_only=True,
        ),
    ]
)

# Served in a ZooKeeper cluster only: a broker on its own has no controller to ask
# (``Broker`` leaves it out of its table). The reassignment APIs are served on one broker
# too, as Kafka serves them there (``coordination.ControllerRequests``).
ZOOKEEPER_ONLY = (ApiKey.ControlledShutdown,)
# The table of a broker on its own (the same object every time: a test checks that fault
# injection, when off, leaves the plain table in the request path).
SINGLE_BROKER_TABLE = API_TABLE.without(*ZOOKEEPER_ONLY)
