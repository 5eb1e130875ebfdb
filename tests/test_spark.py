"""paimon_lab.spark: the ``paimon`` PySpark data source, bucket-aware writes, streaming and
distributed compaction, checked against paimon_lab itself and against pypaimon.

One local[2] SparkSession (the session-scoped ``spark`` fixture in conftest) serves every test.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from decimal import Decimal

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="PySpark is not installed")

from paimon_lab import Catalog, SchemaChange  # noqa: E402
from paimon_lab import spark as ps  # noqa: E402
from paimon_lab.operation.scan import FileStoreScan

pytestmark = pytest.mark.slow


# ---------------------------------------------------------------------------------------- helpers

@pytest.fixture(autouse=True)
def _registered(request):
    """Tests that use the local ``spark`` session get the data source registered (tests name the
    warehouse per read/write with .option("warehouse", ...)); the cluster test starts no local session."""
    if "spark" in request.fixturenames:
        ps.register(request.getfixturevalue("spark"))


@pytest.fixture
def cat(wh) -> Catalog:
    c = Catalog(wh)
    c.create_database("db")
    return c


def read(spark, wh, ident, **options):
    r = spark.read.format("paimon").option("warehouse", wh)
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load(ident)


def write(df, wh, ident, mode="append", **options):
    w = df.write.format("paimon").mode(mode).option("warehouse", wh)
    for k, v in options.items():
        w = w.option(k, str(v))
    w.save(ident)


def rows_of(data) -> list[tuple]:
    """Rows (as tuples, column order kept) of a pyarrow table, a Spark DataFrame or Row list."""
    if isinstance(data, pa.Table):
        out = [tuple(r.values()) for r in data.to_pylist()]
    else:
        if hasattr(data, "collect"):
            data = data.collect()
        out = [tuple(r) for r in data]
    return sorted(out, key=lambda r: tuple((v is None, str(v)) for v in r))


def py_rows(pypaimon, warehouse, ident, **opts) -> list[tuple]:
    """The rows pypaimon reads (in its worker; ``opts`` are table options such as scan.*)."""
    return rows_of(pypaimon.read_table(warehouse, ident, options=opts or None))


def data_files(table) -> set[str]:
    """Every data file under the table's directory (whatever snapshots say)."""
    out = set()
    for root, _, files in os.walk(table.path):
        rel = os.path.relpath(root, table.path)
        if rel.split(os.sep)[0] in ("snapshot", "manifest", "schema", "index", "tag", "consumer", "branch"):
            continue
        out |= {f for f in files if f.startswith(("data-", "changelog-"))}
    return out


def live_files(table) -> set[str]:
    snap = table.latest_snapshot()
    return {e.file.file_name for e in FileStoreScan(table.store).live_entries(snap)} if snap else set()


SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()),
                    ("day", pa.date32()), ("ts", pa.timestamp("us")), ("amount", pa.decimal128(10, 2)),
                    ("dt", pa.string())])


def sample(n, start=0, parts=("a", "b", "c")) -> pa.Table:
    ids = range(start, start + n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": [None if i % 7 == 3 else f"name-{i}" for i in ids],
        "score": [i * 0.5 for i in ids],
        "day": [dt.date(2024, 1, 1) + dt.timedelta(days=i % 30) for i in ids],
        "ts": [dt.datetime(2024, 5, 1, 12, 0, 0) + dt.timedelta(seconds=i) for i in ids],
        "amount": [Decimal(i) / 4 for i in ids],
        "dt": [parts[i % len(parts)] for i in ids],
    }, schema=SCHEMA)


def to_spark(spark, table: pa.Table, partitions: int = 2):
    return spark.createDataFrame(table).repartition(partitions)


# ---------------------------------------------------------------------------------------- batch writes

def test_spark_append_write_read_by_paimon_lab_and_pypaimon(pypaimon, spark, wh, cat):
    t = cat.create_table("db.events", SCHEMA, partition_keys=["dt"])
    data = sample(300)
    write(to_spark(spark, data, 3), wh, "db.events")
    snaps = t.snapshots()
    assert [s.commit_kind for s in snaps] == ["APPEND"]  # three tasks, one atomic commit
    assert rows_of(t.to_arrow()) == rows_of(data)
    assert py_rows(pypaimon, wh, "db.events") == rows_of(data)
    # ... and Spark reads it back with the same values and types.
    got = read(spark, wh, "db.events")
    assert [f.name for f in got.schema.fields] == SCHEMA.names
    assert rows_of(got) == rows_of(data)


ALL_TYPES = pa.schema([
    ("id", pa.int32()), ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("f", pa.float32()),
    ("bin", pa.binary()), ("ltz", pa.timestamp("us", tz="UTC")), ("ns", pa.timestamp("ns")),
    ("tm", pa.time32("ms")), ("arr", pa.list_(pa.int64())), ("m", pa.map_(pa.string(), pa.int32())),
    ("st", pa.struct([("a", pa.int32()), ("s", pa.string())]))])


