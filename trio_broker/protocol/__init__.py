"""The Kafka wire protocol, sans-I/O: primitives, message schemas, headers, framing, errors.

Nothing in this package imports trio or touches a socket.
"""
