"""The JDBC catalog on SQLite and on a real PostgreSQL server: databases, tables, views, errors,
the Java Paimon table layout, and the commit lock across processes."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import threading
import time
import uuid

import fsspec
import pyarrow as pa
import pytest
from pyarrow.fs import FSSpecHandler, PyFileSystem

from paimon_lab import Catalog
from paimon_lab.errors import (CatalogError, DatabaseAlreadyExistError, DatabaseNotEmptyError,
                               DatabaseNotExistError, InvalidIdentifierError, PaimonLabError,
                               TableAlreadyExistError, TableNotExistError)
from paimon_lab.catalog import (JdbcCatalog, JdbcCatalogError, JdbcCommitLock, JdbcConnection,
                                LockTimeoutError, ViewAlreadyExistError, ViewNotExistError)
from _servers import shared_postgres
from conftest import make_rows

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)]


@pytest.fixture
def pg_uri():
    return shared_postgres()


@pytest.fixture(params=BACKENDS)
def db_uri(request, tmp_path):
    """A catalog database URI; each test also gets its own catalog key (see ``jdbc``)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/catalog.db"
    return request.getfixturevalue("pg_uri")


@pytest.fixture
def key():
    return f"k{uuid.uuid4().hex[:10]}"


@pytest.fixture
def jdbc(db_uri, key, tmp_path):
    cat = JdbcCatalog(db_uri, str(tmp_path / "wh"), catalog_key=key)
    yield cat
    cat.close()


# --------------------------------------------------------------------------- databases

def test_catalog_factory_takes_metastore_jdbc(tmp_path):
    """Catalog(wh, options={'metastore': 'jdbc', ...}) is the JDBC catalog (it was a filesystem
    catalog: the option ignored), as 'metastore' = 'hive' is the Hive one; others are refused."""
    uri = f"sqlite:///{tmp_path}/catalog.db"
    cat = Catalog(str(tmp_path / "wh"), options={"metastore": "jdbc", "uri": uri, "catalog-key": "ck"})
    assert isinstance(cat, JdbcCatalog) and cat.catalog_key == "ck"
    cat.create_database("db")
    cat.create_table("db.t", pa.schema([("k", pa.int64())])).write(pa.table({"k": [1]}))
    cat.close()
    assert JdbcCatalog(uri, str(tmp_path / "wh"), catalog_key="ck").list_tables("db") == ["t"]
    with pytest.raises(CatalogError, match="not a lock object"):
        Catalog(str(tmp_path / "wh"), options={"metastore": "jdbc", "uri": uri}, lock=object())
    with pytest.raises(CatalogError, match="Unknown metastore 'glue'"):
        Catalog(str(tmp_path / "wh"), options={"metastore": "glue"})


def test_databases(jdbc, db_uri, key, tmp_path):
    assert jdbc.list_databases() == []
    jdbc.create_database("db")
    jdbc.create_database("other", properties={"owner": "me"})
    assert jdbc.list_databases() == ["db", "other"]
    assert jdbc.database_exists("db") and not jdbc.database_exists("nope")
    assert jdbc.database_properties("other") == {"owner": "me", "location": str(tmp_path / "wh" / "other.db")}
    jdbc.create_database("db", ignore_if_exists=True)
    with pytest.raises(DatabaseAlreadyExistError, match="Database 'db' already exists"):
        jdbc.create_database("db")
    with pytest.raises(InvalidIdentifierError):
        jdbc.create_database("a/b")
    with pytest.raises(DatabaseNotExistError, match="Database 'nope' does not exist"):
        jdbc.database_properties("nope")
    # a second catalog on the same database sees the same state
    with JdbcCatalog(db_uri, str(tmp_path / "wh"), catalog_key=key) as again:
        assert again.list_databases() == ["db", "other"]
    jdbc.drop_database("other")
    assert jdbc.list_databases() == ["db"]
    with pytest.raises(DatabaseNotExistError):
        jdbc.drop_database("other")
    jdbc.drop_database("other", ignore_if_not_exists=True)


