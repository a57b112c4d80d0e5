"""Group protocols this broker does not serve, refused at once in their own words.

Owns the handler of ShareGroupHeartbeat (76, KIP-932's share groups), and the refusal
ConsumerGroupHeartbeat (68, KIP-848) gets when ``group.coordinator.rebalance.protocols``
lacks ``consumer`` (``apis.groups.consumer`` serves it otherwise). Both are listed in
ApiVersions and such a call is answered UNSUPPORTED_VERSION with a message saying what to
do instead, as Kafka answers them while the protocol is switched off
(``KafkaApis.handleConsumerGroupHeartbeat``).

Why listed rather than left out like every other API the broker does not serve:
librdkafka (2.16) checks ApiVersions before such a heartbeat, and when the API is missing
it marks the coordinator dead and asks for it again, for ever, without telling the
application (a consumer with ``group.protocol=consumer``, or a ``ShareConsumer``, just
never gets a message). Answered UNSUPPORTED_VERSION it raises a fatal error at once, and
so does the Java client. No other client sends these APIs unprompted; the other APIs the
broker does not serve stay out of ApiVersions and a request for one closes its connection,
as Kafka does for an API it does not enable (counted as ``UnknownApiKey``).
"""

from __future__ import annotations

from ..protocol.errors import ErrorCode
from ..protocol.messages.group_heartbeats import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from .context import RequestContext

CONSUMER_PROTOCOL_REFUSED = (
    "this broker serves the classic group protocol only (group.coordinator.rebalance."
    "protocols lacks consumer, KIP-848): set group.protocol=classic"
)
SHARE_GROUPS_REFUSED = (
    "this broker does not serve share groups (KIP-932): use a consumer group "
    "(group.protocol=classic)"
)


async def share_group_heartbeat(
    ctx: RequestContext, req: ShareGroupHeartbeatRequest
) -> ShareGroupHeartbeatResponse:
    return ShareGroupHeartbeatResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        error_message=SHARE_GROUPS_REFUSED,
    )
