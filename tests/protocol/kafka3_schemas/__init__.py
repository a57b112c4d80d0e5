"""Kafka's JSON message definitions that kafka-python (Kafka 4's) lacks (test data): Kafka
3.9's for the controller APIs removed in 4.0 and the versions 4.0 removed from APIs it kept
(DescribeConfigs v0); apache/kafka's (October 2024) for the group heartbeats
(ConsumerGroupHeartbeat, ShareGroupHeartbeat); and ConsumerGroupDescribe from a later
trunk (as copied in the fork m1a2st/kafka at 1f5e76b: validVersions 0-2, v1 adding
MemberType as Kafka 4.0 does, KIP-1099; v2's GroupCreationTimeMs, KIP-1327, is not
served), which kafka-python 3.0.12 does not ship."""