def test_drop_database_with_tables_and_views(jdbc, sample_schema):
    jdbc.create_database("db")
    t = jdbc.create_table("db.t", sample_schema)
    t.write(make_rows(3))
    jdbc.create_view("db.v", "SELECT id FROM t", pa.schema([("id", pa.int64())]))
    with pytest.raises(DatabaseNotEmptyError, match="cascade=True"):
        jdbc.drop_database("db")
    jdbc.drop_table("db.t")
    with pytest.raises(DatabaseNotEmptyError):  # the view alone keeps it non-empty
        jdbc.drop_database("db")
    t = jdbc.create_table("db.t", sample_schema)
    jdbc.drop_database("db", cascade=True)
    assert jdbc.list_databases() == []
    assert not os.path.exists(t.path)
    jdbc.create_database("db")
    assert jdbc.list_tables("db") == [] and jdbc.list_views("db") == []


def test_catalog_keys_are_separate_catalogs(db_uri, key, tmp_path):
    with JdbcCatalog(db_uri, str(tmp_path / "wh1"), catalog_key=key + "a") as a, \
            JdbcCatalog(db_uri, str(tmp_path / "wh2"), catalog_key=key + "b") as b:
        a.create_database("db")
        b.create_database("db2")
        assert a.list_databases() == ["db"] and b.list_databases() == ["db2"]
        a.create_table("db.t", pa.schema([("x", pa.int32())]))
        assert not b.database_exists("db")
        with pytest.raises(TableNotExistError):
            b.get_table("db.t")


# --------------------------------------------------------------------------- tables

def test_tables_written_and_read(jdbc, db_uri, key, tmp_path, sample_schema):
    jdbc.create_database("db")
    t = jdbc.create_table("db.t", sample_schema, partition_keys=["dt"], comment="events")
    assert t.path == str(tmp_path / "wh" / "db.db" / "t")
    assert t.write(make_rows(30)) == 1
    assert t.write(make_rows(30, start=30)) == 2
    pk = jdbc.create_table("db.pk", sample_schema, primary_keys=["id"], options={"bucket": "2"})
    pk.write(make_rows(10))
    pk.write(make_rows(5, start=5).set_column(1, "name", pa.array(["new"] * 5)))
    assert jdbc.list_tables("db") == ["pk", "t"]
    assert jdbc.table_exists("db.t") and not jdbc.table_exists("db.nope")
    with JdbcCatalog(db_uri, str(tmp_path / "wh"), catalog_key=key) as again:
        t2 = again.get_table("db.t")
        assert t2.to_arrow().num_rows == 60
        assert t2.to_arrow(snapshot_id=1).num_rows == 30
        assert t2.schema.comment == "events"
        got = again.get_table("db.pk").to_pandas().sort_values("id")
        assert got["name"].tolist() == [f"name-{i}" for i in range(5)] + ["new"] * 5
    # the table directory is an ordinary Paimon table: the filesystem catalog reads it too
    assert Catalog(str(tmp_path / "wh")).get_table("db.t").to_arrow().num_rows == 60
    t.create_branch("b", snapshot_id=1)
    assert jdbc.get_table("db.t$branch_b").to_arrow().num_rows == 30
    jdbc.drop_table("db.t")
    assert not os.path.exists(t.path)
    assert jdbc.list_tables("db") == ["pk"]


def test_table_errors(jdbc, sample_schema):
    with pytest.raises(DatabaseNotExistError, match="Database 'db' does not exist"):
        jdbc.create_table("db.t", sample_schema)
    jdbc.create_database("db")
    t = jdbc.create_table("db.t", sample_schema)
    with pytest.raises(TableAlreadyExistError, match="Table 'db.t' already exists"):
        jdbc.create_table("db.t", sample_schema)
    assert jdbc.create_table("db.t", sample_schema, ignore_if_exists=True).path == t.path
    with pytest.raises(TableNotExistError, match="Table 'db.nope' does not exist"):
        jdbc.get_table("db.nope")
    with pytest.raises(TableNotExistError):
        jdbc.drop_table("db.nope")
    jdbc.drop_table("db.nope", ignore_if_not_exists=True)
    with pytest.raises(DatabaseNotExistError):
        jdbc.list_tables("nope")
    with pytest.raises(InvalidIdentifierError):
        jdbc.get_table("a.b.c")
    with pytest.raises(PaimonLabError, match="not a column"):
        jdbc.create_table("db.bad", sample_schema, primary_keys=["missing"])
    assert not jdbc.table_exists("db.bad")  # a failed create registers nothing


