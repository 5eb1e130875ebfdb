"""Paimon tables in PySpark (>= 4.1): the ``paimon`` Python data source and Spark jobs.

    from paimon_lab import spark as ps
    ps.register(spark, warehouse="/tmp/wh")          # or .option("warehouse", ...) everywhere

    df = spark.read.format("paimon").load("db.t")      # splits -> tasks, Arrow batches
    spark.read.format("paimon").option("snapshot-id", 3).load("db.t")    # time travel:
    #   snapshot-id | scan.snapshot-id | versionAsOf, tag | scan.tag-name, timestamp-millis
    #   read-optimized=true, columns="a,b" (Python data sources get no column pruning from Spark)
    df.write.format("paimon").mode("append").save("db.t")   # one atomic snapshot; abort = no files
    ps.write_table(df, "db.t", mode="overwrite")     # shuffles by bucket first (PK / fixed-bucket tables)
    ps.compact(spark, "db.t", full=True)              # buckets spread over tasks, one COMPACT snapshot

    spark.readStream.format("paimon").load("db.t")     # offsets = snapshot ids; scan.mode, rowkind=true,
    #                                                    consumer-id; trigger(availableNow=True) works
    df.writeStream.format("paimon").option("checkpointLocation", cp).option("commit-user", "job-1")
    #   one snapshot per micro-batch, batch id = commit identifier: replays are skipped (exactly once)
    ps.sql(spark, "SELECT dt, count(*) FROM db.t GROUP BY dt")

Filter pushdown (option ``filter-pushdown=true`` or ``register(..., filter_pushdown=True)``):
=, <, <=, >, >=, <=>, IN, IS [NOT] NULL, NOT, startswith prune manifests and files and are
applied exactly by paimon_lab; on float columns Spark re-checks them, on TIMESTAMP WITH LOCAL
TIME ZONE columns they are left to Spark. It is off by default on PySpark 4.x: its planner keeps
a pushed-down plan on the DataFrame, so a second query on the same DataFrame with other filters
would miss rows (start each filtered query from a fresh ``load()`` when it is on). A DataFrame
keeps reading the snapshot its first query planned; ``load()`` again to see newer commits.

Writes: ``mode("overwrite")`` replaces the whole table (``partitionOverwriteMode=dynamic``: only
the partitions written). A missing table is created from the DataFrame's schema with options
``primary-keys``, ``partition-keys`` and any Paimon table option. Each bucket of a primary-key
or fixed-bucket table must be written by one task (sequence numbers); a commit in which two tasks
wrote the same bucket is refused: use :func:`write_table` or :func:`bucketed` (which also works
on streaming DataFrames). Streaming sinks commit as ``commit-user`` (default
``spark-streaming-<table>``): give each query writing a table its own.

Tip: ``.config("spark.python.daemon.module", "paimon_lab.spark.daemon")`` starts executor Python
workers with paimon_lab already imported.
"""

from .datasource import PaimonDataSource, TableRef
from .env import WorkerEnvironmentError, check_workers, configure_workers, python_error
from .jobs import SparkJobError, bucketed, compact, register, write_table
from .sql import sql
from .types import spark_schema, spark_type

__all__ = ["register", "PaimonDataSource", "TableRef", "write_table", "bucketed", "compact", "sql",
           "spark_schema", "spark_type", "python_error", "configure_workers", "check_workers",
           "WorkerEnvironmentError", "SparkJobError"]
