"""KIP-848's consumer groups on this coordinator: ConsumerGroupHeartbeat, as Kafka's
``GroupMetadataManager.consumerGroupHeartbeat`` handles it, member expiry, and what
offsets and the admin APIs need to know of these groups.

Owns: ``ConsumerGroupConfig`` and ``ConsumerGroups`` (every consumer-protocol group this
broker coordinates). One heartbeat: (1) the member is created or updated, and the group
epoch is bumped when a subscription, or the topics it resolves to, changed; (2) when the
group epoch is past the assignment epoch, the target assignment is computed again with
the group's server-side assignor; (3) the member is reconciled one step towards its target
(``model.reconcile``). Session timeouts (``group.consumer.session.timeout.ms``) and
rebalance timeouts (the member's own, for revoking) fence a member: it leaves the group
and the group epoch is bumped, so the others' next heartbeats pick up its partitions; or,
were it the last consumer-protocol member among classic ones, the coordinator's
``downgrade`` makes the group classic again (a heartbeat to a classic group with members
asks its ``upgrade`` first). Steps (1)-(3) serve classic members inside the group too
(``classic``, through ``update_member``).

The coordinator writes the groups' records after each change (a heartbeat, or
``on_change`` from a timer) and hands those read back to ``restore``. Must not know
requests or the wire (``apis/groups/consumer.py`` translates), nor write records.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial

from ....apis.group_services import (
    ConsumerGroupDescription,
    ConsumerHeartbeat,
    ConsumerHeartbeatResult,
    ConsumerMemberDescription,
    TopicLookup,
)
from ....protocol.errors import ErrorCode
from ..timers import Timers
from .assignors import ASSIGNORS, MemberSpec, assign
from .checks import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupConfig,
    HeartbeatError,
    check_epoch,
    new_member_id,
    validate_heartbeat,
)
from .model import (
    NO_PARTITIONS,
    ConsumerGroup,
    ConsumerMember,
    GroupState,
    MemberState,
    Partitions,
    Timings,
    reconcile,
)
from .topics import by_topic, partitions_of, subscribed, subscription_metadata

log = logging.getLogger("trio_broker.groups.consumer")


class ConsumerGroups:
    def __init__(
        self,
        config: ConsumerGroupConfig,
        timers: Timers,
    ) -> None:
        self.config = config
        self.timers = timers
        self.groups: dict[str, ConsumerGroup] = {}
        # the coordinator's online migration (KIP-848): a classic group with members as a
        # consumer group (None: there is none; HeartbeatError: it may not be upgraded),
        # and a consumer group left with classic members only, made classic again
        self.upgrade: Callable[[str, TopicLookup], ConsumerGroup | None] = lambda g, t: None
        self.downgrade: Callable[[ConsumerGroup, str], bool] = lambda group, member: False
        self.rebalances = 0  # group epoch bumps, all groups together
        self.assignment_times = Timings()  # the server-side assignor's runs
        # a group changed outside a heartbeat (a timer fenced a member, or it was dropped)
        self.on_change: Callable[[str], object] = lambda group_id: None

    # ============================================================ heartbeat

    def heartbeat(self, p: ConsumerHeartbeat, topics: TopicLookup) -> ConsumerHeartbeatResult:
        try:
            validate_heartbeat(p, self.config.assignors)
            if p.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(p)
            return self._heartbeat(p, topics)
        except HeartbeatError as e:
            return ConsumerHeartbeatResult(e.code, e.message)

    def _group_for(self, p: ConsumerHeartbeat, topics: TopicLookup) -> ConsumerGroup:
        group = self.groups.get(p.group_id)
        if group is not None:
            return group
        if p.member_epoch != 0:
            # Kafka says GROUP_ID_NOT_FOUND; a member of a group this coordinator lost
            # (its records never written) is better told to join again.
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Consumer group {p.group_id} has no member {p.member_id}.",
            )
        return self.upgrade(p.group_id, topics) or ConsumerGroup(p.group_id)

    def _member_for(
        self, group: ConsumerGroup, member_id: str, p: ConsumerHeartbeat
    ) -> ConsumerMember:
        """Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember."""
        existing = group.members.get(member_id)
        if p.instance_id is not None and existing is None:
            static = group.static_member(p.instance_id)
            if p.member_epoch != 0:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group.group_id}.",
                )
            if static is not None:
                if static.member_epoch != STATIC_LEAVE_EPOCH:
                    raise HeartbeatError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {static.member_id} with instance id {p.instance_id} "
                        "is not yet released.",
                    )
                # the static member is back under a new member id: it takes over the old
                # one's assignment and target
                target = group.target.get(static.member_id, NO_PARTITIONS)
                group.remove(static.member_id)
                self.cancel_timers(group.group_id, static.member_id)
                group.target[member_id] = target
                taken = replace(
                    static, member_id=member_id, member_epoch=0, previous_member_epoch=0
                )
                group.put(taken)
                return taken
        if existing is None:
            if p.member_epoch != 0:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group.group_id}.",
                )
            if len(group.members) >= self.config.max_size:
                raise HeartbeatError(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    f"The consumer group has reached its maximum capacity of "
                    f"{self.config.max_size} members.",
                )
            log.info("group %s: member %s joins (consumer protocol)", group.group_id, member_id)
            return ConsumerMember(member_id)
        if p.instance_id is not None and existing.instance_id not in (None, p.instance_id):
            raise HeartbeatError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Member {member_id} does not have instance id {p.instance_id}.",
            )
        if p.member_epoch == 0:
            # a member joining again under its own id (after it was fenced, or after an
            # unsubscribe): it starts over, holding nothing (it owns nothing, checked above)
            restart = replace(
                existing,
                member_epoch=0,
                previous_member_epoch=existing.member_epoch,
                state=MemberState.STABLE,
                assigned=NO_PARTITIONS,
                pending_revocation=NO_PARTITIONS,
            )
            group.put(restart)
            return restart
        check_epoch(existing, p)
        return existing

    def _heartbeat(self, p: ConsumerHeartbeat, topics: TopicLookup) -> ConsumerHeartbeatResult:
        group = self._group_for(p, topics)
        member_id = p.member_id or new_member_id()
        member = self._member_for(group, member_id, p)
        updated = replace(
            member,
            instance_id=p.instance_id if p.instance_id is not None else member.instance_id,
            rack_id=p.rack_id if p.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(
                p.rebalance_timeout_ms
                if p.rebalance_timeout_ms != -1
                else member.rebalance_timeout_ms
            ),
            server_assignor=p.server_assignor
            if p.server_assignor is not None
            else member.server_assignor,
            subscribed_topic_names=(
                p.subscribed_topic_names
                if p.subscribed_topic_names is not None
                else member.subscribed_topic_names
            ),
            subscribed_topic_regex=(
                (p.subscribed_topic_regex or None)
                if p.subscribed_topic_regex is not None
                else member.subscribed_topic_regex
            ),
            client_id=p.client_id,
            client_host=p.client_host,
        )
        owned = partitions_of(p.owned) if p.owned is not None else None
        reconciled = self.update_member(group, member, updated, topics, owned)
        self.schedule_session(group.group_id, member_id)

        full = p.member_epoch == 0 or (
            p.rebalance_timeout_ms != -1
            and p.subscribed_topic_names is not None
            and p.owned is not None
        )
        changed = reconciled.assigned != member.assigned
        return ConsumerHeartbeatResult(
            ErrorCode.NONE,
            member_id=member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_interval_ms,
            assignment=by_topic(reconciled.assigned) if full or changed else None,
        )

    def update_member(
        self,
        group: ConsumerGroup,
        member: ConsumerMember,
        updated: ConsumerMember,
        topics: TopicLookup,
        owned: Partitions | None,
    ) -> ConsumerMember:
        """Kafka's three steps for a member of either protocol: store ``updated`` (the
        group epoch bumped if it is new or its subscription, or the topics the group's
        subscriptions resolve to, changed), a new target assignment if the group epoch is
        past it, and the member reconciled one step towards its target. Returns the
        member as it is now."""
        member_id = updated.member_id
        bump = member_id not in group.members or (
            set(updated.subscribed_topic_names) != set(member.subscribed_topic_names)
            or updated.subscribed_topic_regex != member.subscribed_topic_regex
        )
        self.groups[group.group_id] = group
        group.put(updated)
        metadata = subscription_metadata(group, topics)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            bump = True
        if bump:
            self._bump(group)
        if group.group_epoch > group.assignment_epoch:
            self._assign(group)
        group.resolved_regexes = {
            m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex
        }
        target = group.target.get(member_id, NO_PARTITIONS)
        reconciled = reconcile(
            updated, group.assignment_epoch, target, group.partition_epochs, owned
        )
        if reconciled != updated:
            group.put(reconciled)
            key = ("consumer-rebalance", group.group_id, member_id)
            if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
                epoch = reconciled.member_epoch
                self.timers.schedule(
                    key,
                    max(reconciled.rebalance_timeout_ms, 0) / 1000,
                    lambda: self._rebalance_timeout(group.group_id, member_id, epoch),
                )
            else:
                self.timers.cancel(key)
        return reconciled

    def _bump(self, group: ConsumerGroup) -> None:
        group.group_epoch += 1
        self.rebalances += 1
        log.info("group %s: group epoch %d", group.group_id, group.group_epoch)

    def _assign(self, group: ConsumerGroup) -> None:
        """A new target assignment at the group epoch, by the group's assignor."""
        name = self._assignor_of(group)
        ids = dict(group.subscription_metadata.values())
        specs = {
            m.member_id: MemberSpec(
                subscribed=frozenset(
                    group.subscription_metadata[t][0]
                    for t in subscribed(m, group.subscription_metadata, group.resolved_regexes)
                ),
                instance_id=m.instance_id,
                current=group.target.get(m.member_id, NO_PARTITIONS),
            )
            for m in group.members.values()
        }
        began = time.perf_counter()
        targets = assign(name, specs, ids)
        self.assignment_times.add(time.perf_counter() - began)
        group.target = {m: frozenset(tps) for m, tps in targets.items()}
        group.assignment_epoch = group.group_epoch
        group.assignor_name = name

    def _assignor_of(self, group: ConsumerGroup) -> str:
        """Kafka's preferred server assignor: the one most members ask for, else the
        first of group.consumer.assignors."""
        asked = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
        if asked:
            return max(sorted(asked), key=lambda a: asked[a])
        return self.config.assignors[0] if self.config.assignors else next(iter(ASSIGNORS))

    # ================================================================ leaving

    def _leave(self, p: ConsumerHeartbeat) -> ConsumerHeartbeatResult:
        group = self.groups.get(p.group_id)
        member = None if group is None else group.members.get(p.member_id)
        if p.instance_id is not None and group is not None:
            member = group.static_member(p.instance_id)
            if member is not None and member.member_id != p.member_id:
                raise HeartbeatError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {p.member_id} with instance id {p.instance_id} is fenced "
                    f"by {member.member_id}.",
                )
        if group is None or member is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {p.member_id} is not a member of group {p.group_id}.",
            )
        if p.member_epoch == STATIC_LEAVE_EPOCH:
            # a static member away for a while: it keeps its partitions until its session
            # times out, and gets them back if it returns before
            group.put(
                replace(
                    member,
                    member_epoch=STATIC_LEAVE_EPOCH,
                    previous_member_epoch=member.member_epoch,
                    pending_revocation=NO_PARTITIONS,
                )
            )
            log.info("group %s: static member %s left for now", group.group_id, member.member_id)
        else:
            self.fence(group, member.member_id, "it left the group")
        return ConsumerHeartbeatResult(
            ErrorCode.NONE, member_id=p.member_id, member_epoch=p.member_epoch
        )

    def fence(self, group: ConsumerGroup, member_id: str, why: str) -> None:
        """Kafka's consumerGroupFenceMember: the member leaves and the group epoch is
        bumped; or, if it was the last consumer-protocol member among classic ones and
        group.consumer.migration.policy allows, the group becomes a classic group again
        (``downgrade``, the coordinator's)."""
        if member_id not in group.members:
            return
        if self._may_downgrade(group, member_id) and self.downgrade(group, member_id):
            log.info("group %s: %s left (%s): classic again", group.group_id, member_id, why)
            return
        self.remove_members(group, [member_id], why)

    def _may_downgrade(self, group: ConsumerGroup, member_id: str) -> bool:
        """Kafka's validateOnlineDowngradeWithFencedMember."""
        if not group.all_classic_except(member_id) or len(group.members) <= 1:
            return False
        if not self.config.downgrade_enabled:
            log.info("group %s: not downgraded to classic (migration policy)", group.group_id)
            return False
        return len(group.members) - 1 <= self.config.classic_max_size

    def remove_members(self, group: ConsumerGroup, member_ids: Iterable[str], why: str) -> None:
        """The members leave; the group epoch is bumped once if any did."""
        removed = [m for m in member_ids if group.remove(m) is not None]
        for member_id in removed:
            self.cancel_timers(group.group_id, member_id)
            log.info("group %s: member %s removed: %s", group.group_id, member_id, why)
        if removed:
            group.resolved_regexes &= {m.subscribed_topic_regex for m in group.members.values()}
            self._bump(group)

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        for kind in ("consumer-session", "consumer-rebalance", "consumer-join", "consumer-sync"):
            self.timers.cancel((kind, group_id, member_id))

    def schedule_session(self, group_id: str, member_id: str, timeout_ms: int = 0) -> None:
        self.timers.schedule(
            ("consumer-session", group_id, member_id),
            (timeout_ms or self.config.session_timeout_ms) / 1000,
            lambda: self._session_expired(group_id, member_id),
        )

    def _session_expired(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self.fence(group, member_id, "its session expired")
            self.on_change(group_id)

    def _rebalance_timeout(self, group_id: str, member_id: str, epoch: int) -> None:
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is not None and member is not None and member.member_epoch == epoch:
            self.fence(group, member_id, f"it did not revoke its partitions of epoch {epoch}")
            self.on_change(group_id)

    def forget_empty(self, keep: Callable[[str], bool]) -> None:
        """Drop the groups with no members, but those ``keep`` names (their offsets are
        still kept): Kafka removes an empty group once it has no offsets either."""
        for group_id in [g for g, group in self.groups.items() if not group.members]:
            if not keep(group_id):
                del self.groups[group_id]
                self.on_change(group_id)

    def restore(self, group: ConsumerGroup) -> None:
        """Serve ``group`` as the log left it (a coordinator move): its members' sessions
        start now, and a member still revoking gets its rebalance timeout again."""
        self.groups[group.group_id] = group
        for m in group.members.values():
            timeout = m.classic.session_timeout_ms if m.classic is not None else 0
            self.schedule_session(group.group_id, m.member_id, timeout)
            if m.state is MemberState.UNREVOKED_PARTITIONS:
                self.timers.schedule(
                    ("consumer-rebalance", group.group_id, m.member_id),
                    max(m.rebalance_timeout_ms, 0) / 1000,
                    partial(self._rebalance_timeout, group.group_id, m.member_id, m.member_epoch),
                )

    def unload(self, group_ids: Iterable[str]) -> None:
        """Forget groups this broker no longer coordinates."""
        for group_id in list(group_ids):
            group = self.groups.pop(group_id, None)
            for member_id in [] if group is None else list(group.members):
                self.cancel_timers(group_id, member_id)

    # ============================================================ offsets

    def validate_commit(self, group_id: str, member_id: str, member_epoch: int) -> int | None:
        """Kafka's ConsumerGroup.validateOffsetCommit; None: not a consumer group."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if member_epoch < 0 and not group.members:
            return ErrorCode.NONE  # an admin client, or a consumer without a group
        return _epoch_error(group.members.get(member_id), member_epoch)

    def validate_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """Kafka's ConsumerGroup.validateOffsetFetch."""
        group = self.groups.get(group_id)
        if group is None or (member_id is None and member_epoch < 0):
            return ErrorCode.NONE
        return _epoch_error(group.members.get(member_id or ""), member_epoch)

    def in_use(self, group_id: str) -> bool:
        """Whether ``group_id`` is a consumer group with members."""
        group = self.groups.get(group_id)
        return group is not None and bool(group.members)

    # ================================================================ admin

    def describe(self, group_id: str) -> ConsumerGroupDescription:
        group = self.groups.get(group_id)
        if group is None:
            return ConsumerGroupDescription(
                ErrorCode.GROUP_ID_NOT_FOUND,
                group_id,
                f"Group {group_id} not found.",
                state=str(GroupState.DEAD),
            )
        return ConsumerGroupDescription(
            ErrorCode.NONE,
            group_id,
            state=str(group.state),
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=group.assignor_name or self._assignor_of(group),
            members=tuple(
                ConsumerMemberDescription(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    member_epoch=m.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    assignment=by_topic(m.assigned),
                    target_assignment=by_topic(group.target.get(m.member_id, NO_PARTITIONS)),
                    member_type=0 if m.uses_classic else 1,
                )
                for m in group.members.values()
            ),
        )

    def overviews(self) -> list[tuple[str, str]]:
        """(group id, state) of every consumer group."""
        return [(g.group_id, str(g.state)) for g in self.groups.values()]


def _epoch_error(member: ConsumerMember | None, epoch: int) -> int:
    """Kafka's validateMemberEpoch: a classic member's stale generation is
    ILLEGAL_GENERATION, a consumer-protocol member's stale epoch STALE_MEMBER_EPOCH."""
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if epoch != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION if member.uses_classic else ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE
