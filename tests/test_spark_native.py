"""paimon_lab.spark.read_table: files that need no merge read by Spark's own Parquet/ORC reader,
the rest by paimon_lab in Python workers; every result equal to paimon_lab's own read.

Each test also checks which files took which path (:func:`paimon_lab.spark.native.plan_read`), so
a fast path that silently fell back, or read rows it must not, fails here.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="PySpark is not installed")

from paimon_lab import Catalog, SchemaChange
from paimon_lab import spark as ps
from paimon_lab.spark.native import plan_read
from tests.test_spark import SCHEMA, rows_of, sample

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _registered(spark):
    ps.register(spark)


@pytest.fixture
def cat(wh) -> Catalog:
    c = Catalog(wh)
    c.create_database("db")
    return c


def paths(spark, wh, ident, **options) -> tuple[int, int]:
    """(files Spark reads itself, splits left to paimon_lab)."""
    plan = plan_read(spark, ident, wh, options)
    return sum(len(v) for v in plan.native.values()), len(plan.python)


def native(spark, wh, ident, **options):
    return ps.read_table(spark, ident, wh, options)


def test_append_table_is_read_by_spark_parquet(spark, wh, cat):
    t = cat.create_table("db.a", SCHEMA, partition_keys=["dt"])
    t.write(sample(50))
    t.write(sample(50, start=100))
    assert paths(spark, wh, "db.a") == (6, 0)
    assert rows_of(native(spark, wh, "db.a")) == rows_of(t.to_arrow())
    # projection, filters (Spark's Parquet pushdown), and the option that turns the fast path off
    got = native(spark, wh, "db.a").filter("dt = 'b' AND id > 110").select("id", "amount", "dt")
    assert rows_of(got) == rows_of(t.to_arrow(columns=["id", "amount", "dt"], filter="dt = 'b' AND id > 110"))
    assert "FileScan parquet" in got._jdf.queryExecution().executedPlan().toString()
    assert rows_of(native(spark, wh, "db.a", columns="name,id")) == rows_of(t.to_arrow(columns=["id", "name"]))
    assert paths(spark, wh, "db.a", **{"native-read": "false"}) == (0, 3)
    assert rows_of(native(spark, wh, "db.a", **{"native-read": "false"})) == rows_of(t.to_arrow())
    # an empty table, and the ORC format
    cat.create_table("db.empty", SCHEMA)
    assert native(spark, wh, "db.empty").count() == 0
    o = cat.create_table("db.orc", SCHEMA, partition_keys=["dt"], options={"file.format": "orc"})
    o.write(sample(40))
    assert paths(spark, wh, "db.orc") == (0, 3)   # Spark's ORC reader has no TIMESTAMP_NTZ
    assert paths(spark, wh, "db.orc", columns="id,name,amount,dt") == (3, 0)
    assert rows_of(native(spark, wh, "db.orc")) == rows_of(o.to_arrow())
    assert rows_of(native(spark, wh, "db.orc", columns="id,name,amount,dt")) == \
        rows_of(o.to_arrow(columns=["id", "name", "amount", "dt"]))


def test_pk_table_merged_and_unmerged_splits(spark, wh, cat):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])
    t = cat.create_table("db.kv", schema, primary_keys=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": range(20), "v": [f"a{i}" for i in range(20)], "n": range(20)}, schema=schema))
    assert paths(spark, wh, "db.kv") == (2, 0)   # one level-0 file per bucket: no merge
    t.write(pa.table({"id": [2, 4], "v": ["B", None], "n": [20, 40]}, schema=schema))
    t.delete("id = 3")
    native_files, python = paths(spark, wh, "db.kv")
    assert python >= 1 and native_files <= 1        # the buckets that got new files merge
    assert rows_of(native(spark, wh, "db.kv")) == rows_of(t.to_arrow())
    t.compact(full=True)                              # one sorted run per bucket above level 0
    assert paths(spark, wh, "db.kv") == (2, 0)
    want = rows_of(t.to_arrow())
    assert rows_of(native(spark, wh, "db.kv")) == want and (3, "a3", 3) not in want
    assert rows_of(native(spark, wh, "db.kv").filter("n >= 20")) == [(2, "B", 20), (4, None, 40)]


def test_deletion_vectors_go_to_paimon_lab(spark, wh, cat):
    t = cat.create_table("db.dv", SCHEMA, partition_keys=["dt"], options={"deletion-vectors.enabled": "true"})
    t.write(sample(60))
    t.delete("id < 10")
    _, python = paths(spark, wh, "db.dv")
    assert python >= 1                              # files with a deletion vector
    assert rows_of(native(spark, wh, "db.dv")) == rows_of(t.to_arrow())
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    k = cat.create_table("db.kdv", schema, primary_keys=["id"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true"})
    k.write(pa.table({"id": range(10), "v": [str(i) for i in range(10)]}, schema=schema))
    k.compact(full=True)
    k.write(pa.table({"id": [1, 2], "v": ["x", "y"]}, schema=schema))
    k.compact()
    want = rows_of(k.to_arrow())
    assert rows_of(native(spark, wh, "db.kdv")) == want and (1, "x") in want and (1, "1") not in want


def test_schema_evolution_by_field_id(spark, wh, cat):
    t = cat.create_table("db.ev", SCHEMA, partition_keys=["dt"])
    t.write(sample(30))
    t.alter(SchemaChange.rename_column("name", "label"), SchemaChange.add_column("extra", "INT"))
    t.write(pa.table({**{c: sample(30, start=50).column(c) for c in SCHEMA.names if c != "name"},
                      "label": sample(30, start=50).column("name"), "extra": pa.array(range(30), pa.int32())}))
    native_files, python = paths(spark, wh, "db.ev")
    assert (native_files, python) == (6, 0)         # old files: "label" read as "name", extra NULL
    assert rows_of(native(spark, wh, "db.ev")) == rows_of(t.to_arrow())
    t.alter(SchemaChange.update_column_type("extra", "BIGINT"))
    # files written with extra INT go to paimon_lab (it casts); the oldest files still have no extra
    assert paths(spark, wh, "db.ev") == (3, 3)
    assert rows_of(native(spark, wh, "db.ev")) == rows_of(t.to_arrow())
    t.alter(SchemaChange.set_option("fields.extra.default-value", "7"))
    assert paths(spark, wh, "db.ev") == (0, 3)       # defaults fill NULLs: paimon_lab
    assert rows_of(native(spark, wh, "db.ev")) == rows_of(t.to_arrow())


def test_time_travel(spark, wh, cat):
    t = cat.create_table("db.tt", SCHEMA, partition_keys=["dt"])
    s1 = t.write(sample(30))
    t.create_tag("v1")
    stamp = t.latest_snapshot().time_millis
    s2 = t.write(sample(30, start=100))
    t.delete("dt = 'a'")
    assert rows_of(native(spark, wh, "db.tt")) == rows_of(t.to_arrow())
    assert rows_of(native(spark, wh, "db.tt", **{"snapshot-id": s2})) == rows_of(t.to_arrow(snapshot_id=s2))
    assert rows_of(native(spark, wh, "db.tt", **{"scan.snapshot-id": s1})) == rows_of(sample(30))
    assert rows_of(native(spark, wh, "db.tt", tag="v1")) == rows_of(sample(30))
    assert rows_of(native(spark, wh, "db.tt", **{"scan.timestamp-millis": stamp})) == rows_of(sample(30))
    assert rows_of(native(spark, wh, t.path)) == rows_of(t.to_arrow())   # a table path
    # ps.sql reads through the same route
    got = ps.sql(spark, f"SELECT count(*) FROM db.tt VERSION AS OF {s1}", warehouse=wh).collect()[0][0]
    assert got == 30
