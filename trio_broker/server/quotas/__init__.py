"""Client quotas: what is stored, how it is enforced and throttled, and the connection
limits."""
