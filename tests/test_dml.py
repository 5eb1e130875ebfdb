"""Row-level DML: DELETE, UPDATE, MERGE INTO on append and primary-key tables."""

import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_lab.errors import DataValidationError, PaimonLabError
from conftest import make_rows


def by_id(t):
    return {r["id"]: r for r in t.to_arrow().to_pylist()}


@pytest.fixture(params=["append", "append-dv", "pk"])
def table(request, catalog, sample_schema):
    kind = request.param
    if kind == "pk":
        t = catalog.create_table("db.t", sample_schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2"})
    else:
        opts = {"deletion-vectors.enabled": "true"} if kind == "append-dv" else {}
        t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"], options=opts)
    t.write(make_rows(30))
    t.kind = kind
    return t


def test_delete_with_filter(table):
    sid = table.delete("id >= 20 OR (dt = 'a' AND id < 6)")
    rows = by_id(table)
    assert sorted(rows) == [i for i in range(20) if not (i % 3 == 0 and i < 6)]
    assert table.snapshot(sid).total_record_count is not None
    assert table.delete("id > 1000") is None
    if table.kind == "append":
        assert table.snapshot(sid).commit_kind == "OVERWRITE"
    if table.kind == "append-dv":
        dvs = table.deletion_vectors()
        assert dvs["cardinality"].sum() == 12
    # time travel still sees the rows
    assert table.to_arrow(snapshot_id=1).num_rows == 30


def test_update_with_literal_and_callable(table):
    table.update({"name": "changed"}, "id < 3")
    table.update({"value": lambda rows: pc.multiply(rows.column("value"), 10)}, "id BETWEEN 10 AND 11")
    rows = by_id(table)
    assert len(rows) == 30
    assert [rows[i]["name"] for i in range(4)] == ["changed", "changed", "changed", "name-3"]
    assert rows[10]["value"] == 50.0 and rows[11]["value"] == 55.0 and rows[12]["value"] == 6.0


def test_update_errors(table):
    with pytest.raises(DataValidationError, match="unknown column"):
        table.update({"nope": 1}, "id = 1")
    with pytest.raises(DataValidationError, match="does not fit"):
        table.update({"value": "x"}, "id = 1")
    if table.kind == "pk":
        with pytest.raises(PaimonLabError, match="primary or partition key"):
            table.update({"id": 5}, "id = 1")


def test_merge_into_update_and_insert(table):
    source = pa.table({"id": pa.array([1, 2, 100], pa.int64()), "name": ["m1", "m2", "new"],
                       "value": [-1.0, -2.0, -3.0], "dt": ["b", "c", "a"]})
    table.merge_into(source, on=["id", "dt"], matched_update=True, not_matched_insert=True)
    rows = by_id(table)
    assert len(rows) == 31
    assert (rows[1]["name"], rows[1]["value"]) == ("m1", -1.0)
    assert rows[2]["name"] == "m2" and rows[100]["name"] == "new" and rows[3]["name"] == "name-3"


def test_merge_into_delete_matched(table):
    source = pa.table({"id": pa.array([4, 5, 999], pa.int64()), "dt": ["b", "c", "a"]})
    table.merge_into(source, on=["id", "dt"], matched_delete=True)
    assert sorted(by_id(table)) == [i for i in range(30) if i not in (4, 5)]


def test_merge_into_is_one_commit(table):
    before = table.latest_snapshot().id
    source = pa.table({"id": pa.array([1, 500], pa.int64()), "name": ["x", "y"], "value": [0.0, 0.0],
                       "dt": ["b", "b"]})
    table.merge_into(source, on=["id", "dt"], matched_update={"name": "upd"}, not_matched_insert=True)
    snaps = [s for s in table.snapshots() if s.id > before and s.commit_kind != "COMPACT"]
    assert len(snaps) == 1
    rows = by_id(table)
    assert rows[1]["name"] == "upd" and rows[500]["name"] == "y"


def test_append_delete_rewrites_only_touched_files(catalog, sample_schema):
    t = catalog.create_table("db.a", sample_schema, partition_keys=["dt"])
    t.write(make_rows(30))
    before = {f.file_name for s in t.plan() for f in s.files}
    t.delete("dt = 'a' AND id = 3")
    after = {f.file_name for s in t.plan() for f in s.files}
    assert len(before - after) == 1 and len(after - before) == 1  # only dt=a's file was rewritten
    files_now = [f for root, _, fs in os.walk(t.path) for f in fs if f.startswith("data-")]
    assert len(files_now) == 4  # old file stays until expiration


@pytest.mark.parametrize("dv", [False, True])
def test_dml_results_read_identically_by_pypaimon(pypaimon, catalog, sample_schema, dv):
    t = catalog.create_table("db.i", sample_schema, partition_keys=["dt"],
                             options={"deletion-vectors.enabled": str(dv).lower()})
    t.write(make_rows(30))
    t.delete("id < 5")
    t.update({"name": "u"}, "id BETWEEN 10 AND 12")
    t.merge_into(pa.table({"id": pa.array([20, 77], pa.int64()), "name": ["m", "n"], "value": [1.0, 2.0],
                           "dt": ["c", "a"]}), on=["id", "dt"], matched_update=True, not_matched_insert=True)
    theirs = pypaimon.read_table(catalog.warehouse, "db.i").sort_by("id").to_pylist()
    assert theirs == t.to_arrow().sort_by("id").to_pylist()
    assert len(theirs) == 26
