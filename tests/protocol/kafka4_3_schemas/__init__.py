"""Kafka 4.3's JSON message definitions (test data, the specification the codec tests
check our declarations against): clients/src/main/resources/common/message of Apache Kafka
4.3, for every API this broker serves at a 4.x version, as kafka-python ships them (its
commit "Updates protocol json files to 4.3", the files unchanged; kafka-python 3.0.12
added DescribeProducers, DescribeTransactions, ListTransactions and WriteTxnMarkers at the
same versions). Kept here so that the specification does not move when kafka-python
does. GetTelemetrySubscriptions and PushTelemetry (KIP-714), which kafka-python does not
ship, are apache/kafka's own files from the same folder, at version 0, the version Kafka
4.x serves. The versions 4.x removed, and the APIs it removed, are in ``kafka3_schemas``."""
