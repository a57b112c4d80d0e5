"""The mute state machine of a connection, as a transition table (Kafka's ChannelMuteState).

Owns: ``MuteState`` (Kafka's five states), ``MuteEvent`` and the table ``TRANSITIONS``.
A connection is muted while a request of it is in flight, so that its responses go out in
request order; a throttled connection stays muted until its throttle ends (KIP-219).
Kafka's four channel events (request received, response sent, throttle started, throttle
ended) are here, plus the two plain operations mute and unmute, all in one table. An event
with no entry for the current state is a bug in the caller: ``IllegalMuteTransition``.
"""

from __future__ import annotations

import enum


class MuteState(enum.Enum):
    NOT_MUTED = "NOT_MUTED"
    MUTED = "MUTED"
    MUTED_AND_RESPONSE_PENDING = "MUTED_AND_RESPONSE_PENDING"
    MUTED_AND_THROTTLED = "MUTED_AND_THROTTLED"
    MUTED_AND_THROTTLED_AND_RESPONSE_PENDING = "MUTED_AND_THROTTLED_AND_RESPONSE_PENDING"


class MuteEvent(enum.Enum):
    MUTE = "mute"
    UNMUTE = "unmute"
    REQUEST_RECEIVED = "request_received"
    RESPONSE_SENT = "response_sent"
    THROTTLE_STARTED = "throttle_started"
    THROTTLE_ENDED = "throttle_ended"


S = MuteState
E = MuteEvent

TRANSITIONS: dict[tuple[MuteState, MuteEvent], MuteState] = {
    (S.NOT_MUTED, E.MUTE): S.MUTED,
    (S.MUTED, E.UNMUTE): S.NOT_MUTED,
    (S.MUTED, E.REQUEST_RECEIVED): S.MUTED_AND_RESPONSE_PENDING,
    (S.MUTED_AND_RESPONSE_PENDING, E.RESPONSE_SENT): S.MUTED,
    (S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING, E.RESPONSE_SENT): S.MUTED_AND_THROTTLED,
    (S.MUTED_AND_RESPONSE_PENDING, E.THROTTLE_STARTED): S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING,
    (S.MUTED_AND_THROTTLED, E.THROTTLE_ENDED): S.MUTED,
    (S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING, E.THROTTLE_ENDED): S.MUTED_AND_RESPONSE_PENDING,
}


class IllegalMuteTransition(RuntimeError):
    def __init__(self, state: MuteState, event: MuteEvent) -> None:
        super().__init__(f"no mute transition from {state.value} on {event.value}")
        self.state = state
        self.event = event


def transition(state: MuteState, event: MuteEvent) -> MuteState:
    """The state after ``event`` in ``state``; raises ``IllegalMuteTransition`` if none."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalMuteTransition(state, event) from None
