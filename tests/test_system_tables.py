"""System tables ($snapshots, $files, ... and sys.*), ANALYZE and $statistics.

Tables are built with paimon_lab (append and primary-key, partitioned, several commits, a
compaction, tags, a branch, a consumer, deletion vectors, a dynamic-bucket HASH index) and each
system table is checked for the seed's columns and for its values. Where pypaimon 2.1.0 has the
same system table, it reads the very same table and the columns both have are compared.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_lab import Catalog, SchemaChange
from paimon_lab.store.consumer import ConsumerManager
from paimon_lab.errors import InvalidIdentifierError, PaimonLabError, SchemaError
from paimon_lab.system import (GLOBAL_SYSTEM_TABLES, SYSTEM_TABLES, column_statistics,
                                      parse_system_identifier, read_statistics)
from paimon_lab.catalog.system_tables import catalog_system_table
from paimon_lab.core.types import DataField, parse_type
from paimon_lab.operation.scan import FileStoreScan

# The columns of each system table, in order, as the seed's SELECT * examples print them.
SEED_COLUMNS = {
    "snapshots": ["snapshot_id", "schema_id", "commit_user", "commit_identifier", "commit_kind", "commit_time",
                  "base_manifest_list", "delta_manifest_list", "changelog_manifest_list", "total_record_count",
                  "delta_record_count", "changelog_record_count", "watermark"],
    "schemas": ["schema_id", "fields", "partition_keys", "primary_keys", "options", "comment", "update_time"],
    "options": ["key", "value"],
    "files": ["partition", "bucket", "file_path", "file_format", "schema_id", "level", "record_count",
              "file_size_in_bytes", "min_key", "max_key", "null_value_counts", "min_value_stats",
              "max_value_stats", "min_sequence_number", "max_sequence_number", "creation_time"],
    # the seed's (Java 0.8's) columns; Java 0.9-1.x drop 'branches' and keep the last two
    "tags": ["tag_name", "snapshot_id", "schema_id", "commit_time", "record_count", "branches", "create_time",
             "time_retained"],
    "branches": ["branch_name", "create_time"],
    "consumers": ["consumer_id", "next_snapshot_id"],
    "manifests": ["file_name", "file_size", "num_added_files", "num_deleted_files", "schema_id"],
    "aggregation_fields": ["field_name", "field_type", "function", "function_options", "comment"],
    "partitions": ["partition", "record_count", "file_size_in_bytes", "file_count", "last_update_time"],
    "buckets": ["partition", "bucket", "record_count", "file_size_in_bytes", "file_count", "last_update_time"],
    "statistics": ["snapshot_id", "schema_id", "mergedRecordCount", "mergedRecordSize", "colstat"],
    "table_indexes": ["partition", "bucket", "index_type", "file_name", "file_size", "row_count", "dv_ranges"],
}
GLOBAL_COLUMNS = {"all_table_options": ["database_name", "table_name", "key", "value"],
                  "catalog_options": ["key", "value"]}

APPEND_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("value", pa.float64()), ("dt", pa.string())])
PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                       pa.field("dt", pa.string(), nullable=False)])


def _filler(n: int = 4000) -> pa.Table:
    """Rows (ids 100...) that make a deletion-vector table's first files far bigger than a later
    one-row write, so that its commit lifts the new row above them (a vector marks the old row)
    rather than merging everything (Java's size-ratio pick)."""
    ids = list(range(100, 100 + n))
    return pa.table({"id": ids, "v": [f"f{i}" for i in ids], "dt": ["x" if i % 2 else "y" for i in ids]},
                    schema=PK_SCHEMA)


def rows(ids, dt_value):
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids],
                     "value": [i * 1.5 for i in ids], "dt": [dt_value] * len(ids)})


def parse_java_map(text: str) -> dict:
    """'{a=1, b=x}' -> {'a': '1', 'b': 'x'} (test values hold no ', ' or '=')."""
    assert text.startswith("{") and text.endswith("}")
    body = text[1:-1]
    return dict(item.split("=", 1) for item in body.split(", ")) if body else {}


def sorted_rows(table: pa.Table, keys) -> list[dict]:
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()


@pytest.fixture
def append_table(catalog):
    """Partitioned append table: 3 APPENDs, tag t1 at 2, a full compaction, branch b1, consumer c1."""
    t = catalog.create_table("db.a", APPEND_SCHEMA, partition_keys=["dt"], options={"snapshot.num-retained.min": "20"})
    t.write(rows(range(0, 4), "a"))      # 1
    t.write(rows(range(4, 6), "b"))      # 2
    t.create_tag("t1")
    t.write(rows(range(6, 8), "a"))      # 3
    assert t.compact(full=True) == 4     # 4: partition a's two files -> one
    t.create_branch("b1", tag="t1")
    ConsumerManager(t.store).record("c1", 3)
    return t


@pytest.fixture
def pk_table(catalog):
    """Partitioned primary-key table (2 buckets): insert, update (+U), delete (-D)."""
    t = catalog.create_table("db.p", PK_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", None], "dt": ["x", "x", "y"]}, schema=PK_SCHEMA))
    t.write(pa.table({"id": [1, 4], "v": ["A", "d"], "dt": ["x", "y"]}, schema=PK_SCHEMA), row_kinds=["+U", "+I"])
    t.delete("id = 2")
    return t


# ====================================================================== identifiers

@pytest.mark.parametrize("text,expected", [
    ("db.t$snapshots", ("db.t", "snapshots")),
    ("`db`.`t$files`", ("db.t", "files")),
    ("`db.x`.`t$files`", ("db.x.t", "files")),
    ("t$branch_b1$snapshots", ("t$branch_b1", "snapshots")),
    ("db.t$branch_b1$ro", ("db.t$branch_b1", "ro")),
    ("db.t$branch_b1", ("db.t$branch_b1", None)),
    ("db.t", ("db.t", None)),
    ("t", ("t", None)),
    ("db.t$SNAPSHOTS", ("db.t", "snapshots")),
    ("db.t$audit_log", ("db.t", "audit_log")),
    ("sys.all_table_options", (None, "all_table_options")),
    ("`sys`.`catalog_options`", (None, "catalog_options")),
])
def test_parse_system_identifier(text, expected):
    assert parse_system_identifier(text) == expected


@pytest.mark.parametrize("bad", ["db.t$nope", "db.t$a$b", "t$branch_b$files$x", "`db.t$files", "", "a.b.c",
                                 "db.$files", "sys.nope", "db.t$branch_"])
def test_parse_system_identifier_rejects(bad):
    with pytest.raises(InvalidIdentifierError):
        parse_system_identifier(bad)


def test_parsed_identifier_opens_the_table(append_table, catalog):
    ident, system = parse_system_identifier("`db`.`a$branch_b1$snapshots`")
    branch = catalog.get_table(ident)
    assert branch.branch == "b1"
    assert branch.system(system).column("snapshot_id").to_pylist() == [2]


# ====================================================================== shape

def test_names_and_columns_match_the_seed(append_table):
    assert set(SYSTEM_TABLES) == set(SEED_COLUMNS) | {"audit_log", "binlog", "ro", "changelogs"}
    for name, columns in SEED_COLUMNS.items():
        assert append_table.system(name).column_names == columns, name
    assert append_table.system("audit_log").column_names == ["rowkind"] + APPEND_SCHEMA.names
    assert append_table.system("binlog").column_names == ["rowkind"] + APPEND_SCHEMA.names
    assert append_table.system("ro").column_names == APPEND_SCHEMA.names
    assert append_table.system("changelogs").column_names == SEED_COLUMNS["snapshots"]  # paimon-lab's own


def test_empty_table_gives_empty_system_tables(catalog):
    t = catalog.create_table("db.e", PK_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1"})
    for name in SYSTEM_TABLES:
        out = t.system(name)
        if name in ("options", "schemas", "aggregation_fields"):
            assert out.num_rows > 0, name
        else:
            assert out.num_rows == 0, name
        if name in SEED_COLUMNS:
            assert out.column_names == SEED_COLUMNS[name]
    assert t.analyze() is None


def test_bad_arguments(append_table):
    with pytest.raises(PaimonLabError, match="Unknown system table"):
        append_table.system("nope")
    with pytest.raises(PaimonLabError, match="does not read a snapshot"):
        append_table.system("options", snapshot_id=1)
    with pytest.raises(PaimonLabError):
        append_table.system("files", snapshot_id=1, tag="t1")
    with pytest.raises(PaimonLabError, match="start_snapshot"):
        append_table.system("files", start_snapshot=1)
    assert append_table.system("$Snapshots").num_rows == 4  # '$' and case are tolerated


# ====================================================================== append table

def test_snapshots(append_table):
    t = append_table
    out = t.system("snapshots")
    assert out.column("snapshot_id").to_pylist() == [1, 2, 3, 4]
    assert out.column("commit_kind").to_pylist() == ["APPEND", "APPEND", "APPEND", "COMPACT"]
    assert out.column("total_record_count").to_pylist() == [4, 6, 8, 8]
    assert out.column("delta_record_count").to_pylist() == [4, 2, 2, 0]
    assert out.column("changelog_record_count").to_pylist() == [0, 0, 0, 0]
    assert out.column("changelog_manifest_list").to_pylist() == [None] * 4
    assert out.schema.field("commit_time").type == pa.timestamp("ms")
    for row, snap in zip(out.to_pylist(), t.snapshots()):
        assert row["commit_time"] == _local(snap.time_millis)  # the machine's wall clock, as Java's JVM zone
        assert (row["commit_user"], row["commit_identifier"], row["schema_id"]) == \
            (snap.commit_user, snap.commit_identifier, snap.schema_id)
        assert (row["base_manifest_list"], row["delta_manifest_list"], row["watermark"]) == \
            (snap.base_manifest_list, snap.delta_manifest_list, snap.watermark)


def test_files_latest_and_time_travel(append_table):
    t = append_table
    out = t.system("files")
    assert out.num_rows == len(FileStoreScan(t.store).live_entries(t.latest_snapshot())) == 2
    by_part = {r["partition"]: r for r in out.to_pylist()}
    assert set(by_part) == {"[a]", "[b]"}
    a = by_part["[a]"]
    assert a["record_count"] == 6 and a["bucket"] == 0 and a["level"] == 0 and a["file_format"] == "parquet"
    assert os.path.isfile(a["file_path"]) and a["file_path"].startswith(t.path + "/dt=a/bucket-0/data-")
    assert a["file_size_in_bytes"] == os.path.getsize(a["file_path"])
    assert a["null_value_counts"] == "{dt=0, id=0, name=0, value=0}"
    assert a["min_value_stats"] == "{dt=a, id=0, name=n0, value=0.0}"
    assert a["max_value_stats"] == "{dt=a, id=7, name=n7, value=10.5}"
    assert a["min_key"] is None and a["max_key"] is None  # append files have no keys
    assert isinstance(a["creation_time"], dt.datetime)
    # time travel: snapshot 1 had one file of partition a, the tag two files
    first = t.system("files", snapshot_id=1).to_pylist()
    assert [(r["partition"], r["record_count"]) for r in first] == [("[a]", 4)]
    tagged = t.system("files", tag="t1")
    assert sorted(tagged.column("partition").to_pylist()) == ["[a]", "[b]"]
    assert sum(tagged.column("record_count").to_pylist()) == 6


def test_files_stats_after_schema_evolution(append_table):
    t = append_table
    t.alter(SchemaChange.add_column("extra", "STRING"), SchemaChange.rename_column("name", "label"))
    t.write(pa.table({"id": [9], "label": ["z"], "value": [None], "dt": ["b"], "extra": ["e"]},
                     schema=t.schema.arrow_schema()))
    out = {(r["partition"], r["record_count"]): r for r in t.system("files").to_pylist()}
    old = out[("[a]", 6)]  # written before 'extra' existed: all 6 rows are null there
    assert parse_java_map(old["null_value_counts"]) == {"dt": "0", "id": "0", "label": "0", "value": "0",
                                                        "extra": "6"}
    assert parse_java_map(old["min_value_stats"])["label"] == "n0"
    assert parse_java_map(old["min_value_stats"])["extra"] == "null"
    new = out[("[b]", 1)]
    assert parse_java_map(new["min_value_stats"]) == {"dt": "b", "extra": "e", "id": "9", "label": "z",
                                                      "value": "null"}
    assert parse_java_map(new["null_value_counts"])["value"] == "1"
    schemas = t.system("schemas").to_pylist()
    assert [s["schema_id"] for s in schemas] == [0, 1]
    assert [f["name"] for f in json.loads(schemas[1]["fields"])] == ["id", "label", "value", "dt", "extra"]
    assert json.loads(schemas[0]["fields"])[1] == {"id": 1, "name": "name", "type": "STRING"}
    assert schemas[0]["partition_keys"] == '["dt"]' and schemas[0]["primary_keys"] == "[]"
    assert json.loads(schemas[1]["options"]) == {"snapshot.num-retained.min": "20"}
    assert schemas[1]["update_time"] >= schemas[0]["update_time"]


def test_partitions_buckets_manifests(append_table):
    t = append_table
    files = t.system("files").to_pylist()
    parts = t.system("partitions").to_pylist()
    assert [(p["partition"], p["record_count"], p["file_count"]) for p in parts] == [("[a]", 6, 1), ("[b]", 2, 1)]
    for p in parts:
        mine = [f for f in files if f["partition"] == p["partition"]]
        assert p["file_size_in_bytes"] == sum(f["file_size_in_bytes"] for f in mine)
        assert p["last_update_time"] == max(f["creation_time"] for f in mine)
    buckets = t.system("buckets").to_pylist()
    assert [(b["partition"], b["bucket"], b["record_count"], b["file_count"]) for b in buckets] == \
        [("[a]", 0, 6, 1), ("[b]", 0, 2, 1)]
    # manifests: the latest snapshot's base + delta manifests; adds minus deletes = live files
    manifests = t.system("manifests").to_pylist()
    names = [m.file_name for m in FileStoreScan(t.store).manifests(t.latest_snapshot())]
    assert [m["file_name"] for m in manifests] == names
    assert sum(m["num_added_files"] - m["num_deleted_files"] for m in manifests) == 2
    assert any(m["num_deleted_files"] > 0 for m in manifests)  # the compaction's DELETEs
    assert all(m["file_size"] == os.path.getsize(os.path.join(t.path, "manifest", m["file_name"]))
               for m in manifests)
    # at snapshot 1 / tag t1
    assert [(m["num_added_files"], m["num_deleted_files"]) for m in
            t.system("manifests", snapshot_id=1).to_pylist()] == [(1, 0)]
    assert len(t.system("manifests", tag="t1")) == 2
    assert t.system("partitions", tag="t1").column("record_count").to_pylist() == [4, 2]
    assert t.system("buckets", snapshot_id=1).column("partition").to_pylist() == ["[a]"]


def test_tags_branches_consumers_options(append_table):
    t = append_table
    t.create_tag("t2", 3, time_retained_seconds=5400)
    tags = t.system("tags").to_pylist()
    assert [r["time_retained"] for r in tags] == [None, "PT1H30M"]   # java.time.Duration's text
    assert all(abs(r["create_time"] - dt.datetime.now()) < dt.timedelta(minutes=5) for r in tags)
    assert [(r["tag_name"], r["snapshot_id"], r["schema_id"], r["record_count"], r["branches"]) for r in tags] == \
        [("t1", 2, 0, 6, "[b1]"), ("t2", 3, 0, 8, "[]")]
    assert tags[0]["commit_time"] == _local(t.snapshot(2).time_millis)
    branches = t.system("branches").to_pylist()
    assert [b["branch_name"] for b in branches] == ["b1"]
    now = dt.datetime.now()
    assert abs(branches[0]["create_time"] - now) < dt.timedelta(minutes=5)
    assert t.system("consumers").to_pylist() == [{"consumer_id": "c1", "next_snapshot_id": 3}]
    assert t.system("options").to_pylist() == [{"key": "snapshot.num-retained.min", "value": "20"}]
    # the branch sees its own snapshots and tags
    b1 = t.on_branch("b1")
    assert b1.system("snapshots").column("snapshot_id").to_pylist() == [2]
    assert b1.system("tags").column("tag_name").to_pylist() == ["t1"]


def test_append_audit_log_binlog_ro(append_table):
    t = append_table
    data = t.to_arrow()
    audit = t.system("audit_log")
    assert set(audit.column("rowkind").to_pylist()) == {"+I"} and audit.num_rows == data.num_rows
    assert sorted_rows(audit.drop_columns(["rowkind"]), ["id"]) == sorted_rows(data, ["id"])
    assert sorted_rows(t.system("ro"), ["id"]) == sorted_rows(data, ["id"])
    binlog = t.system("binlog")
    assert binlog.schema.field("id").type == pa.list_(pa.int64())
    assert sorted(v[0] for v in binlog.column("id").to_pylist()) == list(range(8))
    assert t.system("audit_log", tag="t1").num_rows == 6
    assert t.system("ro", snapshot_id=1).num_rows == 4
    # incremental: the rows appended after snapshot 2
    changed = t.system("audit_log", start_snapshot=2)
    assert changed.column("id").to_pylist() == [6, 7] and set(changed.column("rowkind").to_pylist()) == {"+I"}


# ====================================================================== primary-key table

def test_pk_audit_log_keeps_row_kinds(pk_table):
    t = pk_table
    audit = t.system("audit_log")
    kinds = {(r["id"], r["dt"]): (r["rowkind"], r["v"]) for r in audit.to_pylist()}
    # batch read of the merged rows with their kinds; the delete is kept until compaction drops it
    assert kinds == {(1, "x"): ("+U", "A"), (2, "x"): ("-D", "b"), (3, "y"): ("+I", None), (4, "y"): ("+I", "d")}
    binlog = {(r["id"][0], r["dt"][0]): (r["rowkind"], r["v"]) for r in t.system("binlog").to_pylist()}
    assert binlog == {(1, "x"): ("+U", ["A"]), (2, "x"): ("-D", ["b"]), (3, "y"): ("+I", [None]),
                      (4, "y"): ("+I", ["d"])}
    assert t.system("ro").num_rows == 0  # nothing compacted into the top level yet
    t.compact(full=True)
    audit = {r["id"]: r["rowkind"] for r in t.system("audit_log").to_pylist()}
    assert audit == {1: "+U", 3: "+I", 4: "+I"}
    ro = t.system("ro")
    assert sorted_rows(ro, ["id"]) == sorted_rows(t.to_arrow(), ["id"])
    # after another write $ro still shows only the compacted top level
    t.write(pa.table({"id": [5], "v": ["e"], "dt": ["x"]}, schema=PK_SCHEMA))
    assert sorted(t.system("ro").column("id").to_pylist()) == [1, 3, 4]
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 3, 4, 5]


def test_pk_files_keys_levels_and_stats(pk_table):
    t = pk_table
    files = t.system("files").to_pylist()
    assert len(files) == 5 and {f["level"] for f in files} == {0}
    first = [f for f in files if f["partition"] == "[x]" and f["min_sequence_number"] == 0][0]
    assert (first["min_key"], first["max_key"]) == ("[1]", "[2]")  # trimmed primary key: id
    assert first["min_value_stats"] == "{dt=x, id=1, v=a}" and first["max_value_stats"] == "{dt=x, id=2, v=b}"
    only_null = [f for f in files if f["partition"] == "[y]" and f["bucket"] == 1][0]
    assert only_null["null_value_counts"] == "{dt=0, id=0, v=1}"
    assert only_null["min_value_stats"] == "{dt=y, id=3, v=null}"
    t.compact(full=True)
    top = t.store.num_levels - 1
    files = t.system("files").to_pylist()
    assert {f["level"] for f in files} == {top}
    assert sum(f["record_count"] for f in files) == 3
    assert sorted(f["min_key"] for f in files) == ["[1]", "[3]", "[4]"]


def test_binlog_packs_update_pairs(catalog):
    t = catalog.create_table("db.c", pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.write(pa.table({"id": [1, 1, 2], "v": ["a", "A", "b"]}), row_kinds=["-U", "+U", "-D"])
    audit = t.system("audit_log", start_snapshot=0)
    assert audit.column("rowkind").to_pylist() == ["+I", "+I", "-U", "+U", "-D"]
    binlog = t.system("binlog", start_snapshot=0).to_pylist()
    assert binlog == [{"rowkind": "+I", "id": [1], "v": ["a"]}, {"rowkind": "+I", "id": [2], "v": ["b"]},
                      {"rowkind": "+U", "id": [1, 1], "v": ["a", "A"]}, {"rowkind": "-D", "id": [2], "v": ["b"]}]
    assert t.system("binlog", start_snapshot=1, snapshot_id=1).num_rows == 0


def test_deletion_vectors_table_indexes(catalog):
    t = catalog.create_table("db.dv", PK_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write(_filler())
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["x", "x", "y"]}, schema=PK_SCHEMA))
    t.write(pa.table({"id": [1, 4], "v": ["A", "d"], "dt": ["x", "y"]}, schema=PK_SCHEMA))
    t.compact(full=True)
    t.write(pa.table({"id": [3], "v": ["C"], "dt": ["y"]}, schema=PK_SCHEMA))
    out = t.system("table_indexes")
    assert out.column_names == SEED_COLUMNS["table_indexes"]
    dv_rows = [r for r in out.to_pylist() if r["index_type"] == "DELETION_VECTORS"]
    expected = {(str([v for v in p.values()]).replace("'", ""), b, name, card)
                for p, b, name, card in t.deletion_vectors()[["partition", "bucket", "file_name", "cardinality"]]
                .itertuples(index=False)}
    got = {(r["partition"], r["bucket"], d["f0"], d["_CARDINALITY"]) for r in dv_rows for d in r["dv_ranges"]}
    assert got == expected and got
    live = {os.path.basename(p) for p in t.system("files").column("file_path").to_pylist()}
    for r in dv_rows:
        path = os.path.join(t.path, "index", r["file_name"])
        assert os.path.getsize(path) == r["file_size"]
        assert r["row_count"] == len(r["dv_ranges"])
        assert all(d["f0"] in live for d in r["dv_ranges"])
    # the audit log of a DV table is the merged rows (old versions masked by the vectors)
    audit = t.system("audit_log")
    assert sorted_rows(audit.drop_columns(["rowkind"]), ["id"]) == sorted_rows(t.to_arrow(), ["id"])


