"""``trio-broker-admin``: the admin HTTP API from the command line (``cli.main``).

``client`` (HTTP with urllib), ``commands`` (what each command asks and shows; ``topics``
for the topic commands), ``render`` (text tables) and ``cli`` (the command line). Nothing
here imports the broker or trio.
"""