def test_all_types_round_trip_through_spark(pypaimon, spark, wh, cat):
    t = cat.create_table("db.types", ALL_TYPES)
    data = pa.table({
        "id": [1, 2], "b": [True, None], "i8": [1, -2], "i16": [300, None], "f": [1.5, None],
        "bin": [b"\x00\x01", None], "ltz": [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), None],
        "ns": [dt.datetime(2024, 1, 1, 1, 2, 3, 456789), None], "tm": [dt.time(1, 2, 3), None],
        "arr": [[1, 2, None], None], "m": [[("k", 1)], None], "st": [{"a": 1, "s": "x"}, None]}, schema=ALL_TYPES)
    t.write(data)
    df = read(spark, wh, "db.types")
    assert df.schema.simpleString() == (
        "struct<id:int,b:boolean,i8:tinyint,i16:smallint,f:float,bin:binary,ltz:timestamp,ns:timestamp_ntz,"
        "tm:time(6),arr:array<bigint>,m:map<string,int>,st:struct<a:int,s:string>>")
    first = df.filter("id = 1").collect()[0]
    assert (first.arr, first.m, first.st.s, first.ns) == ([1, 2, None], {"k": 1}, "x", dt.datetime(2024, 1, 1, 1, 2, 3, 456789))
    write(df, wh, "db.types")  # Spark writes back what it read: the same rows twice
    twice = rows_of(pa.concat_tables([data, data]))
    assert rows_of(t.to_arrow()) == twice
    assert py_rows(pypaimon, wh, "db.types") == twice


def test_spark_pk_write_table_read_by_paimon_lab_and_pypaimon(pypaimon, spark, wh, cat):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                        ("v", pa.int32()), pa.field("dt", pa.string(), nullable=False)])
    t = cat.create_table("db.pk", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "3"})
    first = pa.table({"id": list(range(200)), "name": [f"n{i}" for i in range(200)],
                      "v": list(range(200)), "dt": ["x" if i % 2 else "y" for i in range(200)]}, schema=schema)
    ps.write_table(to_spark(spark, first, 4), "db.pk", wh)
    # Updates of half the keys, the same key several times in one write is resolved in order.
    upd = pa.table({"id": list(range(0, 200, 2)), "name": [f"u{i}" for i in range(0, 200, 2)],
                    "v": [i * 10 for i in range(0, 200, 2)], "dt": ["y"] * 100}, schema=schema)
    ps.write_table(to_spark(spark, upd, 3), "db.pk", wh)
    expected = {r["id"]: r for r in first.to_pylist()}
    expected.update({r["id"]: r for r in upd.to_pylist()})
    want = rows_of(pa.Table.from_pylist(list(expected.values()), schema=schema))
    assert [s.commit_kind for s in t.snapshots()][:2] == ["APPEND", "APPEND"]
    assert rows_of(t.to_arrow()) == want
    assert py_rows(pypaimon, wh, "db.pk") == want
    assert rows_of(read(spark, wh, "db.pk")) == want
    # Files carry disjoint sequence numbers per bucket: each bucket had one writer per commit.
    levels = t.levels()
    for _, group in levels.groupby(levels["partition"].map(str) + levels["bucket"].map(str)):
        ranges = sorted(zip(group.min_sequence_number, group.max_sequence_number))
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:]))