def test_dynamic_bucket_hash_indexes(catalog):
    t = catalog.create_table("db.h", PK_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": "2"})
    t.write(pa.table({"id": [1, 2, 3, 4, 5], "v": list("abcde"), "dt": ["x"] * 4 + ["y"]}, schema=PK_SCHEMA))
    out = t.system("table_indexes").to_pylist()
    assert {r["index_type"] for r in out} == {"HASH"}
    assert all(r["dv_ranges"] is None for r in out)
    assert sorted((r["partition"], r["bucket"], r["row_count"]) for r in out) == \
        [("[x]", 0, 2), ("[x]", 1, 2), ("[y]", 0, 1)]
    buckets = t.system("buckets").to_pylist()
    assert sorted((b["partition"], b["bucket"], b["record_count"]) for b in buckets) == \
        [("[x]", 0, 2), ("[x]", 1, 2), ("[y]", 0, 1)]


def test_aggregation_fields(catalog):
    schema = pa.schema([pa.field("product_id", pa.int64(), nullable=False), ("price", pa.int32()),
                        ("sales", pa.int64())])
    t = catalog.create_table("db.agg", schema, primary_keys=["product_id"], options={
        "merge-engine": "aggregation", "fields.price.ignore-retract": "true",
        "fields.price.aggregate-function": "count", "fields.sales.aggregate-function": "sum"})
    out = t.system("aggregation_fields").to_pylist()
    assert out == [
        {"field_name": "product_id", "field_type": "BIGINT NOT NULL", "function": "[]", "function_options": "[]",
         "comment": None},
        {"field_name": "price", "field_type": "INT", "function": "[true, count]",
         "function_options": "[fields.price.ignore-retract, fields.price.aggregate-function]", "comment": None},
        {"field_name": "sales", "field_type": "BIGINT", "function": "[sum]",
         "function_options": "[fields.sales.aggregate-function]", "comment": None},
    ]


def test_partition_and_key_rendering(catalog):
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("d", pa.date32(), nullable=False),
                        pa.field("n", pa.int32(), nullable=False), ("f", pa.float64()), ("ts", pa.timestamp("ms"))])
    t = catalog.create_table("db.r", schema, primary_keys=["k", "d", "n"], partition_keys=["d", "n"],
                             options={"bucket": "1"})
    t.write(pa.table({"k": [7], "d": [dt.date(2024, 10, 1)], "n": [3], "f": [1e10],
                      "ts": [dt.datetime(2024, 1, 2, 3, 4, 5, 600000)]}, schema=schema))
    row = t.system("files").to_pylist()[0]
    assert row["partition"] == "[2024-10-01, 3]"
    assert row["min_key"] == "[7]"
    stats = parse_java_map(row["min_value_stats"])
    assert stats == {"d": "19997", "f": "1.0E10", "k": "7", "n": "3", "ts": "2024-01-02T03:04:05.600"}
    assert t.system("partitions").column("partition").to_pylist() == ["[2024-10-01, 3]"]


