"""CHAR(n)/VARCHAR(n)/BINARY(n)/VARBINARY(n) lengths held on every write path: refused by default
(as Spark SQL does), trimmed and padded with 'table.exec.sink.type-length-enforcer' = 'trim_pad'
(as Flink's enforcer does), or stored as given with 'ignore'."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.errors import DataValidationError, OptionError
from paimon_lab.sql import Session, SqlError
from paimon_lab.core.types import DataField, parse_type

FIELDS = [DataField(0, "id", parse_type("INT")), DataField(1, "c", parse_type("CHAR(3)")),
          DataField(2, "v", parse_type("VARCHAR(4)")), DataField(3, "b", parse_type("BINARY(2)")),
          DataField(4, "vb", parse_type("VARBINARY(2)"))]


@pytest.fixture
def cat(tmp_path):
    c = Catalog(str(tmp_path))
    c.create_database("db")
    return c


@pytest.mark.parametrize("column, value, words", [("v", "abcdefgh", "VARCHAR\\(4\\).*longer than 4 characters"),
                                                  ("c", "abcd", "CHAR\\(3\\).*longer than 3 characters"),
                                                  ("vb", b"xyz", "VARBINARY\\(2\\).*longer than 2 bytes")])
def test_longer_values_are_refused_by_default(cat, column, value, words):
    t = cat.create_table("db.t", fields=FIELDS)
    row = {"id": [1], "c": ["ab"], "v": ["ab"], "b": [b"x"], "vb": [b"y"], column: [value]}
    with pytest.raises(DataValidationError, match=f"'{column}' is {words}"):
        t.write(pa.table(row))
    assert t.snapshots() == []
    t.write(pa.table({"id": [1], "c": ["abc"], "v": ["äöüß"], "b": [b"xy"], "vb": [b"y"]}))  # characters, not bytes
    assert t.to_arrow().column("v").to_pylist() == ["äöüß"]


def test_sql_insert_names_the_column(cat):
    s = Session(cat)
    s.run("CREATE TABLE db.s (id INT, name VARCHAR(4))")
    with pytest.raises(SqlError, match="'name' is VARCHAR\\(4\\)"):
        s.run("INSERT INTO db.s VALUES (1, 'abcdefgh')")
    s.run("SET 'table.exec.sink.type-length-enforcer' = 'TRIM_PAD'")   # Flink's session setting
    s.run("INSERT INTO db.s VALUES (1, 'abcdefgh')")
    assert s.run("SELECT name FROM db.s").to_pylist() == [{"name": "abcd"}]
    s.run("SET 'table.exec.sink.type-length-enforcer' = 'ignore'")
    s.run("INSERT INTO db.s VALUES (2, 'abcdefgh')")
    assert s.run("SELECT name FROM db.s WHERE id = 2").to_pylist() == [{"name": "abcdefgh"}]
    s.run("RESET 'table.exec.sink.type-length-enforcer'")
    with pytest.raises(SqlError, match="VARCHAR"):
        s.run("INSERT INTO db.s VALUES (3, 'abcdefgh')")


def test_trim_pad_and_ignore(cat):
    t = cat.create_table("db.t", fields=FIELDS, options={"table.exec.sink.type-length-enforcer": "TRIM_PAD"})
    t.write(pa.table({"id": [1, 2], "c": ["ab", "abcdef"], "v": ["abcdefgh", None], "b": [b"x", b"xyz"],
                      "vb": [b"yyy", b""]}))
    assert t.to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "c": "ab ", "v": "abcd", "b": b"x\x00", "vb": b"yy"},
        {"id": 2, "c": "abc", "v": None, "b": b"xy", "vb": b""}]
    g = cat.create_table("db.g", fields=FIELDS, options={"table.exec.sink.type-length-enforcer": "ignore"})
    g.write(pa.table({"id": [1], "c": ["abcdef"], "v": ["abcdefgh"], "b": [b"xyz"], "vb": [b"yyy"]}))
    assert g.to_arrow().column("v").to_pylist() == ["abcdefgh"]
    with pytest.raises(OptionError, match="type-length-enforcer"):
        cat.create_table("db.x", fields=FIELDS, options={"table.exec.sink.type-length-enforcer": "pad"})


def test_commit_retries_must_not_be_negative(cat):
    with pytest.raises(OptionError, match="commit.max-retries.*negative"):
        cat.create_table("db.r", pa.schema([("id", pa.int64())]), options={"commit.max-retries": "-1"})
