"""Warehouses on an object store (S3 API, served by moto on loopback): rename and create-if-absent
are not atomic there, so commits go through a CommitLock; with the JDBC catalog that is a row
in the catalog database, which serializes committers in any number of processes."""

from __future__ import annotations

import multiprocessing as mp
import threading
import uuid

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from paimon_lab import Catalog
from paimon_lab.errors import DatabaseNotExistError, OptionError, TableNotExistError, TagNotExistError
from paimon_lab.io.file_io import FileIO
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


def test_lock_is_what_keeps_snapshot_creation_exclusive(s3, warehouse, tmp_path):
    """Two committers who both found snapshot-N absent: under the lock only one creates it."""
    uri = f"sqlite:///{tmp_path}/catalog.db"
    opts = s3.options()
    ios = [FileIO(warehouse, filesystem_from_options(warehouse, opts),
                  lock=JdbcCommitLock(uri, warehouse=warehouse, check_max_sleep=0.01)) for _ in range(2)]
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
