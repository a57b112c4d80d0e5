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
    # Identity hashing in C (members are singletons, compared by identity): Enum's own
    # __hash__ is Python code, and the table below is looked up four times per request.
    __hash__ = object.__hash__

    NOT_MUTED = "NOT_MUTED"
    MUTED = "MUTED"
    MUTED_AND_RESPONSE_PENDING = "MUTED_AND_RESPONSE_PENDING"
    MUTED_AND_THROTTLED = "MUTED_AND_THROTTLED"
    MUTED_AND_THROTTLED_AND_RESPONSE_PENDING = "MUTED_AND_THROTTLED_AND_RESPONSE_PENDING"


class MuteEvent(enum.Enum):
    __hash__ = object.__hash__  # as MuteState's

    MUTE = "mute"
    UNMUTE = "unmute"
    REQUEST_RECEIVED = "request_received"
    RESPONSE_SENT = "response_sent"
    THROTTLE_STARTED = "throttle_started"
    THROTTLE_ENDED = "throttle_ended"


TRANSITIONS: dict[tuple[MuteState, MuteEvent], MuteState] = {
    (MuteState.NOT_MUTED, MuteEvent.MUTE): MuteState.MUTED,
    (MuteState.MUTED, MuteEvent.UNMUTE): MuteState.NOT_MUTED,
    (MuteState.MUTED, MuteEvent.REQUEST_RECEIVED): MuteState.MUTED_AND_RESPONSE_PENDING,
    (MuteState.MUTED_AND_RESPONSE_PENDING, MuteEvent.RESPONSE_SENT): MuteState.MUTED,
    (
        MuteState.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING,
        MuteEvent.RESPONSE_SENT,
    ): MuteState.MUTED_AND_THROTTLED,
    (
        MuteState.MUTED_AND_RESPONSE_PENDING,
        MuteEvent.THROTTLE_STARTED,
    ): MuteState.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING,
    (MuteState.MUTED_AND_THROTTLED, MuteEvent.THROTTLE_ENDED): MuteState.MUTED,
    (
        MuteState.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING,
        MuteEvent.THROTTLE_ENDED,
    ): MuteState.MUTED_AND_RESPONSE_PENDING,
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
