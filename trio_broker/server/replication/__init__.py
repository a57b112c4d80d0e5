"""The partitions this broker holds and their replication: the replica manager and its
io, the leader's ISR and high watermark, the followers' fetchers and throttles, the cluster
view the control plane sets, and the cleaner's schedule."""