KINDS = {  # name -> (primary keys, partition keys, table options)
    "append": ([], ["dt"], {}),
    "append-bucket": ([], ["dt"], {"bucket": "2", "bucket-key": "k"}),
    "pk-dedup": (["k", "dt"], ["dt"], {"bucket": "2"}),
    "pk-dedup-dv": (["k", "dt"], ["dt"], {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "pk-dynamic": (["k", "dt"], ["dt"], {"bucket": "-1", "dynamic-bucket.target-row-num": "40"}),
    "pk-first-row": (["k", "dt"], ["dt"], {"bucket": "2", "merge-engine": "first-row"}),
    "pk-partial-update": (["k", "dt"], ["dt"], {"bucket": "2", "merge-engine": "partial-update"}),
    "pk-aggregation": (["k", "dt"], ["dt"], {"bucket": "1", "merge-engine": "aggregation",
                                             "fields.v.aggregate-function": "sum",
                                             "fields.s.aggregate-function": "last_non_null_value"}),
    "pk-lookup-changelog": (["k", "dt"], ["dt"], {"bucket": "2", "changelog-producer": "lookup"}),
    "pk-cross-partition": (["k"], ["dt"], {"bucket": "-1"}),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_plain_write_of_many_tasks_gives_one_writers_result(spark, wh, cat, kind):
    """df.write.format("paimon") into any table kind: one atomic commit, and for primary-key
    tables the rows merged as one writer reading the DataFrame partition by partition, row by
    row (spark.range puts ascending ids in ascending partitions)."""
    pk, parts, options = KINDS[kind]
    schema = pa.schema([pa.field("k", pa.int64(), nullable=not pk), ("v", pa.int64()), ("s", pa.string()),
                        pa.field("dt", pa.string(), nullable=not pk)])

    def frame(start, n):
        return spark.range(start, start + n, 1, numPartitions=3).selectExpr(
            "id % 37 AS k", "id AS v", "CASE WHEN id % 5 = 0 THEN NULL ELSE concat('s', id) END AS s",
            "CASE WHEN id % 37 < 20 THEN 'a' ELSE 'b' END AS dt")

    def arrow(start, n):
        ids = pa.array(range(start, start + n), pa.int64())
        return pa.table({"k": pa.compute.remainder(ids, 37), "v": ids,
                         "s": [None if i % 5 == 0 else f"s{i}" for i in range(start, start + n)],
                         "dt": ["a" if i % 37 < 20 else "b" for i in range(start, start + n)]}, schema=schema)

    t = cat.create_table(f"db.{kind.replace('-', '_')}", schema, primary_keys=pk, partition_keys=parts,
                         options=options)
    one = cat.create_table(f"db.{kind.replace('-', '_')}_single", schema, primary_keys=pk, partition_keys=parts,
                           options=options)
    for start, n in ((0, 300), (300, 150)):
        before = len(t.snapshots())
        write(frame(start, n), wh, t.identifier)
        one.write(arrow(start, n))
        kinds = [s.commit_kind for s in t.snapshots()[before:]]
        assert kinds[0] == "APPEND" and set(kinds[1:]) <= {"COMPACT"} and len(kinds) <= 2, kinds
    assert rows_of(t.to_arrow()) == rows_of(one.to_arrow())
    assert rows_of(read(spark, wh, t.identifier)) == rows_of(one.to_arrow())
    # Every task's files in a bucket have sequence numbers of their own.
    levels = t.levels() if pk else None
    if levels is not None:
        for _, group in levels.groupby(levels["partition"].map(str) + levels["bucket"].map(str)):
            ranges = sorted(zip(group.min_sequence_number, group.max_sequence_number))
            assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:])), ranges
    assert data_files(t) >= live_files(t)
    if kind == "pk-dynamic":  # the merged HASH index holds every key once
        from paimon_lab.store.file_store import live_index_entries

        assert sum(e.index_file.row_count for e in live_index_entries(t.store, "HASH")) == 37


