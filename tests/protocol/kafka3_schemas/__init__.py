"""Kafka's JSON message definitions that kafka-python (Kafka 4's) lacks (test data): Kafka
3.9's for the controller APIs removed in 4.0 and the versions 4.0 removed from APIs it kept
(DescribeConfigs v0); apache/kafka's (October 2024) for the group heartbeats this broker
lists only to refuse (ConsumerGroupHeartbeat, ShareGroupHeartbeat)."""
