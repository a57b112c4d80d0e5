"""ZooKeeper coordination (``zookeeper.connect``): the session, Kafka's node layout, and
the broker's registration and controller election. A broker without ``zookeeper.connect``
never imports this package."""
