"""The classic group protocol's states, as tables.

Owns: ``GroupState`` (Kafka's five states and their names on the wire), ``VALID_PREVIOUS``
(the transition table: the states each state may be entered from, Kafka's
``validPreviousStates``) and the reply tables: what a request from a valid member of the
current generation gets in each live state. The coordinator looks replies up here instead
of branching on the state; a ``Reply`` marker means "go on", an int is the error code
answered as is. A Dead group answers COORDINATOR_NOT_AVAILABLE to every member request
before any table is consulted. Pure data; no trio, no I/O.

    state                 Heartbeat               SyncGroup               OffsetCommit
    Empty                 UNKNOWN_MEMBER_ID       UNKNOWN_MEMBER_ID       store
    PreparingRebalance    REBALANCE_IN_PROGRESS   REBALANCE_IN_PROGRESS   store
    CompletingRebalance   NONE                    park until assigned     REBALANCE_IN_PROGRESS
    Stable                NONE                    answer the assignment   store
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

from ...protocol.errors import ErrorCode


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


EMPTY = GroupState.EMPTY
PREPARING_REBALANCE = GroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

LIVE_STATES = (EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE)

# target state -> the states it may be entered from
VALID_PREVIOUS: Mapping[GroupState, frozenset[GroupState]] = MappingProxyType(
    {
        # a join (new member, leader rejoin, changed metadata), a leave or a failure
        PREPARING_REBALANCE: frozenset({EMPTY, COMPLETING_REBALANCE, STABLE}),
        # every expected member joined, or the rebalance timeout passed
        COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
        # the leader's assignment was stored
        STABLE: frozenset({COMPLETING_REBALANCE}),
        # the join phase ended with no member left
        EMPTY: frozenset({PREPARING_REBALANCE}),
        # deleted, or expired with no offsets left
        DEAD: frozenset(GroupState),
    }
)


class InvalidTransition(Exception):
    """A transition the table does not allow: a coordinator bug, never a client's fault."""


def can_enter(target: GroupState, current: GroupState) -> bool:
    return current in VALID_PREVIOUS[target]


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    if not can_enter(target, current):
        allowed = ", ".join(sorted(str(s) for s in VALID_PREVIOUS[target]))
        raise InvalidTransition(
            f"group {group_id!r} cannot go from {current} to {target} (only from {allowed})"
        )


class Reply(enum.Enum):
    """A table entry that is not an error code: what the coordinator does next."""

    PARK = "park"  # wait in the purgatory for the leader's assignment
    ANSWER = "answer"  # answer now from the current generation
    STORE = "store"  # write the offsets, answer once they are in the log


Outcome = Reply | int

HEARTBEAT: Mapping[GroupState, Outcome] = MappingProxyType(
    {
        EMPTY: ErrorCode.UNKNOWN_MEMBER_ID,
        PREPARING_REBALANCE: ErrorCode.REBALANCE_IN_PROGRESS,
        # members may heartbeat between their JoinGroup answer and their SyncGroup
        COMPLETING_REBALANCE: ErrorCode.NONE,
        STABLE: ErrorCode.NONE,
    }
)

SYNC_GROUP: Mapping[GroupState, Outcome] = MappingProxyType(
    {
        EMPTY: ErrorCode.UNKNOWN_MEMBER_ID,
        PREPARING_REBALANCE: ErrorCode.REBALANCE_IN_PROGRESS,
        COMPLETING_REBALANCE: Reply.PARK,
        STABLE: Reply.ANSWER,
    }
)

OFFSET_COMMIT: Mapping[GroupState, Outcome] = MappingProxyType(
    {
        EMPTY: Reply.STORE,
        # the member learns of the rebalance from its next heartbeat; its commit counts
        PREPARING_REBALANCE: Reply.STORE,
        # the member has its new generation but not its assignment yet
        COMPLETING_REBALANCE: ErrorCode.REBALANCE_IN_PROGRESS,
        STABLE: Reply.STORE,
    }
)

# A JoinGroup from a known member (not pending, member id valid). ANSWER: nothing changed,
# answer with the current generation; PARK: update the member and (re)start a rebalance.
REJOIN: Mapping[GroupState, Outcome] = MappingProxyType(
    {
        EMPTY: ErrorCode.UNKNOWN_MEMBER_ID,
        PREPARING_REBALANCE: Reply.PARK,
        # ANSWER only if the member's protocols are unchanged (else PARK)
        COMPLETING_REBALANCE: Reply.ANSWER,
        # ANSWER only for a follower with unchanged protocols (else PARK)
        STABLE: Reply.ANSWER,
    }
)

DELETE_GROUP: Mapping[GroupState, Outcome] = MappingProxyType(
    {
        EMPTY: Reply.STORE,  # tombstones for the group and its offsets
        PREPARING_REBALANCE: ErrorCode.NON_EMPTY_GROUP,
        COMPLETING_REBALANCE: ErrorCode.NON_EMPTY_GROUP,
        STABLE: ErrorCode.NON_EMPTY_GROUP,
        DEAD: ErrorCode.GROUP_ID_NOT_FOUND,
    }
)
