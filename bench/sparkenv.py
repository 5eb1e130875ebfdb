"""The SparkSession of the ``spark`` workload: local[2], Java 17, created before the clock starts.

Every measured run is a fresh worker process (see :mod:`bench.worker`), so every run starts its
own session (JVM start-up, py4j gateway) in the workload's untimed ``prepare``; nothing of that
is timed. Executors' Python workers (the ``paimon`` data source runs in them) are this
interpreter, forked from a daemon that has paimon_lab imported already.
"""

from __future__ import annotations

import os
import shutil
import sys

from .machine import REPO_ROOT

MIN_PYSPARK = (4, 1)  # the "paimon" data source needs Arrow writers of Python data sources


def unavailable() -> str | None:
    """Why Spark cannot run here (no Java, no or too old PySpark), or None."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Spark needs Java (no java on PATH and no JAVA_HOME)"
    try:
        import pyspark
    except Exception as e:  # ImportError, or a broken install
        return f"cannot import pyspark: {e}"
    try:
        version = tuple(int(x) for x in pyspark.__version__.split(".")[:2])
    except ValueError:
        return None
    if version < MIN_PYSPARK:
        return f"the paimon data source needs PySpark >= 4.1, found {pyspark.__version__}"
    return None


def session():
    """A local[2] SparkSession configured like the tests' (loopback only, no UI, 2 shuffle
    partitions), with Parquet zstd level 1 for Spark's own writer and the ``paimon`` data source
    registered."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("paimon-lab-bench")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.default.parallelism", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "2g")
             # Python workers fork from a daemon that has paimon_lab (and pyarrow, pandas) imported.
             .config("spark.python.daemon.module", "paimon_lab.spark.daemon")
             # Spark's Parquet writer: zstd level 1, as Paimon's defaults (parquet-mr's default is 3)
             .config("spark.hadoop.parquet.compression.codec.zstd.level", "1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    from paimon_lab import spark as ps

    ps.register(spark)  # every read and write names its warehouse with .option("warehouse", ...)
    return spark


def cluster_session(master_url: str, cores: int = 2):
    """A SparkSession on a standalone cluster (:class:`paimon_lab.spark.cluster.LocalCluster`):
    executors in JVMs of their own with Python workers of their own. Nothing is exported:
    :func:`paimon_lab.spark.register` points the executors' Python workers at this interpreter
    (and paimon_lab's directory), as a user's session gets it."""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master_url).appName("paimon-lab-bench-cluster")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.executor.memory", "2g")
             .config("spark.sql.shuffle.partitions", str(cores))
             .config("spark.default.parallelism", str(cores))
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.python.daemon.module", "paimon_lab.spark.daemon")
             .config("spark.hadoop.parquet.compression.codec.zstd.level", "1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    from paimon_lab import spark as ps

    ps.register(spark)
    return spark
