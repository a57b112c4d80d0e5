"""The Kafka APIs: one module per API family and the table from api key to handler.

Handlers are ``async def handle(ctx, body) -> response``; they reach the broker only
through ``ctx.broker`` (the ``BrokerView`` protocol), never import trio or the network
layer, and return a response body (``None`` for no response, or a ``Deferred`` when the
purgatory completes the request later).
"""
