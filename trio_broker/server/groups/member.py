"""One member of a classic group.

Owns: ``Member``: who it is (member id, static instance id, client id and host), its
timeouts, the protocols it supports in its order of preference with their metadata, its
current assignment, and the JoinGroup / SyncGroup answer it is waiting for, if any. It
must not change the group around it (``Group`` keeps the counts that depend on members)
and knows nothing of timers or storage.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ...apis.group_services import JoinResult, Pending, SyncResult

Protocols = tuple[tuple[str, bytes], ...]


@dataclass(eq=False, slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    awaiting_join: Pending[JoinResult] | None = None
    awaiting_sync: Pending[SyncResult] | None = None
    # Joined but not yet through a join phase: no session yet, the new-member join
    # timeout applies instead (a member that disconnected while parked goes away).
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: Sequence[tuple[str, bytes]]) -> bool:
        """Whether ``protocols`` are exactly this member's (same order, same metadata)."""
        return tuple((n, bytes(m)) for n, m in protocols) == self.protocols

    def vote(self, candidates: Iterable[str]) -> str:
        """This member's most preferred protocol among ``candidates``."""
        allowed = set(candidates)
        for name, _ in self.protocols:
            if name in allowed:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(allowed)}")
