"""Spark jobs over broker metrics; they share only the metrics schema with the broker.

``scrape`` (snapshots to hourly JSON Lines; standard library only), ``trends`` (the batch
job: Parquet tables and ``dashboard.json``, whose charts ``dashboard_data`` and cluster
view ``dashboard_cluster`` build), ``stream`` with ``stream_source`` (the same tables,
live, through a Python data source), ``advise`` (pool size advice, and applying it; its
evidence, rules and verdicts in ``advise_evidence``, ``advise_rules`` and
``advise_verdicts``), ``balance`` (a package: the cluster's balance plan from the
``brokers`` and ``partitions`` tables, applied through Kafka's own APIs with kafka-python).
``snapshot_schema`` is the contract (``docs/metrics.md``), ``aggregate`` the
aggregation both jobs share. Nothing here imports ``trio_broker`` or ``admin``
(import-linter checks it).
"""
