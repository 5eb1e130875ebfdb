"""Warehouses on an object store (S3 API, served by moto on loopback). S3 has no atomic rename,
but it has create-if-absent: a PUT with ``If-None-Match: *``, which commits use, so committers on
many machines that share nothing but the bucket never overwrite each other's snapshot. With the
JDBC catalog a commit also holds the catalog's lock (a row in the catalog database), which
serializes committers in any number of processes. Stores with neither are refused."""

from __future__ import annotations

import multiprocessing as mp
import tempfile
import threading
import time
import traceback
import uuid

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from fsspec.implementations.memory import MemoryFileSystem
from pyarrow.fs import FSSpecHandler, PyFileSystem

from paimon_lab import Catalog
from paimon_lab.errors import (DatabaseNotExistError, OptionError, TableNotExistError, TagNotExistError,
                               UnsafeCommitError, UnsupportedFileSystemError)
from paimon_lab.io import conditional_put
from paimon_lab.io.file_io import CommitLock, FileIO
from paimon_lab.io.fs_options import filesystem_from_options, from_options, has_filesystem_options
from paimon_lab.catalog import JdbcCatalog, JdbcCatalogError, JdbcCommitLock
from _servers import shared_postgres, shared_s3
from conftest import make_rows

pytestmark = pytest.mark.slow  # every test here talks to a server


@pytest.fixture
def s3():
    return shared_s3()


@pytest.fixture
def warehouse(s3):
    return f"s3://{s3.new_bucket()}/warehouse"


# --------------------------------------------------------------------------- options

def test_filesystem_from_options(s3, warehouse):
    opts = s3.options()
    assert has_filesystem_options(warehouse, opts)
    fs = filesystem_from_options(warehouse, opts)
    assert isinstance(fs, pafs.S3FileSystem)
    io = from_options(warehouse, opts)
    assert not io.is_local
    io.write_bytes(f"{warehouse}/probe", b"hello")
    assert io.read_bytes(f"{warehouse}/probe") == b"hello"
    # Hadoop's spelling of the same options, and an s3a:// warehouse
    hadoop = {"fs.s3a.endpoint": s3.endpoint, "fs.s3a.access.key": "testing", "fs.s3a.secret.key": "testing",
              "fs.s3a.path.style.access": "true"}
    io2 = from_options(warehouse.replace("s3://", "s3a://"), hadoop)
    assert io2.read_bytes(f"{warehouse.replace('s3://', 's3a://')}/probe") == b"hello"
    # nothing to configure: FileIO picks pyarrow's default
    assert filesystem_from_options(warehouse, {}) is None
    assert filesystem_from_options("/tmp/local", opts) is None
    with pytest.raises(OptionError, match="both an access key and a secret key"):
        filesystem_from_options(warehouse, {"s3.endpoint": s3.endpoint, "s3.access-key": "x"})
    with pytest.raises(OptionError, match="true or false"):
        filesystem_from_options(warehouse, {"s3.endpoint": s3.endpoint, "s3.path.style.access": "yes"})
    with pytest.raises(OptionError, match="http or https"):
        filesystem_from_options(warehouse, {"s3.endpoint": "ftp://host"})


# --------------------------------------------------------------------------- filesystem catalog on S3