def test_local_zoned_timestamp_partitions_render_as_instants(catalog):
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ms", tz="UTC"))])
    t = catalog.create_table("db.ltz", schema, partition_keys=["ts"])
    t.write(pa.table({"id": [1, 2], "ts": [dt.datetime(2024, 1, 1, 10, 0, 0, 123000), dt.datetime(2024, 1, 2)]},
                     schema=schema))
    want = ["[2024-01-01T10:00:00.123Z]", "[2024-01-02T00:00:00Z]"]   # Java's Instant.toString()
    assert sorted(t.system("partitions").column("partition").to_pylist()) == want
    assert sorted(t.system("files").column("partition").to_pylist()) == want


# ====================================================================== ANALYZE and $statistics

ANALYZE_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False), ("name", pa.string()), ("bytes_col", pa.binary()),
    ("int_col", pa.int32()), ("long_col", pa.int64()), ("float_col", pa.float32()), ("double_col", pa.float64()),
    ("decimal_col", pa.decimal128(10, 5)), ("boolean_col", pa.bool_()), ("date_col", pa.date32()),
    ("timestamp_col", pa.timestamp("us")), ("tinyint_col", pa.int8()), ("smallint_col", pa.int16())])

# The rows of Paimon's FlinkAnalyzeTableITCase.testAnalyzeTableColumn (the columns kept here).
ANALYZE_ROWS = [
    ("1", "a", b"your_binary_data", 1, 1, 1.0, 1.0, "13.12345", True, dt.date(2020, 1, 1),
     dt.datetime(2024, 1, 1), 1, 2),
    ("2", "aaa", b"your_binary_data", 1, 1, 1.0, 5.0, "12.12345", True, dt.date(2021, 1, 2),
     dt.datetime(2024, 1, 2), 2, 4),
    ("3", "bbbb", b"data", 4, 19, 7.0, 1.0, "14.12345", True, None, dt.datetime(2024, 1, 2, 5), None, 4),
    ("4", "aa", None, 1, 1, 1.0, 1.0, "14.12345", False, None, None, None, 4),
]


