"""Compaction: one cleaner pass over a partition log (Kafka's ``Cleaner``), its map from a
key to the offset of its latest record, and the grouping of consecutive cleaned segments
into one (``groupSegmentsBySize``). The swap-file protocol that finishes a pass stays in
the log itself (``log.swap``): loading a partition completes it after a crash."""
