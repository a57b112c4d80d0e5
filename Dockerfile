# trio-broker images. Three targets:
#   docker build --target broker -t trio-broker .       the broker with its admin API
#   docker build --target spark-jobs -t trio-broker-spark .   + Java 17 and PySpark
#   docker build --target zookeeper -t trio-broker-zookeeper .   Debian's ZooKeeper, for
#       compose.yaml's "cluster" profile (a test and demo ZooKeeper, not an ensemble)
# (or podman/buildah: scripts/image-test builds and tests both; see docs/operations.md).
# Configure with TRIO_BROKER_* variables (TRIO_BROKER_NUM_IO_THREADS=16 -> num.io.threads),
# applied as everywhere the broker starts: config file < TRIO_BROKER_* < --override.
#
# Every stage stands on Debian bookworm and its own python3 (3.11), so the tests build the
# base users pull. Debian packages are left unpinned on purpose: Debian ships fixes as new
# versions and drops the old ones (a `tini=0.19.0-1` pin broke every build once bookworm
# carried only 0.19.0-1+b3).

# --- base: Debian's Python 3.11 and tini.
FROM debian:bookworm-slim AS base
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates tini \
    && rm -rf /var/lib/apt/lists/*

# --- build: wheels of the project and of every dependency, so the runtime stages install
# offline from exactly what was built here. Dependencies first, from pyproject.toml alone:
# that layer is rebuilt only when the dependencies change, not on every source change.
FROM base AS build
# Where TLS to PyPI is intercepted, the bundle that trusts the interceptor, mounted for the
# build only (scripts/image-test passes the host's); unset, pip uses Debian's bundle.
ARG PIP_CERT
WORKDIR /src
RUN python3 -m venv /opt/build
COPY pyproject.toml ./
RUN touch README.md \
    && mkdir trio_broker admin spark_jobs \
    && /opt/build/bin/pip wheel --no-cache-dir --use-pep517 --wheel-dir /wheels ".[spark]" \
    && rm /wheels/trio_broker-*.whl
COPY README.md ./
COPY trio_broker ./trio_broker
COPY admin ./admin
COPY spark_jobs ./spark_jobs
RUN /opt/build/bin/pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# --- the two virtualenvs, installed offline from those wheels. Copied whole into the
# runtime stages (same base, same path), so no wheel is left in a layer; a COPY is
# cached by its content, so a changed wheel always makes a new image.
FROM build AS venv-broker
ARG VERSION=0.1.0
RUN python3 -m venv /opt/trio-broker \
    && /opt/trio-broker/bin/pip install --no-cache-dir --no-index --find-links /wheels \
        "trio-broker==${VERSION}"

FROM build AS venv-spark
ARG VERSION=0.1.0
RUN python3 -m venv /opt/trio-broker \
    && /opt/trio-broker/bin/pip install --no-cache-dir --no-index --find-links /wheels \
        "trio-broker[spark]==${VERSION}"

# --- zookeeper: Debian's ZooKeeper 3.8 (the one the tests run: same base, no other
# registry), standalone on 2181 with its data in /var/lib/zookeeper/data, as the
# user zkserver (uid 10002). The AdminServer (port 8080) is off; the health check asks the
# `srvr` command, which 3.8 allows by default.
FROM base AS zookeeper
# The JRE's post-install wants a man directory, which slim images do not have.
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends zookeeper \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10002 --no-create-home --home-dir /var/lib/zookeeper zkserver \
    && install -d -o zkserver -g zkserver /var/lib/zookeeper/data
USER 10002
VOLUME ["/var/lib/zookeeper/data"]
EXPOSE 2181
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=5 \
    CMD ["python3", "-c", "import socket; s = socket.create_connection(('127.0.0.1', 2181), 2); s.sendall(b'srvr'); assert b'Mode:' in s.recv(4096)"]
ENTRYPOINT ["tini", "--"]
CMD ["java", "-Dzookeeper.admin.enableServer=false", "-cp", "/usr/share/java/*:/etc/zookeeper/conf", \
     "org.apache.zookeeper.server.ZooKeeperServerMain", "2181", "/var/lib/zookeeper/data"]

# --- broker: non-root, tini as PID 1 so SIGTERM reaches the broker for a clean shutdown.
FROM base AS broker
# The project's version (pyproject.toml; a test keeps the two in step).
ARG VERSION=0.1.0
# Its home holds the data, the trends the dashboard reads and the scraped metrics, each
# owned by the broker user so that a fresh volume mounted there is writable.
RUN useradd --system --uid 10001 --create-home --home-dir /var/lib/trio-broker broker \
    && install -d -o broker -g broker /var/lib/trio-broker/data /var/lib/trio-broker/trends \
        /var/lib/trio-broker/metrics
COPY --from=venv-broker /opt/trio-broker /opt/trio-broker
ENV PATH=/opt/trio-broker/bin:$PATH
COPY docker/server.properties /etc/trio-broker/server.properties
COPY docker/entrypoint.sh /usr/local/bin/trio-broker-entrypoint
USER 10001
WORKDIR /var/lib/trio-broker
VOLUME ["/var/lib/trio-broker"]
# Kafka clients, the control-plane listener, the admin API.
EXPOSE 9092 9093 9644
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:9644/v1/status/ready', timeout=2)"]
ENTRYPOINT ["tini", "--", "trio-broker-entrypoint"]
CMD ["--config", "/etc/trio-broker/server.properties"]

# --- spark-jobs: the scraper, the Spark jobs and the advisor, with a headless Java 17.
FROM broker AS spark-jobs
USER 0
# The JRE's post-install wants a man directory, which slim images do not have.
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
COPY --from=venv-spark /opt/trio-broker /opt/trio-broker
USER 10001
ENV SPARK_LOCAL_IP=127.0.0.1
HEALTHCHECK NONE
ENTRYPOINT ["tini", "--"]
CMD ["python", "-m", "spark_jobs.trends", "--help"]