def analyze_table(catalog):
    t = catalog.create_table("db.s", ANALYZE_SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    for r in ANALYZE_ROWS:
        values = list(r)
        values[7] = Decimal(values[7])
        t.write(pa.Table.from_pylist([dict(zip(ANALYZE_SCHEMA.names, values))], schema=ANALYZE_SCHEMA))
    return t


def test_analyze_writes_statistics_and_commits_analyze(catalog):
    t = analyze_table(catalog)
    before = t.to_arrow()
    latest = t.latest_snapshot()
    sid = t.analyze()
    assert sid == latest.id + 1
    snap = t.latest_snapshot()
    assert snap.commit_kind == "ANALYZE" and snap.statistics.startswith("stat-")
    assert snap.total_record_count == latest.total_record_count and snap.delta_record_count == 0
    assert snap.index_manifest == latest.index_manifest
    assert FileStoreScan(t.store).manifests(snap) == FileStoreScan(t.store).manifests(latest)  # same files, empty delta
    path = os.path.join(t.path, "statistics", snap.statistics)
    raw = json.loads(open(path).read())
    assert list(raw) == ["snapshotId", "schemaId", "mergedRecordCount", "mergedRecordSize", "colStats"]
    assert raw["snapshotId"] == latest.id and raw["schemaId"] == 0 and raw["mergedRecordCount"] == 4
    total_size = sum(e.file.file_size for e in FileStoreScan(t.store).live_entries(latest))
    assert raw["mergedRecordSize"] == int(total_size * 4 / latest.total_record_count)
    cs = raw["colStats"]
    # The ColStats Paimon's Flink ANALYZE IT case expects for these rows.
    assert cs["id"] == {"colId": 0, "distinctCount": 4, "nullCount": 0, "avgLen": 1, "maxLen": 1}
    assert cs["name"] == {"colId": 1, "distinctCount": 4, "nullCount": 0, "avgLen": 2, "maxLen": 4}
    assert cs["bytes_col"] == {"colId": 2, "nullCount": 1}
    assert cs["int_col"] == {"colId": 3, "distinctCount": 2, "min": "1", "max": "4", "nullCount": 0}
    assert cs["long_col"] == {"colId": 4, "distinctCount": 2, "min": "1", "max": "19", "nullCount": 0}
    assert cs["float_col"] == {"colId": 5, "distinctCount": 2, "min": "1.0", "max": "7.0", "nullCount": 0}
    assert cs["double_col"] == {"colId": 6, "distinctCount": 2, "min": "1.0", "max": "5.0", "nullCount": 0}
    assert cs["decimal_col"] == {"colId": 7, "distinctCount": 3, "min": "12.12345", "max": "14.12345",
                                 "nullCount": 0}
    assert cs["boolean_col"] == {"colId": 8, "distinctCount": 2, "nullCount": 0}
    assert cs["date_col"] == {"colId": 9, "distinctCount": 2, "min": "18262", "max": "18629", "nullCount": 2}
    assert cs["timestamp_col"] == {"colId": 10, "distinctCount": 3, "min": "2024-01-01 00:00:00.000000",
                                   "max": "2024-01-02 05:00:00.000000", "nullCount": 1}
    assert cs["tinyint_col"] == {"colId": 11, "distinctCount": 2, "min": "1", "max": "2", "nullCount": 2}
    assert cs["smallint_col"] == {"colId": 12, "distinctCount": 2, "min": "2", "max": "4", "nullCount": 0}
    assert read_statistics(t.store) == raw
    # $statistics reads the file the latest snapshot names
    stats = t.system("statistics").to_pylist()
    assert len(stats) == 1
    row = stats[0]
    assert (row["snapshot_id"], row["schema_id"], row["mergedRecordCount"], row["mergedRecordSize"]) == \
        (latest.id, 0, 4, raw["mergedRecordSize"])
    assert json.loads(row["colstat"]) == cs
    assert t.system("statistics", snapshot_id=latest.id).num_rows == 0  # before ANALYZE
    assert t.system("snapshots").column("commit_kind").to_pylist()[-1] == "ANALYZE"
    assert t.to_arrow().equals(before)  # data unchanged


def test_analyze_column_selection(catalog):
    t = analyze_table(catalog)
    t.analyze([])
    assert read_statistics(t.store)["colStats"] == {}
    assert t.system("statistics").column("colstat").to_pylist() == ["{}"]
    t.analyze(["int_col", "name"])
    assert set(read_statistics(t.store)["colStats"]) == {"int_col", "name"}
    assert [s.commit_kind for s in t.snapshots()][-2:] == ["ANALYZE", "ANALYZE"]
    with pytest.raises(SchemaError):
        t.analyze(["nope"])


def test_analyze_rejects_unsupported_types(catalog):
    t = catalog.create_table("db.n", pa.schema([("a", pa.list_(pa.int32())), ("b", pa.int32())]))
    t.write(pa.table({"a": [[1]], "b": [1]}, schema=pa.schema([("a", pa.list_(pa.int32())), ("b", pa.int32())])))
    with pytest.raises(SchemaError, match="not supported"):
        t.analyze(["a"])
    t.analyze()  # all columns: the unsupported one is left out
    assert set(read_statistics(t.store)["colStats"]) == {"b"}


def test_analyzed_table_is_readable_by_pypaimon(lab_catalog, py_catalog):
    t = lab_catalog.create_table("db.s", APPEND_SCHEMA, partition_keys=["dt"])
    t.write(rows(range(5), "a"))
    t.analyze()
    t.write(rows(range(5, 7), "b"))  # a commit after the ANALYZE snapshot
    got = py_catalog.read_table("db.s")
    assert sorted(got.column("id").to_pylist()) == list(range(7))
    kinds = py_read(py_catalog, "db.s$snapshots").column("commit_kind").to_pylist()
    assert kinds == ["APPEND", "ANALYZE", "APPEND"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.none(), st.integers(-1000, 1000)), min_size=1, max_size=30),
       st.lists(st.one_of(st.none(), st.text(max_size=6)), min_size=1, max_size=30))
