"""Batch incremental reads ('incremental-between') of primary-key tables, against Java Paimon: the
files the range's snapshots added are merged by key with the table's merge engine (a key written
twice in the range is one row; a sum adds up the range's deltas), deletes dropped from the table
read and kept in $audit_log."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab import SchemaChange

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])

CASES = {
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
    "deduplicate, input changelog": {"changelog-producer": "input"},
}


def _write(t) -> None:
    t.write({"id": [1, 2], "v": ["a", "b"], "n": [1, 1]})
    t.write({"id": [1], "v": ["b"], "n": [10]})
    t.write({"id": [1, 3], "v": ["c", "x"], "n": [100, 5]})
    t.write({"id": [2], "v": ["b"], "n": [1]}, row_kinds=["-D"])


@pytest.mark.compat("incremental reads", "incremental-between merged by key ({case})", "lab writes; both read")
@pytest.mark.parametrize("case", list(CASES))
def test_incremental_between_merges_the_range_by_key(jo, java, lab, wh, case):
    t = lab.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", **CASES[case]})
    _write(t)
    between = {"incremental-between": "1,4"}
    ours = t.incremental_changes(1, 4)
    rows = ours.filter(pa.compute.is_in(ours.column("rowkind"), pa.array(["+I", "+U"]))).drop_columns(["rowkind"])
    assert jo.sort_rows(jo.read(wh, "db.t", options=between, version=java), "id") == \
        jo.sort_rows(jo.canonical(rows), "id")
    assert jo.sort_rows(jo.read(wh, "db.t", audit=True, options=between, version=java), "id") == \
        jo.sort_rows(jo.canonical(ours), "id")
    t.alter(SchemaChange.set_option("incremental-between", "1,4"))
    assert jo.sort_rows(jo.canonical(t.to_arrow()), "id") == jo.sort_rows(jo.canonical(rows), "id")


TAG_CASES = {
    "deduplicate": {"bucket": "1"},
    "deletion vectors": {"bucket": "1", "deletion-vectors.enabled": "true"},
    "aggregation": {"bucket": "1", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
    "append": None,
}


@pytest.mark.compat("incremental reads", "incremental-between of two tags: their diff ({case})", "lab writes; both read")
@pytest.mark.parametrize("case", list(TAG_CASES))
def test_incremental_between_tags_reads_their_diff(jo, java, lab, wh, case):
    options = TAG_CASES[case]
    if options is None:
        t = lab.create_table("db.t", SCHEMA, options={"bucket": "-1"})
    else:
        t = lab.create_table("db.t", SCHEMA, primary_keys=["id"], options=options)
    t.write({"id": [1, 2, 4], "v": ["a", "b", "d"], "n": [1, 1, 1]})
    t.create_tag("t1")
    t.write({"id": [1, 3], "v": ["c", "x"], "n": [100, 5]})
    t.write({"id": [2], "v": ["b"], "n": [1]}, row_kinds=["-D"] if options else None)
    t.write({"id": [4], "v": ["d"], "n": [0 if case == "aggregation" else 1]})  # key 4 ends as it was
    t.compact(full=True)
    t.write({"id": [5], "v": ["e"], "n": [7]})
    t.create_tag("t2")
    ours = t.incremental_changes("t1", "t2")
    java_rows = jo.read(wh, "db.t", audit=True, options={"incremental-between": "t1,t2"}, version=java)
    assert jo.sort_rows(java_rows, ["id", "rowkind", "n"]) == jo.sort_rows(jo.canonical(ours), ["id", "rowkind", "n"])
    t.alter(SchemaChange.set_option("incremental-between", "t1,t2"))
    kept = ours.filter(pa.compute.is_in(ours.column("rowkind"), pa.array(["+I", "+U"]))).drop_columns(["rowkind"])
    assert jo.sort_rows(jo.canonical(t.to_arrow()), ["id", "n"]) == jo.sort_rows(jo.canonical(kept), ["id", "n"])
