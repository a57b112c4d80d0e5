"""The authorizer's decisions as tables: Kafka's rules, one row per case."""

from __future__ import annotations

import pytest

from trio_broker.security.acl import (
    AclBinding,
    AclError,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from trio_broker.security.authorizer import Authorizer
from trio_broker.security.denials import DenialLog

ALICE, BOB = "User:alice", "User:bob"
HOST, OTHER_HOST = "10.0.0.1", "10.0.0.2"


def acl(spec: str, principal: str = ALICE, host: str = "*", resource: str = "TOPIC") -> AclBinding:
    """``"ALLOW READ LITERAL orders"`` -> a binding."""
    permission, operation, pattern, name = spec.split()
    return AclBinding.of(resource, name, pattern, principal, host, operation, permission)


# (bindings, principal, host, operation, topic, allowed)
CASES = [
    ([acl("ALLOW READ LITERAL orders")], ALICE, HOST, "READ", "orders", True),
    ([acl("ALLOW READ LITERAL orders")], BOB, HOST, "READ", "orders", False),
    ([acl("ALLOW READ LITERAL orders")], ALICE, HOST, "WRITE", "orders", False),
    ([acl("ALLOW READ LITERAL orders")], ALICE, HOST, "READ", "orders2", False),
    # implied DESCRIBE, not the other way round
    ([acl("ALLOW READ LITERAL orders")], ALICE, HOST, "DESCRIBE", "orders", True),
    ([acl("ALLOW WRITE LITERAL orders")], ALICE, HOST, "DESCRIBE", "orders", True),
    ([acl("ALLOW DELETE LITERAL orders")], ALICE, HOST, "DESCRIBE", "orders", True),
    ([acl("ALLOW ALTER LITERAL orders")], ALICE, HOST, "DESCRIBE", "orders", True),
    ([acl("ALLOW DESCRIBE LITERAL orders")], ALICE, HOST, "READ", "orders", False),
    ([acl("ALLOW CREATE LITERAL orders")], ALICE, HOST, "DESCRIBE", "orders", False),
    ([acl("ALLOW ALTER_CONFIGS LITERAL orders")], ALICE, HOST, "DESCRIBE_CONFIGS", "orders", True),
    ([acl("ALLOW DESCRIBE_CONFIGS LITERAL orders")], ALICE, HOST, "ALTER_CONFIGS", "orders", False),
    ([acl("ALLOW ALL LITERAL orders")], ALICE, HOST, "DELETE", "orders", True),
    # DENY wins, and implies nothing
    (
        [acl("ALLOW ALL LITERAL orders"), acl("DENY WRITE LITERAL orders")],
        ALICE,
        HOST,
        "WRITE",
        "orders",
        False,
    ),
    (
        [acl("ALLOW ALL LITERAL orders"), acl("DENY WRITE LITERAL orders")],
        ALICE,
        HOST,
        "READ",
        "orders",
        True,
    ),
    (
        [acl("ALLOW READ LITERAL orders"), acl("DENY ALL PREFIXED ord")],
        ALICE,
        HOST,
        "READ",
        "orders",
        False,
    ),
    (
        [acl("ALLOW DESCRIBE LITERAL orders"), acl("DENY READ LITERAL orders")],
        ALICE,
        HOST,
        "DESCRIBE",
        "orders",
        True,
    ),
    (
        [acl("ALLOW READ LITERAL *"), acl("DENY READ LITERAL orders", "User:*")],
        ALICE,
        HOST,
        "READ",
        "orders",
        False,
    ),
    # wildcards and prefixes
    ([acl("ALLOW READ LITERAL *")], ALICE, HOST, "READ", "anything", True),
    ([acl("ALLOW READ PREFIXED ord")], ALICE, HOST, "READ", "orders", True),
    ([acl("ALLOW READ PREFIXED ord")], ALICE, HOST, "READ", "or", False),
    ([acl("ALLOW READ PREFIXED orders")], ALICE, HOST, "READ", "orders", True),
    ([acl("ALLOW READ LITERAL ord*")], ALICE, HOST, "READ", "orders", False),
    ([acl("ALLOW READ LITERAL orders", "User:*")], BOB, HOST, "READ", "orders", True),
    # hosts
    ([acl("ALLOW READ LITERAL orders", host=HOST)], ALICE, HOST, "READ", "orders", True),
    ([acl("ALLOW READ LITERAL orders", host=HOST)], ALICE, OTHER_HOST, "READ", "orders", False),
    (
        [acl("ALLOW READ LITERAL orders"), acl("DENY READ LITERAL orders", host=OTHER_HOST)],
        ALICE,
        HOST,
        "READ",
        "orders",
        True,
    ),
    (
        [acl("ALLOW READ LITERAL orders"), acl("DENY READ LITERAL orders", host=OTHER_HOST)],
        ALICE,
        OTHER_HOST,
        "READ",
        "orders",
        False,
    ),
    # an ACL for someone else still makes the resource one "with ACLs"
    ([acl("ALLOW READ LITERAL orders", BOB)], ALICE, HOST, "READ", "orders", False),
]


@pytest.mark.parametrize(("bindings", "principal", "host", "operation", "topic", "expected"), CASES)
def test_kafka_rules(
    bindings: list[AclBinding],
    principal: str,
    host: str,
    operation: str,
    topic: str,
    expected: bool,
) -> None:
    authorizer = Authorizer(bindings)
    op = AclOperation[operation]
    assert authorizer.authorize(principal, host, op, ResourceType.TOPIC, topic) is expected
    # and the cached answer is the same
    assert authorizer.authorize(principal, host, op, ResourceType.TOPIC, topic) is expected


@pytest.mark.parametrize("allow_if_no_acl", [False, True])
def test_a_resource_without_acls_follows_allow_everyone_if_no_acl_found(
    allow_if_no_acl: bool,
) -> None:
    authorizer = Authorizer(
        [acl("ALLOW READ LITERAL orders"), acl("ALLOW READ LITERAL g", resource="GROUP")],
        allow_if_no_acl=allow_if_no_acl,
    )
    for rtype, name in ((ResourceType.TOPIC, "payments"), (ResourceType.CLUSTER, "kafka-cluster")):
        assert authorizer.authorize(ALICE, HOST, AclOperation.READ, rtype, name) is allow_if_no_acl


def test_super_users_may_do_everything() -> None:
    authorizer = Authorizer([acl("DENY ALL LITERAL *", "User:*")], super_users=[BOB])
    assert authorizer.authorize(BOB, HOST, AclOperation.WRITE, ResourceType.TOPIC, "x")
    assert not authorizer.authorize(ALICE, HOST, AclOperation.WRITE, ResourceType.TOPIC, "x")


def test_an_acl_for_anyone_else_still_closes_the_no_acl_fallback() -> None:
    authorizer = Authorizer([acl("ALLOW READ LITERAL orders", BOB)], allow_if_no_acl=True)
    assert not authorizer.authorize(ALICE, HOST, AclOperation.READ, ResourceType.TOPIC, "orders")
    assert authorizer.authorize(ALICE, HOST, AclOperation.READ, ResourceType.TOPIC, "other")


# (bindings, may WRITE some topic) — InitProducerId's question (KIP-679)
ANY_CASES = [
    ([], False),
    ([acl("ALLOW WRITE LITERAL a")], True),
    ([acl("ALLOW WRITE PREFIXED a")], True),
    ([acl("ALLOW READ LITERAL a")], False),
    ([acl("ALLOW ALL LITERAL a")], True),
    ([acl("ALLOW WRITE LITERAL a", BOB)], False),
    ([acl("ALLOW WRITE LITERAL ab"), acl("DENY WRITE PREFIXED a")], False),
    ([acl("ALLOW WRITE PREFIXED ab"), acl("DENY WRITE LITERAL ab")], True),
    ([acl("ALLOW WRITE LITERAL a"), acl("DENY WRITE LITERAL *")], False),
    ([acl("ALLOW WRITE LITERAL a"), acl("DENY WRITE LITERAL b")], True),
]


@pytest.mark.parametrize(("bindings", "expected"), ANY_CASES)
def test_authorize_any_topic(bindings: list[AclBinding], expected: bool) -> None:
    authorizer = Authorizer(bindings)
    assert authorizer.authorize_any(ALICE, HOST, AclOperation.WRITE, ResourceType.TOPIC) is expected


STORED = [
    acl("ALLOW READ LITERAL orders"),
    acl("ALLOW READ PREFIXED ord"),
    acl("DENY WRITE LITERAL *", BOB),
    acl("ALLOW READ LITERAL orders", resource="GROUP"),
]

# (filter, indexes of STORED it matches)
FILTERS = [
    (AclFilter(), [0, 1, 2, 3]),
    (AclFilter(resource_type=ResourceType.TOPIC), [0, 1, 2]),
    (AclFilter(resource_name="orders"), [0, 3]),
    (AclFilter(resource_name="orders", pattern_type=PatternType.LITERAL), [0, 3]),
    (AclFilter(resource_name="ord", pattern_type=PatternType.PREFIXED), [1]),
    (AclFilter(ResourceType.TOPIC, "orders", PatternType.MATCH), [0, 1, 2]),
    (AclFilter(ResourceType.TOPIC, "other", PatternType.MATCH), [2]),
    (AclFilter(principal=BOB), [2]),
    (AclFilter(host="10.0.0.9"), []),
    (AclFilter(operation=AclOperation.WRITE), [2]),
    (AclFilter(permission=AclPermissionType.ALLOW), [0, 1, 3]),
]


@pytest.mark.parametrize(("acl_filter", "expected"), FILTERS)
def test_filters(acl_filter: AclFilter, expected: list[int]) -> None:
    assert sorted(Authorizer(STORED).find(acl_filter), key=AclBinding.sort_key) == sorted(
        (STORED[i] for i in expected), key=AclBinding.sort_key
    )


BAD_BINDINGS = [
    (("ANY", "t", "LITERAL", ALICE, "*", "READ", "ALLOW"), "definite resource type"),
    (("TOPIC", "t", "MATCH", ALICE, "*", "READ", "ALLOW"), "LITERAL or PREFIXED"),
    (("TOPIC", "", "LITERAL", ALICE, "*", "READ", "ALLOW"), "non-empty resource name"),
    (("TOPIC", "t", "LITERAL", "alice", "*", "READ", "ALLOW"), "Type:name"),
    (("TOPIC", "t", "LITERAL", ALICE, "", "READ", "ALLOW"), "host"),
    (("TOPIC", "t", "LITERAL", ALICE, "*", "ANY", "ALLOW"), "definite operation"),
    (("TOPIC", "t", "LITERAL", ALICE, "*", "READ", "ANY"), "ALLOW or DENY"),
    (("TOPIC", "t", "LITERAL", ALICE, "*", "JUMP", "ALLOW"), "is not one of"),
    (("CLUSTER", "c", "LITERAL", ALICE, "*", "ALTER", "ALLOW"), "kafka-cluster"),
    ((99, "t", 3, ALICE, "*", 3, 3), "resource type 99"),
]


@pytest.mark.parametrize(("fields", "message"), BAD_BINDINGS)
def test_bad_bindings_are_refused_with_a_reason(fields: tuple[object, ...], message: str) -> None:
    with pytest.raises(AclError, match=message):
        AclBinding.of(*fields)


def test_a_filter_may_not_hold_unknown_values() -> None:
    with pytest.raises(AclError, match="UNKNOWN"):
        AclFilter.of(ResourceType.UNKNOWN)
    with pytest.raises(AclError, match="UNKNOWN"):
        AclFilter.of(operation=AclOperation.UNKNOWN)


def test_changes_make_a_new_authorizer_with_fresh_decisions() -> None:
    before = Authorizer([acl("ALLOW READ LITERAL orders")])
    assert before.authorize(ALICE, HOST, AclOperation.READ, ResourceType.TOPIC, "orders")
    after = before.with_added([acl("DENY READ PREFIXED o")])
    assert not after.authorize(ALICE, HOST, AclOperation.READ, ResourceType.TOPIC, "orders")
    assert len(after) == 2 and len(before) == 1
    again = after.without([acl("DENY READ PREFIXED o")])
    assert again.authorize(ALICE, HOST, AclOperation.READ, ResourceType.TOPIC, "orders")
    assert len(after.with_added([acl("ALLOW READ LITERAL orders")])) == 2  # kept once


def test_denials_are_logged_once_per_interval_with_the_count_suppressed() -> None:
    now = [0.0]
    denials = DenialLog(60.0, clock=lambda: now[0])
    key = (ALICE, HOST, "WRITE", "TOPIC", "orders")
    assert denials.note(key) == 0
    assert [denials.note(key) for _ in range(100)] == [None] * 100
    assert denials.note(("other",)) == 0  # another key logs on its own
    now[0] = 61.0
    assert denials.note(key) == 100
    assert denials.note(key) is None
