"""TIMESTAMP(p) / TIMESTAMP_LTZ(p) precision as Flink has it: values written are truncated to p
fractional digits (SQL INSERT and Table.write alike), and a cast to a string shows exactly p."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.sql import Session

pytest.importorskip("duckdb")

UTC = dt.timezone.utc
COLUMNS = {"a": "TIMESTAMP(0)", "b": "TIMESTAMP(2)", "c": "TIMESTAMP(3)", "e": "TIMESTAMP(5)", "g": "TIMESTAMP(6)",
           "l0": "TIMESTAMP_LTZ(0)", "l2": "TIMESTAMP_LTZ(2)", "l3": "TIMESTAMP_LTZ(3)", "l5": "TIMESTAMP_LTZ(5)"}
# the value .987654321 truncated to each column's precision (a rounding writer gives 10:00:01 etc.)
EXPECTED = {"a": 0, "b": 980000, "c": 987000, "e": 987650, "g": 987654, "l0": 0, "l2": 980000, "l3": 987000,
            "l5": 987650}


@pytest.fixture
def s(tmp_path):
    session = Session()
    session.run(f"CREATE CATALOG c WITH ('type'='paimon', 'warehouse'='file:{tmp_path}'); USE CATALOG c")
    session.run("SET 'table.local-time-zone' = 'UTC'")
    cols = ", ".join(f"{k} {v}" for k, v in COLUMNS.items())
    session.run(f"CREATE TABLE t (id INT, {cols})")
    yield session
    session.close()


def _micros(row: dict) -> dict:
    return {k: row[k].microsecond for k in COLUMNS}


def test_sql_insert_truncates_to_the_columns_precision(s, tmp_path):
    lit = "TIMESTAMP '2024-01-01 10:00:00.987654321'"
    s.run(f"INSERT INTO t VALUES (1, {', '.join([lit] * len(COLUMNS))})")
    s.run(f"INSERT INTO t VALUES (2, {', '.join([repr('2024-01-01 10:00:00.987654')] * len(COLUMNS))})")
    s.run(f"INSERT INTO t VALUES (3, {', '.join([repr('1969-12-31 23:59:59.987654')] * len(COLUMNS))})")
    rows = Catalog(str(tmp_path)).get_table("default.t").to_arrow().sort_by("id").to_pylist()
    assert [_micros(r) for r in rows[:2]] == [EXPECTED] * 2
    assert all(r["a"].second == 0 for r in rows[:2])  # never rounded up
    # before 1970, Java's DateTimeUtils.truncate: below the millisecond toward the earlier time,
    # then (p < 3) the epoch millis (-13) toward zero: -10 for p = 2, 0 for p = 0
    assert _micros(rows[2]) == {**EXPECTED, "b": 990000, "l2": 990000}
    assert rows[2]["a"] == dt.datetime(1970, 1, 1) and rows[2]["c"].second == 59


def test_table_write_truncates_to_the_columns_precision(s, tmp_path):
    t = Catalog(str(tmp_path)).get_table("default.t")
    naive = dt.datetime(2024, 1, 1, 10, 0, 0, 987654)
    data = {"id": pa.array([1], pa.int32())}
    for k, v in COLUMNS.items():
        data[k] = pa.array([naive.replace(tzinfo=UTC) if "LTZ" in v else naive])
    t.write(pa.table(data))                                                    # microseconds in
    nanos = {k: pa.array([1704103200987654321], pa.int64()).cast(pa.timestamp("ns", "UTC" if "LTZ" in v else None))
             for k, v in COLUMNS.items()}
    t.write(pa.table({"id": pa.array([2], pa.int32()), **nanos}))               # nanoseconds in
    rows = t.to_arrow().sort_by("id").to_pylist()
    assert [_micros(r) for r in rows] == [EXPECTED] * 2
    assert rows[0]["a"] == dt.datetime(2024, 1, 1, 10, 0, 0)


def test_cast_to_string_shows_exactly_p_digits(s):
    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")
    s.run("INSERT INTO t (id, a, b, c, g, l0, l3, l5) VALUES (1, TIMESTAMP '2024-01-01 10:00:00', "
          "TIMESTAMP '2024-01-01 10:00:00.5', TIMESTAMP '2024-01-01 10:00:00', TIMESTAMP '2024-01-01 10:00:00.5', "
          "TIMESTAMP '2024-01-01 10:00:00', TIMESTAMP '2024-01-01 10:00:00', TIMESTAMP '2024-01-01 10:00:00.25')")
    row = s.run("SELECT CAST(a AS STRING) a, CAST(b AS STRING) b, CAST(c AS STRING) c, CAST(g AS VARCHAR) g, "
                "CAST(l0 AS STRING) l0, CAST(x.l3 AS STRING) l3, CAST(l5 AS STRING) l5, c || '|' || l3 AS cat, "
                "CAST(CAST(c AS TIMESTAMP(6)) AS STRING) c6, CAST(CAST(c AS TIMESTAMP_LTZ(2)) AS STRING) c2, "
                "CAST(TIMESTAMP '2024-01-01 10:00:00.10' AS STRING) lit, CAST(id AS STRING) i FROM t x").to_pylist()[0]
    assert row == {"a": "2024-01-01 10:00:00", "b": "2024-01-01 10:00:00.50", "c": "2024-01-01 10:00:00.000",
                   "g": "2024-01-01 10:00:00.500000", "l0": "2024-01-01 10:00:00", "l3": "2024-01-01 10:00:00.000",
                   "l5": "2024-01-01 10:00:00.25000", "cat": "2024-01-01 10:00:00.000|2024-01-01 10:00:00.000",
                   "c6": "2024-01-01 10:00:00.000000", "c2": "2024-01-01 10:00:00.00", "lit": "2024-01-01 10:00:00.10",
                   "i": "1"}


def test_a_null_timestamp_casts_to_null(s):
    s.run("INSERT INTO t (id) VALUES (2)")
    row = s.run("SELECT CAST(c AS STRING) c, c || 'x' AS cat, CAST(a AS STRING) a FROM t").to_pylist()[0]
    assert row == {"c": None, "cat": None, "a": None}
