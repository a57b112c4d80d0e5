# trio-broker images. Two targets:
#   docker build --target broker -t trio-broker .       the broker with its admin API
#   docker build --target spark-jobs -t trio-broker-spark .   + Java 17 and PySpark
# Configure with TRIO_BROKER_* variables (TRIO_BROKER_NUM_IO_THREADS=16 -> num.io.threads),
# applied as everywhere the broker starts: config file < TRIO_BROKER_* < --override.

# --- build: wheels of the project and of every dependency, so the runtime stages install
# offline from exactly what was built here.
FROM python:3.11.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY trio_broker ./trio_broker
COPY admin ./admin
COPY spark_jobs ./spark_jobs
RUN pip wheel --no-cache-dir --wheel-dir /wheels . \
    && pip wheel --no-cache-dir --wheel-dir /wheels-spark ".[spark]"

# --- broker: non-root, tini as PID 1 so SIGTERM reaches the broker for a clean shutdown.
FROM python:3.11.11-slim-bookworm AS broker
# The project's version (pyproject.toml; a test keeps the two in step).
ARG VERSION=0.1.0
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini=0.19.0-1 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --create-home --home-dir /var/lib/trio-broker broker
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels "trio-broker==${VERSION}" \
    && rm -rf /wheels
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
# The JRE is left unpinned on purpose: Debian ships its security fixes as new versions.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels-spark /wheels
ARG VERSION=0.1.0
RUN pip install --no-cache-dir --no-index --find-links /wheels "trio-broker[spark]==${VERSION}" \
    && rm -rf /wheels
USER 10001
ENV SPARK_LOCAL_IP=127.0.0.1
HEALTHCHECK NONE
ENTRYPOINT ["tini", "--"]
CMD ["python", "-m", "spark_jobs.trends", "--help"]