def test_plain_write_moves_keys_across_partitions(spark, wh, cat):
    """A cross-partition-update table (primary key without the partition key): tasks stage their
    rows and the commit routes every key as one writer does, so a key that changes partition
    leaves its old one (deduplicate), in one commit."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("dt", pa.string())])
    t = cat.create_table("db.cross", schema, primary_keys=["k"], partition_keys=["dt"], options={"bucket": "-1"})
    one = cat.create_table("db.cross_single", schema, primary_keys=["k"], partition_keys=["dt"], options={"bucket": "-1"})
    first = spark.range(0, 60, 1, numPartitions=3).selectExpr("id % 20 AS k", "id AS v", "'a' AS dt")
    moved = spark.range(100, 130, 1, numPartitions=3).selectExpr("id % 10 AS k", "id AS v", "'b' AS dt")
    for df in (first, moved):
        before = len(t.snapshots())
        write(df, wh, "db.cross")
        one.write(pa.Table.from_pandas(df.toPandas(), schema=schema, preserve_index=False))
        assert [s.commit_kind for s in t.snapshots()[before:]][0] == "APPEND"
    got = rows_of(t.to_arrow())
    assert got == rows_of(one.to_arrow())
    assert {r[0]: r[2] for r in got} == {**{k: "a" for k in range(10, 20)}, **{k: "b" for k in range(10)}}
    assert not [n for n in os.listdir(os.path.join(wh, "db.db", "cross")) if n.startswith("spark-staging")]


def test_overwrite_of_pk_table_by_many_tasks(spark, wh, cat):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.pk1", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [100, 1], "v": ["old", "old"]}, schema=schema))
    df = spark.range(0, 50, 1, numPartitions=2).selectExpr("id % 10 AS id", "concat('v', id) AS v")
    write(df, wh, "db.pk1", mode="overwrite")
    assert t.latest_snapshot().commit_kind in ("OVERWRITE", "COMPACT")
    assert rows_of(t.to_arrow()) == [(i, f"v{40 + i}") for i in range(10)]


def test_write_table_creates_missing_table(spark, wh, cat):
    # One input partition keeps the rows in order through the bucket shuffle: (2, 'd') is last.
    df = spark.createDataFrame(pa.table({"k": pa.array([1, 2, 3, 2], pa.int32()), "s": ["a", "b", "c", "d"]}))
    ps.write_table(df.coalesce(1), "db.created", wh, options={"primary-keys": "k", "bucket": "2"})
    t = cat.get_table("db.created")
    assert t.primary_keys == ["k"] and t.options["bucket"] == "2"
    assert rows_of(t.to_arrow()) == [(1, "a"), (2, "d"), (3, "c")]


def test_batch_write_marks_its_partitions_done(spark, wh, cat):
    """'partition.end-input-to-done': as Java's Spark writer, a batch write marks the partitions it
    wrote done after its commit."""
    t = cat.create_table("db.done", SCHEMA, partition_keys=["dt"], options={"partition.end-input-to-done": "true"})
    write(to_spark(spark, sample(10, parts=("a",))), wh, "db.done", mode="append")
    assert os.path.exists(os.path.join(t.path, "dt=a", "_SUCCESS"))
    assert not os.path.exists(os.path.join(t.path, "dt=b"))


def test_overwrite_modes(pypaimon, spark, wh, cat):
    t = cat.create_table("db.ow", SCHEMA, partition_keys=["dt"])
    t.write(sample(90))
    new = sample(10, start=1000, parts=("a",))
    write(to_spark(spark, new), wh, "db.ow", mode="overwrite", partitionOverwriteMode="dynamic")
    got = t.to_arrow()
    assert t.latest_snapshot().commit_kind == "OVERWRITE"
    # Only partition a was replaced.
    assert rows_of(got.filter(pa.compute.equal(got["dt"], "a"))) == rows_of(new)
    assert got.num_rows == 60 + 10
    # The default (static) overwrite replaces the whole table.
    write(to_spark(spark, new), wh, "db.ow", mode="overwrite")
    assert rows_of(t.to_arrow()) == rows_of(new)
    assert py_rows(pypaimon, wh, "db.ow") == rows_of(new)


def test_failed_job_commits_nothing_and_leaves_no_files(spark, wh, cat):
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    t = cat.create_table("db.fail", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                         options={"write-buffer-size": "4 kb"})
    t.write(pa.table({"id": [-1], "v": ["before"]}))
    before = data_files(t)

    @F.udf(LongType())
    def explode_late(i):
        if i == 18_000:
            raise ValueError("boom at 18000")
        return i

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
    try:
        df = spark.range(0, 20_000, numPartitions=2).select(
            explode_late("id").alias("id"), F.concat(F.lit("v"), F.col("id").cast("string")).alias("v"))
        with pytest.raises(Exception, match="boom at 18000") as failed:
            write(df, wh, "db.fail")
        # Spark's exception text starts with JVM text; the Python error inside it, pulled out:
        assert ps.python_error(failed.value) == "ValueError: boom at 18000"
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert len(t.snapshots()) == 1
    assert rows_of(t.to_arrow()) == [(-1, "before")]
    assert data_files(t) == before


# ---------------------------------------------------------------------------------------- batch reads

def test_spark_reads_embedded_table_with_time_travel(spark, wh, cat):
    t = cat.create_table("db.tt", SCHEMA, partition_keys=["dt"])
    s1 = t.write(sample(30))
    t.create_tag("v1")
    time.sleep(0.01)
    stamp = t.latest_snapshot().time_millis
    s2 = t.write(sample(30, start=100))
    t.delete("id < 10")
    assert rows_of(read(spark, wh, "db.tt")) == rows_of(t.to_arrow())
    assert rows_of(read(spark, wh, "db.tt", **{"snapshot-id": s2})) == rows_of(t.to_arrow(snapshot_id=s2))
    assert rows_of(read(spark, wh, "db.tt", **{"scan.snapshot-id": s1})) == rows_of(sample(30))
    assert rows_of(read(spark, wh, "db.tt", tag="v1")) == rows_of(sample(30))
    assert rows_of(read(spark, wh, "db.tt", **{"timestamp-millis": stamp})) == rows_of(sample(30))
    # A table path works as well as an identifier; so does a registered default warehouse.
    assert read(spark, wh, t.path).count() == t.to_arrow().num_rows
    ps.register(spark, warehouse=wh)
    try:
        assert spark.read.format("paimon").load("db.tt").count() == t.to_arrow().num_rows
    finally:
        ps.register(spark)


def test_pushed_filters_prune_and_filter_exactly(spark, wh, cat):
    t = cat.create_table("db.f", SCHEMA, partition_keys=["dt"])
    for i in range(3):
        t.write(sample(40, start=i * 40))

    def fresh():  # pushdown on PySpark 4.x: every query from its own load() (see register())
        return read(spark, wh, "db.f", **{"filter-pushdown": "true"})

    assert fresh().rdd.getNumPartitions() == 3  # one split per partition (files are small)
    # Partition filter: the other partitions are never planned.
    assert fresh().filter("dt = 'a'").rdd.getNumPartitions() == 1
    cases = {  # Spark filter -> the same filter for paimon_lab (None: Spark alone is the oracle)
        "dt = 'a' AND id > 50": "dt = 'a' AND id > 50",
        "id IN (1, 2, 3, 200) OR name IS NULL": None,  # OR is not pushed: Spark filters
        "name IS NOT NULL AND id <= 5": "name IS NOT NULL AND id <= 5",
        "name LIKE 'name-1%' AND NOT (dt = 'b')": "name LIKE 'name-1%' AND NOT (dt = 'b')",
        "id NOT IN (1, 2, 3) AND id < 6": "id NOT IN (1, 2, 3) AND id < 6",
        # int literal vs DECIMAL(10,2): paimon_lab's parser cannot bind `amount < 5` (gap), 5.0 works
        "day >= DATE'2024-01-20' AND amount < 5": "day >= '2024-01-20' AND amount < 5.0",
        "score > 50.5 AND ts > TIMESTAMP_NTZ'2024-05-01 12:00:30'": "score > 50.5 AND ts > '2024-05-01 12:00:30'",
        "name <=> NULL": "name IS NULL",
    }
    oracle = spark.createDataFrame(t.to_arrow())
    for spark_filter, lab_filter in cases.items():
        got = rows_of(fresh().filter(spark_filter))
        want = rows_of(t.to_arrow(filter=lab_filter) if lab_filter else oracle.filter(spark_filter))
        assert got == want and got, spark_filter
    # Without pushdown one DataFrame serves any number of queries (PySpark 4.x caches its plan).
    unpushed = read(spark, wh, "db.f")
    assert rows_of(unpushed.filter("dt = 'a' AND id > 50")) == rows_of(t.to_arrow(filter="dt = 'a' AND id > 50"))
    assert unpushed.filter("name IS NULL").count() == t.to_arrow(filter="name IS NULL").num_rows
    # What the reader keeps: a filter with no paimon_lab counterpart goes back to Spark, and
    # statistics prune files (9 files, 3 may hold id >= 80).
    from pyspark.sql.datasource import GreaterThanOrEqual, StringEndsWith

    df = fresh()
    reader = ps.datasource.PaimonFilteringReader(ps.TableRef(wh, "db.f"), df.schema,
                                                 ps.datasource.field_ids(t, SCHEMA.names), {},
                                                 t.schema.arrow_schema())
    keep = list(reader.pushFilters([GreaterThanOrEqual(("id",), 80), StringEndsWith(("name",), "1")]))
    assert [type(f).__name__ for f in keep] == ["StringEndsWith"]
    assert sum(len(p.split.files) for p in reader.partitions()) == 3


def test_spark_reads_pk_table_merged(spark, wh, cat):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])
    t = cat.create_table("db.kv", schema, primary_keys=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"], "n": [1, 2, 3, 4]}, schema=schema))
    t.write(pa.table({"id": [2, 4], "v": ["B", None], "n": [20, 40]}, schema=schema))
    t.delete("id = 3")
    assert rows_of(read(spark, wh, "db.kv")) == rows_of(t.to_arrow()) == [(1, "a", 1), (2, "B", 20), (4, None, 40)]
    assert rows_of(read(spark, wh, "db.kv").filter("n > 10 AND v IS NULL")) == [(4, None, 40)]
    assert rows_of(read(spark, wh, "db.kv", columns="id,n")) == [(1, 1), (2, 20), (4, 40)]


# ---------------------------------------------------------------------------------------- streaming

def test_streaming_read_picks_up_new_commits(spark, wh, cat):
    t = cat.create_table("db.src", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    stream = (spark.readStream.format("paimon").option("warehouse", wh).load("db.src")
              .writeStream.format("memory").queryName("paimon_src").outputMode("append")
              .trigger(processingTime="200 milliseconds").start())
    try:
        stream.processAllAvailable()
        assert rows_of(spark.table("paimon_src")) == [(1, "a"), (2, "b")]  # latest-full: the table first
        t.write(pa.table({"id": [3], "v": ["c"]}))
        t.write(pa.table({"id": [4, 5], "v": ["d", "e"]}))
        stream.processAllAvailable()
        assert rows_of(spark.table("paimon_src")) == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]
    finally:
        stream.stop()


def test_streaming_changelog_with_rowkind(spark, wh, cat):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.cl", schema, primary_keys=["id"],
                         options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    start = t.latest_snapshot().id
    t.write(pa.table({"id": [1], "v": ["A"]}, schema=schema))
    t.delete("id = 2")
    q = (spark.readStream.format("paimon").option("warehouse", wh).option("scan.snapshot-id", start + 1)
         .option("rowkind", "true").load("db.cl")
         .writeStream.format("memory").queryName("paimon_cl").trigger(availableNow=True).start())
    q.awaitTermination()
    assert rows_of(spark.table("paimon_cl")) == rows_of(t.changes(start))
    assert ("-D", 2, "b") in rows_of(spark.table("paimon_cl"))


def test_streaming_read_takes_the_tables_scan_options(spark, wh, cat):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.opts", schema, primary_keys=["id"],
                         options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    start = t.latest_snapshot().id
    t.write(pa.table({"id": [1], "v": ["A"]}, schema=schema))
    t.alter(SchemaChange.set_option("scan.snapshot-id", str(start + 1)))   # set on the table, not the job
    q = (spark.readStream.format("paimon").option("warehouse", wh).option("rowkind", "true").load("db.opts")
         .writeStream.format("memory").queryName("paimon_opts").trigger(availableNow=True).start())
    q.awaitTermination()
    assert rows_of(spark.table("paimon_opts")) == rows_of(t.changes(start))   # not the full table


def _stream_copy(spark, wh, checkpoint):
    q = (spark.readStream.format("paimon").option("warehouse", wh).load("db.in")
         .writeStream.format("paimon").option("warehouse", wh).option("checkpointLocation", checkpoint)
         .option("commit-user", "copy-job").trigger(availableNow=True).start("db.out"))
    q.awaitTermination()
    return q


def test_streaming_write_is_exactly_once_across_restarts(pypaimon, spark, wh, cat, tmp_path):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    src = cat.create_table("db.in", schema)
    dst = cat.create_table("db.out", schema)
    checkpoint = str(tmp_path / "checkpoint")
    src.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    _stream_copy(spark, wh, checkpoint)
    assert rows_of(dst.to_arrow()) == [(1, "a"), (2, "b")]
    assert [(s.commit_user, s.commit_identifier) for s in dst.snapshots()] == [("copy-job", 0)]
    # Crash after the sink committed batch 0 but before Spark recorded it: the restarted query
    # replays batch 0 (skipped: already in the table), then picks up two new commits as batch 1.
    commits = os.path.join(checkpoint, "commits")
    for name in ("0", ".0.crc"):
        if os.path.exists(os.path.join(commits, name)):
            os.remove(os.path.join(commits, name))
    src.write(pa.table({"id": [3], "v": ["c"]}))
    src.write(pa.table({"id": [4], "v": ["d"]}))
    _stream_copy(spark, wh, checkpoint)
    want = [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert rows_of(dst.to_arrow()) == want  # batch 0 not written twice
    assert [(s.commit_user, s.commit_identifier) for s in dst.snapshots()] == [("copy-job", 0), ("copy-job", 1)]
    assert data_files(dst) == live_files(dst)  # the replay's files were deleted
    assert py_rows(pypaimon, wh, "db.out") == want


# ---------------------------------------------------------------------------------------- workers' Python

def test_python_error_puts_the_python_exception_first():
    text = ("[PYTHON_DATA_SOURCE_ERROR] Failed to initialize Python data source writer: Traceback (most recent "
            "call last):\n  File \"x.py\", line 1, in f\n    g()\nModuleNotFoundError: No module named 'paimon_lab'\n"
            " SQLSTATE: 38000")
    assert ps.python_error(text) == "ModuleNotFoundError: No module named 'paimon_lab'"
    job = ("An error occurred while calling o93.save.\n: org.apache.spark.SparkException: Job aborted due to stage "
           "failure: Task 1 in stage 3.0 failed 1 times, most recent failure: Lost task 1.0: "
           "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
           "  File \"/w/worker.py\", line 9, in main\n    process()\n"
           "paimon_lab.errors.DataValidationError: Column 'id' is NOT NULL but has 1 null value(s)\n\n"
           "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:700)\n"
           "Caused by: org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
           "ValueError: other\n")
    assert ps.python_error(job) == "DataValidationError: Column 'id' is NOT NULL but has 1 null value(s)"
    assert ps.python_error(KeyError("k")) == "KeyError: 'k'"


def test_workers_python_is_configured_and_checked(spark, monkeypatch):
    """register() points the workers at this interpreter when nobody chose one, and a worker
    interpreter that cannot run paimon_lab is reported with what to set."""
    import sys

    from paimon_lab.spark import env

    sc = spark.sparkContext
    saved_exec, saved_path = sc.pythonExec, sc.environment.get("PYTHONPATH")
    try:
        monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
        sc.pythonExec = env.DEFAULT_EXEC  # a session built without PYSPARK_PYTHON
        assert env.configure_workers(spark) == sys.executable
        if not env._on_default_path(env.package_root()):  # a checkout: the workers get its directory
            assert env.package_root() in sc.environment["PYTHONPATH"].split(os.pathsep)
        assert env.check_workers(spark, force=True) == sys.executable
        monkeypatch.setenv("PYSPARK_PYTHON", "/nonexistent/bin/python3")  # the user's choice is kept ...
        assert env.configure_workers(spark) == "/nonexistent/bin/python3"
        with pytest.raises(env.WorkerEnvironmentError) as err:  # ... and checked
            env.check_workers(spark, force=True)
        first, fix = str(err.value).splitlines()[:2]
        assert first.startswith("Spark's Python workers (/nonexistent/bin/python3) cannot run paimon_lab: ")
        assert f"PYSPARK_PYTHON={sys.executable}" in fix and "spark.executorEnv.PYTHONPATH" in fix
    finally:
        sc.pythonExec = saved_exec
        if saved_path is None:
            sc.environment.pop("PYTHONPATH", None)
        else:
            sc.environment["PYTHONPATH"] = saved_path


def test_magic_engine_spark_shows_the_python_error_first(spark, wh, cat):
    import paimon_lab.sql as sql_module
    from paimon_lab.magic import PaimonMagicError, run_magic

    pytest.importorskip("sqlglot")
    cat.create_table("db.nn", pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]))
    sql_module.set_default_session(None)
    try:
        run_magic(None, "", f"CREATE CATALOG lab WITH ('type' = 'paimon', 'warehouse' = '{wh}');\nUSE CATALOG lab;")
        run_magic(None, "--engine spark", "INSERT INTO db.nn SELECT 1, 'x'")
        with pytest.raises(PaimonMagicError) as err:  # fails in a Spark task, on an executor
            run_magic(None, "--engine spark", "INSERT INTO db.nn SELECT CAST(NULL AS BIGINT), 'y'")
        assert err.value.message.startswith("DataValidationError: Column 'id' is NOT NULL but has 1 null value(s)")
        with pytest.raises(PaimonMagicError) as err:  # fails in Spark's analyzer
            run_magic(None, "--engine spark", "SELECT nope FROM db.nn")
        assert err.value.message.startswith("AnalysisException: ") or "nope" in err.value.message
        got = run_magic(None, "--engine spark", "SELECT id, v FROM db.nn")
        assert got.to_dict("list") == {"id": [1], "v": ["x"]}
    finally:
        sql_module.default_session().close()
        sql_module.set_default_session(None)


LOCAL_JOB = """
import sys, tempfile
import pyarrow as pa
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
from paimon_lab import Catalog
from paimon_lab import spark as ps
wh = tempfile.mkdtemp()
Catalog(wh).create_database("db")
Catalog(wh).create_table("db.t", pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]),
                         primary_keys=["k"], options={"bucket": "2"})
