"""Snapshot lifecycle: expiration (seed 004), rollback, branches, consumers, orphan files."""

import os
import time

import pyarrow as pa
import pytest

from paimon_lab import SchemaChange
from paimon_lab.operation.branch import BranchError
from paimon_lab.store.consumer import ConsumerManager
from paimon_lab.errors import OptionError, SnapshotNotExistError
from conftest import make_rows


def files_under(path, prefix):
    return sorted(f for root, _, fs in os.walk(path) for f in fs if f.startswith(prefix))


def test_retain_max_below_retain_min_is_refused(catalog, sample_schema):
    """As Java: the procedure's arguments are checked at expiration, the table options when set."""
    t = catalog.create_table("db.t", sample_schema)
    for i in range(3):
        t.write(make_rows(2, start=10 * i))
    with pytest.raises(OptionError, match=r"retain_max \(2\) must not be less than retain_min \(10\)"):
        t.expire_snapshots(retain_max=2)
    assert t.snapshot_manager.list_ids() == [1, 2, 3]
    assert t.expire_snapshots(retain_max=2, retain_min=2).expired_snapshots == [1]
    with pytest.raises(OptionError, match="num-retained.min' \\(10\\) must not be greater"):
        catalog.create_table("db.u", sample_schema, options={"snapshot.num-retained.max": "5"})
    with pytest.raises(OptionError, match="num-retained.min"):
        t.alter(SchemaChange.set_option("snapshot.num-retained.min", "20"),
                SchemaChange.set_option("snapshot.num-retained.max", "4"))


