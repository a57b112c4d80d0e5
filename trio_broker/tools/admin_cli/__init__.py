"""``trio-broker-admin``: the admin HTTP API from the command line (``cli.main``).

``client`` (HTTP with urllib), ``commands`` (what each command asks and shows), ``render``
(text tables) and ``cli`` (the command line). Nothing here imports the broker or trio.
"""
