"""Command-line tools on the client side of a broker: ``controller`` (and the ``client``
it uses) over the Kafka protocol, ``admin_cli`` over the admin HTTP API only."""
