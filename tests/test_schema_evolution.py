"""Schema evolution: new schema files, old data read through field ids."""

import json
import os
from decimal import Decimal

import pyarrow as pa
import pytest

from paimon_lab import SchemaChange as C
from paimon_lab.errors import OptionError, SchemaError


@pytest.fixture
def table(catalog):
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float32()),
                        ("price", pa.decimal128(8, 2)), ("dt", pa.string())])
    t = catalog.create_table("db.e", schema, partition_keys=["dt"])
    t.write(pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"],
                      "score": pa.array([1.5, 2.5], pa.float32()),
                      "price": pa.array([Decimal("1.10"), Decimal("2.20")], pa.decimal128(8, 2)),
                      "dt": ["x", "y"]}))
    return t


def test_add_drop_rename_widen_reads_old_files(table):
    table.alter(C.add_column("tag", "STRING", "a new column", after="id"),
                C.rename_column("name", "label"),
                C.drop_column("score"),
                C.update_column_type("id", "BIGINT"),
                C.update_column_type("price", "DECIMAL(12, 2)"))
    assert table.schema.id == 1
    assert table.schema.field_names == ["id", "tag", "label", "price", "dt"]
    obj = json.load(open(os.path.join(table.path, "schema", "schema-1")))
    assert obj["highestFieldId"] == 5 and obj["fields"][1] == {
        "id": 5, "name": "tag", "type": "STRING", "description": "a new column"}
    old = table.to_arrow().sort_by("id")
    assert old.schema.field("id").type == pa.int64()
    assert old.schema.field("price").type == pa.decimal128(12, 2)
    assert old.to_pylist() == [
        {"id": 1, "tag": None, "label": "a", "price": Decimal("1.10"), "dt": "x"},
        {"id": 2, "tag": None, "label": "b", "price": Decimal("2.20"), "dt": "y"}]
    table.write(pa.table({"id": [3], "tag": ["t"], "label": ["c"],
                          "price": pa.array([Decimal("12345678.99")], pa.decimal128(12, 2)), "dt": ["x"]}))
    both = table.to_arrow(filter="label >= 'b'").sort_by("id")
    assert both["id"].to_pylist() == [2, 3]
    assert table.to_arrow(filter="tag IS NULL").num_rows == 2
    assert table.to_arrow(filter="id > 1 AND dt = 'x'")["label"].to_pylist() == ["c"]
    # time travel to the old schema's snapshot reads with today's schema
    assert table.to_arrow(snapshot_id=1).num_rows == 2


def test_first_and_move(table):
    table.alter(C.add_column("z", pa.int64(), first=True))
    table.alter(C.move_column("dt", after="z"))
    assert table.schema.field_names[:2] == ["z", "dt"]
    assert table.to_arrow().column_names[:2] == ["z", "dt"]


@pytest.mark.parametrize("change,match", [
    (C.drop_column("dt"), "partition or primary key"),
    (C.rename_column("dt", "day"), "partition or primary key"),
    (C.update_column_type("name", "INT"), "only widening"),
    (C.update_column_type("id", "SMALLINT"), "only widening"),
    (C.update_column_type("price", "DECIMAL(12, 3)"), "only widening"),
    (C.add_column("name", "STRING"), "already exists"),
    (C.add_column("n", "INT NOT NULL"), "NOT NULL"),
    (C.drop_column("nope"), "does not exist"),
    (C.rename_column("id", "name"), "exists"),
])
def test_invalid_changes_are_refused(table, change, match):
    with pytest.raises(SchemaError, match=match):
        table.alter(change)
    assert table.schema.id == 0 and table.schema_manager.list_ids() == [0]


def test_options_set_reset_and_validation(table):
    table.alter(C.set_option("snapshot.num-retained.max", "50"), C.update_comment("events"))
    assert table.options["snapshot.num-retained.max"] == "50" and table.schema.comment == "events"
    table.alter(C.remove_option("snapshot.num-retained.max"))
    assert "snapshot.num-retained.max" not in table.options
    with pytest.raises(OptionError):
        table.alter(C.set_option("snapshot.num-retained.max", "many"))
    with pytest.raises(SchemaError, match="cannot be changed"):
        table.alter(C.set_option("merge-engine", "first-row"))


def test_primary_key_table_evolution(catalog):
    schema = pa.schema([("k", pa.int32()), ("v", pa.int32()), ("s", pa.string())])
    t = catalog.create_table("db.p", schema, primary_keys=["k"], options={"bucket": "1"})
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "v": pa.array([10, 20], pa.int32()), "s": ["a", "b"]}))
    t.alter(C.update_column_type("v", "BIGINT"), C.rename_column("s", "text"), C.add_column("extra", "DOUBLE"))
    t.write(pa.table({"k": pa.array([2, 3], pa.int32()), "v": [200, 300], "text": ["B", "c"], "extra": [1.0, None]}))
    assert t.to_arrow().sort_by("k").to_pylist() == [
        {"k": 1, "v": 10, "text": "a", "extra": None},
        {"k": 2, "v": 200, "text": "B", "extra": 1.0},
        {"k": 3, "v": 300, "text": "c", "extra": None}]
    t.compact(full=True)
    assert t.to_arrow().sort_by("k")["v"].to_pylist() == [10, 200, 300]
    assert set(t.levels()["schema_id"]) == {1}
    with pytest.raises(SchemaError, match="partition or primary key"):
        t.alter(C.update_column_type("k", "BIGINT"))


def test_rescale_buckets_by_option_then_overwrite(catalog):
    schema = pa.schema([("k", pa.int32()), ("v", pa.int64())])
    t = catalog.create_table("db.r", schema, primary_keys=["k"], options={"bucket": "2"})
    t.write(pa.table({"k": pa.array(range(20), pa.int32()), "v": list(range(20))}))
    t.alter(C.set_option("bucket", "4"))
    with pytest.raises(SchemaError, match="rescale"):
        t.write(pa.table({"k": pa.array([100], pa.int32()), "v": [1]}))
    t.write(t.to_arrow(), overwrite=True)
    assert {s.bucket for s in t.plan()} == {0, 1, 2, 3}
    with pytest.raises(SchemaError, match="not to or from -1"):
        t.alter(C.set_option("bucket", "-1"))


def test_evolved_table_reads_identically_in_pypaimon(pypaimon, table, catalog):
    table.alter(C.add_column("tag", "STRING", after="id"), C.rename_column("name", "label"),
                C.drop_column("score"), C.update_column_type("id", "BIGINT"))
    table.write(pa.table({"id": [3], "tag": ["t"], "label": ["c"],
                          "price": pa.array([Decimal("3.30")], pa.decimal128(8, 2)), "dt": ["x"]}))
    theirs = pypaimon.read_table(catalog.warehouse, "db.e").sort_by("id")
    ours = table.to_arrow().sort_by("id")
    assert theirs.to_pylist() == ours.to_pylist()
    assert [r["tag"] for r in ours.to_pylist()] == [None, None, "t"]
