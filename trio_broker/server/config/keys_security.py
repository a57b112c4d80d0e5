"""The security part of the broker's key table: SASL, TLS and ACL settings.

Owns: ``SECURITY_KEYS``, which ``keys`` splices into the table in documentation
order. Kept apart only so that each file of the key table stays readable.
"""

from __future__ import annotations

from .configdef import Check, ConfigKey, ConfigType, OneOf, define
from .syntax import (
    BOOL,
    LIST,
    PASSWORD,
    SASL_MECHANISMS,
    STORE_TYPES,
    STR,
    SecurityProtocol,
    authorizer_name,
    parse_super_users,
    whole,
)

SECURITY_KEYS: list[ConfigKey] = [
    # ---- security
    define(
        "sasl.enabled.mechanisms",
        LIST,
        ("PLAIN",),
        "SASL mechanisms offered on SASL listeners.",
        SASL_MECHANISMS,
    ),
    define("ssl.keystore.type", STR, "PEM", "Format of the key store (PEM only).", STORE_TYPES),
    define("ssl.keystore.location", STR, None, "PEM file with the private key and certificates."),
    define(
        "ssl.keystore.certificate.chain",
        PASSWORD,
        None,
        "PEM certificate chain given inline instead of ssl.keystore.location.",
    ),
    define(
        "ssl.keystore.key",
        PASSWORD,
        None,
        "PEM private key given inline instead of ssl.keystore.location.",
    ),
    define("ssl.key.password", PASSWORD, None, "Password of an encrypted private key."),
    define("ssl.truststore.type", STR, "PEM", "Format of the trust store (PEM only).", STORE_TYPES),
    define("ssl.truststore.location", STR, None, "PEM file of CA certificates to trust."),
    define(
        "ssl.endpoint.identification.algorithm",
        STR,
        "https",
        "How a broker checks another broker's certificate names it: https (the host name "
        "it connects to must be in the certificate) or empty (not checked).",
        OneOf(("https", ""), case_sensitive=False),
    ),
    define(
        "ssl.client.auth",
        STR,
        "none",
        "Whether SSL clients must present a certificate.",
        OneOf(("required", "requested", "none")),
    ),
    define(
        "sasl.jaas.config",
        PASSWORD,
        None,
        "JAAS login module entry whose username and password the broker logs in to other "
        "brokers' SASL listeners with (listener.name.<l>.<mechanism>.sasl.jaas.config wins).",
    ),
    # ---- between brokers (Kafka's inter-broker listener)
    define(
        "inter.broker.listener.name",
        STR,
        None,
        "Listener followers fetch from other brokers on (and the controller's requests go "
        "to, without control.plane.listener.name). Not with security.inter.broker.protocol.",
    ),
    define(
        "security.inter.broker.protocol",
        STR,
        "PLAINTEXT",
        "The inter-broker listener given by name when set: the listener whose name is "
        "this protocol. With neither key set: the PLAINTEXT listener if any, else the "
        "first listener that is not the control plane's.",
        OneOf(tuple(p.value for p in SecurityProtocol)),
    ),
    define(
        "sasl.mechanism.inter.broker.protocol",
        STR,
        "PLAIN",
        "SASL mechanism brokers log in to each other's SASL listeners with: PLAIN (the "
        "default here; Kafka's, GSSAPI, is not served), SCRAM-SHA-256 or SCRAM-SHA-512.",
        OneOf(("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")),
    ),
    # Kafka's Kerberos (GSSAPI) settings, changeable at run time as Kafka's: accepted and
    # stored so that tools and clients that set them (kafka-configs, librdkafka's admin
    # tests) get Kafka's answer, but this broker has no GSSAPI mechanism: they do nothing.
    *(
        define(name, type_, default, f"{doc} Stored only: no GSSAPI here.", dynamic=True)
        for name, type_, default, doc in (
            ("sasl.kerberos.kinit.cmd", ConfigType.STRING, "/usr/bin/kinit", "kinit command."),
            (
                "sasl.kerberos.min.time.before.relogin",
                ConfigType.LONG,
                60000,
                "Login thread sleep between refresh attempts (ms).",
            ),
            (
                "sasl.kerberos.principal.to.local.rules",
                ConfigType.LIST,
                ("DEFAULT",),
                "Rules mapping principal names to short names.",
            ),
            ("sasl.kerberos.service.name", ConfigType.STRING, None, "Kerberos service name."),
            (
                "sasl.kerberos.ticket.renew.jitter",
                ConfigType.DOUBLE,
                0.05,
                "Random jitter added to the renewal time.",
            ),
            (
                "sasl.kerberos.ticket.renew.window.factor",
                ConfigType.DOUBLE,
                0.8,
                "Share of the ticket lifetime before renewal.",
            ),
        )
    ),
    define(
        "authorizer.class.name",
        STR,
        "",
        "The authorizer; empty: none (no request is checked). ACLs are enforced with acl, "
        "kafka.security.authorizer.AclAuthorizer or "
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer (all the same one here).",
        Check(
            "empty, acl, kafka.security.authorizer.AclAuthorizer or "
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            authorizer_name,
        ),
    ),
    define(
        "super.users",
        STR,
        None,
        "Principals allowed everything, ';'-separated (User:alice;User:bob).",
        Check("a ';'-separated list of Type:name", whole(parse_super_users)),
    ),
    define(
        "allow.everyone.if.no.acl.found",
        BOOL,
        False,
        "Allow access to a resource that has no ACL.",
    ),
]
