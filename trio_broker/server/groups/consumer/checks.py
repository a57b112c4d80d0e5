"""What a consumer-protocol heartbeat must be before the coordinator acts on it.

Owns: ``ConsumerGroupConfig`` (the ``group.consumer.*`` settings the coordinator uses,
``group.consumer.migration.policy`` among them), ``HeartbeatError`` (an error code and
Kafka's message), ``new_member_id``, and Kafka's checks of a request
(``validate_heartbeat``, its throwIfConsumerGroupHeartbeatRequestIsInvalid) and of a
member's epoch (``check_epoch``). Pure: no timers, no records, no group changed.
"""

from __future__ import annotations

import base64
import re
import uuid
from dataclasses import dataclass
from typing import Any

from ....apis.group_services import ConsumerHeartbeat
from ....protocol.errors import ErrorCode
from .model import ConsumerMember
from .topics import partitions_of

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    enabled: bool = True  # "consumer" in group.coordinator.rebalance.protocols
    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    assignors: tuple[str, ...] = ("uniform", "range")  # the first is the default
    max_size: int = 2**31 - 1
    # group.consumer.migration.policy: online upgrade (classic -> consumer), downgrade
    migration_policy: str = "bidirectional"
    classic_max_size: int = 2**31 - 1  # group.max.size, for a downgrade

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("bidirectional", "downgrade")

    @classmethod
    def from_broker(cls, config: Any, names: dict[str, str]) -> ConsumerGroupConfig:
        return cls(
            enabled="consumer" in config["group.coordinator.rebalance.protocols"],
            heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
            session_timeout_ms=config["group.consumer.session.timeout.ms"],
            assignors=tuple(dict.fromkeys(names[a] for a in config["group.consumer.assignors"])),
            max_size=config["group.consumer.max.size"],
            migration_policy=config["group.consumer.migration.policy"].lower(),
            classic_max_size=config["group.max.size"],
        )


class HeartbeatError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def new_member_id() -> str:
    """A member id as Kafka's coordinator makes one for v0 (``Uuid.randomUuid()``:
    22 characters of URL-safe base64)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def validate_heartbeat(p: ConsumerHeartbeat, assignors: tuple[str, ...]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""

    def invalid(message: str) -> HeartbeatError:
        return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

    if p.group_id == "":
        raise invalid("GroupId can't be empty.")
    if p.instance_id == "":
        raise invalid("InstanceId can't be empty.")
    if p.rack_id == "":
        raise invalid("RackId can't be empty.")
    if p.member_epoch > 0 or p.member_epoch == LEAVE_EPOCH:
        if p.member_id == "":
            raise invalid("MemberId can't be empty.")
    elif p.member_epoch == 0:
        if p.api_version >= 1 and p.member_id == "":
            raise invalid("MemberId can't be empty.")
        if p.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if p.owned is None or any(p.owned.values()):
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if not p.subscribed_topic_names and p.subscribed_topic_regex is None:
            raise invalid(
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
            )
    elif p.member_epoch == STATIC_LEAVE_EPOCH:
        if p.member_id == "":
            raise invalid("MemberId can't be empty.")
        if p.instance_id is None:
            raise invalid("InstanceId can't be null.")
    else:
        raise invalid("MemberEpoch is invalid.")
    if p.server_assignor is not None and p.server_assignor not in assignors:
        raise HeartbeatError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {p.server_assignor} is not supported. Supported assignors: "
            + ", ".join(assignors)
            + ".",
        )
    if p.subscribed_topic_regex:
        try:
            re.compile(p.subscribed_topic_regex)
        except re.error as e:
            raise HeartbeatError(
                ErrorCode.INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex {p.subscribed_topic_regex} is invalid: {e}",
            ) from None


def check_epoch(member: ConsumerMember, p: ConsumerHeartbeat) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: the previous epoch is taken
    if the member owns no more than its assignment (the answer that bumped the epoch
    may have been lost)."""
    received = p.member_epoch
    if received > member.member_epoch:
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the "
            f"one known by the group coordinator ({member.member_epoch}). The member must "
            "abandon all its partitions and rejoin.",
        )
    if received < member.member_epoch:
        owned = partitions_of(p.owned) if p.owned is not None else None
        subset = owned is not None and owned <= member.assigned
        if received != member.previous_member_epoch or not subset:
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({received}) than "
                f"the one known by the group coordinator ({member.member_epoch}). The "
                "member must abandon all its partitions and rejoin.",
            )
