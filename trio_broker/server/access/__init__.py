"""Access: who a client is and what it may do: ACLs, SCRAM credentials, TLS contexts,
what each listener asks of its clients, and how this broker logs in to its peers."""
