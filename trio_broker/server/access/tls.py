"""A TLS listener's contexts, from Kafka's ``ssl.*`` properties: the server's, and the
client's this broker reaches the same listener of other brokers with.

Owns: ``server_ssl_context`` and ``client_ssl_context``, built from one listener's
settings (each ``ssl.*`` key its ``listener.name.<l>.`` override or the broker-wide one;
see ``ListenerSettings``).
PEM only (``ssl.keystore.type=PEM``): the key store is either ``ssl.keystore.location``
(one PEM file holding the private key and its certificate chain, the key encrypted with
``ssl.key.password`` or not) or the inline pair ``ssl.keystore.key`` +
``ssl.keystore.certificate.chain``; the trust store ``ssl.truststore.location`` holds the
CA certificates client certificates must chain to; ``ssl.client.auth`` is ``required``,
``requested`` or ``none``. The client context (Kafka's inter-broker client side) trusts
the same trust store (without one, the system's CAs), presents the same key store (for
listeners with ``ssl.client.auth``), and checks the peer's host name against its
certificate unless ``ssl.endpoint.identification.algorithm`` is empty (Kafka's default
``https``). A key or certificate that cannot be loaded stops start-up with
a ``ConfigError`` naming the key that gave it. Blocking file I/O (read once at start-up).
"""

from __future__ import annotations

import os
import ssl
import tempfile
from pathlib import Path

from ..config import ConfigError, ListenerSettings, Password

_VERIFY = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}


def server_ssl_context(settings: ListenerSettings) -> ssl.SSLContext:
    # Not ssl.create_default_context: it would also trust the system's CAs for client
    # certificates; as in Kafka, only the trust store's CAs are trusted.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_key_store(context, settings)
    client_auth = settings["ssl.client.auth"]
    if not _load_trust_store(context, settings) and client_auth != "none":
        raise ConfigError(
            settings.name("ssl.truststore.location"),
            None,
            f"{settings.name('ssl.client.auth')}={client_auth} needs the CA certificates "
            "to check clients against",
        )
    context.verify_mode = _VERIFY[client_auth]
    return context


def client_ssl_context(settings: ListenerSettings) -> ssl.SSLContext:
    """The context this broker connects to listener ``settings.listener`` of other brokers
    with: their certificates must chain to the trust store's CAs (the system's without
    one) and, with ``ssl.endpoint.identification.algorithm=https``, name the host."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_key_store(context, settings)
    if not _load_trust_store(context, settings):
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    algorithm = settings["ssl.endpoint.identification.algorithm"] or ""
    context.check_hostname = algorithm.lower() == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def _load_trust_store(context: ssl.SSLContext, settings: ListenerSettings) -> bool:
    """Trust the CAs of ``ssl.truststore.location``; False if it is not set."""
    trust = settings["ssl.truststore.location"]
    if trust is None:
        return False
    try:
        context.load_verify_locations(cafile=trust)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            settings.name("ssl.truststore.location"),
            trust,
            f"cannot load CA certificates: {_why(exc)}",
        ) from None
    return True


def _load_key_store(context: ssl.SSLContext, settings: ListenerSettings) -> None:
    password = _secret(settings["ssl.key.password"])
    location = settings["ssl.keystore.location"]
    if location is not None:
        _load_chain(context, settings.name("ssl.keystore.location"), location, location, password)
    else:
        key = _secret(settings["ssl.keystore.key"])
        chain = _secret(settings["ssl.keystore.certificate.chain"])
        if key is None or chain is None:
            raise ConfigError(
                settings.name("ssl.keystore.location"),
                None,
                "a TLS listener needs a key store (PEM)",
            )
        # The ssl module loads keys from files only: a private temporary directory
        # holds the inline PEM text for the moment of loading.
        with tempfile.TemporaryDirectory(prefix="trio-broker-tls-") as tmp:
            key_file, chain_file = Path(tmp, "key.pem"), Path(tmp, "chain.pem")
            for path, text in ((key_file, key), (chain_file, chain)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(_pem_text(text))
            where = settings.name("ssl.keystore.key")
            _load_chain(context, where, str(chain_file), str(key_file), password, shown=False)


def _load_chain(
    context: ssl.SSLContext,
    key: str,
    certfile: str,
    keyfile: str,
    password: str | None,
    *,
    shown: bool = True,
) -> None:
    value = certfile if shown else None
    try:
        context.load_cert_chain(certfile, keyfile, password=password or None)
    except FileNotFoundError:
        raise ConfigError(key, value, "no such file") from None
    except (OSError, ssl.SSLError) as exc:
        hint = " (wrong or missing ssl.key.password?)" if "PEM lib" in str(exc) else ""
        raise ConfigError(
            key, value, f"cannot load the private key and certificate: {_why(exc)}{hint}"
        ) from None


def _secret(value: Password | str | None) -> str | None:
    return value.value if isinstance(value, Password) else value


def _pem_text(text: str) -> str:
    # Kafka's inline PEM values are often given on one line in a properties file.
    return text if text.endswith("\n") else text + "\n"


def _why(exc: BaseException) -> str:
    return getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)
