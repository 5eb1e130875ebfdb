"""Paimon tables in PySpark (>= 4.1): the ``paimon`` Python data source and Spark jobs.

    from paimon_lab import spark as ps
    ps.register(spark, warehouse="/tmp/wh")          # or .option("warehouse", ...) everywhere

    df = spark.read.format("paimon").load("db.t")      # splits -> tasks, Arrow batches
    df = ps.read_table(spark, "db.t")                  # faster: files that need no merge through
    #   Spark's own Parquet/ORC reader, the rest as above (same options; native-read=false: all Python)
    spark.read.format("paimon").option("snapshot-id", 3).load("db.t")    # time travel:
    #   snapshot-id | scan.snapshot-id | versionAsOf, tag | scan.tag-name, timestamp-millis
    #   read-optimized=true, columns="a,b" (Python data sources get no column pruning from Spark)
    df.write.format("paimon").mode("append").save("db.t")   # any table kind; one atomic commit; abort = no files
    ps.write_table(df, "db.t", mode="overwrite")     # the same after a shuffle by bucket (fewer files)
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
``primary-keys``, ``partition-keys`` and any Paimon table option. Any number of tasks may write
the same bucket of any table kind (:mod:`paimon_lab.spark.shared`): the write is one commit
(APPEND, plus a COMPACT snapshot where the table's writers would compact), and a primary-key
table gets the result of one writer that reads the DataFrame partition by partition (Spark
partition index), row by row. Only cross-partition-update tables (dynamic bucket, primary key
without all partition keys) need one task: :func:`write_table`. Streaming sinks commit as
``commit-user`` (default ``spark-streaming-<table>``): give each query writing a table its own.

Python workers: :func:`register` (also called by :func:`write_table`, :func:`sql` and
``%%paimon --engine spark``) points Spark's Python workers at the interpreter running paimon_lab
on a local master or a standalone master on loopback, unless ``PYSPARK_PYTHON`` /
``spark.pyspark.python`` names one, and checks once per SparkContext that a worker imports
paimon_lab (:class:`WorkerEnvironmentError` says what to set otherwise). On a cluster whose
workers run another Python, install paimon_lab there or set ``spark.pyspark.python`` to a
Python on the workers that has it, or ship it (``sc.addPyFile``, ``spark.executorEnv.PYTHONPATH``).
Failed helpers raise :class:`SparkJobError` whose message starts with the task's Python error;
:func:`python_error` pulls that ``Type: message`` out of any Spark exception.

Tip: ``.config("spark.python.daemon.module", "paimon_lab.spark.daemon")`` starts executor Python
workers with paimon_lab already imported.
"""

try:  # an optional extra: name it rather than fail deep inside a module
    import pyspark  # noqa: F401
except ImportError as e:
    raise ImportError("paimon_lab.spark needs PySpark >= 4.1 and a Java 17 or 21 runtime: "
                      "pip install 'paimon-lab[spark]'") from e

from paimon_lab.spark.datasource import PaimonDataSource, TableRef
from paimon_lab.spark.env import WorkerEnvironmentError, check_workers, configure_workers, python_error
from paimon_lab.spark.jobs import SparkJobError, bucketed, compact, register, write_table
from paimon_lab.spark.native import read_table
from paimon_lab.spark.sql import sql
from paimon_lab.spark.types import spark_schema, spark_type

__all__ = ["register", "PaimonDataSource", "TableRef", "read_table", "write_table", "bucketed", "compact", "sql",
           "spark_schema", "spark_type", "python_error", "configure_workers", "check_workers",
           "WorkerEnvironmentError", "SparkJobError"]
