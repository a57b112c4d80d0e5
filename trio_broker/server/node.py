"""The composition root: a broker as the ``trio-broker`` command runs it.

Owns: ``new_broker``, which builds a ``Broker`` with the admin API (``admin_adapter.view``'s
``admin_server``, the adapter between the broker and the ``admin`` package) beside it. The
broker's core never imports the admin adapter: it gets the admin server from here. With
``testing.faults.enable=true`` it also puts a ``FaultInjector`` (``server.handlers.faults``) in the
broker's request path; without it, nothing of fault injection is installed.
"""

from __future__ import annotations

from ..apis.table import API_TABLE, ApiTable
from .admin_adapter import admin_server
from .config import BrokerConfig
from .handlers import install_faults
from .lifecycle import Broker


def new_broker(config: BrokerConfig, *, api_table: ApiTable = API_TABLE) -> Broker:
    """A broker with its admin API (if ``admin.listeners`` names one)."""
    broker = Broker(config, api_table=api_table, admin=admin_server)
    if config["testing.faults.enable"]:
        install_faults(broker)
    return broker
