"""The errors of authentication, raised by the SASL and SCRAM state machines.

Owns: ``AuthenticationFailed``, whose message goes to the client in SaslAuthenticate's
error message: it says why, never whether the user exists.
"""

from __future__ import annotations


class AuthenticationFailed(Exception):
    """The client did not prove who it is; the connection is answered and closed."""
