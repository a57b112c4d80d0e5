"""WriteTxnMarkers (27): a transaction coordinator asks the partitions' leaders to write
the markers that commit or abort a transaction (v0-1, flexible from v1)."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class WriteTxnMarkersRequest(Request, api_key=27, versions="0-1", flexible="1+"):
    class WritableTxnMarker(Struct):
        class WritableTxnMarkerTopic(Struct):
            name: str = field("string")
            partition_indexes: list[int] = field("[]int32")

        producer_id: int = field("int64")
        producer_epoch: int = field("int16")
        transaction_result: bool = field("bool")  # False: abort, True: commit
        topics: list[WritableTxnMarkerTopic] = field(array(WritableTxnMarkerTopic))
        coordinator_epoch: int = field("int32")

    markers: list[WritableTxnMarker] = field(array(WritableTxnMarker))


class WriteTxnMarkersResponse(Response, api_key=27, versions="0-1", flexible="1+"):
    class WritableTxnMarkerResult(Struct):
        class WritableTxnMarkerTopicResult(Struct):
            class WritableTxnMarkerPartitionResult(Struct):
                partition_index: int = field("int32")
                error_code: int = field("int16")

            name: str = field("string")
            partitions: list[WritableTxnMarkerPartitionResult] = field(
                array(WritableTxnMarkerPartitionResult)
            )

        producer_id: int = field("int64")
        topics: list[WritableTxnMarkerTopicResult] = field(array(WritableTxnMarkerTopicResult))

    markers: list[WritableTxnMarkerResult] = field(array(WritableTxnMarkerResult))


WRITE_TXN_MARKERS = register(WriteTxnMarkersRequest, WriteTxnMarkersResponse)