def test_unregistered_directory_is_not_a_table(jdbc, tmp_path, sample_schema):
    jdbc.create_database("db")
    fs_catalog = Catalog(str(tmp_path / "wh"))
    stray = fs_catalog.create_table("db.stray", sample_schema)
    stray.write(make_rows(4))
    assert jdbc.list_tables("db") == []
    assert not jdbc.table_exists("db.stray")
    with pytest.raises(TableNotExistError):
        jdbc.get_table("db.stray")
    with pytest.raises(CatalogError, match="register_table"):
        jdbc.create_table("db.stray", sample_schema)
    adopted = jdbc.register_table("db.stray")
    assert adopted.to_arrow().num_rows == 4
    assert jdbc.list_tables("db") == ["stray"]
    with pytest.raises(TableAlreadyExistError):
        jdbc.register_table("db.stray")
    with pytest.raises(TableNotExistError):
        jdbc.register_table("db.nothing_here")
    # a registered table whose files vanished is reported as such
    import shutil

    shutil.rmtree(adopted.path)
    with pytest.raises(CatalogError, match="holds no Paimon schema"):
        jdbc.get_table("db.stray")


def test_java_paimon_table_layout(jdbc, key, tmp_path, sample_schema):
    jdbc.create_database("db", properties={"comment": "x"})
    jdbc.create_table("db.t", sample_schema)
    db = jdbc.db
    assert db.query("SELECT catalog_key, database_name, table_name FROM paimon_tables WHERE catalog_key = ?",
                    (key,)) == [(key, "db", "t")]
    props = dict(db.query("SELECT property_key, property_value FROM paimon_database_properties "
                          "WHERE catalog_key = ? AND database_name = ?", (key, "db")))
    assert props == {"exists": "true", "location": str(tmp_path / "wh" / "db.db"), "comment": "x"}
    assert {"lock_id", "acquired_at", "expire_time_seconds", "lock_owner"} <= db.table_columns(
        "paimon_distributed_locks")
    assert {"catalog_key", "database_name", "view_name", "view_schema"} <= db.table_columns("paimon_views")
    # A database Java created (rows only, no directory) is usable.
    db.execute("INSERT INTO paimon_database_properties VALUES (?, ?, ?, ?)", (key, "javadb", "exists", "true"))
    assert jdbc.database_exists("javadb")
    assert jdbc.create_table("javadb.t", sample_schema).path == str(tmp_path / "wh" / "javadb.db" / "t")


def test_custom_database_location(jdbc, tmp_path, sample_schema):
    elsewhere = str(tmp_path / "elsewhere")
    jdbc.create_database("db", properties={"location": elsewhere})
    t = jdbc.create_table("db.t", sample_schema)
    assert t.path == os.path.join(elsewhere, "t")
    t.write(make_rows(3))
    assert jdbc.get_table("db.t").to_arrow().num_rows == 3
    assert jdbc.lock.lock_id(t.path + "/snapshot/snapshot-1") == f"{jdbc.catalog_key}.db.t"


# --------------------------------------------------------------------------- views

