"""WriteTxnMarkers v0-1: a transaction coordinator's markers, written by this broker as the
leader of their partitions.

Needs CLUSTER_ACTION on the cluster (it is an inter-broker request): without it every
partition named is CLUSTER_AUTHORIZATION_FAILED and nothing is written. Otherwise each
marker goes to ``BrokerView.write_txn_markers`` (the same path the coordinator of this
broker calls), which answers once the ISR holds the markers (Kafka's acks=-1); the
response lists every partition asked for with its error code, per marker in the
request's order.
"""

from __future__ import annotations

from ...protocol.errors import ErrorCode
from ...protocol.messages.txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from ..authz import Op, cluster_allowed
from ..context import RequestContext
from ..services import TxnMarker

Result = WriteTxnMarkersResponse.WritableTxnMarkerResult
TopicResult = Result.WritableTxnMarkerTopicResult
PartitionResult = TopicResult.WritableTxnMarkerPartitionResult


async def handle(ctx: RequestContext, req: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    markers = [
        TxnMarker(
            producer_id=m.producer_id,
            producer_epoch=m.producer_epoch,
            coordinator_epoch=m.coordinator_epoch,
            commit=m.transaction_result,
            partitions=[(t.name, p) for t in m.topics for p in t.partition_indexes],
        )
        for m in req.markers
    ]
    if cluster_allowed(ctx, Op.CLUSTER_ACTION):
        results = await ctx.broker.write_txn_markers(markers)
    else:
        denied = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        results = [dict.fromkeys(m.partitions, denied) for m in markers]
    return WriteTxnMarkersResponse(
        markers=[
            Result(
                producer_id=m.producer_id,
                topics=[
                    TopicResult(
                        name=t.name,
                        partitions=[
                            PartitionResult(
                                partition_index=p,
                                error_code=codes.get((t.name, p), ErrorCode.UNKNOWN_SERVER_ERROR),
                            )
                            for p in t.partition_indexes
                        ],
                    )
                    for t in m.topics
                ],
            )
            for m, codes in zip(req.markers, results, strict=True)
        ]
    )