def test_filesystem_catalog_on_s3(s3, warehouse, sample_schema):
    cat = Catalog(warehouse, filesystem=s3.filesystem())
    assert not cat.file_io.is_local
    assert cat.list_databases() == []
    cat.create_database("db")
    assert cat.list_databases() == ["db"]
    t = cat.create_table("db.t", sample_schema, partition_keys=["dt"])
    assert cat.list_tables("db") == ["t"]
    sids = [t.write(make_rows(10, start=10 * i)) for i in range(3)]
    assert sids == [1, 2, 3]
    assert sorted(t.to_arrow()["id"].to_pylist()) == list(range(30))
    # time travel by snapshot and by time
    assert t.to_arrow(snapshot_id=2).num_rows == 20
    at = t.snapshot(2).time_millis
    assert t.to_arrow(timestamp_millis=at).num_rows == 20
    assert t.to_arrow(filter="dt = 'a'", snapshot_id=1).num_rows == 4
    # tags survive later writes and overwrites
    t.create_tag("v2", 2)
    t.write(make_rows(5, start=100, parts=("a",)), overwrite={"dt": "a"})
    assert [tag.name for tag in t.tags()] == ["v2"]
    assert t.to_arrow(tag="v2").num_rows == 20
    assert t.to_arrow(filter="dt = 'a'").num_rows == 5
    t.delete_tag("v2")
    with pytest.raises(TagNotExistError):
        t.to_arrow(tag="v2")
    # a primary-key table
    pk = cat.create_table("db.pk", sample_schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                          options={"bucket": "2"})
    pk.write(make_rows(6))
    pk.write(make_rows(3).set_column(1, "name", pa.array(["new"] * 3)))
    assert sorted(pk.to_pandas()["name"]) == ["name-3", "name-4", "name-5", "new", "new", "new"]
    # another catalog object (another process, another machine) sees it all
    again = Catalog(warehouse, filesystem=filesystem_from_options(warehouse, s3.options()))
    assert again.list_tables("db") == ["pk", "t"]
    assert again.get_table("db.t").to_arrow().num_rows == 25
    cat.drop_table("db.t")
    assert cat.list_tables("db") == ["pk"]
    cat.drop_database("db", cascade=True)
    assert cat.list_databases() == []
    with pytest.raises(DatabaseNotExistError):
        cat.list_tables("db")


def test_unpartitioned_table_on_s3(s3, warehouse, sample_schema):
    cat = Catalog(warehouse, filesystem=s3.filesystem())
    cat.create_database("db")
    t = cat.create_table("db.t", sample_schema)
    t.write(make_rows(5))
    assert t.to_arrow().num_rows == 5


# --------------------------------------------------------------------------- JDBC catalog on S3

def test_jdbc_catalog_on_s3(s3, warehouse, tmp_path, sample_schema):
    uri = f"sqlite:///{tmp_path}/catalog.db"
    with JdbcCatalog(uri, warehouse, options=s3.options()) as cat:
        assert isinstance(cat.file_io.lock, JdbcCommitLock) and not cat.file_io.is_local
        cat.create_database("db")
        t = cat.create_table("db.t", sample_schema, partition_keys=["dt"])
        assert t.path == f"{warehouse}/db.db/t"
        for i in range(3):
            t.write(make_rows(10, start=10 * i))
        t.create_tag("first", 1)
        cat.create_view("db.v", "SELECT * FROM t WHERE dt = 'a'", sample_schema)
    with JdbcCatalog(uri, warehouse, options=s3.options()) as cat:
        t = cat.get_table("db.t")
        assert t.to_arrow().num_rows == 30 and t.to_arrow(tag="first").num_rows == 10
        assert cat.list_views("db") == ["v"]
        # the lock row is gone after every commit
        assert cat.db.query("SELECT lock_id FROM paimon_distributed_locks") == []
        # the files are an ordinary warehouse; only registered tables belong to the catalog
        fs_cat = Catalog(warehouse, filesystem=s3.filesystem())
        assert fs_cat.get_table("db.t").to_arrow().num_rows == 30
        fs_cat.create_table("db.stray", sample_schema)
        assert cat.list_tables("db") == ["t"]
        with pytest.raises(TableNotExistError):
            cat.get_table("db.stray")
        cat.drop_database("db", cascade=True)
        assert cat.list_databases() == []
    with pytest.raises(JdbcCatalogError, match="default SQLite"):
        JdbcCatalog(None, warehouse, options=s3.options())


# --------------------------------------------------------------------------- racing committers

def _s3_committer(uri, warehouse, options, worker, commits, barrier, results):
    cat = JdbcCatalog(uri, warehouse, options={**options, "lock-check-max-sleep": "50 ms"})
    t = cat.get_table("db.t")
    barrier.wait()
    got = []
    for i in range(commits):
        start = worker * 10_000 + i * 10
        got.append(t.write(make_rows(10, start=start, parts=(f"p{worker}",))))
    results.put((worker, got))
    cat.close()


def _check_race(t, results: dict, workers: int, commits: int) -> None:
    ids = [sid for got in results.values() for sid in got]
    # nobody lost a race without noticing: every commit got its own snapshot id
    assert sorted(ids) == list(range(1, workers * commits + 1))
    snaps = t.snapshots()
    assert [s.id for s in snaps] == list(range(1, workers * commits + 1))
    expected = sorted(w * 10_000 + i * 10 + k for w in range(workers) for i in range(commits) for k in range(10))
    assert sorted(t.to_arrow()["id"].to_pylist()) == expected
    assert snaps[-1].total_record_count == len(expected)
    # each snapshot holds exactly its own commit's rows
    for s in snaps:
        assert s.delta_record_count == 10


