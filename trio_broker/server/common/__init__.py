"""The event loop's machinery every subsystem of the server shares, as in Kafka's
``server-common``: the purgatory and the io pool."""
