"""The admin API's adapter: the broker side of ``admin.view.AdminView``.

Owns: ``AdminView`` over a running broker and the admin server's lifetime (``view``), and
the ACL routes' view (``acls``). The only part of ``trio_broker`` that imports the
``admin`` package; only the composition root (``server.node``) hands it to a broker.

Face: what ``__all__`` names. Uses of the server: ``lifecycle``, ``handlers``, ``quotas``,
``config``, and ``startup`` (the command's one-line failures).
"""

from .view import admin_server

__all__ = ["admin_server"]
