"""The two trend tables the balance job reads: their columns and types, as the contract
between the trends job and this one names them (issue 32).

Owns: ``BROKER_COLUMNS`` and ``PARTITION_COLUMNS`` (name, type) and the Spark schemas built
from them; ``write_rows`` (rows of either table as Parquet partitioned by ``date``, through
Spark, as the trends job writes its tables), ``write_rows_arrow`` (the same layout and
types with pyarrow: the live sampler's), ``read_rows`` (either table as Python rows,
with pyarrow: the planner's no-Spark path) and ``check_columns`` (a table read by either
path must have every column named here with its type, else ``TableError`` names what is
wrong: tables of another trends job version are refused, not read as nulls).

- ``brokers``: one row per bucket and broker: its event loop's busy ratio, its io threads'
  and network processors' idle ratios, the worst request type's queue p99, its byte and
  message rates (produce in, fetch out, replication in and out), the leaders and replicas
  it holds, and its disk (used by the logs, total and free).
- ``partitions``: one row per bucket, broker and partition replica the broker holds: its
  role, the partition's leader and replicas, the rates it bore (produce and fetch while it
  led, replication bytes in as a follower and out as a leader), its log size, log end
  offset and lag.

Must not: aggregate (``monitor`` does) or know how the rows were measured.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

BROKERS, PARTITIONS = "brokers", "partitions"

# (column, type): "ts" timestamp, "date", "int", "long", "double", "string", "ints" (array<int>)
BROKER_COLUMNS: tuple[tuple[str, str], ...] = (
    ("bucket", "ts"),
    ("date", "date"),
    ("broker_id", "int"),
    ("rack", "string"),
    ("loop_busy_ratio", "double"),
    ("io_idle_ratio", "double"),
    ("network_idle_ratio", "double"),
    ("request_queue_p99_ms", "double"),
    ("bytes_in_per_s", "double"),
    ("bytes_out_per_s", "double"),
    ("messages_in_per_s", "double"),
    ("replication_bytes_in_per_s", "double"),
    ("replication_bytes_out_per_s", "double"),
    ("leaders", "int"),
    ("replicas", "int"),
    ("disk_used_bytes", "long"),
    ("disk_total_bytes", "long"),
    ("disk_free_bytes", "long"),
)
PARTITION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("bucket", "ts"),
    ("date", "date"),
    ("broker_id", "int"),
    ("topic", "string"),
    ("partition", "int"),
    ("role", "string"),
    ("leader", "int"),
    ("replicas", "ints"),
    ("bytes_in_per_s", "double"),
    ("bytes_out_per_s", "double"),
    ("messages_in_per_s", "double"),
    ("produce_requests_per_s", "double"),
    ("fetch_requests_per_s", "double"),
    ("replication_bytes_in_per_s", "double"),
    ("replication_bytes_out_per_s", "double"),
    ("log_size_bytes", "long"),
    ("log_end_offset", "long"),
    ("lag_messages", "long"),
)
COLUMNS = {BROKERS: BROKER_COLUMNS, PARTITIONS: PARTITION_COLUMNS}


def spark_type(kind: str) -> Any:
    from pyspark.sql import types as T

    return {
        "ts": T.TimestampType(),
        "date": T.DateType(),
        "int": T.IntegerType(),
        "long": T.LongType(),
        "double": T.DoubleType(),
        "string": T.StringType(),
        "ints": T.ArrayType(T.IntegerType()),
    }[kind]


def spark_schema(table: str) -> Any:
    from pyspark.sql import types as T

    return T.StructType([T.StructField(n, spark_type(k), True) for n, k in COLUMNS[table]])


def with_date(table: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with every column of ``table`` (None where absent) and its ``date`` (the
    bucket's UTC date); ``bucket`` a UTC datetime."""
    out = {name: row.get(name) for name, _ in COLUMNS[table]}
    bucket = row["bucket"]
    if not isinstance(bucket, dt.datetime):
        bucket = dt.datetime.fromtimestamp(float(bucket), dt.UTC)
    out["bucket"] = bucket
    out["date"] = bucket.astimezone(dt.UTC).date()
    return out


