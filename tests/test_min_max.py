"""min/max from the files' statistics (API ``Table.min_max`` and SQL ``SELECT min(c), max(c)``)
where they are exact and no rows need merging, and from a read where not: the metadata path is
proven by deleting the data files first, and Hypothesis checks both paths against pyarrow."""

from __future__ import annotations

import datetime as dt
import glob
import os
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_lab import Catalog, SchemaChange
from paimon_lab.errors import CorruptFileError
from paimon_lab.operation.count import MinMax
from paimon_lab.sql import SqlError

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("i", pa.int32()), ("d", pa.date32()),
                    ("m", pa.decimal128(10, 2)), ("ts", pa.timestamp("us")), ("s", pa.string()),
                    ("f", pa.float64()), pa.field("dt", pa.string(), nullable=False)])


def _rows(keys, part, shift=0):
    keys = list(keys)
    return pa.table({
        "k": keys, "i": [None if k % 7 == 0 else k * 3 - shift for k in keys],
        "d": [dt.date(2020, 1, 1) + dt.timedelta(days=k + shift) for k in keys],
        "m": [Decimal(k) / 4 for k in keys],
        "ts": [dt.datetime(2021, 1, 1) + dt.timedelta(seconds=k) for k in keys],
        "s": [f"s{k:04d}" for k in keys], "f": [k / 2 for k in keys], "dt": [part] * len(keys)}, schema=SCHEMA)


def _drop_data_files(t) -> None:
    files = [f for f in glob.glob(os.path.join(t.path, "**", "bucket-*", "*"), recursive=True)
             if not f.endswith(".index")]
    assert files
    for f in files:
        os.remove(f)


def _model(table: pa.Table, columns) -> dict:
    out = {}
    for c in columns:
        mm = pc.min_max(table.column(c))
        out[c] = MinMax(mm["min"].as_py(), mm["max"].as_py())
    return out


EXACT = ["k", "i", "d", "m", "ts"]


def test_append_min_max_from_metadata(lab):
    t = lab.create_table("db.a", SCHEMA, partition_keys=["dt"])
    t.write(pa.concat_tables([_rows(range(30), "d1"), _rows(range(100, 120), "d2")]))
    t.write(_rows(range(50, 55), "d3"))
    rows = t.to_arrow()
    want = _model(rows, EXACT + ["s", "f"])
    want_d2 = _model(rows.filter(pc.field("dt") == "d2"), EXACT)
    assert t.min_max(EXACT + ["s", "f"]) == want
    assert t.min_max(EXACT, filter="dt = 'd2'") == want_d2
    assert t.min_max("k", filter="dt = 'nope'") == {"k": MinMax(None, None)}
    _drop_data_files(t)
    assert t.min_max(EXACT) == {c: want[c] for c in EXACT}  # no data file needed
    assert t.min_max(EXACT, filter="dt = 'd2'") == want_d2
    for cols, filt in [(["s"], None), (["f"], None), (["k"], "k > 3")]:
        with pytest.raises(CorruptFileError, match="is missing"):
            t.min_max(cols, filter=filt)  # truncated strings, NaN-blind floats, a data filter: read


def test_stats_modes_decide(lab):
    t = lab.create_table("db.full", SCHEMA, partition_keys=["dt"],
                         options={"metadata.stats-mode": "full", "fields.i.stats-mode": "counts"})
    t.write(_rows(range(20), "d1"))
    want = _model(t.to_arrow(), ["s", "i"])
    _drop_data_files(t)
    assert t.min_max("s") == {"s": want["s"]}  # full string stats are exact
    with pytest.raises(CorruptFileError, match="is missing"):
        t.min_max("i")  # counts only: read
    n = lab.create_table("db.none", SCHEMA, options={"metadata.stats-mode": "none"})
    n.write(_rows(range(5), "d1"))
    assert n.min_max("k") == {"k": MinMax(0, 4)}  # read, right


def test_all_null_column_and_empty(lab):
    t = lab.create_table("db.n", SCHEMA)
    assert t.min_max(["k", "i"]) == {"k": MinMax(None, None), "i": MinMax(None, None)}
    t.write(_rows([0, 7, 14], "d1"))  # i is NULL in every row
    _drop_data_files(t)
    assert t.min_max(["i", "k"]) == {"i": MinMax(None, None), "k": MinMax(0, 14)}