def test_column_statistics_match_a_model(ints, texts):
    got = column_statistics(pa.chunked_array([pa.array(ints, pa.int64())]), DataField(3, "i", parse_type("BIGINT")))
    present = [v for v in ints if v is not None]
    expected = {"colId": 3, "distinctCount": len(set(present)), "nullCount": ints.count(None)}
    if present:
        expected.update(min=str(min(present)), max=str(max(present)))
    assert got == expected
    got = column_statistics(pa.chunked_array([pa.array(texts, pa.string())]), DataField(1, "s", parse_type("STRING")))
    present = [v for v in texts if v is not None]
    expected = {"colId": 1, "distinctCount": len(set(present)), "nullCount": texts.count(None)}
    if present:
        expected.update(avgLen=int(sum(len(v) for v in present) / len(present)), maxLen=max(map(len, present)))
    assert got == expected


# ====================================================================== catalog-wide

def test_catalog_system_tables(tmp_path):
    cat = Catalog(str(tmp_path / "wh"), options={"lock.enabled": "false"})
    cat.create_database("db1")
    cat.create_database("db2")
    cat.create_table("db1.orders", APPEND_SCHEMA, options={"bucket": "-1"})
    cat.create_table("db1.orders2", APPEND_SCHEMA, options={"bucket": "-1", "file.format": "orc"})
    cat.create_table("db2.sums", PK_SCHEMA, primary_keys=["id", "dt"], options={"bucket": "1"})
    out = catalog_system_table(cat, "all_table_options")
    assert out.column_names == GLOBAL_COLUMNS["all_table_options"]
    assert out.to_pylist() == [
        {"database_name": "db1", "table_name": "orders", "key": "bucket", "value": "-1"},
        {"database_name": "db1", "table_name": "orders2", "key": "bucket", "value": "-1"},
        {"database_name": "db1", "table_name": "orders2", "key": "file.format", "value": "orc"},
        {"database_name": "db2", "table_name": "sums", "key": "bucket", "value": "1"},
    ]
    opts = catalog_system_table(cat, "sys.catalog_options")
    assert opts.column_names == GLOBAL_COLUMNS["catalog_options"]
    assert opts.to_pylist() == [{"key": "warehouse", "value": cat.warehouse},
                                {"key": "lock.enabled", "value": "false"}]
    for ident in ("sys.all_table_options", "`sys`.`catalog_options`"):
        _, name = parse_system_identifier(ident)
        assert name in GLOBAL_SYSTEM_TABLES and catalog_system_table(cat, name).num_rows > 0
    with pytest.raises(PaimonLabError):
        catalog_system_table(cat, "all_tables")


