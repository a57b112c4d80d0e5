"""librdkafka's built-in mock cluster (a Kafka broker written in C), alone in a process.

The reference broker of ``bench/throughput.py``. How it is reached: the confluent-kafka
wheel ships librdkafka as a shared library (``confluent_kafka.libs/librdkafka-*.so*``,
the very one the ``cimpl`` extension links to), and librdkafka exports the mock cluster's
public C API (``rdkafka_mock.h``). Through ``ctypes`` this helper

1. creates a bare ``rd_kafka_t`` handle (``rd_kafka_new``; it never connects anywhere),
2. ``rd_kafka_mock_cluster_new(rk, N)``: N mock brokers, each listening on 127.0.0.1 on a
   free port and served by the mock cluster's own C thread,
3. prints ``rd_kafka_mock_cluster_bootstraps()`` as ``{"bootstrap": "127.0.0.1:PORT"}``,
4. then reads commands on stdin, one per line, and answers ``{"ok": true|false, ...}``:
   ``create TOPIC PARTITIONS`` (``rd_kafka_mock_topic_create``, replication factor 1: the
   mock has no CreateTopics API) and ``delete TOPIC`` (``rd_kafka_mock_topic_delete``,
   which frees the topic's in-memory log). End of input destroys the cluster and exits.

(The other way in, ``test.mock.num.brokers=1`` on a confluent-kafka ``Producer``, starts
the same mock but hides its address and cannot create topics with a chosen partition
count, so the C API is used directly.) Keeping the mock in its own process lets the
benchmark read its CPU time from ``/proc/<pid>/stat`` exactly as it does the broker's.

Usage: ``.venv/bin/python bench/mock_cluster.py [--brokers N]``.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import sys

_PRODUCER = 0


def load_librdkafka() -> ctypes.CDLL:
    """The librdkafka bundled with confluent-kafka, with the mock API's signatures set."""
    import confluent_kafka

    pkg = os.path.dirname(confluent_kafka.__file__)
    candidates = sorted(glob.glob(os.path.join(pkg, os.pardir, "confluent_kafka.libs", "*.so*")))
    candidates = [c for c in candidates if "rdkafka" in os.path.basename(c)]
    if not candidates:  # a confluent-kafka built against the system's librdkafka
        candidates = ["librdkafka.so.1"]
    lib = ctypes.CDLL(candidates[0])
    vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    lib.rd_kafka_conf_new.restype = vp
    lib.rd_kafka_conf_set.argtypes = [vp, cp, cp, cp, ctypes.c_size_t]
    lib.rd_kafka_conf_set.restype = i
    lib.rd_kafka_new.argtypes = [i, vp, cp, ctypes.c_size_t]
    lib.rd_kafka_new.restype = vp
    lib.rd_kafka_destroy.argtypes = [vp]
    lib.rd_kafka_mock_cluster_new.argtypes = [vp, i]
    lib.rd_kafka_mock_cluster_new.restype = vp
    lib.rd_kafka_mock_cluster_destroy.argtypes = [vp]
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
    lib.rd_kafka_mock_cluster_bootstraps.restype = cp
    lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, i, i]
    lib.rd_kafka_mock_topic_create.restype = i
    lib.rd_kafka_mock_topic_delete.argtypes = [vp, cp]
    lib.rd_kafka_mock_topic_delete.restype = i
    lib.rd_kafka_err2str.argtypes = [i]
    lib.rd_kafka_err2str.restype = cp
    return lib


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=1, help="mock brokers (default 1)")
    args = parser.parse_args(argv)

    lib = load_librdkafka()
    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    # The handle only hosts the mock; quiet its "no bootstrap.servers" notice.
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, len(errstr))
    rk = lib.rd_kafka_new(_PRODUCER, conf, errstr, len(errstr))
    if not rk:
        print(json.dumps({"error": errstr.value.decode()}), flush=True)
        return 1
    cluster = lib.rd_kafka_mock_cluster_new(rk, args.brokers)
    if not cluster:
        print(json.dumps({"error": "rd_kafka_mock_cluster_new failed"}), flush=True)
        return 1
    bootstrap = lib.rd_kafka_mock_cluster_bootstraps(cluster).decode()
    print(json.dumps({"bootstrap": bootstrap}), flush=True)

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "create" and len(words) == 3:
            err = lib.rd_kafka_mock_topic_create(cluster, words[1].encode(), int(words[2]), 1)
        elif words[0] == "delete" and len(words) == 2:
            err = lib.rd_kafka_mock_topic_delete(cluster, words[1].encode())
        else:
            print(json.dumps({"ok": False, "error": f"unknown command {line!r}"}), flush=True)
            continue
        reply: dict[str, object] = {"ok": err == 0}
        if err:
            reply["error"] = lib.rd_kafka_err2str(err).decode()
        print(json.dumps(reply), flush=True)

    lib.rd_kafka_mock_cluster_destroy(cluster)
    lib.rd_kafka_destroy(rk)
    return 0


if __name__ == "__main__":
    sys.exit(main())
