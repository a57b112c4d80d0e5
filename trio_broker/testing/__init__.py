"""A Kafka for Python test suites: real brokers, started in-process or as a process.

Owns the public testing API: ``running`` (a context manager yielding a ``RunningBroker``:
``bootstrap``, ``admin_url``, ``create_topic``, ``delete_topic``, ``topics``, ``faults``,
``restart``), the fault rules of ``faults`` (``Faults``, ``Rule``), and the pytest plugin
(``trio_broker.testing.plugin``: the ``kafka_broker`` and ``kafka_broker_session``
fixtures, the ``kafka_config`` marker). See docs/testing.md.
"""

from .faults import Faults, Rule
from .harness import DEFAULTS, RunningBroker, TopicAdminError, running

__all__ = ["DEFAULTS", "Faults", "Rule", "RunningBroker", "TopicAdminError", "running"]
