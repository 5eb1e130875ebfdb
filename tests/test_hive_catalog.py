"""The Hive catalog against a real Hive Metastore (the Thrift server inside pyspark, one per test
run): what we register is checked through the metastore's own Thrift API and by Spark with Hive
support; tests/java/test_java_hive_catalog.py checks it against Java Paimon's HiveCatalog."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import uuid

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

pytest.importorskip("pymetastore")

from paimon_lab import Catalog, HiveCatalog, SchemaChange  # noqa: E402
from paimon_lab.catalog.hive import INPUT_FORMAT, OUTPUT_FORMAT, SERDE, STORAGE_HANDLER  # noqa: E402
from paimon_lab.catalog.hive_client import HiveCommitLock, lock_enabled  # noqa: E402
from paimon_lab.errors import (CatalogError, DatabaseNotEmptyError, LockTimeoutError, OptionError,  # noqa: E402
                               TableAlreadyExistError, TableNotExistError, ViewAlreadyExistError,
                               ViewNotExistError)
from _servers import shared_hive_metastore  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


@pytest.fixture(scope="session")
def hms_uri():
    return shared_hive_metastore()


@pytest.fixture
def db():
    return f"db_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def catalog(hms_uri, tmp_path):
    c = HiveCatalog(hms_uri, str(tmp_path / "wh"))
    yield c
    c.close()


def test_mark_partition_done_in_the_metastore(catalog, db):
    """'done-partition' registers '<partition>.done' (Java's AddDonePartitionAction), which later
    commits leave alone; 'mark-event' records a LOAD_DONE event."""
    catalog.create_database(db)
    t = catalog.create_table(f"{db}.t", SCHEMA, partition_keys=["dt"], options={
        "metastore.partitioned-table": "true", "partition.end-input-to-done": "true",
        "partition.mark-done-action": "success-file,done-partition,mark-event"})
    t.write(pa.table({"id": [1, 2], "dt": ["a", "b c"], "v": ["x", "y"]}))
    names = sorted(catalog.client.call("get_partition_names", db, "t", -1))
    assert names == ["dt=a", "dt=a.done", "dt=b c", "dt=b c.done"]
    p = catalog.client.call("get_partition", db, "t", ["a.done"])
    assert p.sd.location.rstrip("/").endswith("/t/dt=a.done")
    assert catalog.client.call("isPartitionMarkedForEvent", db, "t", {"dt": "a"}, 1)
    assert os.path.exists(os.path.join(t.path, "dt=a", "_SUCCESS"))
    t.write(SCHEMA.empty_table(), overwrite={"dt": "a"})    # partition a empties: it leaves, its mark stays
    assert sorted(catalog.client.call("get_partition_names", db, "t", -1)) == ["dt=a.done", "dt=b c", "dt=b c.done"]
    plain = catalog.create_table(f"{db}.p", SCHEMA, partition_keys=["dt"],
                                 options={"partition.mark-done-action": "done-partition"})
    with pytest.raises(OptionError, match="metastore.partitioned-table"):
        plain.mark_partitions_done([{"dt": "a"}])


def test_catalog_factory_and_options(hms_uri, tmp_path):
    c = Catalog(str(tmp_path / "wh"), options={"metastore": "hive", "uri": hms_uri})
    assert isinstance(c, HiveCatalog) and "default" in c.list_databases()
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "hive-site.xml").write_text(
        "<configuration><property><name>hive.metastore.uris</name>"
        f"<value>{hms_uri}</value></property><property><name>hive.metastore.warehouse.dir</name>"
        f"<value>{tmp_path}/wh2</value></property></configuration>")
    c2 = HiveCatalog(hive_conf_dir=str(conf))
    assert c2.uri == hms_uri and c2.warehouse == f"{tmp_path}/wh2"
    for bad in ({"hadoop-conf-dir": "/etc/hadoop"}, {"location-in-properties": "true"},
                {"table.type": "view"}):
        with pytest.raises(CatalogError):
            HiveCatalog(hms_uri, str(tmp_path / "wh"), options=bad)
    with pytest.raises(CatalogError, match="thrift://"):
        HiveCatalog("http://x:1", str(tmp_path / "wh"))


def test_entries_in_metastore(catalog, db, tmp_path):
    catalog.create_database(db, properties={"comment": "a db", "owner-team": "x"})
    hdb = catalog.client.call("get_database", db)
    assert hdb.locationUri.endswith(f"/wh/{db}.db") and hdb.description == "a db"
    assert hdb.parameters["owner-team"] == "x"
    t = catalog.create_table(f"{db}.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2", "metastore.partitioned-table": "true", "hive.x": "1"},
                             comment="c")
    h = catalog.client.call("get_table", db, "t")
    assert (h.sd.inputFormat, h.sd.outputFormat, h.sd.serdeInfo.serializationLib) == \
        (INPUT_FORMAT, OUTPUT_FORMAT, SERDE)
    assert h.parameters["table_type"] == "PAIMON" and h.parameters["storage_handler"] == STORAGE_HANDLER
    assert h.parameters["x"] == "1" and h.parameters["comment"] == "c" and h.tableType == "MANAGED_TABLE"
    assert [(c.name, c.type) for c in h.sd.cols] == [("id", "bigint"), ("v", "string")]
    assert [(c.name, c.type) for c in h.partitionKeys] == [("dt", "string")]
    assert h.sd.location.endswith(f"/wh/{db}.db/t") and t.path == str(tmp_path / "wh" / f"{db}.db" / "t")

    t.write(pa.table({"id": [1, 2], "dt": ["a", "b"], "v": ["x", "y"]}))
    assert sorted(catalog.client.call("get_partition_names", db, "t", -1)) == ["dt=a", "dt=b"]
    p = catalog.client.call("get_partition", db, "t", ["a"])
    assert p.sd.location.rstrip("/").endswith("/t/dt=a") and p.sd.inputFormat == INPUT_FORMAT
    # a DELETE on a primary-key table writes delete rows: partition b still has files
    t.delete("dt = 'b'")
    assert sorted(catalog.client.call("get_partition_names", db, "t", -1)) == ["dt=a", "dt=b"]
    # overwriting it with nothing leaves it without files: it leaves the metastore
    t.write(SCHEMA.empty_table(), overwrite={"dt": "b"})
    assert catalog.client.call("get_partition_names", db, "t", -1) == ["dt=a"]
    t.write(pa.table({"id": [3], "dt": ["c"], "v": ["z"]}))
    assert sorted(catalog.client.call("get_partition_names", db, "t", -1)) == ["dt=a", "dt=c"]

    # schema changes reach the metastore
    t.alter(SchemaChange.add_column("w", "INT", comment="new"), SchemaChange.set_option("hive.y", "2"))
    h = catalog.client.call("get_table", db, "t")
    assert [(c.name, c.type, c.comment) for c in h.sd.cols][-1] == ("w", "int", "new")
    assert h.parameters["y"] == "2"
    # a table loaded again keeps syncing
    catalog.get_table(f"{db}.t").alter(SchemaChange.rename_column("v", "v2"))
    assert [c.name for c in catalog.client.call("get_table", db, "t").sd.cols] == ["id", "v2", "w"]

    assert catalog.list_tables(db) == ["t"]
    with pytest.raises(TableAlreadyExistError):
        catalog.create_table(f"{db}.t", SCHEMA)
    catalog.rename_table(f"{db}.t", f"{db}.t2")
    assert catalog.list_tables(db) == ["t2"]
    h = catalog.client.call("get_table", db, "t2")
    assert h.sd.location.endswith(f"/{db}.db/t2")
    assert catalog.get_table(f"{db}.t2").to_arrow().num_rows == 2
    with pytest.raises(DatabaseNotEmptyError):
        catalog.drop_database(db)
    catalog.drop_table(f"{db}.t2")
    assert catalog.client.call("get_all_tables", db) == []
    assert not os.path.exists(tmp_path / "wh" / f"{db}.db" / "t2")
    with pytest.raises(TableNotExistError):
        catalog.get_table(f"{db}.t2")
    catalog.drop_database(db)
    assert db not in catalog.list_databases()


def test_types_and_external(hms_uri, db, tmp_path):
    c = HiveCatalog(hms_uri, str(tmp_path / "wh"), options={"table.type": "external"})
    c.create_database(db)
    schema = pa.schema([("d", pa.decimal128(10, 2)), ("ts", pa.timestamp("us")), ("a", pa.list_(pa.int32())),
                        ("m", pa.map_(pa.string(), pa.float64())),
                        ("s", pa.struct([("x", pa.int8()), ("y", pa.binary())])), ("dt", pa.date32())])
    c.create_table(f"{db}.t", schema)
    h = c.client.call("get_table", db, "t")
    assert [col.type for col in h.sd.cols] == ["decimal(10,2)", "timestamp", "array<int>", "map<string,double>",
                                               "struct<x:tinyint,y:binary>", "date"]
    assert h.tableType == "EXTERNAL_TABLE" and h.parameters["EXTERNAL"] == "TRUE"
    path = c.get_table(f"{db}.t").path
    c.drop_table(f"{db}.t")
    assert os.path.isdir(path)  # an external table's files stay


def test_hive_tables_that_are_not_paimon(catalog, db, tmp_path):
    catalog.create_database(db)
    T = catalog.types
    sd = T.StorageDescriptor(cols=[T.FieldSchema(name="a", type="int")], location=str(tmp_path / "csv"),
                             inputFormat="org.apache.hadoop.mapred.TextInputFormat",
                             outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
                             serdeInfo=T.SerDeInfo(serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                                                   parameters={}))
    catalog.client.call("create_table", T.Table(tableName="csv", dbName=db, sd=sd, partitionKeys=[],
                                                parameters={}, tableType="EXTERNAL_TABLE"))
    assert catalog.list_tables(db) == []
    with pytest.raises(CatalogError, match="not a Paimon table"):
        catalog.get_table(f"{db}.csv")


def test_views_in_metastore(catalog, db):
    catalog.create_database(db)
    schema = pa.schema([("x", pa.int32()), ("s", pa.string())])
    catalog.create_view(f"{db}.v", "SELECT 1 AS x, 'a' AS s", schema, "a view", options={"k": "v"})
    h = catalog.client.call("get_table", db, "v")
    assert h.tableType == "VIRTUAL_VIEW" and h.viewOriginalText == h.viewExpandedText == "SELECT 1 AS x, 'a' AS s"
    assert [(c.name, c.type) for c in h.sd.cols] == [("x", "int"), ("s", "string")]
    assert h.parameters["k"] == "v" and h.parameters["comment"] == "a view"
    v = catalog.get_view(f"{db}.v")
    assert v.query == "SELECT 1 AS x, 'a' AS s" and v.comment == "a view" and v.options == {"k": "v"}
    assert v.schema.names == ["x", "s"]
    assert catalog.list_views(db) == ["v"] and catalog.list_tables(db) == []
    with pytest.raises(ViewAlreadyExistError):
        catalog.create_view(f"{db}.v", "SELECT 2 AS x", pa.schema([("x", pa.int32())]))
    catalog.alter_view(f"{db}.v", "SELECT 2 AS x", pa.schema([("x", pa.int32())]))
    assert catalog.get_view(f"{db}.v").query == "SELECT 2 AS x"
    catalog.rename_view(f"{db}.v", f"{db}.w")
    assert catalog.list_views(db) == ["w"]
    catalog.drop_view(f"{db}.w")
    assert catalog.list_views(db) == []
    with pytest.raises(ViewNotExistError):
        catalog.get_view(f"{db}.w")


def _hive_table(catalog, db, name, location, cols, serde, input_format, output_format, serde_params=None,
                partition_keys=()):
    T = catalog.types
    sd = T.StorageDescriptor(cols=[T.FieldSchema(name=n, type=t) for n, t in cols], location=location,
                             inputFormat=input_format, outputFormat=output_format,
                             serdeInfo=T.SerDeInfo(serializationLib=serde, parameters=serde_params or {}))
    catalog.client.call("create_table", T.Table(
        tableName=name, dbName=db, sd=sd, partitionKeys=[T.FieldSchema(name=n, type=t) for n, t in partition_keys],
        parameters={"EXTERNAL": "TRUE"}, tableType="EXTERNAL_TABLE"))


def test_hive_format_tables(hms_uri, db, tmp_path):
    import pyarrow.parquet as pq

    from paimon_lab.catalog.hive_format import HiveFormatTable
    from paimon_lab.sql.session import Session

    c = HiveCatalog(hms_uri, str(tmp_path / "wh"), options={"format-table.enabled": "true"})
    c.create_database(db)
    (tmp_path / "txt" / "dt=d1").mkdir(parents=True)
    (tmp_path / "txt" / "dt=d1" / "part-0").write_text("1\x01a\n2\x01b\n")
    _hive_table(c, db, "txt", str(tmp_path / "txt"), [("id", "int"), ("name", "string")],
                "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", "org.apache.hadoop.mapred.TextInputFormat",
                "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat", partition_keys=[("dt", "string")])
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.table({"k": pa.array([5], pa.int64()), "tags": [["x", "y"]]}), tmp_path / "pq" / "f.parquet")
    _hive_table(c, db, "pq", str(tmp_path / "pq"), [("k", "bigint"), ("tags", "array<string>")],
                "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat")
    _hive_table(c, db, "avro", str(tmp_path / "avro"), [("k", "int")], "org.apache.hadoop.hive.serde2.avro.AvroSerDe",
                "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat",
                "org.apache.hadoop.hive.ql.io.avro.AvroContainerOutputFormat")
    assert c.list_tables(db) == ["pq", "txt"]
    t = c.get_table(f"{db}.txt")
    assert isinstance(t, HiveFormatTable) and t.options["csv.field-delimiter"] == "\x01"
    with pytest.raises(CatalogError, match="Parquet, ORC and text"):
        c.get_table(f"{db}.avro")
    s = Session()
    s.add_catalog("h", c, use=True)
    got = s.execute(f"SELECT id, name, dt FROM {db}.txt ORDER BY id").to_pylist()
    assert got == [{"id": 1, "name": "a", "dt": "d1"}, {"id": 2, "name": "b", "dt": "d1"}]
    assert s.execute(f"SELECT k, tags FROM {db}.pq").to_pylist() == [{"k": 5, "tags": ["x", "y"]}]
    with pytest.raises(Exception, match="does not write it"):
        s.execute(f"INSERT INTO {db}.pq VALUES (6, ARRAY['z'])")


def test_sql_catalog(hms_uri, db, tmp_path):
    from paimon_lab.sql.session import Session

    s = Session()
    s.execute(f"CREATE CATALOG h WITH ('type' = 'paimon', 'metastore' = 'hive', 'uri' = '{hms_uri}', "
              f"'warehouse' = '{tmp_path}/wh')")
    s.execute("USE CATALOG h")
    s.execute(f"CREATE DATABASE {db}")
    s.execute(f"CREATE TABLE {db}.t (id BIGINT, dt STRING) PARTITIONED BY (dt) "
              "WITH ('metastore.partitioned-table' = 'true')")
    s.execute(f"INSERT INTO {db}.t VALUES (1, 'a'), (2, 'b')")
    assert s.execute(f"SELECT count(*) AS n FROM {db}.t").column(0).to_pylist() == [2]
    s.execute(f"ALTER TABLE {db}.t ADD COLUMNS (c INT)")
    c = HiveCatalog(hms_uri, str(tmp_path / "wh"))
    assert [col.name for col in c.client.call("get_table", db, "t").sd.cols] == ["id", "c"]
    assert sorted(c.client.call("get_partition_names", db, "t", -1)) == ["dt=a", "dt=b"]
    s.execute(f"CREATE VIEW {db}.v AS SELECT id FROM {db}.t WHERE dt = 'a'")
    assert s.execute(f"SELECT * FROM {db}.v").column(0).to_pylist() == [1]
    assert c.client.call("get_table", db, "v").tableType == "VIRTUAL_VIEW"
    s.execute(f"ALTER TABLE {db}.t RENAME TO {db}.t2")
    assert c.list_tables(db) == ["t2"] and c.client.call("get_table", db, "t2").sd.location.endswith("/t2")
    s.execute(f"DROP TABLE {db}.t2")
    assert c.client.call("get_all_tables", db) == ["v"]


def test_metastore_lock(hms_uri, catalog, db):
    """The metastore lock excludes a second holder until the first lets go."""
    catalog.create_database(db)
    first = HiveCommitLock(catalog.client, lambda p: None)
    other = HiveCatalog(hms_uri, catalog.warehouse)
    second = HiveCommitLock(other.client, lambda p: None, acquire_timeout=0.5, check_max_sleep=0.1)
    lock_id = first.acquire(db, "t")
    try:
        with pytest.raises(LockTimeoutError):
            second.acquire(db, "t")
    finally:
        first.release(lock_id)
    second.release(second.acquire(db, "t"))
    other.close()


def _commit_worker(uri: str, warehouse: str, ident: str, worker: int, n: int, out: str) -> None:
    # An explicit file system: FileIO treats it as a store without atomic create (like an object
    # store), so each snapshot is created under the commit lock.
    c = HiveCatalog(uri, warehouse, filesystem=pafs.LocalFileSystem(),
                    options={"lock.enabled": "true", "lock-check-max-sleep": "100 ms"})
    lock = c.file_io.lock
    assert isinstance(lock, HiveCommitLock)
    taken = []
    acquire = lock.acquire
    lock.acquire = lambda db, table: taken.append((db, table)) or acquire(db, table)
    t = c.get_table(ident)
    for i in range(n):
        t.write(pa.table({"id": [worker * 1000 + i], "dt": ["a"], "v": ["x"]}))
    with open(out, "w") as fh:
        json.dump(taken, fh)


def test_lock_defaults_as_java():
    assert lock_enabled({}, object_store=True) and not lock_enabled({}, object_store=False)
    assert lock_enabled({"lock.enabled": "true"}, object_store=False)
    assert not lock_enabled({"lock.enabled": "false"}, object_store=True)
    with pytest.raises(OptionError):
        lock_enabled({"lock.enabled": "yes"}, object_store=True)


@pytest.mark.slow
def test_two_processes_commit_under_the_metastore_lock(hms_uri, catalog, db, tmp_path):
    """Two processes commit to one table on a store without atomic create; the metastore lock
    serializes them and nothing is lost."""
    catalog.create_database(db)
    catalog.create_table(f"{db}.t", SCHEMA, partition_keys=["dt"], options={"metastore.partitioned-table": "true"})
    ctx = mp.get_context("spawn")
    outs = [str(tmp_path / f"w{w}.json") for w in range(2)]
    procs = [ctx.Process(target=_commit_worker, args=(hms_uri, catalog.warehouse, f"{db}.t", w, 5, outs[w]))
             for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(240)
        assert p.exitcode == 0
    for out in outs:
        with open(out) as fh:
            taken = json.load(fh)
        assert len(taken) >= 5 and {tuple(x) for x in taken} == {(db, "t")}
    t = catalog.get_table(f"{db}.t")
    assert sorted(t.to_arrow().column("id").to_pylist()) == sorted(w * 1000 + i for w in range(2) for i in range(5))
    assert t.latest_snapshot().id == 10
    assert catalog.client.call("get_partition_names", db, "t", -1) == ["dt=a"]


_SPARK = """
import json, sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").appName("hive-catalog-test")
         .config("spark.hadoop.hive.metastore.uris", sys.argv[1]).config("spark.ui.enabled", "false")
         .enableHiveSupport().getOrCreate())
