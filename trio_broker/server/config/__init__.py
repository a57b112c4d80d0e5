"""The broker's configuration under Kafka's property names: the key tables, their syntax
and checks, where a value comes from, topic-level configs, and run-time changes."""
