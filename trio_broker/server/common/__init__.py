"""The pieces every subsystem of the server shares, as Kafka's ``server-common``: the
purgatory, the io pool, the small JSON documents and ``meta.properties`` of the data dir."""
