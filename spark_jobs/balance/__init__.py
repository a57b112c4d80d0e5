"""The balance job: the cluster's own Cruise Control, over the trend tables.

``python -m spark_jobs.balance --in TRENDS [--admin URL] [--apply] COMMAND`` (``cli``).
Its parts, one concern each, as Cruise Control separates them:

- ``tables``: the ``brokers`` and ``partitions`` tables' columns (the contract with the
  trends job) and writing or reading them;
- ``monitor``: the tables reduced to one observation per broker and partition over a
  window, with Spark or in plain Python;
- ``sample``: the same tables measured from a live cluster (admin API and Kafka APIs),
  for clusters whose trends job does not write them;
- ``model``: the load each replica puts on its broker, each broker's capacity;
- ``goals``: hard and soft goals in priority order, each a small class;
- ``planner``: the greedy optimisation over the goals, and the moves it makes;
- ``report``: ``TRENDS/balance/plan.json`` and its text;
- ``live`` and ``executor``: the cluster read over HTTP, and the plan applied through
  Kafka's own APIs (reassignments with throttles, elections), watched, and its effect
  measured;
- ``anomaly``: broker down, goal violated for a while, disk too full: a plan, applied
  with ``--self-heal``.

The planner is pure Python over rows; Spark only aggregates. Nothing here imports
``trio_broker`` or ``admin``.
"""
