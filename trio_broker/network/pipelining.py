"""Pipelined requests of one connection handed to a handler together, answered in order.

Owns: ``PIPELINED`` (the api keys whose pipelined requests may go together: Produce),
``MAX_GROUP`` and ``take_followers`` (the requests already received behind the one being
handed over, parsed and reserved). A connection's group in flight, which response goes out
next and the throttles in force, is its ``connection.ResponseOrder``.

Why: a producer writing to many partitions pipelines its requests (librdkafka sends one
Produce request a partition, up to ``max.in.flight`` of them), and Kafka's rule of one
request in flight per connection makes each of them pay the whole cycle alone: handed to a
handler, a storage job on an io thread and back, answered, only then the next one read.
Here the requests already whole in the connection's buffer when one is handed over go with
it (up to ``MAX_GROUP``); the handler runs them one after the other, in arrival order, in
one storage job (``apis.data.produce.handle_pipelined``), and the processor sends their
responses in request order, several per write. Nothing a client sees changes but the
time: each request is processed after the one before it and answered in order, as with
one in flight. What differs from Kafka: the requests of a group are processed before the
first one's response is written, so a quota throttle earned by one of them mutes the
connection after the group rather than after that request (the throttle is as long: its
time is what brings the client's rate back to its quota), and a throttle lasts until the
longest of the group's ends.

Not grouped: another api key behind the first (it waits for the group, as any request
waits for the one in flight), a frame of a version the listener does not serve (it is
read, in order, after the group), a frame whose bytes the memory pool cannot reserve
now, and connections with SASL (each of their requests passes the authenticator alone).
Must not: interpret request bodies (the handler's business), or reorder anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..protocol.api import ApiKey
from ..protocol.errors import RemoteProtocolError
from ..protocol.schema import VersionRange
from .connection import Connection
from .memory_pool import MemoryPool
from .request import Request

PIPELINED = frozenset({int(ApiKey.Produce)})
# Requests a group holds at most: a bound on how long the first one's response waits for
# the ones behind it (each a small append), and on the memory one group reserves.
MAX_GROUP = 64


def take_followers(
    conn: Connection,
    leader: Request,
    versions: Mapping[int, VersionRange],
    pool: MemoryPool | None,
    parse: Callable[[Connection, bytes | bytearray], Request],
) -> list[Request]:
    """The requests of ``leader``'s api key already whole in ``conn``'s buffer, in order,
    parsed (``parse``) with their memory reserved, up to ``MAX_GROUP`` with the leader.
    A frame that does not parse stops the group; its error is kept in ``conn.order`` and
    raised once the group is answered, as a request read after them would raise it."""
    key = leader.spec.key
    framer = conn.framer
    served = versions.get(key)
    followers: list[Request] = []
    while len(followers) < MAX_GROUP - 1:
        try:
            head = framer.whole_frame_key()
        except RemoteProtocolError:
            break  # a bad size prefix: the next read reports it, after the group
        if head is None or head[0] != key or served is None or head[1] not in served:
            break
        size = framer.frame_size()
        assert size is not None
        if pool is not None and not pool.try_reserve(size):
            break
        conn.reserved = size
        frame = framer.next_frame()
        assert frame is not None
        try:
            request = parse(conn, frame)
        except RemoteProtocolError as exc:
            conn.order.error = exc
            break
        request.group_index = len(followers) + 1
        followers.append(request)
    return followers
