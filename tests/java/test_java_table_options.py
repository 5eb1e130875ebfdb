"""Table options whose effect shows in the files: paimon-lab and Java Paimon write, read and
compact each other's tables carrying them."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
FIELDS = [("k", "BIGINT NOT NULL"), ("v", "STRING")]
PER_LEVEL = {"bucket": "1", "file.format.per.level": "0:avro,5:orc", "file.compression.per.level": "5:snappy"}


def _rows(keys, tag):
    keys = list(keys)
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def _formats(t):
    """(level, extension) of every data file of the latest snapshot."""
    return sorted((int(r.level), r.file_name.rsplit(".", 1)[1]) for r in t.levels().itertuples())


def _expected(*batches):
    rows = {}
    for b in batches:
        rows.update(zip(b["k"].to_pylist(), b["v"].to_pylist()))
    return pa.table({"k": pa.array(sorted(rows), pa.int64()), "v": [rows[k] for k in sorted(rows)]}, schema=SCHEMA)


@pytest.mark.compat("primary-key", "'file.format.per.level', 'file.compression.per.level'",
                    "lab writes; Java reads, compacts")
def test_java_reads_and_compacts_lab_per_level_formats(jo, java, lab, wh):
    t = lab.create_table("db.t", SCHEMA, primary_keys=["k"], options=PER_LEVEL)
    a, b, c = _rows(range(100), "a"), _rows(range(50, 150), "b"), _rows(range(140, 160), "c")
    t.write(a)
    t.write(b)
    assert _formats(t) == [(0, "avro"), (0, "avro")]
    t.compact(full=True)
    assert _formats(t) == [(5, "orc")]
    t.write(c)
    assert _formats(t) == [(0, "avro"), (5, "orc")]
    assert jo.sort_rows(jo.read(wh, "db.t", version=java), "k") == jo.sort_rows(jo.canonical(_expected(a, b, c)), "k")
    d = _rows(range(0, 10), "d")
    jo.write(wh, "db.t", d, compact=True, version=java)
    t = lab.get_table("db.t")
    assert _formats(t) == [(5, "orc")]
    assert t.to_arrow().sort_by("k").equals(_expected(a, b, c, d))


@pytest.mark.compat("primary-key", "'file.format.per.level', 'file.compression.per.level'",
                    "Java writes; lab reads, compacts")
def test_lab_reads_and_compacts_java_per_level_formats(jo, java, lab, wh):
    jo.create(wh, "db.t", FIELDS, primary_keys=["k"], options=PER_LEVEL, version=java)
    a, b = _rows(range(100), "a"), _rows(range(50, 150), "b")
    jo.write(wh, "db.t", a, version=java)
    jo.write(wh, "db.t", b, version=java)
    t = lab.get_table("db.t")
    assert _formats(t) == [(0, "avro"), (0, "avro")]
    assert t.to_arrow().sort_by("k").equals(_expected(a, b))
    c = _rows(range(140, 160), "c")
    t.write(c)
    t.compact(full=True)
    assert _formats(t) == [(5, "orc")]
    assert jo.sort_rows(jo.read(wh, "db.t", version=java), "k") == jo.sort_rows(jo.canonical(_expected(a, b, c)), "k")


EXPIRE = {"bucket": "1", "record-level.expire-time": "1 h", "record-level.time-field": "ts"}
TS_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("ts", pa.int32())])


def _timed(keys, ages):
    """Rows whose time field is ``ages`` seconds before now (far from the 1 h boundary)."""
    now = int(time.time())
    return pa.table({"k": pa.array(keys, pa.int64()), "ts": pa.array([now - a for a in ages], pa.int32())})


@pytest.mark.compat("primary-key", "'record-level.expire-time' (INT seconds)", "lab writes; Java compacts; lab reads")
def test_java_compaction_expires_lab_records(jo, java, lab, wh):
    t = lab.create_table("db.t", TS_SCHEMA, primary_keys=["k"], options=EXPIRE)
    t.write(_timed([1, 2], [3 * 3600, 0]))
    t.write(_timed([3], [5 * 3600]))
    assert sorted(t.to_arrow()["k"].to_pylist()) == [1, 2, 3]   # nothing compacted yet
    t.compact(full=True)
    assert sorted(t.to_arrow()["k"].to_pylist()) == [2]
    t.write(_timed([4, 5], [3 * 3600, 0]))
    jo.write(wh, "db.t", _timed([6], [0]), compact=True, version=java)
    assert sorted(lab.get_table("db.t").to_arrow()["k"].to_pylist()) == [2, 5, 6]


@pytest.mark.compat("primary-key", "'record-level.expire-time' (INT seconds)", "Java writes; lab compacts; Java reads")
def test_lab_compaction_expires_java_records(jo, java, lab, wh):
    jo.create(wh, "db.t", [("k", "BIGINT NOT NULL"), ("ts", "INT")], primary_keys=["k"], options=EXPIRE, version=java)
    jo.write(wh, "db.t", _timed([1, 2], [3 * 3600, 0]), version=java)
    jo.write(wh, "db.t", _timed([3], [0]), compact=True, version=java)
    t = lab.get_table("db.t")
    assert sorted(t.to_arrow()["k"].to_pylist()) == [2, 3]     # Java's compaction expired 1
    jo.write(wh, "db.t", _timed([4, 5], [3 * 3600, 0]), version=java)
    assert sorted(r["k"] for r in jo.read(wh, "db.t", version=java)) == [2, 3, 4, 5]
    t = lab.get_table("db.t")
    t.write(_timed([6], [0]))
    t.compact(full=True)
    assert sorted(r["k"] for r in jo.read(wh, "db.t", version=java)) == [2, 3, 5, 6]
