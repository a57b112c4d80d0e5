"""Kafka's incremental operations on current values (pure): SET, DELETE, APPEND and
SUBTRACT on list keys, starting from the value in force, and the refusals."""

from __future__ import annotations

import pytest

from trio_broker.server.config_changes import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    ChangeRefused,
    Refusal,
    incremental,
)


def test_append_and_subtract_work_on_the_list_in_force() -> None:
    effective = {"log.cleanup.policy": "delete", "listeners": "A://h:1"}
    changes = incremental(
        {},
        [("log.cleanup.policy", APPEND, "compact,delete"), ("num.io.threads", SET, "4")],
        topic=False,
        effective=effective,
    )
    assert changes == {"log.cleanup.policy": "delete,compact", "num.io.threads": "4"}
    assert incremental(
        {"cleanup.policy": "delete,compact"},
        [("cleanup.policy", SUBTRACT, "delete"), ("retention.ms", DELETE, None)],
        topic=True,
        effective={},
    ) == {"cleanup.policy": "compact", "retention.ms": None}


@pytest.mark.parametrize(
    ("operations", "kind"),
    [
        ([("retention.ms", APPEND, "1")], Refusal.INVALID),  # not a list
        ([("retention.ms", SET, "1"), ("retention.ms", DELETE, None)], Refusal.REQUEST),
        ([("retention.ms", 9, "1")], Refusal.REQUEST),
    ],
)
def test_refusals(operations: list[tuple[str, int, str | None]], kind: Refusal) -> None:
    with pytest.raises(ChangeRefused) as info:
        incremental({}, operations, topic=True, effective={})
    assert info.value.kind is kind and info.value.key == "retention.ms"
