"""Command-line tools that talk to brokers over the Kafka protocol (client side)."""
