"""The data path's APIs: Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch,
and the leader hints Produce and Fetch give (KIP-951)."""
