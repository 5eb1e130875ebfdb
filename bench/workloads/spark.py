"""``spark``: the shared rows written and read through Spark (local[2]): paimon-lab's ``paimon``
data source against Spark's own Parquet writer and reader.

Three timed steps per run (``summary = "sum"``, each step in the steps table):

* ``write``: the rows into a fresh append table (partition dt, bucket -1), one Spark job
  (``df.write.format("paimon").save(...)`` / ``df.write.partitionBy("dt").parquet(...)``);
* ``pk_write``: the rows into a fresh primary-key table (key (id, dt), bucket 2), shuffled by
  bucket first (``paimon_lab.spark.write_table``; the Parquet floor shuffles by (dt, bucket) and
  sorts by key within each task);
* ``read``: a full scan of the table ``write`` just wrote (``paimon_lab.spark.read_table``: its
  files need no merge, so Spark's own Parquet reader reads them), materialized in Spark: row count and
  an order-free checksum over all columns (``bit_xor`` and a sum of ``xxhash64(id, name, value,
  dt)``), which Spark cannot compute without decoding every value.

Untimed (``prepare``, in every run's process): the SparkSession (JVM start), the input as a
cached DataFrame (the rows saved once as Parquet, read by Spark, repartitioned into 2 partitions,
cached and counted), the checksum of that input, the empty tables, and priming: the same three
steps on 200 rows, so JVM class loading, code generation and the start of the Python worker
daemon are paid before the clock starts.
"""

from __future__ import annotations

import atexit
import os
from dataclasses import dataclass
from typing import Any

from .. import data, sparkenv
from . import Context, Workload, register

COLUMNS = ["id", "name", "value", "dt"]
STEPS = ("write", "pk_write", "read")


def aggregate(df) -> tuple[int, int, int]:
    """(rows, bit_xor of the row hashes, sum of the hashes' high 32 bits): Spark has to decode
    every column of every row. Both hash aggregates are independent of row order; the sum (of
    values below 2**31 in magnitude, so no overflow) also catches a row read twice."""
    from pyspark.sql import functions as F

    h = F.xxhash64(*COLUMNS)
    row = df.agg(F.count(F.lit(1)), F.bit_xor(h), F.sum(F.shiftright(h, 32))).collect()[0]
    return int(row[0]), int(row[1] or 0), int(row[2] or 0)


@dataclass
class State:
    spark: Any
    df: Any                       # the cached input DataFrame
    expected: tuple[int, int, int]  # aggregate() of the input
    targets: dict[str, Any]       # step -> table handle (write, pk_write)


@register
class Spark(Workload):
    name = "spark"
    description = ("through Spark local[2]: write all rows into a fresh append table, into a fresh PK table "
                   "(bucket 2), read the append table back (time = sum of the 3 steps; session start untimed)")
    order = 100
    systems = ("paimon_lab", "spark_parquet")
    requires = ("spark_create", "spark_write", "spark_upsert", "spark_read")
    summary = "sum"
    # issue #19: the read (paimon_lab.spark.read_table) within 1.5x of Spark's own Parquet read
    step_targets = {"read": {"spark_parquet": 1.5}}
    process_tree = True   # CPU time and peak RSS of the driver, the JVM and Spark's Python workers
    max_repeat = 3        # every run starts a JVM

    def unavailable(self) -> str | None:
        return sparkenv.unavailable()

    def prepare(self, ctx: Context, system) -> State:
        spark = sparkenv.session()
        atexit.register(spark.stop)  # do not leave a JVM running into the next measurement

        # The input: the shared rows, saved once per cell as Parquet, read by Spark and cached.
        path = os.path.join(ctx.cell_dir, "input.parquet")
        if not os.path.exists(path):
            import pyarrow.parquet as pq

            pq.write_table(data.load(ctx.data_path), path + ".tmp")
            os.replace(path + ".tmp", path)
        df = spark.read.parquet(path).select(*COLUMNS).repartition(2).cache()
        expected = aggregate(df)  # also fills the cache

        # Priming: the same steps on 200 rows (class loading, codegen, Python worker daemon).
        small = spark.createDataFrame(data.generate(200, seed=1)).select(*COLUMNS).repartition(2)
        prime = os.path.join(ctx.run_dir, "_spark_prime")
        self._steps(system, spark, small, self._targets(system, spark, prime))

        return State(spark, df, expected, self._targets(system, spark, ctx.run_dir))

    @staticmethod
    def _targets(system, spark, root: str) -> dict[str, Any]:
        out = {}
        for step, pk in (("write", False), ("pk_write", True)):
            directory = os.path.join(root, step)
            os.makedirs(directory, exist_ok=True)
            out[step] = system.spark_create(spark, directory, pk)
        return out

    @staticmethod
    def _steps(system, spark, df, targets, lap=None):
        import contextlib

        lap = lap or (lambda name: contextlib.nullcontext())
        with lap("write"):
            system.spark_write(spark, df, targets["write"])
        with lap("pk_write"):
            system.spark_upsert(spark, df, targets["pk_write"])
        with lap("read"):
            return aggregate(system.spark_read(spark, targets["write"]))

    def run(self, ctx: Context, system, st: State):
        return self._steps(system, st.spark, st.df, st.targets, ctx.lap)

    def check(self, ctx: Context, system, st: State, result) -> list[str]:
        problems = []
        if result is None or result[0] != ctx.rows:
            problems.append(f"Spark read {None if result is None else result[0]} rows, expected {ctx.rows}")
        elif result != st.expected:
            problems.append(f"Spark's checksum of the rows read {result[1:]} != the input's {st.expected[1:]}")
        return problems

    def verify(self, ctx: Context, system, st: State, result) -> dict[str, data.Fingerprint]:
        """Both tables read back through Spark (collected as Arrow) and, for the Paimon tables,
        also by paimon-lab's own reader and by pypaimon (the files are real Paimon tables)."""
        from ..systems import SYSTEMS, read_back

        out = {}
        for step in ("write", "pk_write"):
            table = system.spark_read(st.spark, st.targets[step]).toArrow()
            out[f"{system.name}:{step} via Spark"] = data.fingerprint_like(table, ctx.expected)
            if system.table_format != "paimon" or not ctx.cross_check:  # other readers: the warm-up's
                continue
            for name, cls in SYSTEMS.items():
                if cls.table_format != "paimon" or cls.available() is not None:
                    continue
                # each in its own interpreter (pypaimon has a virtual environment of its own)
                out[f"{name}:{step}"] = data.fingerprint_like(read_back(name, st.targets[step]), ctx.expected)
        return out


