"""Spark jobs over Paimon tables: bucket-aware writes and distributed compaction."""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from paimon_lab.core.bucket_function import bucket_ids
from paimon_lab.core.schema import is_postpone
from paimon_lab.operation.commit import FileStoreCommit
from paimon_lab.errors import CommitError, PaimonLabError, TableNotExistError
from paimon_lab.table import Table
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.spark.datasource import SHORT_NAME, TableRef, create_table, table_ref
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.operation.kv_write import KeyValueFileStoreWrite
from paimon_lab.operation.append_compact import AppendCompactor
from paimon_lab.spark.datasource import with_defaults
from paimon_lab.spark.env import check_workers, configure_workers
from paimon_lab.spark.env import python_error

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BUCKET_COLUMN = "__paimon_bucket"


class SparkJobError(PaimonLabError):
    """A Spark job of paimon_lab failed; the message starts with the Python error of the task
    (``Type: message``), the Spark exception is its ``__cause__``."""

_state: dict[str, Any] = {"warehouse": None, "sessions": set()}


def default_warehouse() -> str | None:
    return _state["warehouse"]


def register(spark: "SparkSession", warehouse: str | None = None, *, filter_pushdown: bool | None = None,
             check: bool = True) -> None:
    """Register the ``paimon`` data source with ``spark``; with ``warehouse``, ``load("db.t")`` and
    ``save("db.t")`` need no ``warehouse`` option (and :func:`sql` knows where tables live).

    ``filter_pushdown`` sets the default of the ``filter-pushdown`` read option. It is off by
    default on PySpark 4.x, whose planner lets the pushed-down plan of one query leak into the
    next query on the same DataFrame (rows go missing); with it on, start every filtered query
    from a fresh ``spark.read...load()``.

    Before registering, Spark's Python workers are pointed at an interpreter that can import
    paimon_lab (:func:`paimon_lab.spark.env.configure_workers`: this one, on a local master, unless
    PYSPARK_PYTHON / spark.pyspark.python says otherwise) and, with ``check`` (once per
    SparkContext), one task checks that a worker imports paimon_lab; if not,
    :class:`~paimon_lab.spark.env.WorkerEnvironmentError` says what to set."""

    configure_workers(spark)
    if check:
        check_workers(spark)
    spark.dataSource.register(with_defaults(warehouse, filter_pushdown))
    # PySpark refuses readers with pushFilters() unless this is on (it is off by default).
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    _state["warehouse"] = warehouse
    _state["sessions"].add(id(spark))


def _ensure_registered(spark: "SparkSession") -> None:
    if id(spark) not in _state["sessions"]:
        register(spark, _state["warehouse"])


def _ref(identifier: str, warehouse: str | None) -> TableRef:
    return table_ref(identifier, warehouse or _state["warehouse"])


# ---------------------------------------------------------------------------------------- writes

def bucketed(df: "DataFrame", identifier: str, warehouse: str | None = None, *,
             num_partitions: int | None = None) -> "DataFrame":
    """``df`` shuffled so that every bucket of the table (every partition, for dynamic-bucket
    primary-key tables; everything, for cross-partition-update tables) is written by one Spark
    task: fewer, bigger level-0 files than a plain ``df.write`` (which is correct as well, see
    :mod:`paimon_lab.spark.shared`), and the only way to write cross-partition-update tables.

    The bucket of each row is computed on the executors with paimon_lab's vectorized BinaryRow
    hash (the same as Java Paimon's); rows are repartitioned by (partition columns, bucket).
    Bucket-unaware append tables need no shuffle and are returned as they are.
    """
    from pyspark.sql.types import IntegerType, StructField, StructType

    table = _ref(identifier, warehouse).open()
    schema = table.schema
    parts = list(schema.partition_keys)
    n = num_partitions or int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    num_buckets = schema.core.bucket
    if num_buckets > 0:
        keys = list(schema.bucket_keys)
        paimon_types = [f.type for f in schema.fields_of(keys)]
        arrow = schema.arrow_schema()
        arrow_types = [arrow.field(k).type for k in keys]
        function = schema.core.get("bucket-function.type")

        def add_bucket(batches):
            for b in batches:
                if b.num_rows == 0:
                    buckets = np.empty(0, np.int32)
                else:
                    # Hash the values as the table stores them (an INT key hashes differently as BIGINT).
                    cols = [b.column(k).cast(t) for k, t in zip(keys, arrow_types)]
                    buckets = bucket_ids(cols, paimon_types, num_buckets, function)
                yield b.append_column(BUCKET_COLUMN, pa.array(buckets, pa.int32()))

        out = StructType(list(df.schema.fields) + [StructField(BUCKET_COLUMN, IntegerType(), False)])
        if not parts:
            n = min(n, num_buckets)
        return df.mapInArrow(add_bucket, out).repartition(n, *parts, BUCKET_COLUMN).drop(BUCKET_COLUMN)
    if schema.primary_keys:
        # Dynamic buckets: a partition's hash index is owned by one writer.
        cross_partition = any(k not in schema.primary_keys for k in parts)
        if parts and not cross_partition:
            return df.repartition(n, *parts)
        return df.repartition(1)
    return df