ps.register(spark, warehouse=wh)
spark.range(0, 100, 1, numPartitions=2).selectExpr("id % 10 AS k", "cast(id AS string) AS v") \
    .write.format("paimon").mode("append").save("db.t")
rows = sorted(tuple(r) for r in spark.read.format("paimon").load("db.t").collect())
workers = spark.sparkContext.parallelize([0], 1).map(lambda _: sys.executable).collect()
print("RESULT", rows == [(k, str(90 + k)) for k in range(10)], workers[0] == sys.executable, sys.executable)
"""


def test_fresh_environment_without_exported_variables(tmp_path):
    """paimon_lab installed in a virtualenv (here: .pth files), a shell with nothing exported
    (no PYSPARK_PYTHON, no PYTHONPATH): the data source works, its workers run the venv's Python."""
    import subprocess
    import sys
    import sysconfig

    from paimon_lab.spark.env import package_root

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], package_root()}
    (tmp_path / "venv" / site.split(str(venv) + "/", 1)[1] / "deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    job = tmp_path / "job.py"
    job.write_text(LOCAL_JOB)
    env = {k: os.environ[k] for k in ("PATH", "HOME", "JAVA_HOME", "LANG") if k in os.environ}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"  # loopback only (not about Python)
    r = subprocess.run([str(py), str(job)], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    result = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT")]
    assert r.returncode == 0 and result, r.stderr[-3000:]
    assert result[0].split()[1:4] == ["True", "True", str(py)], result


# ---------------------------------------------------------------------------------------- a real cluster

CLUSTER_JOB = """
import json, sys, time
from pyspark.sql import SparkSession, functions as F
master, wh, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
spark = (SparkSession.builder.master(master).appName("paimon-lab-cluster-test")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.executor.memory", "1g").config("spark.sql.shuffle.partitions", "4")
         .config("spark.python.daemon.module", "paimon_lab.spark.daemon").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
import pyarrow as pa
from paimon_lab import Catalog
from paimon_lab import spark as ps
out = {"python_exec_before": spark.sparkContext.pythonExec}
ps.register(spark, warehouse=wh)   # points the executors' Python workers at this interpreter
cat = Catalog(wh)
cat.create_database("db", ignore_if_exists=True)
cat.create_table("db.pk", pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("s", pa.string())]),
                 primary_keys=["k"], options={"bucket": "4"})
keys = n * 4 // 5   # ids keys..n-1 (the last partition) update keys 0..n/5-1 written by the first
df = spark.range(0, n, 1, numPartitions=4).selectExpr(f"id % {keys} AS k", "id AS v", "concat('s', id) AS s")
def agg():
    r = spark.read.format("paimon").load("db.pk").agg(
        F.count("*"), F.sum("v"), F.sum(F.length("s")), F.max("v"), F.countDistinct("k")).collect()[0]
    return [int(x) for x in r]
t = time.time(); df.write.format("paimon").mode("append").save("db.pk"); out["write_s"] = time.time() - t
t = time.time(); out["read1"] = agg(); out["read1_s"] = time.time() - t
t = time.time(); out["compact_id"] = ps.compact(spark, "db.pk", full=True); out["compact_s"] = time.time() - t
t = time.time(); out["read2"] = agg(); out["read2_s"] = time.time() - t
table = cat.get_table("db.pk")
out["kinds"] = [s.commit_kind for s in table.snapshots()]
out["levels"] = sorted(set(table.levels().level.tolist()))
out["top"] = table.store.num_levels - 1
out["workers"] = sorted(set(spark.sparkContext.parallelize(range(4), 4).map(lambda _: sys.executable).collect()))
out["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
spark.stop()
print("RESULT " + json.dumps(out))
"""


def _clean_env(cwd) -> dict[str, str]:
    """What a fresh shell has: no PYSPARK_PYTHON, no PYTHONPATH for Spark. The driver itself
    still needs to import paimon_lab: an installed paimon_lab needs nothing, a checkout run
    with PYTHONPATH keeps it for the driver process only (executors never see it)."""
    import subprocess
    import sys

    env = {k: os.environ[k] for k in ("PATH", "HOME", "JAVA_HOME", "LANG", "TMPDIR") if k in os.environ}
    probe = subprocess.run([sys.executable, "-c", "import paimon_lab"], env=env, capture_output=True, cwd=cwd)
    if probe.returncode != 0:
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver binds to loopback only (not about Python)
    return env


def test_plain_write_on_a_standalone_cluster(spark_cluster, tmp_path):
    """2M rows through df.write.format("paimon") into a primary-key table on a real standalone
    cluster (executor JVMs with Python workers of their own), read back with an aggregate,
    compacted by the distributed compaction, read again. The driver runs in a clean environment:
    the Python workers find paimon_lab because register() configured them."""
    import json
    import subprocess
    import sys

    n = 2_000_000
    job = tmp_path / "job.py"
    job.write_text(CLUSTER_JOB)
    wh = tmp_path / "wh"
    started = time.monotonic()
    r = subprocess.run([sys.executable, str(job), spark_cluster.master_url, str(wh), str(n)], env=_clean_env(tmp_path),
                       capture_output=True, text=True, timeout=900, cwd=tmp_path)
    took = time.monotonic() - started
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-4000:]
    out = json.loads(lines[0][len("RESULT "):])
    keys, dup = n * 4 // 5, n - n * 4 // 5
    # key k < dup: its row from the last partition (v = k + keys) wins over the first's (v = k)
    want_sum = keys * (keys - 1) // 2 + dup * keys
    want_len = sum(len(f"s{v}") for v in range(dup, n)) if n <= 10_000 else None
    for read in ("read1", "read2"):
        count, total, length, top, distinct = out[read]
        assert (count, total, top, distinct) == (keys, want_sum, n - 1, keys), (read, out)
        assert want_len is None or length == want_len
    assert out["read1"] == out["read2"]
    assert out["kinds"] == ["APPEND", "COMPACT"] and out["compact_id"] == 2
    assert out["levels"] == [out["top"]]
    assert out["python_exec_before"] == "python3" and out["workers"] == [sys.executable], out
    assert out["executors"] >= 1
    print(f"cluster job: {took:.1f}s total, write {out['write_s']:.1f}s, read {out['read1_s']:.1f}s, "
          f"compact {out['compact_s']:.1f}s, read {out['read2_s']:.1f}s")


# ---------------------------------------------------------------------------------------- compaction, SQL

def test_distributed_compaction_makes_one_compact_snapshot(pypaimon, spark, wh, cat):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()),
                        pa.field("dt", pa.string(), nullable=False)])
    t = cat.create_table("db.c", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2", "num-sorted-run.compaction-trigger": "10", "write-only": "true"})
    for i in range(4):
        t.write(pa.table({"id": list(range(i, 40, 2)), "v": [i] * len(range(i, 40, 2)),
                          "dt": ["x" if k % 3 else "y" for k in range(i, 40, 2)]}, schema=schema))
    before = rows_of(t.to_arrow())
    n = len(t.snapshots())
    sid = ps.compact(spark, "db.c", wh, full=True)
    snaps = t.snapshots()
    assert len(snaps) == n + 1 and snaps[-1].id == sid and snaps[-1].commit_kind == "COMPACT"
    assert rows_of(t.to_arrow()) == before == py_rows(pypaimon, wh, "db.c")
    levels = t.levels()
    assert len(levels) == 4 and set(levels.level) == {t.store.num_levels - 1}  # 2 partitions x 2 buckets
    assert ps.compact(spark, "db.c", wh, full=True) is None  # nothing left to do

    a = cat.create_table("db.ca", pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    for i in range(3):
        a.write(pa.table({"id": [i, i + 10], "dt": ["p", "q"]}))
    sid = ps.compact(spark, "db.ca", wh, full=True)
    assert a.latest_snapshot().id == sid and a.latest_snapshot().commit_kind == "COMPACT"
    assert len(live_files(a)) == 2
    assert sorted(a.to_arrow()["id"].to_pylist()) == [0, 1, 2, 10, 11, 12]


def test_sql_over_paimon_tables(spark, wh, cat):
    t = cat.create_table("db.s", SCHEMA, partition_keys=["dt"])
    t.write(sample(30))
    t.create_tag("first")
    t.write(sample(3, start=100))
    got = ps.sql(spark, "SELECT dt, count(*) AS n FROM db.s GROUP BY dt ORDER BY dt", warehouse=wh).collect()
    assert [tuple(r) for r in got] == [("a", 11), ("b", 11), ("c", 11)]
    old = ps.sql(spark, "SELECT count(*) FROM db.s VERSION AS OF 'first'", warehouse=wh).collect()
    assert old[0][0] == 30
    cat.create_table("db.s2", pa.schema([("dt", pa.string()), ("n", pa.int64())]))
    ps.sql(spark, "INSERT INTO db.s2 SELECT s.dt, count(*) FROM db.s AS s WHERE s.id < 10 GROUP BY s.dt",
           warehouse=wh)
    assert rows_of(cat.get_table("db.s2").to_arrow()) == [("a", 4), ("b", 3), ("c", 3)]
