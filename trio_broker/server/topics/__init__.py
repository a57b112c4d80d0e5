"""Topics: the catalog of what this broker holds, creating, deleting and growing topics,
and where their replicas are placed."""
