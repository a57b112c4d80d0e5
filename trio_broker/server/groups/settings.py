"""The group coordinator's settings: ``CoordinatorConfig`` (the classic protocol's, the
offsets', and KIP-848's consumer groups') read from the broker's configuration, and the
clock the coordinator stamps records with. Values only: no state, no event loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..config import ASSIGNOR_NAMES
from .consumer import ConsumerGroupConfig
from .membership import MembershipConfig

# The authorized operations of a group when no authorizer is configured:
# READ (3), DELETE (6) and DESCRIBE (8), as a bit set.
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    membership: MembershipConfig = field(default_factory=MembershipConfig)
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    consumer: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)

    @classmethod
    def from_broker(cls, config: Any) -> CoordinatorConfig:
        return cls(
            consumer=ConsumerGroupConfig.from_broker(config, ASSIGNOR_NAMES),
            membership=MembershipConfig(
                min_session_timeout_ms=config["group.min.session.timeout.ms"],
                max_session_timeout_ms=config["group.max.session.timeout.ms"],
                initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
                max_group_size=config["group.max.size"],
            ),
            offsets_retention_ms=config["offsets.retention.minutes"] * 60_000,
            offsets_retention_check_interval_ms=config["offsets.retention.check.interval.ms"],
            offset_metadata_max_bytes=config["offset.metadata.max.bytes"],
        )
