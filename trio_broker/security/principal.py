"""Principals: who a connection is, as a ``Type:name`` string.

Owns: ``ANONYMOUS`` and ``principal_from_certificate``, Kafka's default principal of a TLS
client: ``User:`` and the certificate subject's distinguished name in RFC 2253 form, most
specific part first (``User:CN=alice,O=test``). The DER parsing is the ``cryptography``
library's (its RFC 4514 form is RFC 2253's successor, the same for the usual attributes).
"""

from __future__ import annotations

from cryptography import x509

ANONYMOUS = "User:ANONYMOUS"


def principal_from_certificate(der: bytes | None) -> str:
    """The principal of a client certificate (DER); ``User:ANONYMOUS`` without one."""
    if not der:
        return ANONYMOUS
    subject = x509.load_der_x509_certificate(der).subject
    return f"User:{subject.rfc4514_string()}"