def test_deleted_rows_are_not_in_the_answer(lab):
    t = lab.create_table("db.dv", SCHEMA, options={"deletion-vectors.enabled": "true"})
    t.write(_rows(range(10), "d1"))
    t.delete("k = 9")
    assert t.min_max("k") == {"k": MinMax(0, 8)}  # the file's stats still say 9: read
    p = lab.create_table("db.pdv", SCHEMA, primary_keys=["k"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true"})
    p.write(_rows(range(10), "d1"))
    p.compact(full=True)
    p.write(_rows([9], "d1", shift=1000))  # a new, lower i for key 9, which held the max
    assert p.min_max("i") == _model(p.to_arrow(), ["i"]) == {"i": MinMax(-973, 24)}
    p.compact(full=True)  # now marked
    assert p.min_max("i") == _model(p.to_arrow(), ["i"])


def test_pk_needs_merge_until_compacted(lab):
    t = lab.create_table("db.p", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    t.write(_rows(range(40), "d1"))
    t.write(_rows(range(30, 40), "d1", shift=500))  # the max of i moves down, of d up
    assert t.min_max(["i", "d"]) == _model(t.to_arrow(), ["i", "d"])
    t.compact(full=True)
    want = _model(t.to_arrow(), EXACT)
    _drop_data_files(t)
    assert t.min_max(EXACT) == want
    for engine in ("partial-update", "aggregation", "first-row"):
        a = lab.create_table(f"db.{engine.replace('-', '_')}", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": engine})
        a.write(_rows(range(10), "d1"))
        a.write(_rows(range(5, 10), "d1", shift=100))
        assert a.min_max(["i", "d"]) == _model(a.to_arrow(), ["i", "d"]), engine


def test_schema_evolution(lab):
    t = lab.create_table("db.e", SCHEMA)
    t.write(_rows(range(10), "d1"))
    t.alter(SchemaChange.add_column("extra", pa.int64()))
    t.write(pa.table({**{c: _rows([20], "d1").column(c) for c in SCHEMA.names}, "extra": [5]}))
    t.alter(SchemaChange.rename_column("i", "j"))
    want = _model(t.to_arrow(), ["extra", "j", "k"])
    assert want["extra"] == MinMax(5, 5)
    _drop_data_files(t)
    assert t.min_max(["extra", "j", "k"]) == want  # older files lack 'extra'; 'i' is now 'j'
    t2 = lab.create_table("db.e2", SCHEMA)
    t2.write(_rows(range(10), "d1"))
    t2.alter(SchemaChange.update_column_type("i", pa.int64()))
    t2.write(_rows(range(10, 12), "d1").set_column(1, "i", pa.array([1000, None], pa.int32())).cast(
        t2.schema.arrow_schema()))
    assert t2.min_max("i") == _model(t2.to_arrow(), ["i"])
    t2.alter(SchemaChange.set_option("fields.i.default-value", "-5"))  # NULLs read as -5
    assert t2.min_max("i") == _model(t2.to_arrow(), ["i"]) == {"i": MinMax(-5, 1000)}


def test_sql_min_max(lab, wh):
    from paimon_lab.sql import Session

    pytest.importorskip("duckdb")
    t = lab.create_table("db.a", SCHEMA, partition_keys=["dt"])
    t.write(pa.concat_tables([_rows(range(30), "d1"), _rows(range(100, 120), "d2")]))
    s = Session()
    try:
        s.run(f"CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = '{wh}'); USE CATALOG paimon;")
        queries = ["SELECT min(k), max(k) AS hi, count(*) AS n, min(d), max(m), max(ts) FROM db.a",
                   "SELECT max(a.i) FROM db.a a WHERE dt = 'd2'", "SELECT min(k) FROM db.a WHERE dt = 'zz'"]
        expected = {q: s.execute(q) for q in queries}
        assert expected[queries[0]].to_pylist() == [
            {"min(k)": 0, "hi": 119, "n": 50, "min(d)": dt.date(2020, 1, 1), "max(m)": Decimal("29.75"),
             "max(ts)": dt.datetime(2021, 1, 1, 0, 1, 59)}]
        assert expected[queries[1]].to_pylist() == [{"max(a.i)": 118 * 3}]  # 119 is a multiple of 7: NULL
        assert expected[queries[2]].to_pylist() == [{"min(k)": None}]
        assert all(sc.metadata for sc in s.last_scans)
        _drop_data_files(t)
        for q, want in expected.items():
            assert s.execute(q) == want  # same values and types, from metadata
            assert s.last_scans[0].metadata
        for q in ["SELECT min(s) FROM db.a", "SELECT max(k) FROM db.a WHERE k < 3", "SELECT max(k + 1) FROM db.a",
                  "SELECT min(k), sum(k) FROM db.a", "SELECT max(k) FROM db.a GROUP BY dt"]:
            with pytest.raises(SqlError, match="is missing"):
                s.execute(q)  # these read rows
    finally:
        s.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.sampled_from(["write", "write", "delete", "compact"]),
                              st.lists(st.integers(0, 30), min_size=1, max_size=8),
                              st.integers(-50, 50)), min_size=1, max_size=6),
       pk=st.booleans(), dv=st.booleans(), part=st.sampled_from([None, "d1", "d2"]))
def test_min_max_matches_pyarrow(tmp_path_factory, ops, pk, dv, part):
    cat = Catalog(str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    opts = {"deletion-vectors.enabled": str(dv).lower()}
    if pk:
        opts["bucket"] = "2"
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"], primary_keys=["k", "dt"] if pk else None,
                         options=opts)
    for op, keys, shift in ops:
        if op == "write":
            t.write(pa.concat_tables([_rows(sorted(set(keys)), "d1", shift), _rows(sorted(set(keys))[:2], "d2", -shift)]))
        elif op == "delete":
            t.delete(f"k IN ({', '.join(map(str, keys))})")
        else:
            t.compact(full=True)
    filt = None if part is None else f"dt = '{part}'"
    assert t.min_max(EXACT, filter=filt) == _model(t.to_arrow(filter=filt), EXACT)
