"""The request path past the network: the handler pool, the request handler that runs
the API table, delayed responses, and fault injection for test suites."""
