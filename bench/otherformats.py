"""The peers of other table formats (Delta Lake through delta-rs, Iceberg through pyiceberg) and
Spark's own Parquet, behind :class:`bench.systems.System`."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc

from .systems import COMPRESSION, PK_OPTIONS, PRIMARY_KEYS, TABLE_ID, ZSTD_LEVEL, System, filter_arrow


class DeltaLake(System):
    """delta-rs (the ``deltalake`` package): a copy-on-write table format peer.

    Delta has no primary keys: an upsert is ``MERGE ... ON t.id = s.id AND t.dt = s.dt`` with
    ``when_matched_update_all().when_not_matched_insert_all()`` (the first commit of an empty
    table is a plain write), a delete is ``DeltaTable.delete(predicate)``. Tables are created
    empty beforehand (version 0, like Paimon's schema-only table), so the first data commit is
    version 1. Parquet zstd level 1 through ``WriterProperties``, partitioned by dt.
    """

    name = "deltalake"
    label = "delta-rs"
    module = "deltalake"
    table_format = "delta"

    @staticmethod
    def _wp():
        from deltalake import WriterProperties

        return WriterProperties(compression="ZSTD", compression_level=ZSTD_LEVEL)

    def create_append_table(self, warehouse, schema, partition_keys):
        from deltalake import DeltaTable

        path = os.path.join(warehouse, "delta")
        DeltaTable.create(path, schema, partition_by=list(partition_keys) or None)
        return path

    def open(self, warehouse):
        return os.path.join(warehouse, "delta")

    def write(self, table, rows):
        from deltalake import write_deltalake

        write_deltalake(table, rows, mode="append", writer_properties=self._wp())

    def read(self, table):
        from deltalake import DeltaTable

        return DeltaTable(table).to_pyarrow_table()

    def create_pk_table(self, warehouse, schema, partition_keys):
        return self.create_append_table(warehouse, schema, partition_keys)

    def upsert(self, table, rows):
        from deltalake import DeltaTable

        dt = DeltaTable(table)
        if dt.version() == 0:  # the empty table: the first commit is a plain write
            self.write(dt, rows)
            return
        on = " AND ".join(f"t.{k} = s.{k}" for k in PRIMARY_KEYS)
        (dt.merge(rows, predicate=on, source_alias="s", target_alias="t", writer_properties=self._wp())
           .when_matched_update_all().when_not_matched_insert_all().execute())

    def compact(self, table):
        from deltalake import DeltaTable

        DeltaTable(table).optimize.compact(writer_properties=self._wp())

    def delete_keys(self, table, column, values):
        from deltalake import DeltaTable

        DeltaTable(table).delete(f"{column} IN ({', '.join(map(repr, values))})", writer_properties=self._wp())

    def read_filtered(self, table, conds):
        from deltalake import DeltaTable

        filters = []
        for c in conds:
            filters += ([(c.column, ">=", c.value[0]), (c.column, "<=", c.value[1])] if c.op == "between"
                        else [(c.column, "=", c.value)])
        return DeltaTable(table).to_pyarrow_table(filters=filters)

    def read_first(self, table):
        from deltalake import DeltaTable

        return DeltaTable(table, version=1).to_pyarrow_table()

    @staticmethod
    def _adds(table, conds):
        """The live files of the Delta log with their statistics, restricted to ``conds`` on
        partition columns (the log's own metadata: no data file opened)."""
        from deltalake import DeltaTable

        adds = pa.table(DeltaTable(table).get_add_actions(flatten=True))  # arro3 -> pyarrow
        for c in conds:
            column = adds.column(f"partition.{c.column}")
            adds = adds.filter(pc.equal(column, c.value) if c.op == "=" else
                               pc.and_(pc.greater_equal(column, c.value[0]), pc.less_equal(column, c.value[1])))
        return adds

    def count(self, table, conds):
        adds = self._adds(table, conds)
        if adds.column("num_records").null_count:
            from deltalake import DeltaTable

            return DeltaTable(table).to_pyarrow_dataset().count_rows(filter=filter_arrow(conds) if conds else None)
        return int(pc.sum(adds.column("num_records")).as_py() or 0)

    def min_max(self, table, column, conds):
        adds = self._adds(table, conds)
        names = [f"min.{column}", f"max.{column}"]
        if all(n in adds.column_names for n in names) and pa.types.is_integer(adds.schema.field(names[0]).type):
            rows = adds.column("num_records").to_numpy(zero_copy_only=False)
            nulls = adds.column(f"null_count.{column}").to_numpy(zero_copy_only=False)
            lo, hi = adds.column(names[0]), adds.column(names[1])
            if not ((lo.is_null().to_numpy(zero_copy_only=False) | hi.is_null().to_numpy(zero_copy_only=False))
                    & (nulls < rows)).any():  # exact integer stats on every file that has a value
                return pc.min(lo).as_py(), pc.max(hi).as_py()
        from deltalake import DeltaTable

        rows = DeltaTable(table).to_pyarrow_table(columns=[column], filters=[
            (c.column, "=", c.value) for c in conds] or None)
        mm = pc.min_max(rows.column(column))
        return mm["min"].as_py(), mm["max"].as_py()

    def plan(self, warehouse):
        from deltalake import DeltaTable

        adds = pa.table(DeltaTable(self.open(warehouse)).get_add_actions(flatten=True))  # arro3 -> pyarrow
        return adds.num_rows, int(pc.sum(adds.column("num_records")).as_py() or 0)


# ----------------------------------------------------------------------------- pyiceberg

class PyIceberg(System):
    """pyiceberg with a SQL catalog on SQLite (``pyiceberg[sql-sqlite,pyarrow]``).

    Append, read, filtered reads (``scan(row_filter=...)``), time travel
    (``scan(snapshot_id=...)``) and delete (``Table.delete``, copy-on-write). Its ``upsert`` is not
    a bulk path (about 9 s for 20,000 rows with ``join_cols=["id"]``, a minute for 2,000 rows with
    the composite key), so it takes no part in ``pk_upsert``; the primary-key workloads that only
    need the table's final state get it by an append and two full overwrites (untimed).
    """

    name = "pyiceberg"
    label = "pyiceberg"
    module = "pyiceberg"
    table_format = "iceberg"

    @staticmethod
    def _catalog(warehouse):
        from pyiceberg.catalog.sql import SqlCatalog

        os.makedirs(warehouse, exist_ok=True)
        return SqlCatalog("bench", uri=f"sqlite:///{os.path.abspath(warehouse)}/iceberg-catalog.db",
                          warehouse=f"file://{os.path.abspath(warehouse)}")

    def create_append_table(self, warehouse, schema, partition_keys):
        catalog = self._catalog(warehouse)
        catalog.create_namespace_if_not_exists(TABLE_ID.split(".")[0])
        table = catalog.create_table(TABLE_ID, schema=schema, properties={
            "write.parquet.compression-codec": COMPRESSION, "write.parquet.compression-level": str(ZSTD_LEVEL)})
        if partition_keys:
            with table.update_spec() as spec:
                for key in partition_keys:
                    spec.add_identity(key)
        return catalog.load_table(TABLE_ID)

    def open(self, warehouse):
        return self._catalog(warehouse).load_table(TABLE_ID)

    def write(self, table, rows):
        table.append(rows)

    def read(self, table):
        return table.scan().to_arrow()

    def create_pk_table(self, warehouse, schema, partition_keys):
        return self.create_append_table(warehouse, schema, partition_keys)

    unsupported = {"upsert": "pyiceberg 0.12 upsert is not a bulk path (~9 s per 20,000 rows, 60 s per 2,000 "
                             "rows with the composite key)",
                   "compact": "pyiceberg 0.12 has no compaction (rewrite data files) API"}

    def build_pk_state(self, table, commits):
        table.append(commits[0])
        for rows in commits[1:]:  # every commit holds all keys: a full overwrite is the same state
            table.overwrite(rows)

    def delete_keys(self, table, column, values):
        from pyiceberg.expressions import In

        table.delete(In(column, values))

    def read_filtered(self, table, conds):
        from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThanOrEqual

        exprs = []
        for c in conds:
            exprs += ([GreaterThanOrEqual(c.column, c.value[0]), LessThanOrEqual(c.column, c.value[1])]
                      if c.op == "between" else [EqualTo(c.column, c.value)])
        expr = exprs[0] if len(exprs) == 1 else And(*exprs)
        return table.scan(row_filter=expr).to_arrow()

    def read_first(self, table):
        first = min(table.snapshots(), key=lambda s: (s.timestamp_ms, s.sequence_number or 0))
        return table.scan(snapshot_id=first.snapshot_id).to_arrow()


# ----------------------------------------------------------------------------- Spark Parquet

SPARK_DDL = "id BIGINT, name STRING, value DOUBLE, dt STRING"


class SparkParquet(System):
    """Spark's own Parquet writer and reader on the same SparkSession: the floor of the ``spark``
    workload (and only there: ``dedicated``).

    Write: ``df.write.partitionBy("dt").option("compression", "zstd").parquet(path)`` (zstd
    level 1 through the session's ``parquet.compression.codec.zstd.level``), one file per
    partition per task, as paimon-lab's data source writes; the primary-key "write" is the floor
    of a bucketed write: shuffle by (dt, hash(id) mod 2), sort by (dt, id) within each task,
    write. Read: ``spark.read.schema(...).parquet(path)`` (dt from the directory names, typed
    STRING by the schema).
    """

    name = "spark_parquet"
    label = "Spark Parquet"
    module = "pyspark"
    table_format = "spark-parquet"
    dedicated = True

    @classmethod
    def available(cls):
        from . import sparkenv

        return sparkenv.unavailable()

    def spark_create(self, spark, warehouse, primary_key):
        return os.path.join(warehouse, "parquet")

    def spark_write(self, spark, df, target):
        df.write.partitionBy("dt").option("compression", COMPRESSION).parquet(target)

    def spark_upsert(self, spark, df, target):
        from pyspark.sql import functions as F

        buckets = int(PK_OPTIONS["bucket"])
        (df.repartition(buckets, "dt", F.pmod(F.hash("id"), F.lit(buckets)))
           .sortWithinPartitions("dt", "id")
           .write.partitionBy("dt").option("compression", COMPRESSION).parquet(target))

    def spark_read(self, spark, target):
        return spark.read.schema(SPARK_DDL).parquet(target).select("id", "name", "value", "dt")
