"""Kafka 3.9 JSON message definitions of the controller APIs removed in 4.0, and of the
versions 4.0 removed from APIs it kept (DescribeConfigs v0) (test data)."""