# ====================================================================== against pypaimon

def py_read(py_catalog, ident) -> pa.Table:
    """Every row of ``ident`` (a system table too) as pypaimon reads it, in its worker."""
    return py_catalog.read_table(ident)


def _py_partition(text: str, keys) -> str | None:
    """Our '[a, b]' rendering -> pypaimon's 'k1=a/k2=b'."""
    values = text[1:-1].split(", ") if text != "[]" else []
    return "/".join(f"{k}={v}" for k, v in zip(keys, values)) or None


def _same(ours: pa.Table, theirs: pa.Table, columns, key) -> None:
    a = sorted_rows(ours.select(columns), key)
    b = sorted_rows(theirs.select(columns), key)
    assert a == b


def _seconds(t: dt.datetime | None):
    """File creation times are wall-clock values that pypaimon converts from the local zone;
    they agree with ours (to the second pypaimon keeps) only on a UTC machine."""
    if time.timezone != 0 or time.daylight:
        return None
    return None if t is None else t.replace(microsecond=0)


def _build_interop_tables(lab_catalog):
    a = lab_catalog.create_table("db.a", APPEND_SCHEMA, partition_keys=["dt"])
    a.write(rows(range(0, 4), "a"))
    a.write(rows(range(4, 6), "b"))
    a.create_tag("t1")
    a.write(rows(range(6, 8), "a"))
    a.compact(full=True)
    a.create_branch("b1", tag="t1")
    ConsumerManager(a.store).record("c1", 3)
    a.alter(SchemaChange.set_option("snapshot.num-retained.min", "20"))
    p = lab_catalog.create_table("db.p", PK_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2", "deletion-vectors.enabled": "true"})
    p.write(_filler())
    p.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", None], "dt": ["x", "x", "y"]}, schema=PK_SCHEMA))
    p.write(pa.table({"id": [1, 4], "v": ["A", "d"], "dt": ["x", "y"]}, schema=PK_SCHEMA))
    p.compact(full=True)
    p.write(pa.table({"id": [3], "v": ["C"], "dt": ["y"]}, schema=PK_SCHEMA))
    p.create_tag("tp")
    return a, p


@pytest.mark.parametrize("name", ["a", "p"])
def test_matches_pypaimon(lab_catalog, py_catalog, name):
    tables = dict(zip("ap", _build_interop_tables(lab_catalog)))
    t = tables[name]
    ident = f"db.{name}"

    def ours(n):
        return t.system(n)

    def theirs(n):
        return py_read(py_catalog, f"{ident}${n}")

    _same(ours("snapshots"), theirs("snapshots"), SEED_COLUMNS["snapshots"], ["snapshot_id"])
    so, sp = ours("schemas"), theirs("schemas")
    _same(so, sp, ["schema_id", "partition_keys", "primary_keys", "comment", "update_time"], ["schema_id"])
    for a, b in zip(sorted_rows(so, ["schema_id"]), sorted_rows(sp, ["schema_id"])):
        assert json.loads(a["fields"]) == json.loads(b["fields"])
        assert json.loads(a["options"]) == json.loads(b["options"])
    _same(ours("options"), theirs("options"), ["key", "value"], ["key"])
    _same(ours("manifests"), theirs("manifests"), SEED_COLUMNS["manifests"], ["file_name"])
    _same(ours("consumers"), theirs("consumers"), ["consumer_id", "next_snapshot_id"], ["consumer_id"])
    _same(ours("tags"), theirs("tags"), ["tag_name", "snapshot_id", "schema_id", "commit_time", "record_count"],
          ["tag_name"])
    bo, bp = ours("branches").to_pylist(), theirs("branches").to_pylist()
    assert [b["branch_name"] for b in bo] == sorted(b["branch_name"] for b in bp)
    for a, b in zip(bo, sorted(bp, key=lambda r: r["branch_name"])):
        assert abs(a["create_time"] - b["create_time"]) <= dt.timedelta(seconds=1)

    keys = t.partition_keys
    # $files: same files and numbers; pypaimon prints only the file name and JSON stats maps
    fo, fp = ours("files"), theirs("files")
    fo_rows = {os.path.basename(r["file_path"]): r for r in fo.to_pylist()}
    fp_rows = {os.path.basename(r["file_path"]): r for r in fp.to_pylist()}
    assert set(fo_rows) == set(fp_rows)
    for fname, a in fo_rows.items():
        b = fp_rows[fname]
        for c in ["bucket", "file_format", "schema_id", "level", "record_count", "file_size_in_bytes",
                  "min_sequence_number", "max_sequence_number"]:
            assert a[c] == b[c], c
        assert _py_partition(a["partition"], keys) == b["partition"]
        assert _seconds(a["creation_time"]) == _seconds(b["creation_time"])
        assert {k: int(v) for k, v in parse_java_map(a["null_value_counts"]).items()} == \
            json.loads(b["null_value_counts"])
        for col in ("min_value_stats", "max_value_stats"):
            assert parse_java_map(a[col]) == {k: ("null" if v is None else str(v))
                                              for k, v in json.loads(b[col]).items()}
        if a["min_key"] is not None:  # integer keys print alike
            assert (a["min_key"], a["max_key"]) == (b["min_key"], b["max_key"])
    # $partitions / $buckets: the same aggregates
    for n, extra in (("partitions", []), ("buckets", ["bucket"])):
        a = ours(n).to_pylist()
        b = {(r["partition"],) + tuple(r[c] for c in extra): r for r in theirs(n).to_pylist()}
        assert len(a) == len(b)
        for r in a:
            other = b[(_py_partition(r["partition"], keys),) + tuple(r[c] for c in extra)]
            for c in ("record_count", "file_size_in_bytes", "file_count"):
                assert r[c] == other[c], (n, c)
            assert _seconds(r["last_update_time"]) == _seconds(other["last_update_time"])
    # $table_indexes
    io, ip = ours("table_indexes").to_pylist(), theirs("table_indexes").to_pylist()
    assert len(io) == len(ip)
    ip = {r["file_name"]: r for r in ip}
    for r in io:
        other = ip[r["file_name"]]
        for c in ("bucket", "index_type", "file_size", "row_count", "dv_ranges"):
            assert r[c] == other[c], c
        assert _py_partition(r["partition"], keys) == other["partition"]
    if name == "p":
        assert any(r["index_type"] == "DELETION_VECTORS" for r in io)


def test_catalog_and_table_entry_points_and_statistics_survive_commits(tmp_path):
    import pyarrow as pa
    from paimon_lab import Catalog

    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.s", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", None]}))
    assert cat.system_table("db.s$snapshots").num_rows == 1
    assert t.system("files").num_rows == 1
    assert cat.system_table("sys.all_table_options").num_rows >= 0
    t.analyze()
    t.write(pa.table({"id": [4], "v": ["d"]}))
    assert t.latest_snapshot().statistics is not None  # carried over while the schema is unchanged
    assert t.system("statistics").num_rows == 1


