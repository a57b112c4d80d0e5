"""The broker's assembly and lifetime: ``Broker`` builds the parts and runs them, run-time
config put in force, ``listeners.json``, and what the broker reports of its cluster."""