def test_processes_race_on_s3_with_sqlite_lock(s3, warehouse, tmp_path, sample_schema):
    uri = f"sqlite:///{tmp_path}/catalog.db"
    with JdbcCatalog(uri, warehouse, options=s3.options()) as cat:
        cat.create_database("db")
        t = cat.create_table("db.t", sample_schema, partition_keys=["dt"])
    workers, commits = 2, 3
    ctx = mp.get_context("spawn")  # no fork: pyarrow's S3 client does not survive it
    barrier, queue = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=_s3_committer, args=(uri, warehouse, s3.options(), w, commits, barrier, queue))
             for w in range(workers)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=180) for _ in procs)
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    _check_race(t, results, workers, commits)


@pytest.fixture(params=["sqlite", "postgresql"])
def lock_db(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/catalog.db"
    return shared_postgres()


def test_threads_race_on_s3_with_jdbc_lock(s3, warehouse, lock_db, sample_schema):
    """Each thread is its own catalog and connection, as separate machines would be."""
    key = f"k{uuid.uuid4().hex[:8]}"
    opts = {**s3.options(), "lock-check-max-sleep": "50 ms"}
    with JdbcCatalog(lock_db, warehouse, catalog_key=key, options=opts) as cat:
        cat.create_database("db")
        t = cat.create_table("db.t", sample_schema, partition_keys=["dt"])
    workers, commits = 3, 3
    barrier = threading.Barrier(workers)
    results: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def run(worker: int) -> None:
        try:
            with JdbcCatalog(lock_db, warehouse, catalog_key=key, options=opts) as mine:
                table = mine.get_table("db.t")
                barrier.wait()
                results[worker] = [table.write(make_rows(10, start=worker * 10_000 + i * 10, parts=(f"p{worker}",)))
                                   for i in range(commits)]
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(workers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(180)
    assert not errors, errors
    _check_race(t, results, workers, commits)


@pytest.mark.parametrize("lock", ["jdbc", "per-machine", "none"])
def test_snapshot_creation_is_exclusive(s3, warehouse, tmp_path, lock):
    """Two committers racing to create snapshot-N: only one does, with the JDBC lock and with no
    shared lock at all (a lock directory each, as on two machines, or no lock given): the
    conditional PUT alone keeps it exclusive."""
    uri = f"sqlite:///{tmp_path}/catalog.db"
    opts = s3.options()

    def lock_for(i: int):
        if lock == "jdbc":
            return JdbcCommitLock(uri, warehouse=warehouse, check_max_sleep=0.01)
        return CommitLock(str(tmp_path / f"machine-{i}")) if lock == "per-machine" else None

    ios = [FileIO(warehouse, filesystem_from_options(warehouse, opts), lock=lock_for(i)) for i in range(2)]
    path = f"{warehouse}/db.db/t/snapshot/snapshot-1"
    barrier = threading.Barrier(2)
    outcome = {}

    def create(i: int) -> None:
        barrier.wait()
        outcome[i] = ios[i].try_create(path, f"writer-{i}".encode())

    threads = [threading.Thread(target=create, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert sorted(outcome.values()) == [False, True]
    winner = [i for i, ok in outcome.items() if ok][0]
    assert ios[0].read_bytes(path) == f"writer-{winner}".encode()
    assert ios[0].lock_configured is (lock != "none")


# --------------------------------------------------------------------------- conditional writes

def test_try_create_never_overwrites_an_existing_object(s3, warehouse):
    """A committer whose existence check is stale (another machine created snapshot-N after it
    looked) still cannot overwrite: the store refuses the PUT. The flock-guarded check-then-write
    of old returned True here and replaced the other machine's snapshot."""
    io = from_options(warehouse, s3.options())
    path = f"{warehouse}/db.db/t/snapshot/snapshot-7"
    other = from_options(warehouse, s3.options())
    assert other.try_create(path, b"theirs")
    io.exists = lambda p: False   # as if checked just before the other machine's PUT
    assert io.try_create(path, b"mine") is False
    assert io.read_bytes(path) == b"theirs"
    # a retried PUT that finds its own bytes (its first answer was lost) counts as created
    assert other.try_create(path, b"theirs") is True
    # schema and tag files are created the same way
    assert io.try_create(f"{warehouse}/db.db/t/schema/schema-0", b"s0")
    assert not other.try_create(f"{warehouse}/db.db/t/schema/schema-0", b"s0'")


def test_conditional_write_conflict_is_retried(s3, warehouse, monkeypatch):
    """409 ConditionalRequestConflict (another conditional PUT of the key in flight) is retried."""
    io = from_options(warehouse, s3.options())
    path = f"{warehouse}/db.db/t/snapshot/snapshot-1"
    assert io.try_create(f"{warehouse}/warm-up", b"x")
    answers = iter([None, None, True])
    monkeypatch.setattr(io._s3, "_put", lambda bucket, key, data: next(answers))
    assert io.try_create(path, b"a") is True


def test_store_that_ignores_if_none_match_is_refused(s3, warehouse, tmp_path, monkeypatch):
    """An S3-compatible store that overwrites despite If-None-Match fails the probe: commits need
    a lock then, and are refused without one."""
    monkeypatch.setattr(conditional_put, "_probed", {})
    monkeypatch.setattr(conditional_put.S3ConditionalPut, "_put", lambda self, bucket, key, data: True)
    io = from_options(warehouse, s3.options())
    with pytest.raises(UnsafeCommitError, match="ignores If-None-Match"):
        io.try_create(f"{warehouse}/t/snapshot/snapshot-1", b"a")
    locked = from_options(warehouse, s3.options(), lock=CommitLock(str(tmp_path / "locks")))
    assert locked.try_create(f"{warehouse}/t/snapshot/snapshot-1", b"a")
    assert not locked.try_create(f"{warehouse}/t/snapshot/snapshot-1", b"b")


def test_missing_botocore_is_named(s3, warehouse, tmp_path, monkeypatch):
    def missing():
        raise UnsupportedFileSystemError(f"needs botocore: {conditional_put.EXTRA}")

    monkeypatch.setattr(conditional_put, "_probed", {})
    monkeypatch.setattr(conditional_put, "_botocore", missing)
    with pytest.raises(UnsupportedFileSystemError, match=r"paimon-lab\[s3\]"):
        from_options(warehouse, s3.options()).try_create(f"{warehouse}/t/snapshot/snapshot-1", b"a")
    # with a catalog lock the lock alone serializes commits, as before conditional writes
    locked = from_options(warehouse, s3.options(), lock=CommitLock(str(tmp_path / "locks")))
    assert locked.try_create(f"{warehouse}/t/snapshot/snapshot-1", b"a")


class _RemoteMemory(MemoryFileSystem):
    """An fsspec store other machines could reach, without create-if-absent."""
    protocol = ("remotemem",)


def test_store_without_conditional_writes_needs_a_lock(tmp_path, sample_schema):
    fs = PyFileSystem(FSSpecHandler(_RemoteMemory()))
    wh = f"remotemem://wh-{uuid.uuid4().hex[:8]}"
    cat = Catalog(wh, filesystem=fs)
    cat.create_database("db")
    with pytest.raises(UnsafeCommitError, match="no create-if-absent.*JDBC catalog"):
        cat.create_table("db.t", sample_schema)
    # a lock the user chose is trusted to cover every writer
    cat = Catalog(wh, filesystem=fs, lock=CommitLock(str(tmp_path / "locks")))
    t = cat.create_table("db.t", sample_schema)
    assert t.write(make_rows(5)) == 1
    # fsspec memory:// is reachable from this process only: the default lock is enough
    mem = Catalog(f"memory://wh-{uuid.uuid4().hex[:8]}")
    mem.create_database("db")
    assert mem.create_table("db.t", sample_schema).write(make_rows(5)) == 1


# --------------------------------------------------------------------------- many machines, one bucket

def _machine(warehouse, options, worker, commits, jdbc_uri, catalog_key, lock_dir, barrier, queue):
    """One 'machine': its own process, temp directory (so its own default lock directory) and
    catalog; it shares only the bucket (and with ``jdbc_uri`` the catalog database)."""
    tempfile.tempdir = lock_dir
    try:
        if jdbc_uri:
            cat = JdbcCatalog(jdbc_uri, warehouse, catalog_key=catalog_key,
                              options={**options, "lock-check-max-sleep": "50 ms"})
        else:
            cat = Catalog(warehouse, options=options)
        t = cat.get_table("db.t")
        barrier.wait()
        start = time.monotonic()
        acked = []
        for i in range(commits):
            acked.append(t.write(make_rows(10, start=worker * 10_000 + i * 10, parts=(f"p{worker}",))))
        queue.put(("ok", worker, acked, time.monotonic() - start))
    except BaseException:
        queue.put(("error", worker, traceback.format_exc()))


def run_machines(s3, warehouse, tmp_path, *, workers, commits, pk=False, jdbc_uri=None):
    """``workers`` processes x ``commits`` appends of 10 rows each to db.t; checks that none is
    lost or overwritten. Returns the seconds the race took (from the start line to the last
    commit, without the processes' start-up)."""
    key = f"k{uuid.uuid4().hex[:8]}"
    kwargs = dict(primary_keys=["id", "dt"], options={"bucket": "2"}) if pk else {}
    if jdbc_uri:
        with JdbcCatalog(jdbc_uri, warehouse, catalog_key=key, options=s3.options()) as cat:
            cat.create_database("db")
            t = cat.create_table("db.t", sample_schema_(), partition_keys=["dt"], **kwargs)
    else:
        cat = Catalog(warehouse, options=s3.options())
        cat.create_database("db")
        t = cat.create_table("db.t", sample_schema_(), partition_keys=["dt"], **kwargs)
    ctx = mp.get_context("spawn")  # no fork: pyarrow's S3 client does not survive it
    barrier, queue = ctx.Barrier(workers), ctx.Queue()
    procs = []
    for w in range(workers):
        lock_dir = tmp_path / f"machine-{w}"
        lock_dir.mkdir()
        procs.append(ctx.Process(target=_machine, args=(warehouse, s3.options(), w, commits, jdbc_uri, key,
                                                        str(lock_dir), barrier, queue)))
    for p in procs:
        p.start()
    reports = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    errors = [r for r in reports if r[0] == "error"]
    assert not errors, "\n".join(r[2] for r in errors)
    acked = {r[1]: r[2] for r in reports}
    elapsed = max(r[3] for r in reports)
    ids = sorted(sid for got in acked.values() for sid in got)
    snaps = t.snapshots()
    # every acknowledged commit has a snapshot of its own, and no snapshot id is missing
    assert len(set(ids)) == workers * commits
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))
    appends = [s for s in snaps if s.commit_kind == "APPEND"]
    assert sorted(s.id for s in appends) == ids
    assert all(s.delta_record_count == 10 for s in appends)
    # and every row of every acknowledged commit is in the table
    expected = sorted(w * 10_000 + i * 10 + k for w in range(workers) for i in range(commits) for k in range(10))
    assert sorted(t.to_arrow()["id"].to_pylist()) == expected
    assert snaps[-1].total_record_count == len(expected)
    return elapsed


def sample_schema_():
    return pa.schema([("id", pa.int64()), ("name", pa.string()), ("value", pa.float64()), ("dt", pa.string())])


@pytest.mark.parametrize("pk", [False, True], ids=["append", "primary-key"])
def test_machines_sharing_only_the_bucket_lose_no_commit(s3, warehouse, tmp_path, pk):
    """The filesystem catalog with no shared lock: before conditional writes, 3 processes x 12
    appends left 23 snapshots and 2,300 of 3,600 rows."""
    elapsed = run_machines(s3, warehouse, tmp_path, workers=3, commits=4, pk=pk)
    print(f"3 processes x 4 commits in {elapsed:.1f} s, none lost")


def test_machines_with_a_jdbc_catalog_on_postgres_lose_no_commit(s3, warehouse, tmp_path):
    elapsed = run_machines(s3, warehouse, tmp_path, workers=3, commits=4, jdbc_uri=shared_postgres())
    print(f"3 processes x 4 commits in {elapsed:.1f} s, none lost")


@pytest.mark.soak
@pytest.mark.parametrize("catalog", ["filesystem", "filesystem-pk", "jdbc-postgres"])
def test_soak_machines_on_one_bucket(s3, warehouse, tmp_path, catalog):
    elapsed = run_machines(s3, warehouse, tmp_path, workers=4, commits=25, pk=catalog == "filesystem-pk",
                           jdbc_uri=shared_postgres() if catalog == "jdbc-postgres" else None)
    print(f"{catalog}: 4 processes x 25 commits in {elapsed:.1f} s, none lost")