# ---------------------------------------------------------------------------------------- on a cluster

CLUSTER_STEPS = ("write", "read")  # the run's time; "compact" and "read_compacted" are extra laps


@dataclass
class ClusterState:
    spark: Any
    df: Any
    expected: tuple[int, int, int]
    target: Any


@register
class SparkCluster(Workload):
    """``spark_cluster``: the job of the cluster test on a Spark standalone cluster on loopback
    (a master and a 3 GiB worker with 2 cores started from the pyspark jars, executors in JVMs
    of their own): the rows into a fresh primary-key table with a plain
    ``df.write.format("paimon").mode("append").save(...)`` (no shuffle: every task writes every
    bucket, see paimon_lab.spark.shared), beside ``df.write.partitionBy("dt").parquet(...)`` of the
    same cached DataFrame; then the aggregate of :func:`aggregate` over the table. The run's
    time is ``write`` + ``read``; paimon-lab also compacts (``ps.compact(full=True)``, the
    distributed compaction) and reads again, kept as the laps ``compact`` and ``read_compacted``.

    Untimed: the cluster, the session, the cached input (2 partitions), priming on 200 rows."""

    name = "spark_cluster"
    description = ("on a standalone Spark cluster (loopback, 2 cores): plain df.write into a fresh PK table "
                   "(bucket 2) vs df.write.parquet, then an aggregate read (time = write + read)")
    order = 101
    systems = ("paimon_lab", "spark_parquet")
    requires = ("spark_create", "spark_write", "spark_read")
    summary = "sum"
    process_tree = True
    max_repeat = 3
    opt_in = True  # only with --only spark_cluster (its cluster test runs in CI: tests/test_spark.py)

    def unavailable(self) -> str | None:
        return sparkenv.unavailable()

    def run_seconds(self, laps: dict[str, float]) -> float:
        return sum(v for k, v in laps.items() if k in CLUSTER_STEPS)

    def prepare(self, ctx: Context, system) -> ClusterState:
        from paimon_lab.spark.cluster import LocalCluster

        cluster = LocalCluster(cores=2, memory="3g", workdir=os.path.join(ctx.run_dir, "_cluster"))
        os.makedirs(cluster.dir, exist_ok=True)
        cluster.start()
        atexit.register(cluster.stop)   # runs after spark.stop (registered later, runs first)
        spark = sparkenv.cluster_session(cluster.master_url)
        atexit.register(spark.stop)
        path = os.path.join(ctx.cell_dir, "input.parquet")
        if not os.path.exists(path):
            import pyarrow.parquet as pq

            pq.write_table(data.load(ctx.data_path), path + ".tmp")
            os.replace(path + ".tmp", path)
        df = spark.read.parquet(path).select(*COLUMNS).repartition(2).cache()
        expected = aggregate(df)
        small = spark.createDataFrame(data.generate(200, seed=1)).select(*COLUMNS).repartition(2)
        prime = os.path.join(ctx.run_dir, "_spark_prime")
        os.makedirs(prime, exist_ok=True)
        self._steps(system, spark, small, system.spark_create(spark, prime, True))
        target_dir = os.path.join(ctx.run_dir, "pk")
        os.makedirs(target_dir, exist_ok=True)
        return ClusterState(spark, df, expected, system.spark_create(spark, target_dir, True))

    @staticmethod
    def _steps(system, spark, df, target, lap=None):
        import contextlib

        lap = lap or (lambda name: contextlib.nullcontext())
        with lap("write"):
            system.spark_write(spark, df, target)
        with lap("read"):
            result = aggregate(system.spark_read(spark, target))
        from ..systems import System

        if type(system).spark_compact is System.spark_compact:
            return result  # Parquet files: nothing to compact
        with lap("compact"):
            system.spark_compact(spark, target)
        with lap("read_compacted"):
            again = aggregate(system.spark_read(spark, target))
        return result if again == result else (result, again)

    def run(self, ctx: Context, system, st: ClusterState):
        return self._steps(system, st.spark, st.df, st.target, ctx.lap)

    def check(self, ctx: Context, system, st: ClusterState, result) -> list[str]:
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], tuple):
            return [f"the compacted table reads {result[1]}, before compaction {result[0]}"]
        if result != st.expected:
            return [f"Spark read {result} (rows, xor, sum), the input is {st.expected}"]
        return []

    def verify(self, ctx: Context, system, st: ClusterState, result) -> dict[str, data.Fingerprint]:
        problems = self.check(ctx, system, st, result)
        if problems:
            raise AssertionError(problems[0])
        table = system.spark_read(st.spark, st.target).toArrow()
        return {f"{system.name}:pk via Spark (cluster)": data.fingerprint_like(table, ctx.expected)}
