"""Fault tests: the broker under a full disk, slow clients, connection floods and clients
that never read. (kill -9 under acks=all is tests/data/test_durability.py; crashes at
random points of a log are tests/log/test_crash_properties.py.)"""
