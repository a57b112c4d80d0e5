"""Admin HTTP API (Quart-Trio), served inside the broker's own ``trio.run``.

``app`` (routes, ``create_app``), ``openapi`` (the document), ``errors`` (JSON errors),
``inputs`` (body checks), ``asgi`` (the app class), ``serve`` (Hypercorn), and ``view``:
the protocol of what the admin may see and change of a broker. ``topics``,
``topic_openapi`` and ``topic_view`` are ``/v1/topics`` (routes, document, protocol), as
``acls``, ``acl_openapi`` and ``acl_view`` are ``/v1/acls``. Nothing here imports the
broker; ``trio_broker.server.admin_adapter`` implements the view.
"""
