"""The admin API's adapter: the broker side of ``admin.view.AdminView``.

Owns: ``AdminView`` over a running broker and the admin server's lifetime (``view``), the
ACL routes' view (``acls``), client telemetry's (``client_metrics``) and the topic routes'
(``topics``: the broker's one creation path and DeleteTopics', never a path of its own).
The only part of ``trio_broker`` that imports the ``admin`` package; only the composition
root (``server.node``) hands it to a broker.

Face: what ``__all__`` names. Uses of the server: ``lifecycle``, ``handlers``, ``quotas``,
``telemetry``, ``config``, and ``startup`` (the command's one-line failures).
"""

from .view import admin_server

__all__ = ["admin_server"]
