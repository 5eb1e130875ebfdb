"""Commit atomicity: racing committers, the lock path for stores without atomic create,
and failures in the middle of a commit."""

import multiprocessing as mp
import os

import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.operation.commit import FileStoreCommit
from paimon_lab.errors import CommitConflictError
from paimon_lab.io.file_io import CommitLock, FileIO
from conftest import make_rows
from paimon_lab.operation.table_write import new_store_write
from paimon_lab.operation.scan import FileStoreScan


def _writer_process(warehouse, worker, commits, barrier):
    cat = Catalog(warehouse)
    t = cat.get_table("db.t")
    barrier.wait()
    for i in range(commits):
        start = worker * 10_000 + i * 10
        t.write(make_rows(10, start=start, parts=(f"p{worker % 2}",)))


@pytest.mark.slow
def test_concurrent_processes_lose_no_rows(tmp_path, sample_schema):
    warehouse = str(tmp_path / "wh")
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", sample_schema, partition_keys=["dt"])
    workers, commits = 4, 8
    ctx = mp.get_context("spawn")  # no fork: pyarrow thread pools do not survive it
    barrier = ctx.Barrier(workers)
    procs = [ctx.Process(target=_writer_process, args=(warehouse, w, commits, barrier)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    snaps = t.snapshots()
    assert [s.id for s in snaps] == list(range(1, workers * commits + 1))
    ids = sorted(t.to_arrow()["id"].to_pylist())
    expected = sorted(w * 10_000 + i * 10 + k for w in range(workers) for i in range(commits) for k in range(10))
    assert ids == expected
    assert snaps[-1].total_record_count == len(expected)
    # no leftover manifest lists from lost races: two per snapshot
    lists = [f for f in os.listdir(os.path.join(t.path, "manifest")) if f.startswith("manifest-list-")]
    assert len(lists) == 2 * len(snaps)


def test_try_create_never_overwrites(tmp_path):
    io = FileIO(str(tmp_path))
    path = str(tmp_path / "x" / "snapshot-1")
    assert io.try_create(path, b"first")
    assert not io.try_create(path, b"second")
    assert open(path, "rb").read() == b"first"
    assert [f for f in os.listdir(tmp_path / "x")] == ["snapshot-1"]  # no temp files left


def test_lock_path_for_stores_without_atomic_create(tmp_path):
    """An fsspec memory file system has no atomic no-overwrite create: the lock path is used."""
    import fsspec
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    fs = PyFileSystem(FSSpecHandler(fsspec.filesystem("memory")))
    io = FileIO("memory://wh", filesystem=fs, lock=CommitLock(str(tmp_path / "locks")))
    assert not io.is_local
    assert io.try_create("memory://wh/t/snapshot/snapshot-1", b"a")
    assert not io.try_create("memory://wh/t/snapshot/snapshot-1", b"b")
    assert io.read_bytes("memory://wh/t/snapshot/snapshot-1") == b"a"


def test_table_on_non_local_filesystem(tmp_path, sample_schema):
    import fsspec
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    fs = PyFileSystem(FSSpecHandler(fsspec.filesystem("memory")))
    cat = Catalog("memory://warehouse", filesystem=fs, lock=CommitLock(str(tmp_path / "locks")))
    cat.create_database("db")
    t = cat.create_table("db.t", sample_schema, partition_keys=["dt"])
    t.write(make_rows(30))
    t.write(make_rows(30, start=30))
    assert t.to_arrow().num_rows == 60
    assert t.to_arrow(snapshot_id=1, filter="dt = 'a'").num_rows == 10


def test_lost_race_retries_on_top_of_new_snapshot(catalog, sample_schema, monkeypatch):
    t = catalog.create_table("db.t", sample_schema)
    t.write(make_rows(5))
    other = catalog.get_table("db.t")
    commit = FileStoreCommit(t.store)
    original = commit._try_commit
    calls = []

    def racing(latest, *args):
        if not calls:
            calls.append(1)
            other.write(make_rows(5, start=100))  # someone else takes snapshot 2 meanwhile
        return original(latest, *args)

    monkeypatch.setattr(commit, "_try_commit", racing)
    w = new_store_write(t.store, commit.commit_user)
    w.write(make_rows(5, start=200))
    sid, _ = commit.commit(w.prepare_commit())
    assert sid == 3
    assert t.snapshot(3).total_record_count == 15
    assert sorted(t.to_arrow()["id"].to_pylist()) == list(range(5)) + list(range(100, 105)) + list(range(200, 205))


def test_deleting_already_deleted_files_conflicts(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    t.write(make_rows(5))
    entries = FileStoreScan(t.store).live_entries(t.latest_snapshot())
    t.write(make_rows(2), overwrite=True)  # removes the files of snapshot 1
    with pytest.raises(CommitConflictError, match="already deleted"):
        FileStoreCommit(t.store).commit([], deleted=entries)
    assert t.latest_snapshot().id == 2


def test_failure_before_snapshot_leaves_nothing_visible(catalog, sample_schema, monkeypatch):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    t.write(make_rows(6))
    before = set(os.listdir(os.path.join(t.path, "manifest")))

    def boom(snapshot):
        raise OSError("disk full")

    monkeypatch.setattr(t.snapshot_manager, "commit", boom)
    with pytest.raises(OSError, match="disk full"):
        t.write(make_rows(6, start=6))
    assert set(os.listdir(os.path.join(t.path, "manifest"))) == before
    data = [f for root, _, fs in os.walk(t.path) for f in fs if f.startswith("data-")]
    assert len(data) == 3  # only snapshot 1's files
    assert t.latest_snapshot().id == 1
    assert t.to_arrow().num_rows == 6


def test_schema_with_all_null_column(catalog):
    t = catalog.create_table("db.n", pa.schema([("a", pa.int32()), ("b", pa.string())]))
    t.write(pa.table({"a": pa.array([None, None], pa.int32()), "b": ["x", "y"]}))
    assert t.to_arrow(filter="a IS NULL").num_rows == 2
    assert t.to_arrow(filter="a = 1").num_rows == 0
