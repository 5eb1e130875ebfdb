"""A query that is one filtered read answers with the read's rows, without DuckDB
(:mod:`paimon_lab.sql.plain`): the same rows, names and types as when DuckDB runs it, for every
query shape and type below, and DuckDB still runs whatever the read does not apply exactly."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_lab import Catalog
from paimon_lab.sql import Session, plain

pytest.importorskip("duckdb")

N = 40


@pytest.fixture
def s(tmp_path):
    session = Session()
    session.run(f"CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = '{tmp_path / 'wh'}'); "
                "USE CATALOG paimon;")
    session.run("""CREATE TABLE a (id BIGINT, small TINYINT, n INT, f FLOAT, v DOUBLE, ok BOOLEAN, name STRING,
                   code CHAR(3), raw BYTES, day DATE, ts TIMESTAMP(3), ts6 TIMESTAMP(6), ltz TIMESTAMP_LTZ(6),
                   price DECIMAL(10, 2), dt STRING) PARTITIONED BY (dt)""")
    session.run("CREATE TABLE k (id INT NOT NULL, name STRING, v DOUBLE, dt STRING NOT NULL, "
                "PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) WITH ('bucket' = '2')")
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.get_table("default.a").write(_rows())
    k = catalog.get_table("default.k")
    keyed = _rows().select(["id", "name", "v", "dt"]).filter(pc.is_valid(pc.field("dt")))
    keyed = keyed.set_column(0, "id", keyed.column("id").cast(pa.int32())).cast(k.schema.arrow_schema())
    k.write(keyed)
    k.write(keyed.slice(0, 10))  # a second version of some keys: merged on read
    yield session
    session.close()


def _rows() -> pa.Table:
    def some(values):  # every 7th value NULL
        return [None if i % 7 == 3 else x for i, x in enumerate(values)]

    ids = list(range(N))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "small": pa.array(some([i % 100 - 50 for i in ids]), pa.int8()),
        "n": pa.array(some([i * 3 for i in ids]), pa.int32()),
        "f": pa.array(some([i / 4 for i in ids]), pa.float32()),
        "v": pa.array(some([math.nan if i % 11 == 5 else i * 0.1 for i in ids]), pa.float64()),
        "ok": pa.array(some([i % 2 == 0 for i in ids])),
        "name": pa.array(some([f"n{i % 13}" for i in ids])),
        "code": pa.array(some([f"c{i % 10:02d}" for i in ids])),
        "raw": pa.array(some([bytes([i]) for i in ids]), pa.binary()),
        "day": pa.array(some([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids]), pa.date32()),
        "ts": pa.array(some([dt.datetime(2024, 1, 1, 0, 0, i) for i in ids]), pa.timestamp("ms")),
        "ts6": pa.array(some([dt.datetime(2024, 1, 1, 0, 0, 0, i) for i in ids]), pa.timestamp("us")),
        "ltz": pa.array(some([dt.datetime(2024, 1, 1, i % 24, tzinfo=dt.timezone.utc) for i in ids]),
                        pa.timestamp("us", "UTC")),
        "price": pa.array(some([decimal.Decimal(i) / 4 for i in ids]), pa.decimal128(10, 2)),
        "dt": pa.array(some(["x", "y", "z"][i % 3] for i in ids)),
    })


def _both(s: Session, monkeypatch, query: str) -> tuple[pa.Table, pa.Table, bool]:
    """(the answer as the session gives it, the answer with DuckDB forced, whether the first
    was a plain read)."""
    used = []
    real = plain.answer

    def spy(data, columns):
        used.append(columns)
        return real(data, columns)

    monkeypatch.setattr(plain, "answer", spy)
    got = s.execute(query)
    with monkeypatch.context() as m:
        m.setattr(plain, "outputs", lambda select, rel: None)
        slow = s.execute(query)
    return got, slow, bool(used)


PLAIN = [
    "SELECT * FROM a",
    "SELECT * FROM a WHERE id = 7",
    "SELECT * FROM a WHERE id BETWEEN 5 AND 12 AND dt = 'y'",
    "SELECT * FROM a WHERE dt IS NULL OR id < 4",
    "SELECT id, name FROM a WHERE name IN ('n1', 'n2', NULL)",
    "SELECT id FROM a WHERE name NOT IN ('n1', 'n2')",
    "SELECT ID, Name AS label, a.v FROM a WHERE small != -45",
    "SELECT id, id AS again, * FROM a WHERE n > 30 AND n <= 90",
    "SELECT name FROM a WHERE name LIKE 'n1%'",
    "SELECT name FROM a WHERE NOT (name LIKE 'n1%') AND id < 30",
    "SELECT id, v FROM a WHERE v > 1.5",          # NaN: not above 1.5 in the read, nor before DuckDB
    "SELECT id, v FROM a WHERE v != 0.5 OR v IS NULL",
    "SELECT id FROM a WHERE ok = TRUE AND NOT (id IN (2, 4))",
    "SELECT id, price FROM a WHERE price >= 2.5 AND price < 7.125",
    "SELECT id, code FROM a WHERE code = 'c03' OR code > 'c08'",
    "SELECT day, ts, ts6, ltz, raw, f FROM a WHERE id < 9",
    "SELECT * FROM a WHERE small = -41",
    "SELECT * FROM a WHERE id = 1000",
    "SELECT * FROM k",
    "SELECT * FROM k WHERE id = 7",
    "SELECT * FROM k WHERE id BETWEEN 3 AND 20 AND dt = 'y'",
    "SELECT v, id FROM k WHERE name = 'n3'",
    "SELECT x.id FROM k AS x WHERE x.id < 5",
]

THROUGH_DUCKDB = [
    "SELECT * FROM a WHERE id + 1 = 8",                   # not a read filter: DuckDB applies it
    "SELECT * FROM a WHERE id = 7 AND length(name) = 2",  # one conjunct pushed, one left over
    "SELECT * FROM a WHERE f > 1.5",                      # FLOAT against a DOUBLE literal
    "SELECT id FROM a WHERE NOT (v > 1.5)",               # NaN: DuckDB orders it above 1.5
    "SELECT id FROM a WHERE id = CAST('7' AS BIGINT)",    # casts
    "SELECT id FROM a WHERE id = '7'",                    # a string for a number
    "SELECT id FROM a WHERE day = DATE '2024-01-05'",     # date literals
    "SELECT id FROM a WHERE price = 1e0",                 # DuckDB reads 1e0 as a DOUBLE
    "SELECT id FROM a WHERE id = 7 LIMIT 1",
    "SELECT DISTINCT name FROM a WHERE id < 10",
    "SELECT id FROM a WHERE id < 10 ORDER BY id DESC",
    "SELECT id * 2 AS twice FROM a WHERE id < 10",
    "SELECT * EXCLUDE (raw) FROM a WHERE id < 10",
    "SELECT a.* FROM a WHERE id < 10",
    "SELECT id, 1 AS one FROM a WHERE id < 10",
    "SELECT a.id FROM a JOIN k ON a.id = k.id WHERE a.id < 5",
]


@pytest.mark.parametrize("query", PLAIN)
def test_a_plain_read_answers_as_duckdb_would(s, monkeypatch, query):
    got, slow, was_plain = _both(s, monkeypatch, query)
    assert was_plain, query
    assert got.schema == slow.schema, query
    assert got.to_pylist() == slow.to_pylist() or _nan_equal(got, slow), query


@pytest.mark.parametrize("query", THROUGH_DUCKDB)
def test_what_the_read_does_not_apply_exactly_goes_through_duckdb(s, monkeypatch, query):
    got, slow, was_plain = _both(s, monkeypatch, query)
    assert not was_plain, query
    assert got.schema == slow.schema and _nan_equal(got, slow, any_order=True), query


def _nan_equal(a: pa.Table, b: pa.Table, any_order: bool = False) -> bool:
    def norm(rows):
        out = [{k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in rows]
        return sorted(out, key=repr) if any_order else out

    return norm(a.to_pylist()) == norm(b.to_pylist())


def test_plain_reads_match_a_model_of_the_rows(s):
    """Against plain pyarrow, not only against the DuckDB path: NULLs, NaN and partitions."""
    data = _rows()
    got = s.execute("SELECT id, v, dt FROM a WHERE v > 1.5 AND dt = 'x'")
    want = [(i, v, d) for i, v, d in zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt")))
            if v is not None and not math.isnan(v) and v > 1.5 and d == "x"]
    assert sorted(zip(*(got.column(c).to_pylist() for c in ("id", "v", "dt")))) == sorted(want)
    assert got.schema == pa.schema([("id", pa.int64()), ("v", pa.float64()), ("dt", pa.string())])
    assert s.execute("SELECT * FROM k WHERE id = 3").num_rows == 0  # id 3: a NULL-partition row, not in k
    res = s.execute("SELECT * FROM k WHERE id = 4 AND dt = 'y'")
    assert res.to_pylist() == [{"id": 4, "name": "n4", "v": 0.4, "dt": "y"}]
    assert all(f.nullable for f in res.schema)  # as DuckDB returns NOT NULL columns


def test_explain_says_when_no_duckdb_runs(s):
    plan = s.execute("EXPLAIN SELECT * FROM a WHERE id = 7")
    assert plan.column("step").to_pylist()[-1] == "answer"
    plan = s.execute("EXPLAIN SELECT * FROM a WHERE id + 1 = 8")
    assert plan.column("step").to_pylist()[-1] == "duckdb"
