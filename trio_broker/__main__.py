"""``python -m trio_broker``: the same as the ``trio-broker`` command."""

from .server.main import run

run()
