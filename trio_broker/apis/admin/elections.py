"""ElectLeaders v0-2 (KIP-183, KIP-460): preferred (type 0, v0's only kind) or unclean
(type 1) leader elections, asked of the controller.

Needs ALTER on the cluster: without it every partition named is
CLUSTER_AUTHORIZATION_FAILED (top-level too from v1; none listed when all were asked for).
Null ``topic_partitions`` is every partition of the cluster; then the partitions whose
election was not needed are left out of the answer, as Kafka does. The elections are the
broker's (``elect_leaders``: the controller's, NOT_CONTROLLER on any other broker).
"""

from __future__ import annotations

from ...protocol.errors import ErrorCode
from ...protocol.messages.elections import ElectLeadersRequest, ElectLeadersResponse
from ..authz import Op, cluster_allowed
from ..context import RequestContext

Result = ElectLeadersResponse.ReplicaElectionResult


async def elect_leaders(ctx: RequestContext, req: ElectLeadersRequest) -> ElectLeadersResponse:
    asked = req.topic_partitions
    named = [(t.topic, p) for t in asked or () for p in t.partitions]
    if not cluster_allowed(ctx, Op.ALTER):
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _response(denied, dict.fromkeys(named, int(denied)))
    election_type = req.election_type if ctx.api_version >= 1 else 0
    wanted = None if asked is None else named
    results = await ctx.broker.elect_leaders(election_type, wanted, req.timeout_ms)
    if asked is None:
        results = {k: e for k, e in results.items() if e != ErrorCode.ELECTION_NOT_NEEDED}
    return _response(ErrorCode.NONE, results)


def _response(error: int, results: dict[tuple[str, int], int]) -> ElectLeadersResponse:
    by_topic: dict[str, list[Result.PartitionResult]] = {}
    for (topic, p), code in sorted(results.items()):
        by_topic.setdefault(topic, []).append(
            Result.PartitionResult(
                partition_id=p,
                error_code=code,
                error_message=None if code == ErrorCode.NONE else ErrorCode(code).name,
            )
        )
    return ElectLeadersResponse(
        error_code=error,
        replica_election_results=[
            Result(topic=t, partition_result=ps) for t, ps in by_topic.items()
        ],
    )
