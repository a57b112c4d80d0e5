"""The data directory's own small files: the JSON documents of the broker's state
(``topics.json``, ACLs, credentials, quotas, dynamic config...), Kafka's ``meta.properties``
(the cluster id in every log dir) and ``listeners.json`` (the addresses a running broker
bound). Blocking file I/O; no event loop."""
