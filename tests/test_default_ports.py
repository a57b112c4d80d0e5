"""The suite runs beside a broker on the default ports: no test may bind or dial them."""

from __future__ import annotations

import socket

import pytest

from .conftest import DEFAULT_PORTS


@pytest.mark.parametrize("port", DEFAULT_PORTS)
def test_a_default_port_cannot_be_bound_while_the_suite_runs(port: int) -> None:
    # Held by the session fixture, or by a broker already running on this machine.
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
        with pytest.raises(OSError):
            sock.bind(("127.0.0.1", port))
