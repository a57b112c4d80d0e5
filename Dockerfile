# trio-broker image. The Docker issue turns this into a multi-stage build (broker and
# spark-jobs targets); until then it runs the same install steps as the README.
FROM python:3.11-slim
WORKDIR /opt/trio-broker
COPY pyproject.toml README.md ./
COPY trio_broker ./trio_broker
COPY admin ./admin
COPY spark_jobs ./spark_jobs
COPY config ./config
RUN pip install --no-cache-dir .
EXPOSE 9092 9093 9644
VOLUME ["/opt/trio-broker/data"]
CMD ["trio-broker", "--config", "config/server.properties"]