def test_views(jdbc, db_uri, key, tmp_path, sample_schema):
    jdbc.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("tags", pa.list_(pa.string())),
                        ("attrs", pa.struct([("a", pa.int32()), ("b", pa.timestamp("ms"))]))])
    view = jdbc.create_view("db.v", "SELECT id, tags, attrs FROM t WHERE id > 3", schema, comment="recent",
                            dialects={"flink": "SELECT 1"}, options={"k": "v"})
    assert view.identifier == "db.v"
    jdbc.create_view("db.a", "SELECT 1 AS one", pa.schema([("one", pa.int32())]))
    assert jdbc.list_views("db") == ["a", "v"]
    assert jdbc.list_tables("db") == []  # views are not tables
    with JdbcCatalog(db_uri, str(tmp_path / "wh"), catalog_key=key) as again:
        got = again.get_view("db.v")
    assert got.query == "SELECT id, tags, attrs FROM t WHERE id > 3"
    assert got.schema.equals(schema)
    assert (got.comment, got.dialects, got.options) == ("recent", {"flink": "SELECT 1"}, {"k": "v"})
    # stored as Paimon's ViewSchema JSON
    stored = json.loads(jdbc.db.query("SELECT view_schema FROM paimon_views WHERE catalog_key = ? "
                                      "AND view_name = ?", (key, "v"))[0][0])
    assert set(stored) == {"fields", "query", "dialects", "comment", "options"}
    assert stored["fields"][0] == {"id": 0, "name": "id", "type": "BIGINT NOT NULL"}
    assert jdbc.view_exists("db.v") and not jdbc.view_exists("db.nope")
    jdbc.drop_view("db.a")
    assert jdbc.list_views("db") == ["v"]


def test_view_errors(jdbc, sample_schema):
    one = pa.schema([("one", pa.int32())])
    with pytest.raises(DatabaseNotExistError):
        jdbc.create_view("db.v", "SELECT 1", one)
    jdbc.create_database("db")
    jdbc.create_view("db.v", "SELECT 1", one)
    with pytest.raises(ViewAlreadyExistError, match="View 'db.v' already exists"):
        jdbc.create_view("db.v", "SELECT 2", one)
    assert jdbc.create_view("db.v", "SELECT 2", one, ignore_if_exists=True).query == "SELECT 1"
    with pytest.raises(ViewNotExistError, match="View 'db.nope' does not exist"):
        jdbc.get_view("db.nope")
    with pytest.raises(ViewNotExistError):
        jdbc.drop_view("db.nope")
    jdbc.drop_view("db.nope", ignore_if_not_exists=True)
    with pytest.raises(DatabaseNotExistError):
        jdbc.list_views("nope")
    # one namespace for tables and views
    jdbc.create_table("db.t", sample_schema)
    with pytest.raises(ViewAlreadyExistError, match="a table with that name exists"):
        jdbc.create_view("db.t", "SELECT 1", one)
    with pytest.raises(CatalogError, match="a view with that name exists"):
        jdbc.create_table("db.v", sample_schema)
    with pytest.raises(CatalogError, match="query is empty"):
        jdbc.create_view("db.w", "  ", one)
    with pytest.raises(CatalogError, match="pyarrow.Schema"):
        jdbc.create_view("db.w", "SELECT 1", {"one": "int"})
    assert all(issubclass(e, PaimonLabError) for e in (ViewAlreadyExistError, ViewNotExistError,
                                                        JdbcCatalogError, LockTimeoutError))


# --------------------------------------------------------------------------- connection errors