dbs = [r[0] for r in spark.sql("SHOW DATABASES").collect()]
tables = [r.tableName for r in spark.sql(f"SHOW TABLES IN {sys.argv[2]}").collect()]
spark.stop()
print(json.dumps([dbs, tables]))
"""


@pytest.mark.spark
@pytest.mark.slow
def test_spark_with_hive_support_sees_our_tables(hms_uri, catalog, db):
    """A Spark session with Hive support (its own process: no other session's settings) on the
    same metastore lists our database and table."""
    pytest.importorskip("pyspark")
    catalog.create_database(db)
    catalog.create_table(f"{db}.t", SCHEMA)
    r = subprocess.run([sys.executable, "-c", _SPARK, hms_uri, db], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    dbs, tables = json.loads(r.stdout.strip().splitlines()[-1])
    assert db in dbs and tables == ["t"]


def test_dropped_and_expired_partitions_leave_the_metastore(catalog, db):
    catalog.create_database(db)
    t = catalog.create_table(f"{db}.p", SCHEMA, partition_keys=["dt"],
                             options={"metastore.partitioned-table": "true"})
    t.write(pa.table({"id": [1, 2, 3], "dt": ["2020-01-01", "2020-01-02", "2999-01-01"], "v": ["a", "b", "c"]}))
    names = lambda: sorted(catalog.client.call("get_partition_names", db, "p", -1))  # noqa: E731
    assert names() == ["dt=2020-01-01", "dt=2020-01-02", "dt=2999-01-01"]
    t.drop_partitions([{"dt": "2020-01-02"}])
    assert names() == ["dt=2020-01-01", "dt=2999-01-01"]
    assert t.expire_partitions(**{"partition.expiration-time": "1 d"}) == [{"dt": "2020-01-01"}]
    assert names() == ["dt=2999-01-01"]
    assert t.to_arrow().column("id").to_pylist() == [3]
