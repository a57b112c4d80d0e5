"""The client side of one SASL exchange, as a broker logs in to another (sans I/O).

Owns: ``SaslLogin`` (mechanism, user name, password: what the inter-broker listener's
JAAS entry gives) and ``SaslClient``, which turns the server's tokens into the client's:
``first()`` is the first client token, ``step(server_token)`` the next one, or None once
the exchange is complete. PLAIN (RFC 4616) sends one message. SCRAM-SHA-256/512 (RFC
5802/7677) is the ``scramp`` library's ``ScramClient`` (the library the server side uses
too): it builds the client-first and client-final messages and checks the server's
signature, so a server that does not know the password cannot pass as the peer. Channel
binding is not used (Kafka's brokers do not offer it). PBKDF2 takes milliseconds: callers
on an event loop run ``step`` on a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import scramp

from .errors import AuthenticationFailed
from .sasl import SUPPORTED_MECHANISMS


@dataclass(frozen=True, slots=True)
class SaslLogin:
    mechanism: str
    username: str
    password: str = field(repr=False)


class SaslClient:
    def __init__(self, login: SaslLogin) -> None:
        if login.mechanism not in SUPPORTED_MECHANISMS:
            raise ValueError(f"no SASL client for mechanism {login.mechanism}")
        self.login = login
        self._scram: scramp.ScramClient | None = None
        self._final_sent = False

    def first(self) -> bytes:
        login = self.login
        if login.mechanism == "PLAIN":
            return f"\0{login.username}\0{login.password}".encode()
        self._scram = scramp.ScramClient([login.mechanism], login.username, login.password)
        return self._scram.get_client_first().encode()

    def step(self, server_token: bytes) -> bytes | None:
        """The next client token for ``server_token``; None: authenticated (a SCRAM
        server's signature has been checked). ``AuthenticationFailed`` if the server's
        answer is not what the mechanism expects."""
        scram = self._scram
        if scram is None:  # PLAIN: the server's empty answer ends it
            return None
        try:
            if not self._final_sent:
                scram.set_server_first(server_token.decode())
                self._final_sent = True
                return scram.get_client_final().encode()
            scram.set_server_final(server_token.decode())
        except (scramp.ScramException, UnicodeDecodeError) as exc:
            raise AuthenticationFailed(f"the server's SCRAM message is not valid: {exc}") from None
        return None