def test_bad_uris(tmp_path):
    with pytest.raises(JdbcCatalogError, match="Unsupported catalog database uri"):
        JdbcCatalog("mysql://localhost/db", str(tmp_path / "wh"))
    with pytest.raises(JdbcCatalogError, match="default SQLite"):
        JdbcCatalog(None, "s3://bucket/wh")
    with pytest.raises(JdbcCatalogError, match="Cannot connect|needs psycopg"):
        JdbcCatalog("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", str(tmp_path / "wh"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(JdbcCatalogError):
        JdbcCatalog(str(blocker / "sub" / "c.db"), str(tmp_path / "wh"))


def test_default_sqlite_file_in_warehouse(tmp_path, sample_schema):
    wh = str(tmp_path / "wh")
    with JdbcCatalog(None, wh) as cat:
        cat.create_database("db")
        cat.create_table("db.t", sample_schema).write(make_rows(2))
    assert os.path.exists(os.path.join(wh, "paimon-jdbc-catalog.sqlite"))
    for uri in ("sqlite:", f"jdbc:sqlite:{wh}/paimon-jdbc-catalog.sqlite", os.path.join(wh, "paimon-jdbc-catalog.sqlite")):
        with JdbcCatalog(uri, wh) as cat:
            assert cat.get_table("db.t").to_arrow().num_rows == 2


# --------------------------------------------------------------------------- the lock

def test_lock_is_exclusive_and_expires(db_uri, key):
    db = JdbcConnection(db_uri)
    lock = JdbcCommitLock(db, key, warehouse="s3://b/wh", acquire_timeout=0.3, check_max_sleep=0.05)
    path = "s3://b/wh/db.db/t/snapshot/snapshot-7"
    lock_id = lock.lock_id(path)
    assert lock_id == f"{key}.db.t"  # Java Paimon's '{catalog-key}.{database}.{table}'
    assert lock.lock_id("s3://b/wh/db.db/t/schema/schema-1") == lock_id
    assert lock.lock_id("s3://elsewhere/x").startswith(f"{key}.path-")
    with lock.hold(path):
        assert lock.holder(lock_id) is not None
        assert not lock.try_acquire(lock_id, "someone-else")
        with pytest.raises(LockTimeoutError, match="Could not acquire the commit lock"):
            with lock.hold(path):   # gives up after acquire_timeout instead of waiting for ever
                pass
    assert lock.holder(lock_id) is None
    # a crashed holder's row is taken over once it is older than its lease
    db.execute("INSERT INTO paimon_distributed_locks (lock_id, acquired_at, expire_time_seconds, lock_owner) "
               "VALUES (?, ?, ?, ?)", (lock_id, "2000-01-01 00:00:00", 60, "crashed"))
    with lock.hold(path):
        assert lock.holder(lock_id) != "crashed"
    # a fresh row is not taken over
    assert lock.try_acquire(lock_id, "a")
    assert not lock.try_acquire(lock_id, "b")
    assert not lock.release(lock_id, "b") and lock.release(lock_id, "a")
    db.close()


def _counter_worker(uri, key, path, rounds, barrier):
    lock = JdbcCommitLock(uri, key, check_max_sleep=0.02)  # its own connection
    barrier.wait()
    for _ in range(rounds):
        with lock.hold(path):  # a read-modify-write that loses updates without mutual exclusion
            with open(path) as f:
                value = int(f.read())
            time.sleep(0.002)
            with open(path, "w") as f:
                f.write(str(value + 1))
    lock.db.close()


@pytest.mark.slow
def test_lock_serializes_processes_and_connections(db_uri, key, tmp_path):
    """SQLite: separate processes (its locking is per process); PostgreSQL: separate sessions,
    which is what separate processes or machines are to the server."""
    counter = tmp_path / "counter"
    counter.write_text("0")
    JdbcCommitLock(db_uri, key).db.close()  # creates the lock table before the race
    workers, rounds = 2, 20
    args = (db_uri, key, str(counter), rounds)
    if db_uri.startswith("sqlite"):
        ctx = mp.get_context("spawn")
        barrier = ctx.Barrier(workers)
        procs = [ctx.Process(target=_counter_worker, args=(*args, barrier)) for _ in range(workers)]
    else:
        workers = 4
        barrier = threading.Barrier(workers)
        procs = [threading.Thread(target=_counter_worker, args=(*args, barrier)) for _ in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert getattr(p, "exitcode", 0) == 0 and not p.is_alive()
    assert int(counter.read_text()) == workers * rounds


def test_commits_on_a_store_without_atomic_create_take_the_jdbc_lock(db_uri, key, sample_schema):
    fs = PyFileSystem(FSSpecHandler(fsspec.filesystem("memory")))
    wh = f"memory://jdbc-{key}"
    with JdbcCatalog(db_uri, wh, catalog_key=key, filesystem=fs) as cat:
        assert not cat.file_io.is_local and isinstance(cat.file_io.lock, JdbcCommitLock)
        held = []
        hold = cat.lock.hold

        def spy(path):
            held.append((cat.lock.lock_id(path), path.rsplit("/", 1)[-1]))
            return hold(path)

        cat.lock.hold = spy
        cat.create_database("db")
        t = cat.create_table("db.t", sample_schema, partition_keys=["dt"])
        t.write(make_rows(10))
        t.write(make_rows(10, start=10))
        t.create_tag("v1", 1)
        assert t.to_arrow().num_rows == 20 and t.to_arrow(tag="v1").num_rows == 10
        assert held == [(f"{key}.db.t", "schema-0"), (f"{key}.db.t", "snapshot-1"),
                        (f"{key}.db.t", "snapshot-2"), (f"{key}.db.t", "tag-v1")]
    with JdbcCatalog(db_uri, wh, catalog_key=key, filesystem=fs, options={"lock.enabled": "false"}) as cat:
        assert type(cat.file_io.lock) is not JdbcCommitLock


# --------------------------------------------------------------------------- from SQL

def _sql_uri(db_uri: str) -> str:
    """The JDBC spelling of a test database uri (jdbc:sqlite:/path, jdbc:postgresql://...)."""
    if db_uri.startswith("sqlite:///"):
        return "jdbc:sqlite:" + db_uri[len("sqlite://"):]
    return "jdbc:" + db_uri


def test_sql_create_catalog_jdbc(db_uri, key, tmp_path):
    pytest.importorskip("duckdb")
    from paimon_lab.sql import Session, SqlError

    from urllib.parse import urlparse

    wh = str(tmp_path / "wh")
    user = urlparse(db_uri).username or "paimon"  # SQLite ignores the credentials
    ddl = (f"CREATE CATALOG c WITH ('type'='paimon', 'metastore'='jdbc', 'uri'='{_sql_uri(db_uri)}', "
           f"'jdbc.user'='{user}', 'jdbc.password'='', 'catalog-key'='{key}', 'warehouse'='{wh}')")
    s = Session()
    s.run(ddl + "; USE CATALOG c")
    cat = s.catalogs["c"].catalog
    assert isinstance(cat, JdbcCatalog) and cat.catalog_key == key
    s.run("CREATE DATABASE shop; USE shop")
    s.run("CREATE TABLE orders (id INT PRIMARY KEY NOT ENFORCED, item VARCHAR(20), code CHAR(5), "
          "at TIMESTAMP(3), price DECIMAL(10, 2)) WITH ('bucket' = '1')")
    s.run("INSERT INTO orders VALUES (1, 'pen', 'P', TIMESTAMP '2024-01-01 10:00:00', 1.50), "
          "(2, 'book', 'B', NULL, 12.00), (3, 'lamp', 'L', NULL, 30.25)")
    s.run("UPDATE orders SET price = 13 WHERE id = 2")
    assert s.execute("SELECT id FROM orders WHERE price > 10 ORDER BY id").column(0).to_pylist() == [2, 3]
    # registered in the catalog database, with the declared types in schema-0
    assert cat.list_tables("shop") == ["orders"]
    raw = json.load(open(os.path.join(wh, "shop.db", "orders", "schema", "schema-0")))
    assert [f["type"] for f in raw["fields"]][:4] == ["INT NOT NULL", "VARCHAR(20)", "CHAR(5)", "TIMESTAMP(3)"]
    # views live in paimon_views
    s.run("CREATE VIEW dear (name, cost) COMMENT 'pricey' AS SELECT item, price FROM orders WHERE price > 10")
    assert cat.list_views("shop") == ["dear"]
    assert cat.get_view("shop.dear").schema.names == ["name", "cost"]
    assert s.execute("SELECT name FROM dear WHERE cost < 20").column(0).to_pylist() == ["book"]
    assert s.last_scans[0].filter is not None  # the view's filter and ours reached the read
    s.run("ALTER VIEW dear AS SELECT item, price * 2 FROM orders")
    assert sorted(s.execute("SELECT cost FROM dear").column(0).to_pylist()) == [3, 26, 60.5]
    s.run("ALTER VIEW dear RENAME TO costly")
    assert cat.list_views("shop") == ["costly"]
    s.run("ALTER TABLE orders RENAME TO orders2")
    assert cat.list_tables("shop") == ["orders2"] and not os.path.exists(os.path.join(wh, "shop.db", "orders"))
    assert s.execute("SHOW TABLES").column(0).to_pylist() == ["orders2"]
    with pytest.raises(SqlError, match="does not exist"):
        s.execute("SELECT * FROM costly")  # the view still reads `orders`
    s.run("ALTER VIEW costly AS SELECT item, price FROM orders2")
    s.close()

    # a new session (a restarted notebook) finds everything through the catalog database
    s2 = Session()
    s2.run(ddl + "; USE CATALOG c; USE shop")
    assert s2.execute("SHOW VIEWS").column(0).to_pylist() == ["costly"]
    assert sorted(s2.execute("SELECT name FROM costly").column(0).to_pylist()) == ["book", "lamp", "pen"]
    s2.run("DROP VIEW costly; DROP TABLE orders2")
    assert cat.list_tables("shop") == [] and cat.list_views("shop") == []
    # a filesystem catalog on the same warehouse does not see JDBC-only registrations
    assert Catalog(wh).list_tables("shop") == []


def test_sql_jdbc_catalog_errors(tmp_path):
    pytest.importorskip("duckdb")
    from paimon_lab.sql import Session, SqlError

    s = Session()
    with pytest.raises(SqlError, match="Cannot open JDBC catalog 'c'.*needs a database uri"):
        s.run("CREATE CATALOG c WITH ('type'='paimon', 'metastore'='jdbc', 'uri'='jdbc:sqlite:', "
              "'warehouse'='s3://bucket/wh')")
    # the default SQLite file inside a local warehouse
    s.run(f"CREATE CATALOG d WITH ('type'='paimon', 'metastore'='jdbc', 'warehouse'='{tmp_path}/wh')")
    assert isinstance(s.catalogs["d"].catalog, JdbcCatalog)
    assert os.path.exists(tmp_path / "wh" / "paimon-jdbc-catalog.sqlite")


def test_jdbc_rename_and_alter_view_api(jdbc, sample_schema):
    from paimon_lab.core import types as T

    jdbc.create_database("db")
    t = jdbc.create_table("db.t", fields=[T.DataField(0, "id", T.parse_type("BIGINT")),
                                          T.DataField(1, "s", T.parse_type("VARCHAR(7)"))])
    assert str(t.schema.field("s").type) == "VARCHAR(7)"
    t.write(pa.table({"id": pa.array([1], pa.int64()), "s": ["x"]}))
    jdbc.rename_table("db.t", "db.t2")
    assert jdbc.list_tables("db") == ["t2"] and jdbc.get_table("db.t2").to_arrow().num_rows == 1
    with pytest.raises(TableNotExistError):
        jdbc.rename_table("db.t", "db.t3")
    jdbc.create_table("db.t3", sample_schema)
    with pytest.raises(TableAlreadyExistError):
        jdbc.rename_table("db.t2", "db.t3")
    one = pa.schema([("one", pa.int32())])
    jdbc.create_view("db.v", "SELECT 1 AS one", one)
    jdbc.alter_view("db.v", "SELECT 2 AS one", one, comment="two")
    assert (jdbc.get_view("db.v").query, jdbc.get_view("db.v").comment) == ("SELECT 2 AS one", "two")
    jdbc.rename_view("db.v", "db.w")
    assert jdbc.list_views("db") == ["w"]
    with pytest.raises(ViewNotExistError):
        jdbc.alter_view("db.v", "SELECT 1", one)
    jdbc.create_view("db.x", "SELECT 1 AS one", one)
    with pytest.raises(ViewAlreadyExistError):
        jdbc.rename_view("db.w", "db.x")
    with pytest.raises(ViewAlreadyExistError):
        jdbc.rename_view("db.w", "db.t2")
    assert jdbc.list_views("db") == ["w", "x"]
