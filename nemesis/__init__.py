"""The nemesis suite: a real ZooKeeper and real brokers, each in its own network namespace,
put through faults (partitions, bridges, one-way links, packet loss, pauses, kills) while
clients write and read, and a checker that reads every replica afterwards and reports lost,
duplicated and divergent records (Jepsen's anomaly names, our checker).

Modules: ``net`` (namespaces, the bridge, nftables rules), ``cluster`` (the processes),
``faults`` (the nemeses and schedules), ``workload`` (clients and their history),
``replicas`` (each broker's log read from its files), ``checker`` (the anomalies) and
``run`` (one run: start, load, faults, heal, settle, check; the report table). Run it with
``python -m nemesis`` (``--help``); the CI smoke run is ``tests/nemesis``.

It needs root (namespaces and nftables), as sessions and CI have. The broker is only ever
reached over the private bridge the run creates, and everything is removed at the end.
"""
