"""Who a client is and what it may do: principals, SASL mechanisms, SCRAM credentials, ACLs.

Pure logic with no trio and no I/O, as the codec is: the network layer drives the SASL
exchange and TLS through these objects, the API handlers ask the authorizer, the server
composes the stores.
"""
