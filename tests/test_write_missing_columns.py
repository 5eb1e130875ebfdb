"""Table.write of data that leaves out nullable columns: NULL or the field's default value, as SQL
INSERT with a column list; a missing NOT NULL / primary key column is an error naming it."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from paimon_lab import Table
from paimon_lab.core import types as T
from paimon_lab.errors import DataValidationError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.float64()),
                    ("dt", pa.string())])


def test_append_write_overwrite_and_writer_fill_missing_columns(catalog):
    t = catalog.create_table("db.a", SCHEMA, partition_keys=["dt"])
    t.write(pa.table({"id": [1, 2], "dt": ["x", "x"]}))
    t.write(pd.DataFrame({"score": [3.5], "id": [3], "dt": ["y"]}))  # another order, pandas
    with t.writer() as w:
        w.write(pa.table({"id": [4], "name": ["d"]}))  # the partition column too: NULL partition
    rows = sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "name": None, "score": None, "dt": "x"},
                    {"id": 2, "name": None, "score": None, "dt": "x"},
                    {"id": 3, "name": None, "score": 3.5, "dt": "y"},
                    {"id": 4, "name": "d", "score": None, "dt": None}]
    t.write(pa.table({"id": [9], "dt": ["x"]}), overwrite={"dt": "x"})
    assert sorted(t.to_arrow().column("id").to_pylist()) == [3, 4, 9]
    t.write(pa.table({"id": [10]}), overwrite=True)  # dynamic partition overwrite: the NULL partition
    assert sorted(t.to_arrow().column("id").to_pylist()) == [3, 9, 10]


def test_missing_not_null_and_primary_key_columns_are_named(catalog):
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"])
    with pytest.raises(DataValidationError, match=r"missing column\(s\) \['id', 'dt'\].*primary key: \['id', 'dt'\]"):
        t.write(pa.table({"name": ["a"]}))
    with pytest.raises(DataValidationError, match=r"\['id'\]"):
        with t.writer() as w:
            w.write(pa.table({"dt": ["x"], "name": ["a"]}))
    assert t.latest_snapshot() is None


def test_primary_key_upsert_of_some_columns(catalog):
    t = catalog.create_table("db.pu", SCHEMA, primary_keys=["id"],
                             options={"merge-engine": "partial-update", "bucket": "1"})
    t.write(pa.table({"id": [1], "name": ["a"], "score": [1.0], "dt": ["x"]}))
    t.write(pa.table({"id": [1], "score": [2.0]}))  # NULL: partial-update keeps name and dt
    assert t.to_arrow().to_pylist() == [{"id": 1, "name": "a", "score": 2.0, "dt": "x"}]


def test_default_values_fill_what_is_left_out(catalog):
    t = catalog.create_table("db.d", SCHEMA, options={"fields.score.default-value": "0.5"})
    t.write(pa.table({"id": [1]}))
    assert t.to_arrow().to_pylist() == [{"id": 1, "name": None, "score": 0.5, "dt": None}]
    fields = [T.DataField(0, "id", T.parse_type("BIGINT NOT NULL")),
              T.DataField(1, "name", T.parse_type("STRING"), default_value="'unknown'"),
              T.DataField(2, "n", T.parse_type("INT"), default_value="7")]
    t2 = catalog.create_table("db.f", fields=fields)
    t2.write(pa.table({"id": [1, 2], "n": [1, None]}))
    assert sorted(t2.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "name": "unknown", "n": 1}, {"id": 2, "name": "unknown", "n": 7}]  # NULL too, as Java's write


def test_an_opened_table_writes_the_same_way(catalog):
    catalog.create_table("db.o", SCHEMA)
    t = Table.open(catalog.get_table("db.o").path)
    t.write(pa.table({"id": [1]}))
    assert t.to_arrow().column("name").to_pylist() == [None]


def test_a_field_default_replaces_nulls_in_sql_inserts_too(catalog, tmp_path):
    from paimon_lab.sql import Session

    fields = [T.DataField(0, "id", T.parse_type("BIGINT NOT NULL")),
              T.DataField(1, "name", T.parse_type("STRING"), default_value="'it''s'")]
    catalog.create_table("db.s", fields=fields)
    s = Session()
    s.run(f"CREATE CATALOG c WITH ('type'='paimon', 'warehouse'='{catalog.warehouse}'); USE CATALOG c; USE db")
    s.run("INSERT INTO s (id) VALUES (1)")
    s.run("INSERT INTO s VALUES (2, NULL), (3, 'x')")
    assert s.run("SELECT * FROM s ORDER BY id").to_pylist() == [
        {"id": 1, "name": "it's"}, {"id": 2, "name": "it's"}, {"id": 3, "name": "x"}]
    bad = catalog.create_table("db.bad", fields=[T.DataField(0, "n", T.parse_type("INT"), default_value="seven")])
    with pytest.raises(DataValidationError, match="default value seven does not convert to INT"):
        bad.write(pa.table({"n": pa.array([None], pa.int32())}))
