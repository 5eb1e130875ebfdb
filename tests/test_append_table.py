"""Append tables end to end: writes, reads, filters, overwrite, snapshots, time travel, tags."""

import json
import os
import time

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_lab import Table, col
from paimon_lab.errors import (DataValidationError, FilterError, SchemaError, SnapshotNotExistError,
                               TagError, TagNotExistError)
from conftest import make_rows
from paimon_lab.operation.scan import FileStoreScan


def sorted_rows(table: pa.Table, key="id"):
    return table.sort_by(key).to_pylist()


def test_write_read_roundtrip_and_layout(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    data = make_rows(100)
    assert t.write(data) == 1
    assert sorted_rows(t.to_arrow()) == sorted_rows(data)
    dirs = sorted(d for d in os.listdir(t.path) if d.startswith("dt="))
    assert dirs == ["dt=a", "dt=b", "dt=c"]
    for d in dirs:
        files = os.listdir(os.path.join(t.path, d, "bucket-0"))
        assert len(files) == 1 and files[0].startswith("data-") and files[0].endswith(".parquet")
    snap = json.load(open(os.path.join(t.path, "snapshot", "snapshot-1")))
    assert snap["version"] == 3 and snap["commitKind"] == "APPEND"
    assert snap["totalRecordCount"] == 100 and snap["deltaRecordCount"] == 100
    assert open(os.path.join(t.path, "snapshot", "LATEST")).read() == "1"
    assert open(os.path.join(t.path, "snapshot", "EARLIEST")).read() == "1"


def test_pandas_in_and_out(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    df = make_rows(10).to_pandas()
    t.write(df)
    out = t.to_pandas().sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(out, df)


def test_each_commit_is_one_snapshot_with_counts(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    t.write(make_rows(10))
    with t.writer() as w:
        w.write(make_rows(5, start=10))
        w.write(make_rows(7, start=15))
    snaps = t.snapshots()
    assert [s.id for s in snaps] == [1, 2]
    assert [(s.total_record_count, s.delta_record_count) for s in snaps] == [(10, 10), (22, 12)]
    assert t.to_arrow().num_rows == 22
    assert t.to_arrow(snapshot_id=1).num_rows == 10


def test_writer_aborts_on_error_leaving_nothing(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    with pytest.raises(RuntimeError):
        with t.writer() as w:
            w.write(make_rows(10))
            w._writer.flush()  # data files exist on disk now
            raise RuntimeError("boom")
    assert t.snapshots() == []
    data_files = [f for root, _, files in os.walk(t.path) for f in files if f.startswith("data-")]
    assert data_files == []


def test_overwrite_whole_table_and_partition(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    t.write(make_rows(30))
    new_a = make_rows(3, start=100, parts=("a",))
    sid = t.write(new_a, overwrite={"dt": "a"})
    snap = t.snapshot(sid)
    assert snap.commit_kind == "OVERWRITE"
    rows = t.to_arrow()
    assert sorted(rows.filter(pc.field("dt") == "a")["id"].to_pylist()) == [100, 101, 102]
    assert rows.filter(pc.field("dt") == "b").num_rows == 10
    assert snap.total_record_count == 23 and snap.delta_record_count == -7
    t.write(make_rows(4, start=200), overwrite=True)
    assert sorted(t.to_arrow()["id"].to_pylist()) == [200, 201, 202, 203]
    # time travel still sees what was overwritten
    assert t.to_arrow(snapshot_id=1).num_rows == 30


def test_overwrite_rejects_rows_outside_partition(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    t.write(make_rows(6))
    with pytest.raises(SchemaError, match="outside the overwritten partition"):
        t.write(make_rows(6), overwrite={"dt": "a"})
    assert len(t.snapshots()) == 1
    with pytest.raises(SchemaError, match="not partition keys"):
        t.write(make_rows(3, parts=("a",)), overwrite={"name": "x"})


def test_overwrite_with_empty_data_clears_partition(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    t.write(make_rows(9))
    t.write(make_rows(0), overwrite={"dt": "b"})
    assert set(t.to_arrow()["dt"].to_pylist()) == {"a", "c"}


def test_filters_projection_limit(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    data = make_rows(300)
    t.write(data)
    expr = (pc.field("dt") == "a") & (pc.field("id") > 150)
    expected = data.filter(expr)
    got = t.to_arrow(filter="dt = 'a' AND id > 150")
    assert sorted_rows(got) == sorted_rows(expected)
    got2 = t.to_arrow(filter=(col("dt") == "a") & (col("id") > 150))
    assert sorted_rows(got2) == sorted_rows(expected)
    proj = t.to_arrow(columns=["name"], filter="id IN (1, 2, 3) OR value BETWEEN 10 AND 11")
    assert proj.column_names == ["name"]
    assert sorted(proj["name"].to_pylist()) == ["name-1", "name-2", "name-20", "name-21", "name-22", "name-3"]
    assert t.to_arrow(limit=7).num_rows == 7
    assert t.to_arrow(filter="name LIKE 'name-29%'").num_rows == 11
    assert t.to_arrow(filter="dt IS NULL").num_rows == 0


def test_partition_pruning_and_file_skipping(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    for i in range(4):
        t.write(make_rows(50, start=i * 1000))
    splits = t.plan(filter="dt = 'b'")
    assert {t.store.partition_codec.from_bytes(s.partition) for s in splits} == {("b",)}
    skipped = t.plan(filter="id >= 3000")
    assert sum(len(s.files) for s in skipped) == 3  # only the last commit's files (one per partition)
    assert t.plan(filter="id > 99999") == []
    assert t.to_arrow(filter="id >= 3000").num_rows == 50


def test_filter_errors(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    t.write(make_rows(3))
    with pytest.raises(FilterError, match="unknown column 'nope'"):
        t.to_arrow(filter="nope = 1")
    with pytest.raises(FilterError, match="Cannot parse"):
        t.to_arrow(filter="id = = 1")
    with pytest.raises(FilterError, match="cannot be compared"):
        t.to_arrow(filter="id = 'abc'")
    with pytest.raises(FilterError, match=r"double quotes name a column: write a string value in single quotes"):
        t.to_arrow(filter='id = "abc"')
    with pytest.raises(SchemaError, match="Column 'zzz'"):
        t.to_arrow(columns=["zzz"])


def test_time_travel_by_id_timestamp_and_tag(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    t.write(make_rows(5))
    time.sleep(0.01)
    t1 = t.snapshot(1).time_millis
    t.write(make_rows(5, start=5))
    assert t.to_arrow(timestamp_millis=t1).num_rows == 5
    assert t.to_arrow(timestamp_millis=int(time.time() * 1000)).num_rows == 10
    with pytest.raises(SnapshotNotExistError):
        t.to_arrow(timestamp_millis=t1 - 100000)
    with pytest.raises(SnapshotNotExistError):
        t.to_arrow(snapshot_id=42)
    t.create_tag("first", 1)
    t.create_tag("now")
    assert [(tag.name, tag.snapshot.id) for tag in t.tags()] == [("first", 1), ("now", 2)]
    assert t.to_arrow(tag="first").num_rows == 5
    tag_file = json.load(open(os.path.join(t.path, "tag", "tag-first")))
    assert tag_file["id"] == 1 and len(tag_file["tagCreateTime"]) == 7
    with pytest.raises(TagError, match="already exists"):
        t.create_tag("first")
    t.delete_tag("first")
    with pytest.raises(TagNotExistError):
        t.to_arrow(tag="first")
    with pytest.raises(TagNotExistError):
        t.delete_tag("first")


def test_fixed_bucket_append_table(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, options={"bucket": "4", "bucket-key": "id"})
    data = make_rows(400)
    t.write(data)
    t.write(make_rows(100, start=400))
    splits = t.plan()
    assert {s.bucket for s in splits} == {0, 1, 2, 3}
    # each id lands in the same bucket in both commits' files
    seen = {}
    for s in splits:
        for f in s.files:
            assert f.min_sequence_number <= f.max_sequence_number
    for s in splits:
        ids = t.to_arrow(columns=["id"], snapshot_id=2)
        break
    assert ids.num_rows == 500
    # sequence numbers continue per bucket across commits
    for s in splits:
        seqs = sorted((f.min_sequence_number, f.max_sequence_number) for f in s.files)
        assert seqs[0][0] == 0
        assert all(a[1] + 1 == b[0] for a, b in zip(seqs, seqs[1:]))
    del seen


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_file_formats(catalog, sample_schema, fmt):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"], options={"file.format": fmt})
    data = make_rows(50)
    t.write(data)
    files = [f for root, _, fs in os.walk(t.path) for f in fs if f.startswith("data-")]
    assert files and all(f.endswith("." + fmt) for f in files)
    assert sorted_rows(t.to_arrow()) == sorted_rows(data)
    assert t.to_arrow(filter="id < 10 AND dt = 'a'").num_rows == 4


def test_rolling_at_target_file_size(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, options={"target-file-size": "64 kb"})
    data = make_rows(200_000)
    t.write(data)
    files = t.plan()[0].files
    assert len(files) > 1
    assert sum(f.row_count for f in files) == 200_000
    assert t.to_arrow().num_rows == 200_000


def test_null_partition_uses_default_name(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    data = pa.table({"id": [1, 2], "name": ["x", "y"], "value": [1.0, 2.0], "dt": [None, "a"]},
                    schema=sample_schema)
    t.write(data)
    assert os.path.isdir(os.path.join(t.path, "dt=__DEFAULT_PARTITION__"))
    assert t.to_arrow(filter="dt IS NULL")["id"].to_pylist() == [1]


def test_data_validation_errors(catalog, sample_schema):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    t = catalog.create_table("db.v", schema)
    with pytest.raises(DataValidationError, match="'id' is NOT NULL"):
        t.write(pa.table({"id": [1, None], "name": ["a", "b"]}))
    with pytest.raises(DataValidationError, match=r"missing column\(s\) \['id'\] \(NOT NULL\)"):
        t.write(pa.table({"name": ["a"]}))
    with pytest.raises(DataValidationError, match="not in the table"):
        t.write(pa.table({"id": [1], "name": ["a"], "extra": [1]}))
    with pytest.raises(DataValidationError, match="Column 'id'"):
        t.write(pa.table({"id": ["not a number"], "name": ["a"]}))
    with pytest.raises(DataValidationError, match="Cannot write"):
        t.write(42)
    assert t.snapshots() == []


def test_open_table_by_path(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    t.write(make_rows(3))
    assert Table.open(t.path).to_arrow().num_rows == 3


def test_manifests_merge_after_many_commits(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, options={"manifest.merge-min-count": "5"})
    for i in range(12):
        t.write(make_rows(2, start=i * 2))
    latest = t.latest_snapshot()
    metas = FileStoreScan(t.store).manifests(latest)
    assert len(metas) < 12
    assert t.to_arrow().num_rows == 24
    assert t.to_arrow(snapshot_id=3).num_rows == 6


def test_append_compaction_merges_small_files(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    for i in range(6):
        t.write(make_rows(30, start=i * 30))
    before = sorted_rows(t.to_arrow())
    assert t.compact() is not None  # 6 small files per partition >= compaction.min.file-num (5)
    snap = t.latest_snapshot()
    assert snap.commit_kind == "COMPACT" and snap.total_record_count == 180
    assert [len(s.files) for s in t.plan()] == [1, 1, 1]
    assert sorted_rows(t.to_arrow()) == before
    assert t.compact() is None
    assert t.compact(full=True) is None  # one file per bucket: nothing to do
    assert t.to_arrow(snapshot_id=6).num_rows == 180


def test_fixed_bucket_append_table_compacts_while_writing_in_order(catalog, sample_schema):
    t = catalog.create_table("db.q", sample_schema, options={"bucket": "1", "bucket-key": "id"})
    for i in range(5):
        t.write(make_rows(10, start=i * 10))
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == ["APPEND"] * 5 + ["COMPACT"]
    files = t.plan()[0].files
    assert len(files) == 1 and (files[0].min_sequence_number, files[0].max_sequence_number) == (0, 49)
    assert t.to_arrow()["id"].to_pylist() == list(range(50))  # queue order kept


def test_write_only_append_table_does_not_compact(catalog, sample_schema):
    t = catalog.create_table("db.q", sample_schema, options={"bucket": "1", "bucket-key": "id", "write-only": "true"})
    for i in range(6):
        t.write(make_rows(3, start=i * 3))
    assert all(s.commit_kind == "APPEND" for s in t.snapshots())
    assert t.compact(full=True) == 7