def write_rows(spark: Any, table: str, rows: Sequence[Mapping[str, Any]], out: str) -> None:
    """``rows`` into ``out/<table>``, partitioned by date; dates present in ``rows`` are
    replaced, others kept (the session's dynamic partition overwrite)."""
    names = [n for n, _ in COLUMNS[table]]
    dated = [with_date(table, r) for r in rows]
    values = [tuple(r[n] for n in names) for r in dated]
    df = spark.createDataFrame(values, spark_schema(table))
    df.repartition("date").write.mode("overwrite").partitionBy("date").parquet(f"{out}/{table}")


def arrow_schema(table: str) -> Any:
    import pyarrow as pa

    kinds = {
        "ts": pa.timestamp("us", tz="UTC"),
        "date": pa.date32(),
        "int": pa.int32(),
        "long": pa.int64(),
        "double": pa.float64(),
        "string": pa.string(),
        "ints": pa.list_(pa.int32()),
    }
    return pa.schema([(n, kinds[k]) for n, k in COLUMNS[table]])


def write_rows_arrow(table: str, rows: Sequence[Mapping[str, Any]], out: Path) -> None:
    """As ``write_rows``, with pyarrow (no Spark): the same layout and types."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    dated = [with_date(table, r) for r in rows]
    pq.write_to_dataset(
        pa.Table.from_pylist(dated, schema=arrow_schema(table)),
        root_path=str(out / table),
        partition_cols=["date"],
        existing_data_behavior="delete_matching",
    )


class TableError(Exception):
    """A table the balance job reads lacks a column of the contract, or has another type."""


def check_columns(
    where: str, table: str, found: Mapping[str, Any], want: Mapping[str, Any]
) -> None:
    """``found`` (column: type, as read) against ``want`` (the contract's, the same kind of
    type) for every column of ``table`` but ``date`` (the partition directory's); columns
    the contract does not name (the trends job's ``bucket_s``, ``snapshots``,
    ``seconds``) are allowed."""
    names = [n for n, _ in COLUMNS[table] if n != "date"]
    missing = [n for n in names if n not in found]
    wrong = [
        f"{n} is {found[n]}, not {want[n]}" for n in names if n in found and found[n] != want[n]
    ]
    if missing or wrong:
        problems = ([f"no column(s) {', '.join(missing)}"] if missing else []) + wrong
        raise TableError(
            f"{where}: not the {table} table the balance job reads ({'; '.join(problems)}): "
            "written by another version of the trends job?"
        )


def _arrow_kind(t: Any) -> Any:
    import pyarrow as pa

    return ("list", t.value_type) if pa.types.is_list(t) else t


def read_rows(trends: Path, table: str) -> list[dict[str, Any]]:
    """Every row of ``trends/<table>`` (hive partitions by date), or none; ``TableError``
    if the table is not the contract's."""
    import pyarrow.parquet as pq

    path = trends / table
    if not path.exists():
        return []
    found = pq.read_table(path, partitioning="hive")
    check_columns(
        str(path),
        table,
        {f.name: _arrow_kind(f.type) for f in found.schema},
        {f.name: _arrow_kind(f.type) for f in arrow_schema(table)},
    )
    return found.to_pylist()  # type: ignore[no-any-return]


def epoch(t: Any) -> float:
    if isinstance(t, dt.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=dt.UTC)
        return t.timestamp()
    return float(t)


def iso(t: float) -> str:
    value = dt.datetime.fromtimestamp(t, dt.UTC).isoformat(timespec="seconds")
    return value.replace("+00:00", "Z")


def sorted_rows(rows: Iterable[Mapping[str, Any]], *keys: str) -> list[Mapping[str, Any]]:
    return sorted(rows, key=lambda r: tuple((r.get(k) is None, r.get(k)) for k in keys))
