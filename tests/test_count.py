"""count(*) from the manifests' row counts (API and SQL) where no rows need merging, and from a
read where they do: the metadata path is proven by deleting the data files first."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.errors import CorruptFileError
from paimon_lab.sql import SqlError

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


def _rows(keys, dt, tag="v"):
    keys = list(keys)
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{tag}{k}" for k in keys], "dt": [dt] * len(keys)},
                    schema=SCHEMA)


def _drop_data_files(t) -> None:
    files = [f for f in glob.glob(os.path.join(t.path, "dt=*", "bucket-*", "*")) if not f.endswith(".index")]
    assert files
    for f in files:
        os.remove(f)


@pytest.fixture
def append(lab):
    t = lab.create_table("db.a", SCHEMA, partition_keys=["dt"])
    t.write(pa.concat_tables([_rows(range(30), "d1"), _rows(range(20), "d2")]))
    t.write(_rows(range(5), "d3"))
    return t


def test_append_count_from_metadata(append):
    t = append
    assert t.count() == t.to_arrow().num_rows == 55
    assert t.count(filter="dt = 'd1'") == 30
    assert t.count(filter="dt IN ('d2', 'd3')") == 25
    assert t.count(filter="dt <> 'd1'") == 25
    assert t.count(snapshot_id=1) == 50
    filtered = t.to_arrow(filter="k < 10").num_rows
    _drop_data_files(t)
    assert t.count() == 55 and t.count(filter="dt = 'd2'") == 20  # no data file needed
    with pytest.raises(CorruptFileError, match="is missing"):
        t.count(filter="k < 10")  # a filter on data columns reads
    assert filtered == 25


def test_pk_count_needs_merge_until_compacted(lab):
    t = lab.create_table("db.p", SCHEMA, partition_keys=["dt"], primary_keys=["k", "dt"], options={"bucket": "2"})
    t.write(_rows(range(40), "d1"))
    t.write(_rows(range(20, 60), "d1", "w"))  # overlaps: 60 keys, 80 rows on disk
    assert t.count() == t.to_arrow().num_rows == 60
    assert sum(s.row_count for s in t.plan()) == 80
    t.compact(full=True)
    assert t.count() == 60
    t.write(_rows(range(5), "d1"), row_kinds=["-D"] * 5)
    assert t.count() == t.to_arrow().num_rows == 55  # a level-0 file of deletes: read and merged
    t.compact(full=True)
    _drop_data_files(t)
    assert t.count() == 55  # all at the top level without deletes: metadata


def test_pk_count_reads_when_merge_needed(lab):
    t = lab.create_table("db.p", SCHEMA, partition_keys=["dt"], primary_keys=["k", "dt"], options={"bucket": "1"})
    t.write(_rows(range(10), "d1"))
    t.write(_rows(range(5, 15), "d1"))
    _drop_data_files(t)
    with pytest.raises(CorruptFileError, match="is missing"):
        t.count()  # two overlapping level-0 files: the count must come from merged rows


def test_deletion_vectors_subtract_their_cardinality(lab):
    t = lab.create_table("db.dv", SCHEMA, partition_keys=["dt"], primary_keys=["k", "dt"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(_rows(range(50), "d1"))
    t.write(_rows(range(10, 20), "d1", "w"))  # marks 10 older rows deleted
    assert t.count() == t.to_arrow().num_rows == 50
    _drop_data_files(t)
    assert t.count() == 50
    a = lab.create_table("db.adv", SCHEMA, partition_keys=["dt"], options={"deletion-vectors.enabled": "true"})
    a.write(_rows(range(30), "d1"))
    a.delete("k < 7")
    assert a.count() == a.to_arrow().num_rows == 23


def test_sql_count_from_metadata(append, wh):
    from paimon_lab.sql import Session

    pytest.importorskip("duckdb")
    s = Session()
    try:
        s.run(f"CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = '{wh}'); USE CATALOG paimon;")
        expected = {q: s.execute(q).to_pylist() for q in [
            "SELECT count(*) FROM db.a", "SELECT count(1) AS n FROM db.a WHERE dt = 'd1'",
            "SELECT count(*) FROM db.a WHERE dt IN ('d1', 'd3') AND dt <> 'd3'"]}
        assert list(expected.values()) == [[{"count_star()": 55}], [{"n": 30}], [{"count_star()": 30}]]
        assert all(sc.metadata for sc in s.last_scans)
        # over a subquery the count is of its rows, not the table's
        assert s.execute("SELECT count(*) AS n FROM (SELECT DISTINCT dt FROM db.a) x").to_pylist() == [{"n": 3}]
        assert not s.last_scans[0].metadata
        _drop_data_files(append)
        for q, want in expected.items():
            assert s.execute(q).to_pylist() == want
            (scan,) = s.last_scans
            assert scan.metadata and scan.rows == want[0][next(iter(want[0]))]
        assert s.execute("SELECT count(*) FROM db.a").schema.field(0).type == pa.int64()
        for q in ["SELECT count(*) FROM db.a WHERE k < 3", "SELECT count(v) FROM db.a",
                  "SELECT count(*) FROM db.a GROUP BY dt"]:
            with pytest.raises(SqlError, match="is missing"):
                s.execute(q)  # these read rows
    finally:
        s.close()


def test_sql_count_of_pk_table_that_needs_merge(lab, wh):
    from paimon_lab.sql import Session

    pytest.importorskip("duckdb")
    t = lab.create_table("db.p", SCHEMA, partition_keys=["dt"], primary_keys=["k", "dt"], options={"bucket": "1"})
    t.write(_rows(range(10), "d1"))
    t.write(_rows(range(5, 15), "d1"))
    s = Session()
    try:
        s.run(f"CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = '{wh}'); USE CATALOG paimon;")
        assert s.execute("SELECT count(*) AS n FROM db.p").to_pylist() == [{"n": 15}]
        assert not s.last_scans[0].metadata
        Catalog(wh).get_table("db.p").compact(full=True)
        assert s.execute("SELECT count(*) AS n FROM db.p").to_pylist() == [{"n": 15}]
        assert s.last_scans[0].metadata
    finally:
        s.close()