def write_table(df: "DataFrame", identifier: str, warehouse: str | None = None, mode: str = "append", *,
                options: dict[str, str] | None = None) -> int | None:
    """Write ``df`` into a Paimon table with Spark: shuffled by bucket (:func:`bucketed`), written
    by the executors, committed by the driver as one snapshot. A failure raises
    :class:`SparkJobError`, whose message starts with the task's Python error. ``mode`` is 'append' or
    'overwrite'. A missing table is created (``options``: 'primary-keys', 'partition-keys',
    table options). Returns the table's latest snapshot id afterwards."""
    if mode not in ("append", "overwrite"):
        raise PaimonLabError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    spark = df.sparkSession
    _ensure_registered(spark)
    ref = _ref(identifier, warehouse)
    options = dict(options or {})
    try:
        ref.open()
    except TableNotExistError:
        create_table(ref, df.schema, options)
    writer = bucketed(df, identifier, ref.warehouse).write.format(SHORT_NAME).mode(mode)
    if ref.warehouse:
        writer = writer.option("warehouse", ref.warehouse)
    try:
        writer.options(**options).save(ref.path or ref.identifier)
    except PaimonLabError:
        raise
    except Exception as e:  # Spark's exception around a task's Python error: that error first

        raise SparkJobError(f"{python_error(e)}\n(writing {ref.name} with Spark failed and committed nothing; "
                            "the Spark error is the cause of this one)") from e
    latest = ref.open().snapshot_manager.latest_id()
    return latest


# ---------------------------------------------------------------------------------------- compaction

def _compact_task(ref: TableRef, commit_user: str, full: bool, jobs: list[tuple],
                  snapshot_id: int | None = None) -> tuple[str, Any]:
    """Compact some (partition, bucket)s on an executor; returns ('ok', messages) or
    ('error', text) after deleting anything this task wrote."""
    table = ref.open()
    messages: list[CommitMessage] = []
    store = None
    try:
        if table.schema.primary_keys:

            store = KeyValueFileStoreWrite(table.store, commit_user)
            for part, bucket, _, _ in jobs:
                store.writer(part, bucket).compact_until_done(full)
            messages = [m for m in (w.prepare_commit(False) for w in store.writers.values()) if m.compacted]
        else:

            compactor = AppendCompactor(table.store)
            snapshot = table.snapshot_manager.snapshot(snapshot_id) if snapshot_id is not None else None
            for part, bucket, total, files in jobs:
                msg = compactor.compact(part, bucket, total, files, full, snapshot)
                if msg is not None:
                    messages.append(msg)
        if any(m.new_files or m.changelog_files for m in messages):
            raise PaimonLabError("compaction produced new data files")  # pragma: no cover
    except BaseException:
        if store is not None:
            store.abort()
        table.store.discard(messages)
        return "error", traceback.format_exc()
    return "ok", messages


def compact(spark: "SparkSession", identifier: str, warehouse: str | None = None, *, full: bool = False,
            parallelism: int | None = None) -> int | None:
    """Compact a table with Spark: its (partition, bucket)s are spread over tasks, each compacts
    its buckets with paimon_lab (primary-key tables: the LSM merge of MergeTreeWriter, ``full``
    into the top level; append tables: AppendCompactor, ``full`` rewrites every multi-file
    bucket), and the driver commits everything as one COMPACT snapshot, whose id is returned
    (None if there was nothing to compact). A failed task fails the call and leaves no files."""
    ref = _ref(identifier, warehouse)
    table = ref.open()
    if is_postpone(table.schema):  # the move into real buckets replays files in order: on the driver
        return table.compact(full=full)
    latest = table.snapshot_manager.latest()
    if latest is None:
        return None
    jobs = [(part, bucket, entries[0].total_buckets, [e.file for e in entries])
            for (part, bucket), entries in FileStoreScan(table.store).files_by_bucket(latest).items()]
    if not jobs:
        return None
    n = max(1, min(len(jobs), parallelism or spark.sparkContext.defaultParallelism))
    # Biggest buckets first, dealt round-robin: tasks get similar amounts of data.
    jobs.sort(key=lambda j: -sum(f.file_size for f in j[3]))
    slices = [jobs[i::n] for i in range(n)]
    commit_user = table.store.schema.core.new_commit_user()

    def run(it):
        for chunk in it:
            yield _compact_task(ref, commit_user, full, chunk, latest.id)

    results = spark.sparkContext.parallelize(slices, n).mapPartitions(run).collect()
    messages = [m for status, value in results if status == "ok" for m in value]
    errors = [value for status, value in results if status == "error"]
    if errors:
        table.store.discard(messages)
        first = errors[0].rstrip().splitlines()[-1] if errors[0].strip() else "?"
        raise CommitError(f"{first}\nCompaction of {ref.name} failed in {len(errors)} task(s); nothing was "
                          "committed:\n" + errors[0])
    if not messages:
        return None
    try:
        _, compact_id = FileStoreCommit(table.store, commit_user).commit(messages)
    except BaseException:
        table.store.discard(messages)
        raise
    return compact_id


__all__ = ["register", "bucketed", "write_table", "compact", "default_warehouse", "BUCKET_COLUMN", "Table",
           "SparkJobError"]
