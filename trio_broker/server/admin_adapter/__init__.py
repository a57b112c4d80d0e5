"""The admin API's adapter: ``AdminView`` over a running broker and the admin server's
lifetime. Only the composition root (``server.node``) hands it to a broker."""
