"""What a partition log keeps to find records without scanning them: each segment's sparse
offset and time indexes, the aborted transaction index beside it, and the leader epoch
cache."""
