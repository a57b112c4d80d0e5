"""Kafka 3.9 JSON message definitions of the controller APIs removed in 4.0 (test data)."""