def test_expiration_deletes_only_unreferenced_files(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    t.write(make_rows(6, parts=("a", "b")))                 # 1: a, b
    t.write(make_rows(2, start=10, parts=("c",)))           # 2: c
    t.write(make_rows(2, start=20, parts=("a",)), overwrite={"dt": "a"})  # 3: a replaced
    t.write(make_rows(2, start=30, parts=("b",)), overwrite={"dt": "b"})  # 4: b replaced
    before = files_under(t.path, "data-")
    assert len(before) == 5
    res = t.expire_snapshots(retain_max=1, retain_min=1)
    assert res.expired_snapshots == [1, 2, 3]
    assert t.snapshot_manager.list_ids() == [4]
    assert open(os.path.join(t.path, "snapshot", "EARLIEST")).read() == "4"
    # the original a and b files were retired by DELETE entries and are gone; c stays
    assert len(files_under(t.path, "data-")) == 3 and res.deleted_data_files == 2
    assert sorted(t.to_arrow()["id"].to_pylist()) == [10, 11, 20, 21, 30, 31]
    with pytest.raises(SnapshotNotExistError):
        t.to_arrow(snapshot_id=1)
    # manifests of expired snapshots that snapshot 4 does not use are gone
    lists = [f for f in os.listdir(os.path.join(t.path, "manifest")) if f.startswith("manifest-list-")]
    assert len(lists) == 2


def test_expired_partition_directories_are_removed(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    t.write(make_rows(4, parts=("old",)))
    assert t.write(make_rows(0), overwrite=True) is None  # a dynamic overwrite of no rows changes nothing
    from paimon_lab import SchemaChange as C
    t.alter(C.set_option("dynamic-partition-overwrite", "false"))
    t.write(make_rows(2, start=50, parts=("new",)), overwrite=True)
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert not os.path.exists(os.path.join(t.path, "dt=old"))
    assert t.to_arrow()["dt"].to_pylist() == ["new", "new"]


def test_tags_keep_their_files_alive(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    t.write(make_rows(3))
    t.create_tag("v1", 1)
    t.write(make_rows(3, start=100), overwrite=True)
    t.write(make_rows(1, start=200))
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert t.snapshot_manager.list_ids() == [3]
    assert sorted(t.to_arrow(tag="v1")["id"].to_pylist()) == [0, 1, 2]


def test_time_retained_and_min_retained(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, options={"snapshot.num-retained.min": "2"})
    for i in range(5):
        t.write(make_rows(1, start=i))
    now = int(time.time() * 1000)
    assert t.expire_snapshots(older_than_millis=now - 3_600_000).expired_snapshots == []
    assert t.expire_snapshots(older_than_millis=now + 1000).expired_snapshots == [1, 2, 3]
    assert t.snapshot_manager.list_ids() == [4, 5]


def test_automatic_expiration_after_commit(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, options={
        "snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1"})
    for i in range(6):
        t.write(make_rows(1, start=i))
    assert t.snapshot_manager.list_ids() == [4, 5, 6]
    assert t.to_arrow().num_rows == 6


def test_consumers_hold_back_expiration(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    for i in range(5):
        t.write(make_rows(1, start=i))
    ConsumerManager(t.store).record("job-1", 3)
    assert os.path.exists(os.path.join(t.path, "consumer", "consumer-job-1"))
    res = t.expire_snapshots(retain_max=1, retain_min=1)
    assert res.expired_snapshots == [1, 2]
    assert t.consumers()["job-1"].next_snapshot == 3
    ConsumerManager(t.store).delete("job-1")
    assert t.expire_snapshots(retain_max=1, retain_min=1).expired_snapshots == [3, 4]


def test_rollback_to_snapshot_and_tag(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    t.write(make_rows(3))
    t.create_tag("first", 1)
    t.write(make_rows(3, start=10))
    t.write(make_rows(3, start=20))
    t.create_tag("third", 3)
    data_before = len(files_under(t.path, "data-"))
    t.rollback_to(2)
    assert t.latest_snapshot().id == 2
    assert sorted(t.to_arrow()["id"].to_pylist()) == [0, 1, 2, 10, 11, 12]
    assert [tag.name for tag in t.tags()] == ["first"]  # tags after the target are gone
    assert len(files_under(t.path, "data-")) == data_before - 3
    t.write(make_rows(1, start=99))
    assert t.latest_snapshot().id == 3  # numbering continues from the target
    t.expire_snapshots(retain_max=1, retain_min=1)
    t.rollback_to(tag="first")  # snapshot 1 expired: restored from the tag
    assert sorted(t.to_arrow()["id"].to_pylist()) == [0, 1, 2]


def test_branches_write_and_read_independently(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    t.write(make_rows(3))
    t.create_tag("base", 1)
    b = t.create_branch("dev", tag="base")
    assert t.branches() == ["dev"]
    assert os.path.isdir(os.path.join(t.path, "branch", "branch-dev", "snapshot"))
    b.write(make_rows(2, start=100))
    t.write(make_rows(1, start=200))
    assert sorted(b.to_arrow()["id"].to_pylist()) == [0, 1, 2, 100, 101]
    assert sorted(t.to_arrow()["id"].to_pylist()) == [0, 1, 2, 200]
    same = catalog.get_table("db.t$branch_dev")
    assert same.to_arrow().num_rows == 5 and same.latest_snapshot().id == 2
    with pytest.raises(BranchError, match="already exists"):
        t.create_branch("dev", tag="base")
    # main's expiration keeps files the branch still uses
    t.write(make_rows(1, start=300), overwrite=True)
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert sorted(b.to_arrow()["id"].to_pylist()) == [0, 1, 2, 100, 101]
    t.fast_forward("dev")
    assert sorted(t.to_arrow()["id"].to_pylist()) == [0, 1, 2, 100, 101]
    t.delete_branch("dev")
    assert t.branches() == []


def test_remove_orphan_files(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    t.write(make_rows(3))
    with pytest.raises(RuntimeError):
        with t.writer() as w:  # a crashed writer: files on disk, never committed
            w.write(make_rows(3, start=10))
            w._writer.flush()
            w._writer.abort = lambda: None  # simulate dying before cleanup
            raise RuntimeError("crash")
    orphan_dir = os.path.join(t.path, "dt=a", "bucket-0")
    stray = os.path.join(orphan_dir, "data-orphan-0.parquet")
    open(stray, "wb").write(b"junk")
    assert t.remove_orphan_files(older_than_millis=int(time.time() * 1000) - 3_600_000) == []
    listed = t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 1000, dry_run=True)
    assert stray in listed and len(listed) == 4 and all(os.path.exists(p) for p in listed)
    tmp = os.path.join(t.path, "snapshot", ".snapshot-9.tmp")   # a crashed snapshot commit's temp file
    open(tmp, "wb").write(b"{")
    removed = t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 1000)
    assert sorted(removed) == sorted(listed + [tmp]) and not any(os.path.exists(p) for p in removed)
    assert os.path.exists(os.path.join(t.path, "snapshot", "snapshot-1"))
    assert sorted(t.to_arrow()["id"].to_pylist()) == [0, 1, 2]


def test_pk_table_expiration_with_compaction(catalog):
    schema = pa.schema([("k", pa.int32()), ("v", pa.int64())])
    t = catalog.create_table("db.p", schema, primary_keys=["k"], options={"bucket": "1"})
    for i in range(4):
        t.write(pa.table({"k": pa.array(range(10), pa.int32()), "v": [i] * 10}))
    t.compact(full=True)
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert len(files_under(t.path, "data-")) == 1
    assert set(t.to_arrow()["v"].to_pylist()) == {3}