def _local(millis: int) -> dt.datetime:
    """The machine's wall clock at ``millis`` (naive, to the millisecond)."""
    return dt.datetime.fromtimestamp(millis // 1000).replace(microsecond=millis % 1000 * 1000)


def test_commit_times_are_the_machines_wall_clock(append_table, monkeypatch):
    """Java shows commit_time / update_time as the JVM default zone's wall clock (a TIMESTAMP)."""
    import time

    monkeypatch.setenv("TZ", "Asia/Kolkata")  # +05:30, never UTC
    time.tzset()
    try:
        t = append_table
        snap = t.snapshots()[0]
        shown = t.system("snapshots").column("commit_time")[0].as_py()
        assert shown == dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=snap.time_millis, hours=5, minutes=30)
        schema = t.system("schemas").column("update_time")[0].as_py()
        assert schema == dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=t.schema_manager.schema(0).time_millis,
                                                                hours=5, minutes=30)
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize("seconds, text", [(0, "PT0S"), (0.5, "PT0.5S"), (61, "PT1M1S"), (3600, "PT1H"),
                                           (90061.25, "PT25H1M1.25S"), (1e-9, "PT0.000000001S"), (-90, "PT-1M-30S")])
def test_durations_read_as_java_prints_them(seconds, text):
    from paimon_lab.system.java_text import java_duration
    assert java_duration(seconds) == text
