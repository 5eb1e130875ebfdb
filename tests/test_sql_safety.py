"""Safe SQL: one statement per sql() call unless asked for a script, parameters bound as values,
and DuckDB's file and network functions off unless a session turns them on."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

import paimon_lab
from paimon_lab import Catalog
from paimon_lab.sql import Session, SqlError
from paimon_lab.sql.params import bind, literal


@pytest.fixture
def cat(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    t = c.create_table("db.t", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    t.write(pa.table({"id": [1, 2, 3], "name": ["a", "b'c", "d"]}))
    return c


def test_one_statement_unless_a_script(cat):
    with pytest.raises(SqlError, match="one statement and was given 2.*script=True"):
        paimon_lab.sql("SELECT 1; DROP TABLE db.t", catalog=cat)
    assert cat.table_exists("db.t")
    out = paimon_lab.sql("CREATE TABLE db.u (x INT); INSERT INTO db.u VALUES (1); SELECT x FROM db.u",
                         catalog=cat, script=True)
    assert out.to_pylist() == [{"x": 1}]


def test_parameters_are_values_not_sql(cat):
    evil = "x' OR '1'='1"
    got = paimon_lab.sql("SELECT id FROM db.t WHERE name = ?", catalog=cat, params=[evil])
    assert got.num_rows == 0
    got = paimon_lab.sql("SELECT id FROM db.t WHERE name = :n OR id = :i ORDER BY id", catalog=cat,
                         params={"n": "b'c", "i": 3})
    assert got.column("id").to_pylist() == [2, 3]
    paimon_lab.sql("INSERT INTO db.t VALUES (?, ?)", catalog=cat, params=[4, "1; DROP TABLE db.t"])
    assert cat.table_exists("db.t")
    assert paimon_lab.sql("SELECT name FROM db.t WHERE id = ?", catalog=cat, params=[4]).to_pylist() == [
        {"name": "1; DROP TABLE db.t"}]


def test_placeholders_in_strings_and_comments_stay(cat):
    text = "SELECT '?' AS q, ':x' AS c /* ? :y */, ? AS v -- ?\n"
    assert bind(text, [5]) == "SELECT '?' AS q, ':x' AS c /* ? :y */, 5 AS v -- ?\n"
    assert bind("SELECT x::INT, :a", {"a": None}) == "SELECT x::INT, NULL"


@pytest.mark.parametrize("params, words", [([1, 2], "1 '\\?' placeholder.*2 parameter"),
                                           ({"b": 1}, "No value for parameter.*:a"),
                                           ("abc", "sequence.*mapping")])
def test_bad_parameters_are_named(params, words):
    text = "SELECT :a" if isinstance(params, dict) else "SELECT ?"
    with pytest.raises(SqlError, match=words):
        bind(text, params)


def test_literals():
    assert literal("it's") == "'it''s'"
    assert literal(decimal.Decimal("1.50")) == "1.50"
    assert literal(dt.date(2024, 2, 29)) == "DATE '2024-02-29'"
    assert literal(dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))) == \
        "CAST('2024-01-01 10:00:00+00:00' AS TIMESTAMP_LTZ)"  # an instant, whatever the session's zone
    assert literal(dt.datetime(2024, 1, 1, 12, 0)) == "TIMESTAMP '2024-01-01 12:00:00'"
    assert literal(b"\x00\xff") == "X'00FF'"
    assert literal(float("nan")) == "CAST('NaN' AS DOUBLE)"
    with pytest.raises(SqlError, match="type object"):
        literal(object())


def test_duckdb_file_functions_are_off_by_default(cat, tmp_path):
    csv = tmp_path / "x.csv"
    csv.write_text("a\n1\n")
    s = Session(cat)
    with pytest.raises(SqlError, match="(?i)external access|disabled"):
        s.run(f"SELECT * FROM read_csv('{csv}')")
    s.run("SET enable_external_access = true")   # a session setting, not DuckDB's: changes nothing
    with pytest.raises(SqlError, match="(?i)external access|disabled"):
        s.run(f"SELECT * FROM read_csv('{csv}')")
    assert s.run("SELECT count(*) AS n FROM db.t").to_pylist() == [{"n": 3}]  # tables still read
    s.run("SET 'duckdb.enable_external_access' = 'true'")
    assert s.run(f"SELECT * FROM read_csv('{csv}')").to_pylist() == [{"a": 1}]
