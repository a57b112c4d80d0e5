"""The mute state machine is Kafka's table: every legal transition, every illegal one raises."""

from __future__ import annotations

import itertools

import pytest

from trio_broker.network.mute import IllegalMuteTransition, MuteEvent, MuteState, transition

S, E = MuteState, MuteEvent

LEGAL = [
    (S.NOT_MUTED, E.MUTE, S.MUTED),
    (S.MUTED, E.UNMUTE, S.NOT_MUTED),
    (S.MUTED, E.REQUEST_RECEIVED, S.MUTED_AND_RESPONSE_PENDING),
    (S.MUTED_AND_RESPONSE_PENDING, E.RESPONSE_SENT, S.MUTED),
    (S.MUTED_AND_RESPONSE_PENDING, E.THROTTLE_STARTED, S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING),
    (S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING, E.RESPONSE_SENT, S.MUTED_AND_THROTTLED),
    (S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING, E.THROTTLE_ENDED, S.MUTED_AND_RESPONSE_PENDING),
    (S.MUTED_AND_THROTTLED, E.THROTTLE_ENDED, S.MUTED),
]


@pytest.mark.parametrize(("state", "event", "after"), LEGAL)
def test_legal_transitions(state: MuteState, event: MuteEvent, after: MuteState) -> None:
    assert transition(state, event) is after


ILLEGAL = [
    (s, e)
    for s, e in itertools.product(MuteState, MuteEvent)
    if (s, e) not in {(a, b) for a, b, _ in LEGAL}
]


@pytest.mark.parametrize(("state", "event"), ILLEGAL)
def test_illegal_transitions_raise(state: MuteState, event: MuteEvent) -> None:
    with pytest.raises(IllegalMuteTransition):
        transition(state, event)


def test_a_throttled_request_cycle() -> None:
    """KIP-219: response sent at once, the channel stays muted until the throttle ends."""
    state = S.NOT_MUTED
    for event in (E.MUTE, E.REQUEST_RECEIVED, E.THROTTLE_STARTED, E.RESPONSE_SENT):
        state = transition(state, event)
    assert state is S.MUTED_AND_THROTTLED
    state = transition(transition(state, E.THROTTLE_ENDED), E.UNMUTE)
    assert state is S.NOT_MUTED
