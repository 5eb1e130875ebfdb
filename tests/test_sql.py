"""The SQL layer: every SQL statement of the seed documents (warehouse paths replaced by a temp
directory), with the results they give, plus pushdown, time travel, DML, procedures and errors."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

from paimon_lab import Catalog, PaimonLabError
from paimon_lab.sql import Session, SqlError

from seed_ddl import SEQUENCE_GROUPS_WITH_AGGREGATION

pytest.importorskip("duckdb")


@pytest.fixture
def wh(tmp_path) -> str:
    return str(tmp_path / "wh")


@pytest.fixture
def s(wh) -> Session:
    """A session with catalog 'paimon' over a fresh warehouse, current database 'default'."""
    session = Session()
    session.run(f"CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = '{wh}'); USE CATALOG paimon;")
    yield session
    session.close()


def rows(table: pa.Table | None, order: str | list[str] | None = None) -> list[tuple]:
    assert table is not None
    out = list(zip(*[c.to_pylist() for c in table.columns])) if table.num_columns else []
    return sorted(out, key=lambda r: tuple((x is None, str(x)) for x in r)) if order is None else out


def q(session: Session, sql: str) -> list[tuple]:
    return rows(session.execute(sql))


# ============================================================================================ seed 000

def test_seed000_catalogs(tmp_path):
    s = Session()
    wh = str(tmp_path / "warehouse")
    s.run(f"-- Flink SQL\nCREATE CATALOG my_catalog WITH (     'type' = 'paimon',     'warehouse' = '{wh}' );")
    assert os.path.isdir(os.path.join(wh, "default.db"))
    # as written, the hive catalog's warehouse is commented out: there is no metastore to ask
    hive = """CREATE CATALOG my_hive WITH (
    'type' = 'paimon',
    'metastore' = 'hive',
    -- 'warehouse' = 'hdfs:///path/to/warehouse', default use 'hive.metastore.warehouse.dir' in HiveConf
);"""
    with pytest.raises(SqlError, match="warehouse"):
        s.run(hive)
    # nor, without 'uri' (or a hive-site.xml), the metastore's address: refused, never a silent
    # filesystem catalog (tests/test_hive_catalog.py runs a real metastore)
    with pytest.raises(SqlError, match="'uri'"):
        s.run(hive.replace("-- 'warehouse' = 'hdfs:///path/to/warehouse', default use "
                           "'hive.metastore.warehouse.dir' in HiveConf", f"'warehouse' = '{wh}'"))
    with pytest.warns(UserWarning, match="metastore 'jdbc'"):
        s.run(f"""CREATE CATALOG my_jdbc WITH (     'type' = 'paimon',     'metastore' = 'jdbc',
        'uri' = 'jdbc:mysql://<host>:<port>/<databaseName>',     'jdbc.user' = '...',      'jdbc.password' = '...',
        'catalog-key'='jdbc',     'warehouse' = '{wh}' );""")
    assert q(s, "SHOW CATALOGS") == [("default_catalog",), ("my_catalog",), ("my_jdbc",)]


def test_seed000_table_types(s, wh):
    s.run("CREATE TABLE my_table (     a INT PRIMARY KEY NOT ENFORCED,     b STRING ) WITH (     'bucket'='8' ); ")
    t = Catalog(wh).get_table("default.my_table")
    assert t.primary_keys == ["a"] and t.options["bucket"] == "8"
    assert str(t.schema.field("a").type) == "INT NOT NULL"
    s.run("CREATE DATABASE db2; USE db2; CREATE TABLE my_table (     a INT,     b STRING ); ")
    t2 = Catalog(wh).get_table("db2.my_table")
    assert t2.primary_keys == [] and t2.schema.field_names == ["a", "b"]


def test_seed000_views(s, wh):
    s.run("CREATE TABLE base (a INT, b STRING); INSERT INTO base VALUES (1, 'x'), (2, 'y'), (3, 'z');")
    s.run("CREATE VIEW IF NOT EXISTS paimon.`default`.my_view (c1, c2) COMMENT 'small ones' AS "
          "SELECT a, b FROM base WHERE a < 3;")
    s.run("CREATE VIEW IF NOT EXISTS paimon.`default`.my_view AS SELECT 1")  # exists: no-op
    assert os.path.exists(os.path.join(wh, "default.db", ".views", "my_view.json"))
    assert q(s, "SELECT * FROM my_view") == [(1, "x"), (2, "y")]
    assert s.execute("SELECT c2 FROM my_view WHERE c1 = 2").column_names == ["c2"]
    assert q(s, "SHOW VIEWS;") == [("my_view",)]
    assert ("my_view",) not in q(s, "SHOW TABLES")
    text = s.execute("SHOW CREATE VIEW my_view; ").column(0)[0].as_py()
    assert text.startswith("CREATE VIEW `paimon`.`default`.`my_view` (`c1`, `c2`) COMMENT 'small ones' AS")
    # a view resolves names where it was created, from any current database
    s.run("CREATE DATABASE other; USE other;")
    assert q(s, "SELECT count(*) FROM `default`.my_view") == [(2,)]
    s.run("USE `default`; DROP VIEW  IF EXISTS paimon.`default`.my_view; DROP VIEW IF EXISTS my_view;")
    assert q(s, "SHOW VIEWS") == []
    with pytest.raises(SqlError, match="does not exist"):
        s.execute("SELECT * FROM my_view")


def test_seed000_format_table(s, wh):
    s.run("CREATE TABLE my_csv_table (     a INT,     b STRING ) WITH (     'type'='format-table',     "
          "'file.format'='csv',     'field-delimiter'=',' ) ")
    s.run("INSERT INTO my_csv_table VALUES (1, 'one'), (2, 'two'); INSERT INTO my_csv_table VALUES (3, 'three')")
    assert q(s, "SELECT * FROM my_csv_table") == [(1, "one"), (2, "two"), (3, "three")]
    files = [f for f in os.listdir(os.path.join(wh, "default.db", "my_csv_table")) if f.endswith(".csv")]
    assert len(files) == 2
    text = "".join(open(os.path.join(wh, "default.db", "my_csv_table", f)).read() for f in sorted(files))
    assert "1,\"one\"" in text or "1,one" in text
    # files dropped in by someone else are read too
    with open(os.path.join(wh, "default.db", "my_csv_table", "extra.csv"), "w") as f:
        f.write("4,four\n")
    assert q(s, "SELECT count(*) FROM my_csv_table WHERE a > 1") == [(3,)]
    s.run("INSERT OVERWRITE my_csv_table VALUES (9, 'nine')")
    assert q(s, "SELECT * FROM my_csv_table") == [(9, "nine")]


def test_format_table_partitioned_parquet(s):
    s.run("CREATE TABLE ft (a INT, dt STRING) PARTITIONED BY (dt) WITH ('type'='format-table', 'file.format'='parquet')")
    s.run("INSERT INTO ft VALUES (1, 'x'), (2, 'y'), (3, 'x')")
    s.run("INSERT OVERWRITE ft PARTITION (dt = 'x') VALUES (7)")
    assert q(s, "SELECT * FROM ft") == [(2, "y"), (7, "x")]


def test_seed000_object_table(s, tmp_path):
    loc = tmp_path / "objects"
    (loc / "sub").mkdir(parents=True)
    (loc / "a.png").write_bytes(b"12345")
    (loc / "sub" / "b.txt").write_bytes(b"hi")
    s.run("CREATE DATABASE mydb; USE mydb;")
    s.run(f"CREATE TABLE `my_object_table` WITH (   'type' = 'object-table',   'object-location' = '{loc}'  );  "
          "-- Refresh Object Table\n  CALL sys.refresh_object_table('mydb.my_object_table');  ")
    assert q(s, "SELECT path, name, length FROM `my_object_table`") == [("a.png", "a.png", 5), ("sub/b.txt", "b.txt", 2)]
    (loc / "c.bin").write_bytes(b"x" * 10)
    s.run("CALL sys.refresh_object_table('mydb.my_object_table')")
    assert len(q(s, "SELECT * FROM `my_object_table`;")) == 3
    old = s.execute("SELECT * FROM `my_object_table` /*+ OPTIONS('scan.snapshot-id' = '1') */; ")
    assert sorted(old.column("path").to_pylist()) == ["a.png", "sub/b.txt"]
    with pytest.raises(SqlError, match="object table"):
        s.run("INSERT INTO my_object_table VALUES ('p', 'n', 1, 1, 1, 'o')")


def test_seed000_materialized_table(s):
    s.run("CREATE TABLE json_source (user_id BIGINT, order_created_at STRING, payment_amount_cents BIGINT)")
    s.run("INSERT INTO json_source VALUES (1, '2024-01-01', 100), (1, '2024-01-01', 50), (2, '2024-01-02', 7)")
    s.run("CREATE MATERIALIZED TABLE continuous_users_shops PARTITIONED BY (ds) FRESHNESS = INTERVAL '30' SECOND AS "
          "SELECT   user_id,   ds,   SUM (payment_amount_cents) AS payed_buy_fee_sum,   SUM (1) AS PV FROM (   "
          "SELECT user_id, order_created_at AS ds, payment_amount_cents     FROM json_source   ) AS tmp "
          "GROUP BY user_id, ds; ")
    assert q(s, "SELECT * FROM continuous_users_shops") == [(1, "2024-01-01", 150, 2), (2, "2024-01-02", 7, 1)]
    s.run("INSERT INTO json_source VALUES (2, '2024-01-02', 3)")
    s.run("ALTER MATERIALIZED TABLE continuous_users_shops REFRESH")
    assert q(s, "SELECT * FROM continuous_users_shops WHERE user_id = 2") == [(2, "2024-01-02", 10, 2)]
    text = s.execute("SHOW CREATE MATERIALIZED TABLE continuous_users_shops").column(0)[0].as_py()
    assert "FRESHNESS = INTERVAL '30' SECOND" in text and "PARTITIONED BY (`ds`)" in text
    with pytest.raises(SqlError, match="materialized"):
        s.run("INSERT INTO continuous_users_shops VALUES (1, 'x', 1, 1)")
    s.run("DROP MATERIALIZED TABLE continuous_users_shops")
    assert not s.timers


def test_materialized_table_background_refresh(s):
    s.run("CREATE TABLE src (k INT, v INT); INSERT INTO src VALUES (1, 1);")
    s.run("CREATE MATERIALIZED TABLE mt FRESHNESS = INTERVAL '1' SECOND AS SELECT k, sum(v) AS total FROM src GROUP BY k")
    s.run("INSERT INTO src VALUES (1, 5)")
    deadline = time.time() + 10
    while time.time() < deadline and q(s, "SELECT total FROM mt") != [(6,)]:
        time.sleep(0.2)
    assert q(s, "SELECT total FROM mt") == [(6,)]
    s.run("ALTER MATERIALIZED TABLE mt SUSPEND")
    assert not s.timers


@pytest.fixture
def my_table(s):
    s.run("CREATE DATABASE my_db; USE my_db;")
    s.run("CREATE TABLE my_table (k INT PRIMARY KEY NOT ENFORCED, v STRING, price INT, sales BIGINT) "
          "WITH ('bucket' = '1', 'merge-engine' = 'aggregation', 'fields.price.aggregate-function' = 'max', "
          "'fields.sales.aggregate-function' = 'sum', 'snapshot.time-retained' = '5 h')")
    s.run("INSERT INTO my_table VALUES (1, 'a', 10, 1), (2, 'b', 20, 2)")
    s.run("INSERT INTO my_table VALUES (1, 'c', 5, 3)")
    s.run("CALL sys.create_tag('my_db.my_table', 'tag1', 1)")
    s.run("CALL sys.create_branch('my_db.my_table', 'branch1', 'tag1')")
    s.run("CREATE TABLE T (a INT PRIMARY KEY NOT ENFORCED, b INT) WITH ('changelog-producer' = 'input')")
    s.run("INSERT INTO T VALUES (1, 1); INSERT INTO T VALUES (1, 2); ANALYZE TABLE T COMPUTE STATISTICS")
    return s


def test_seed000_system_tables(my_table):
    s = my_table
    snaps = s.execute("SELECT * FROM paimon.my_db.`my_table$snapshots`; ")
    assert snaps.column("snapshot_id").to_pylist() == [1, 2]
    assert snaps.column_names[:5] == ["snapshot_id", "schema_id", "commit_user", "commit_identifier", "commit_kind"]
    assert s.execute("SELECT * FROM my_table$snapshots;  ").num_rows == 2
    assert s.execute("SELECT * FROM my_table$schemas;  ").num_rows == 1
    joined = s.execute("SELECT s.snapshot_id, t.schema_id, t.fields      FROM my_table$snapshots s JOIN "
                       "my_table$schemas t      ON s.schema_id=t.schema_id where s.snapshot_id=100; ")
    assert joined.num_rows == 0 and joined.column_names == ["snapshot_id", "schema_id", "fields"]
    joined = s.execute("SELECT s.snapshot_id, t.schema_id FROM my_table$snapshots s JOIN my_table$schemas t "
                       "ON s.schema_id=t.schema_id where s.snapshot_id=2")
    assert rows(joined) == [(2, 0)]
    opts = dict(rows(s.execute("SELECT * FROM my_table$options;  ")))
    assert opts["snapshot.time-retained"] == "5 h"
    audit = s.execute("SELECT * FROM my_table$audit_log;  ")
    assert audit.column_names[0] == "rowkind"
    assert s.execute("SELECT * FROM T$binlog;  ").column_names[0] == "rowkind"
    assert s.execute("SELECT * FROM my_table$ro; ").column_names == ["k", "v", "price", "sales"]
    assert s.execute("SELECT * FROM my_table$files;  ").num_rows == 2
    assert s.execute("SELECT * FROM my_table$files /*+ OPTIONS('scan.snapshot-id'='1') */;  ").num_rows == 1
    tags = s.execute("SELECT * FROM my_table$tags;  ")
    assert rows(tags.select(["tag_name", "snapshot_id"])) == [("tag1", 1)]
    assert rows(s.execute("SELECT branch_name FROM my_table$branches;  ")) == [("branch1",)]
    assert s.execute("SELECT * FROM my_table$consumers;  ").column_names == ["consumer_id", "next_snapshot_id"]
    assert s.execute("SELECT * FROM my_table$manifests;  ").num_rows == 2
    assert s.execute("SELECT * FROM my_table$manifests /*+ OPTIONS('scan.snapshot-id'='1') */; ").num_rows == 1
    assert s.execute("SELECT * FROM my_table$manifests /*+ OPTIONS('scan.tag-name'='tag1') */; ").num_rows == 1
    ts1 = [sn.time_millis for sn in Catalog(s.catalogs["paimon"].catalog.warehouse).get_table(
        "my_db.my_table").snapshots()][0]
    assert s.execute(f"SELECT * FROM my_table$manifests /*+ OPTIONS('scan.timestamp-millis'='{ts1}') */;").num_rows == 1
    agg = dict((r[0], r[2]) for r in rows(s.execute("SELECT * FROM my_table$aggregation_fields;  ")))
    assert agg["sales"] == "[sum]"
    assert s.execute("SELECT * FROM my_table$partitions;  ").num_rows == 1
    assert s.execute("SELECT * FROM my_table$buckets;  ").column("bucket").to_pylist() == [0]
    stats = s.execute("SELECT * FROM T$statistics;  ")
    assert stats.column("mergedRecordCount").to_pylist() == [1]
    assert "index_type" in s.execute("SELECT * FROM my_table$table_indexes;  ").column_names
    assert q(s, "SELECT k, price, sales FROM my_table") == [(1, 10, 4), (2, 20, 2)]
    assert q(s, "SELECT k, price, sales FROM my_table$branch_branch1") == [(1, 10, 1), (2, 20, 2)]
    s.run("USE sys; SHOW TABLES; ")
    assert q(s, "SHOW TABLES") == [("all_table_options",), ("catalog_options",)]
    all_opts = s.execute("SELECT * FROM sys.all_table_options;  ")
    assert ("my_db", "my_table", "bucket", "1") in rows(all_opts)
    cat_opts = dict(rows(s.execute("SELECT * FROM sys.catalog_options;  ")))
    assert cat_opts["warehouse"].endswith("wh")


def test_seed000_spec_layout(tmp_path):
    wh = str(tmp_path / "your" / "path")
    s = Session()
    s.run(f"CREATE CATALOG my_catalog WITH (     'type' = 'paimon',     'warehouse' = '{wh}' );        "
          "USE CATALOG my_catalog;  CREATE TABLE my_table (     k INT PRIMARY KEY NOT ENFORCED,     f0 INT,     "
          "f1 STRING );  INSERT INTO my_table VALUES (1, 11, '111'); ")
    root = os.path.join(wh, "default.db", "my_table")
    assert sorted(os.listdir(os.path.join(root, "snapshot"))) == ["EARLIEST", "LATEST", "snapshot-1"]
    assert os.listdir(os.path.join(root, "schema")) == ["schema-0"]
    assert q(s, "SELECT * FROM my_table") == [(1, 11, "111")]
    s.run("CREATE TABLE part_t (     f0 INT,     f1 STRING,     dt STRING ) PARTITIONED BY (dt);  "
          "INSERT INTO part_t VALUES (1, '11', '20240514'); ")
    assert os.listdir(os.path.join(wh, "default.db", "part_t", "dt=20240514")) == ["bucket-0"]
    s.run("CREATE TABLE T (     a INT PRIMARY KEY NOT ENFORCED,     b INT,     c INT ); ")
    s.run("INSERT INTO T VALUES (1, 2, 3)")
    import pyarrow.parquet as pq

    data_dir = os.path.join(wh, "default.db", "T", "bucket-0")
    cols = pq.read_schema(os.path.join(data_dir, os.listdir(data_dir)[0])).names
    assert cols[-3:] == ["a", "b", "c"] and "_SEQUENCE_NUMBER" in cols and "_VALUE_KIND" in cols
    s.run("CREATE DATABASE d2; USE d2; CREATE TABLE T (     a INT,     b INT,     c INT ); INSERT INTO T VALUES (1, 2, 3)")
    data_dir = os.path.join(wh, "d2.db", "T", "bucket-0")
    assert pq.read_schema(os.path.join(data_dir, os.listdir(data_dir)[0])).names == ["a", "b", "c"]


# ============================================================================================ seed 002

SEED_002 = """SET 'execution.runtime-mode' = 'streaming';
SET 'table.exec.sink.upsert-materialize'='NONE';
SET 'execution.checkpointing.interval'='60 s';
set parallelism.default=1;
SET 'sql-client.execution.result-mode' = 'tableau';

CREATE TABLE if not exists input_source (
  `id` Int PRIMARY KEY NOT ENFORCED,
  `name` String,
  `age` Int
) with (
'connector' = 'datagen',
'fields.id.kind' = 'random',
'fields.id.min' = '1',
'fields.id.max' = '100',
'fields.name.length' = '10',
'fields.age.min' = '18',
'fields.age.max' = '60',
'rows-per-second' = '1'
);

CREATE CATALOG paimon WITH (
    'type' = 'paimon',
    'warehouse' = '{warehouse}'
    );
USE CATALOG paimon;
create database if not exists layout;
CREATE TABLE if not exists paimon.layout.layout1(
 `id` Int,
  `name` String,
  `age` Int,
   `dt` String,
   PRIMARY KEY (id,dt) NOT ENFORCED
) PARTITIONED BY (dt) with  (
'bucket' = '1',
'changelog-producer'='input'
);

insert into paimon.layout.layout1  
select id,name,age,'20241011' from default_catalog.default_database.input_source ;
"""


def test_seed002_walkthrough(tmp_path):
    wh = str(tmp_path / "lakehouse")
    s = Session()
    s.run(SEED_002.format(warehouse=wh))
    root = os.path.join(wh, "layout.db", "layout1")
    schema0 = json.load(open(os.path.join(root, "schema", "schema-0")))
    assert [(f["id"], f["name"], f["type"]) for f in schema0["fields"]] == [
        (0, "id", "INT NOT NULL"), (1, "name", "STRING"), (2, "age", "INT"), (3, "dt", "STRING NOT NULL")]
    assert schema0["highestFieldId"] == 3 and schema0["partitionKeys"] == ["dt"]
    assert schema0["primaryKeys"] == ["id", "dt"]
    assert schema0["options"] == {"bucket": "1", "changelog-producer": "input"}
    # two checkpoints of 60 s at 1 row/s: two APPEND snapshots, each with 60 changelog rows and the
    # distinct keys of its rows as data
    assert open(os.path.join(root, "snapshot", "EARLIEST")).read().strip() == "1"
    assert open(os.path.join(root, "snapshot", "LATEST")).read().strip() == "2"
    snaps = [json.load(open(os.path.join(root, "snapshot", f"snapshot-{i}"))) for i in (1, 2)]
    assert [x["commitKind"] for x in snaps] == ["APPEND", "APPEND"]
    assert [x["changelogRecordCount"] for x in snaps] == [60, 60]
    assert all(x["changelogManifestList"] for x in snaps)
    assert snaps[1]["totalRecordCount"] == snaps[0]["deltaRecordCount"] + snaps[1]["deltaRecordCount"]
    gen = s.catalogs["default_catalog"].databases["default_database"]["input_source"].spec.generate(120)
    ids = gen.column("id").to_pylist()
    assert [x["deltaRecordCount"] for x in snaps] == [len(set(ids[:60])), len(set(ids[60:]))]
    assert all(1 <= i <= 100 for i in ids)
    assert set(len(n) for n in gen.column("name").to_pylist()) == {10}
    assert q(s, "SELECT count(*) FROM paimon.layout.layout1") == [(len(set(ids)),)]
    changelog = s.execute("SELECT * FROM paimon.layout.`layout1$audit_log` "
                          "/*+ OPTIONS('incremental-between' = '0,2') */")
    # a batch read of the range merges the 120 changelog rows by key, as Java's
    # (tests/java/test_java_incremental.py)
    assert changelog.num_rows == len(set(ids))
    # the three VALUES inserts give 3 values for 4 columns: rejected, as Flink does, nothing written
    for stmt in ("insert into paimon.layout.layout1 values(1,'flink',10);",
                 "insert into paimon.layout.layout1 values(1,'spark',15);",
                 "insert into paimon.layout.layout1 values(1,'hadoop',20);"):
        with pytest.raises(SqlError, match=r"produces 3 column\(s\) but 4 are expected") as e:
            s.run(stmt)
        assert (e.value.line, e.value.column) == (1, 35)
    s.run("ALTER TABLE paimon.layout.layout1 ADD (add_c string);")
    schema1 = json.load(open(os.path.join(root, "schema", "schema-1")))
    assert schema1["fields"][-1] == {"id": 4, "name": "add_c", "type": "STRING"}
    assert schema1["highestFieldId"] == 4
    assert open(os.path.join(root, "snapshot", "LATEST")).read().strip() == "2"


def test_datagen_bounded_and_deterministic(s):
    s.run("CREATE TEMPORARY TABLE gen (k BIGINT, v DOUBLE, s STRING, b BOOLEAN) WITH ('connector' = 'datagen', "
          "'number-of-rows' = '25', 'fields.k.kind' = 'sequence', 'fields.k.start' = '1', 'fields.k.end' = '100', "
          "'fields.s.length' = '4')")
    a, b = s.execute("SELECT * FROM gen"), s.execute("SELECT * FROM gen")
    assert a.equals(b) and a.num_rows == 25 and a.column("k").to_pylist() == list(range(1, 26))
    s.run("CREATE TABLE sink (k BIGINT, s STRING)")
    s.run("SET 'execution.runtime-mode' = 'batch'; INSERT INTO sink SELECT k, s FROM gen")
    assert q(s, "SELECT count(*) FROM sink") == [(25,)]
    assert len(Catalog(s.catalogs["paimon"].catalog.warehouse).get_table("default.sink").snapshots()) == 1
    s.run("CREATE TEMPORARY TABLE unbounded (k INT) WITH ('connector' = 'datagen')")
    s.run("RESET")
    with pytest.raises(SqlError, match="unbounded"):
        s.execute("SELECT * FROM unbounded")


# ============================================================================================ seed 003

def test_seed003_pk_table_and_bucket_rescale(s):
    s.run("""CREATE TABLE T (
  dt STRING,
  shop_id BIGINT,
  user_id BIGINT,
  num_orders INT,
  total_amount INT,
  PRIMARY KEY (dt, shop_id, user_id) NOT ENFORCED
) PARTITIONED BY (dt) WITH (
  'bucket' = '4'
);""")
    s.run("INSERT INTO T VALUES ('20240312', 1, 1, 1, 10), ('20240312', 1, 2, 2, 20), ('20240313', 2, 1, 3, 30)")
    s.run("ALTER TABLE `paimon`.`default`.`T` SET ('bucket' = '8');")
    s.run("INSERT OVERWRITE `paimon`.`default`.`T`\nSELECT * FROM `paimon`.`default`.`T`;")
    t = Catalog(s.catalogs["paimon"].catalog.warehouse).get_table("default.T")
    assert t.options["bucket"] == "8" and t.snapshots()[-1].commit_kind == "OVERWRITE"
    assert q(s, "SELECT count(*), sum(total_amount) FROM T") == [(3, 60)]


def test_seed003_insert_overwrite_partition(s):
    s.run("CREATE TABLE P (k INT, v STRING, dt STRING, hh STRING) PARTITIONED BY (dt, hh)")
    s.run("INSERT INTO P VALUES (1, 'a', '20240312', '08'), (2, 'b', '20240312', '09'), (3, 'c', '20240313', '08')")
    s.run("""INSERT OVERWRITE `paimon`.`default`.`P`
PARTITION (dt = '20240312', hh = '08')
SELECT * FROM `paimon`.`default`.`P`
WHERE dt = '20240312' AND hh = '08';""")
    assert q(s, "SELECT * FROM P") == [(1, "a", "20240312", "08"), (2, "b", "20240312", "09"),
                                      (3, "c", "20240313", "08")]
    s.run("INSERT OVERWRITE P PARTITION (dt = '20240312', hh = '08') SELECT k + 10, v FROM P WHERE k = 1")
    assert q(s, "SELECT k FROM P WHERE dt = '20240312'") == [(11,), (2,)]
    # hh left open: with 'dynamic-partition-overwrite' (the default) only the partitions written are replaced
    s.run("INSERT OVERWRITE P PARTITION (dt = '20240313') SELECT 5, 'e', '07'")
    assert q(s, "SELECT k, hh FROM P WHERE dt = '20240313'") == [(3, "08"), (5, "07")]


@pytest.mark.parametrize("engine,ddl_extra,values,expected", [
    ("deduplicate", "'merge-engine' = 'deduplicate' -- deduplicate 是默认值,可以不设置\n",
     "(1, 2.0, 'apple'), (1, 4.0, 'banana'), (1, 8.0, 'cherry')", [(1, 8.0, "cherry")]),
    ("first-row", "'merge-engine' = 'first-row'\n",
     "(1, 2.0, 'apple'), (1, 4.0, 'banana'), (1, 8.0, 'cherry')", [(1, 2.0, "apple")]),
])
def test_seed003_merge_engines(s, engine, ddl_extra, values, expected):
    s.run(f"""CREATE TABLE T (
  k INT,
  v1 DOUBLE,
  v2 STRING,
  PRIMARY KEY (k) NOT ENFORCED
) WITH (
  {ddl_extra});""")
    for v in values.split("), ("):
        s.run(f"INSERT INTO T VALUES ({v.strip('()')})")
    assert q(s, "SELECT * FROM T WHERE k = 1") == expected


def test_seed003_deduplicate_delete(s):
    s.run("CREATE TABLE T (k INT, v1 DOUBLE, v2 STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ("
          "'merge-engine' = 'deduplicate')")
    s.run("INSERT INTO T VALUES (1, 2.0, 'apple'); INSERT INTO T VALUES (1, 4.0, 'banana');")
    s.run("DELETE FROM T WHERE k = 1 AND v2 = 'banana'")
    assert q(s, "SELECT * FROM T WHERE k = 1") == []


def test_seed003_aggregation(s):
    s.run("""CREATE TABLE T (
  product_id BIGINT,
  price DOUBLE,
  sales BIGINT,
  PRIMARY KEY (product_id) NOT ENFORCED
) WITH (
  'merge-engine' = 'aggregation',
  'fields.price.aggregate-function' = 'max',
  'fields.sales.aggregate-function' = 'sum'
);""")
    s.run("INSERT INTO T VALUES (1, 23.0, 15); INSERT INTO T VALUES (1, 30.2, 20);")
    assert q(s, "SELECT * FROM T WHERE product_id = 1") == [(1, 30.2, 35)]


def test_seed003_partial_update(s):
    s.run("""CREATE TABLE T (
  k INT,
  v1 DOUBLE,
  v2 BIGINT,
  v3 STRING,
  PRIMARY KEY (k) NOT ENFORCED
) WITH (
  'merge-engine' = 'partial-update'
);""")
    s.run("INSERT INTO T VALUES (1, 23.0, 10, NULL); INSERT INTO T VALUES (1, NULL, NULL, 'This is a book');"
          "INSERT INTO T VALUES (1, 25.2, NULL, NULL);")
    assert q(s, "SELECT * FROM T WHERE k = 1") == [(1, 25.2, 10, "This is a book")]


def test_seed003_sequence_groups(s):
    s.run("""CREATE TABLE T (
  k INT,
  a STRING,
  b STRING,
  g_1 INT,
  c STRING,
  d STRING,
  g_2 INT,
  PRIMARY KEY (k) NOT ENFORCED
) WITH (
  'merge-engine' = 'partial-update',
  'fields.g_1.sequence-group' = 'a,b',
  'fields.g_2.sequence-group' = 'c,d'
);""")
    s.run("INSERT INTO T VALUES (1, 'a2', 'b2', 2, 'c1', 'd1', 1); INSERT INTO T VALUES (1, 'a1', 'b1', 1, NULL, NULL, NULL);")
    assert q(s, "SELECT a, b, c, d FROM T") == [("a2", "b2", "c1", "d1")]
    s.run(SEQUENCE_GROUPS_WITH_AGGREGATION.replace("CREATE TABLE T (", "CREATE TABLE T2 (", 1))
    s.run("INSERT INTO T2 VALUES (1, 'a', 5, 1, 'c', 3, 1); INSERT INTO T2 VALUES (1, 'x', 2, 2, 'y', 4, 2);")
    assert q(s, "SELECT a, b, c, d FROM T2") == [("x", 5, "y", 7)]


def test_seed003_append_table(s):
    seed = """CREATE TABLE T (
  dt STRING
  order_id BIGINT,
  item_id BIGINT,
  amount INT,
  address STRING
) PARTITIONED BY (dt) WITH (
  'bucket' = '-1'
);"""
    # as printed in the document a comma is missing after `dt STRING`: a syntax error, located
    with pytest.raises(SqlError, match="Invalid data type") as e:
        s.run(seed)
    assert e.value.line == 2
    s.run(seed.replace("dt STRING\n", "dt STRING,\n"))
    t = Catalog(s.catalogs["paimon"].catalog.warehouse).get_table("default.T")
    assert t.primary_keys == [] and t.partition_keys == ["dt"] and t.options["bucket"] == "-1"


# ============================================================================================ seed 004

def test_seed004_file_operations(tmp_path):
    wh = "file://" + str(tmp_path / "paimon")
    s = Session()
    s.run(f"CREATE CATALOG paimon WITH (\n'type' = 'paimon',\n'warehouse' = '{wh}'\n);\n\nUSE CATALOG paimon;")
    assert os.listdir(tmp_path / "paimon") == ["default.db"]
    with pytest.warns(UserWarning, match="write-mode"):
        s.run("""CREATE TABLE T (
id BIGINT,
a INT,
b STRING,
dt STRING COMMENT 'timestamp string in format yyyyMMdd',
PRIMARY KEY(id, dt) NOT ENFORCED
) PARTITIONED BY (dt) WITH (
'write-mode' = 'change-log',
'merge-engine' = 'deduplicate'
);""")
    root = tmp_path / "paimon" / "default.db" / "T"
    assert os.listdir(root) == ["schema"]
    schema0 = json.load(open(root / "schema" / "schema-0"))
    assert schema0["fields"][3]["description"] == "timestamp string in format yyyyMMdd"
    s.run("INSERT INTO T VALUES (1, 10001, 'varchar00001', '20230501');")
    assert q(s, "SELECT * FROM T") == [(1, 10001, "varchar00001", "20230501")]
    s.run("""INSERT INTO T VALUES 
(2, 10002, 'varchar00002', '20230502'),
(3, 10003, 'varchar00003', '20230503'),
(4, 10004, 'varchar00004', '20230504'),
(5, 10005, 'varchar00005', '20230505'),
(6, 10006, 'varchar00006', '20230506'),
(7, 10007, 'varchar00007', '20230507'),
(8, 10008, 'varchar00008', '20230508'),
(9, 10009, 'varchar00009', '20230509'),
(10, 10010, 'varchar00010', '20230510');""")
    assert len(q(s, "SELECT * FROM T")) == 10
    assert len([d for d in os.listdir(root) if d.startswith("dt=")]) == 10
    s.run("SET 'execution.runtime-mode' = 'batch';")
    s.run("DELETE FROM T WHERE dt >= '20230503';")
    assert q(s, "SELECT * FROM T") == [(1, 10001, "varchar00001", "20230501"), (2, 10002, "varchar00002", "20230502")]
    snap3 = json.load(open(root / "snapshot" / "snapshot-3"))
    assert snap3["commitKind"] == "APPEND" and snap3["deltaRecordCount"] == 8
    assert len(os.listdir(root / "dt=20230510" / "bucket-0")) == 2  # the row, then its deletion
    s.run("CALL sys.compact('default.T')")
    snap4 = json.load(open(root / "snapshot" / "snapshot-4"))
    assert snap4["commitKind"] == "COMPACT"
    assert q(s, "SELECT count(*) FROM T") == [(2,)]
    s.run("ALTER TABLE T SET ('full-compaction.delta-commits' = '1');")
    assert sorted(os.listdir(root / "schema")) == ["schema-0", "schema-1"]
    assert json.load(open(root / "schema" / "schema-1"))["options"]["full-compaction.delta-commits"] == "1"
    s.run("INSERT INTO T VALUES (11, 1, 'x', '20230501')")
    # retain_max below 'snapshot.num-retained.min' (10) is refused, as by Java's ExpireSnapshotsImpl
    with pytest.raises(PaimonLabError, match=r"retain_max \(1\) must not be less than retain_min \(10\)"):
        s.run("CALL sys.expire_snapshots(`table` => 'default.T', retain_max => 1)")
    assert q(s, "CALL sys.expire_snapshots(`table` => 'default.T', retain_max => 1, retain_min => 1)") == [("5",)]
    assert sorted(os.listdir(root / "snapshot")) == ["EARLIEST", "LATEST", "snapshot-6"]
    assert not (root / "dt=20230510").exists()  # its files were only used by expired snapshots
    assert q(s, "SELECT count(*) FROM T") == [(3,)]


# ============================================================================================ queries

@pytest.fixture
def big(s):
    s.run("CREATE TABLE ev (id BIGINT, name STRING, amount DOUBLE, dt STRING) PARTITIONED BY (dt)")
    t = Catalog(s.catalogs["paimon"].catalog.warehouse).get_table("default.ev")
    for day in range(5):
        n = 2000
        t.write(pa.table({"id": pa.array(range(day * n, (day + 1) * n), pa.int64()),
                          "name": [f"n{i % 50}" for i in range(n)],
                          "amount": [float(i % 100) for i in range(n)],
                          "dt": [f"2024-05-0{day + 1}"] * n}))
    return s


def test_pushdown_projection_filter_limit(big):
    s = big
    out = s.execute("SELECT name, sum(amount) AS total FROM ev WHERE dt = '2024-05-02' AND id < 2100 "
                    "GROUP BY name ORDER BY name LIMIT 3")
    assert out.num_rows == 3 and out.column_names == ["name", "total"]
    (scan,) = s.last_scans
    assert scan.columns == ["id", "name", "amount", "dt"] or set(scan.columns) == {"id", "name", "amount", "dt"}
    assert "dt" in scan.filter and "id" in scan.filter
    assert scan.rows == 100  # only the matching rows left the table read
    s.execute("SELECT id FROM ev LIMIT 5")
    assert s.last_scans[0].columns == ["id"] and s.last_scans[0].limit == 5 and s.last_scans[0].rows <= 2000
    s.execute("SELECT count(*) FROM ev")  # from the manifests' row counts: no column read
    assert s.last_scans[0].metadata and s.last_scans[0].columns == [] and s.last_scans[0].rows == 10_000
    s.execute("SELECT count(*) FROM ev WHERE id > 5")
    assert len(s.last_scans[0].columns) == 1 and not s.last_scans[0].metadata
    # a LEFT JOIN's right side is not filtered by the WHERE (it is null-supplying)
    s.run("CREATE TABLE names (name STRING, label STRING); INSERT INTO names VALUES ('n1', 'one')")
    res = s.execute("SELECT e.id, x.label FROM ev e LEFT JOIN names x ON e.name = x.name "
                    "WHERE e.id = 1 AND x.label IS NULL")
    assert rows(res) == []
    scans = {sc.table: sc for sc in s.last_scans}
    assert scans["paimon.default.names"].filter is None and scans["paimon.default.ev"].filter is not None
    plan = s.execute("EXPLAIN SELECT name FROM ev WHERE amount > 98.5")
    assert "amount" in plan.column("filter")[0].as_py() and plan.column("columns")[0].as_py() == "name, amount"


def test_query_features(big):
    s = big
    res = s.execute("""
        WITH daily AS (SELECT dt, count(*) AS n, max(amount) AS m FROM ev GROUP BY dt)
        SELECT dt, n, rank() OVER (ORDER BY dt DESC) AS r FROM daily
        WHERE n > (SELECT min(n) - 1 FROM daily) ORDER BY dt""")
    assert res.column("n").to_pylist() == [2000] * 5 and res.column("r").to_pylist() == [5, 4, 3, 2, 1]
    res = s.execute("SELECT a.dt, count(*) FROM ev a JOIN ev b ON a.id = b.id + 1 AND a.dt = b.dt "
                    "WHERE a.dt IN ('2024-05-01', '2024-05-03') GROUP BY a.dt ORDER BY 1")
    assert rows(res, order="keep") == [("2024-05-01", 1999), ("2024-05-03", 1999)]
    assert q(s, "SELECT 'it''s', CAST('5' AS INT) + 1") == [("it's", 6)]
    assert q(s, "SELECT ev.id FROM paimon.`default`.ev WHERE id = 7") == [(7,)]


def test_time_travel(s):
    s.run("CREATE TABLE tt (k INT PRIMARY KEY NOT ENFORCED, v STRING)")
    s.run("INSERT INTO tt VALUES (1, 'a')")
    t = Catalog(s.catalogs["paimon"].catalog.warehouse).get_table("default.tt")
    time.sleep(0.01)
    s.run("INSERT INTO tt VALUES (2, 'b')")
    s.run("INSERT INTO tt VALUES (1, 'c')")
    s.run("CALL sys.create_tag(`table` => 'default.tt', tag => 'v2', snapshot_id => 2)")
    first = t.snapshots()[0].time_millis
    import datetime as dt

    local = dt.datetime.fromtimestamp(first / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    assert q(s, "SELECT * FROM tt /*+ OPTIONS('scan.snapshot-id'='1') */") == [(1, "a")]
    assert q(s, "SELECT * FROM tt /*+ OPTIONS('scan.tag-name'='v2') */") == [(1, "a"), (2, "b")]
    assert q(s, f"SELECT * FROM tt /*+ OPTIONS('scan.timestamp-millis'='{first}') */") == [(1, "a")]
    assert q(s, f"SELECT * FROM tt FOR SYSTEM_TIME AS OF TIMESTAMP '{local}'") == [(1, "a")]
    assert q(s, "SELECT * FROM tt VERSION AS OF 2") == [(1, "a"), (2, "b")]
    assert q(s, "SELECT * FROM tt VERSION AS OF 'v2'") == [(1, "a"), (2, "b")]
    assert q(s, f"SELECT * FROM tt TIMESTAMP AS OF '{local}'") == [(1, "a")]
    assert q(s, "SELECT * FROM tt /*+ OPTIONS('incremental-between' = '1,3') */") == [(1, "c"), (2, "b")]
    assert q(s, "SELECT * FROM tt") == [(1, "c"), (2, "b")]
    # self-join across versions
    assert q(s, "SELECT a.v, b.v FROM tt a JOIN tt /*+ OPTIONS('scan.snapshot-id'='1') */ b ON a.k = b.k") == [("c", "a")]
    with pytest.raises(SqlError, match="Snapshot 99 does not exist") as e:
        s.execute("SELECT * FROM tt /*+ OPTIONS('scan.snapshot-id'='99') */")
    assert (e.value.line, e.value.column) == (1, 15)
    s.run("CALL sys.compact('default.tt')")
    assert q(s, "SELECT * FROM tt /*+ OPTIONS('scan.mode'='compacted-full') */") == [(1, "c"), (2, "b")]


# ============================================================================================ DML

def test_dml_pk_table(s):
    s.run("CREATE TABLE pk (k INT, v INT, name STRING, PRIMARY KEY (k) NOT ENFORCED)")
    s.run("INSERT INTO pk VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c'), (4, 40, 'd')")
    s.run("UPDATE pk SET v = v * 2, name = upper(name) WHERE k IN (SELECT k FROM pk WHERE v >= 30)")
    assert q(s, "SELECT * FROM pk") == [(1, 10, "a"), (2, 20, "b"), (3, 60, "C"), (4, 80, "D")]
    s.run("DELETE FROM pk WHERE length(name) = 1 AND name = lower(name) AND k > 1")
    assert q(s, "SELECT k FROM pk") == [(1,), (3,), (4,)]
    with pytest.raises(SqlError, match="primary or partition key"):
        s.run("UPDATE pk SET k = 9")
    s.run("CREATE TABLE src (k INT, v INT, op STRING)")
    s.run("INSERT INTO src VALUES (1, 11, 'u'), (3, 0, 'd'), (7, 70, 'i')")
    s.run("""MERGE INTO pk AS t USING src AS s ON t.k = s.k
             WHEN MATCHED AND s.op = 'd' THEN DELETE
             WHEN MATCHED THEN UPDATE SET v = s.v
             WHEN NOT MATCHED THEN INSERT (k, v, name) VALUES (s.k, s.v, 'new')""")
    assert q(s, "SELECT * FROM pk") == [(1, 11, "a"), (4, 80, "D"), (7, 70, "new")]


def test_dml_append_table(s):
    s.run("CREATE TABLE ap (id INT, v DOUBLE, tag STRING, dt STRING) PARTITIONED BY (dt)")
    s.run("INSERT INTO ap VALUES (1, 1.0, 'x', 'a'), (2, 2.0, 'y', 'a'), (3, 3.0, 'x', 'b'), (3, 3.0, 'x', 'b')")
    s.run("UPDATE ap SET v = v + 10 WHERE tag = 'x'")
    assert q(s, "SELECT id, v FROM ap") == [(1, 11.0), (2, 2.0), (3, 13.0), (3, 13.0)]
    s.run("UPDATE ap SET tag = concat(tag, '!') WHERE v > (SELECT avg(v) FROM ap)")  # a subquery condition
    assert q(s, "SELECT id, tag FROM ap") == [(1, "x!"), (2, "y"), (3, "x!"), (3, "x!")]
    s.run("DELETE FROM ap WHERE id * 2 = 6")
    assert q(s, "SELECT id FROM ap") == [(1,), (2,)]
    s.run("CREATE TABLE changes (id INT, v DOUBLE)")
    s.run("INSERT INTO changes VALUES (1, 100.0), (5, 5.0)")
    s.run("""MERGE INTO ap USING changes c ON ap.id = c.id
             WHEN MATCHED THEN UPDATE SET v = c.v
             WHEN NOT MATCHED THEN INSERT (id, v, tag, dt) VALUES (c.id, c.v, 'm', 'c')""")
    assert q(s, "SELECT id, v, tag, dt FROM ap") == [(1, 100.0, "x!", "a"), (2, 2.0, "y", "a"), (5, 5.0, "m", "c")]
    t = Catalog(s.catalogs["paimon"].catalog.warehouse).get_table("default.ap")
    before = len(t.snapshots())
    s.run("DELETE FROM ap WHERE id = 42")  # matches nothing: no commit
    assert len(t.snapshots()) == before
    s.run("TRUNCATE TABLE ap")
    assert q(s, "SELECT count(*) FROM ap") == [(0,)]


def test_insert_forms(s):
    s.run("CREATE TABLE f (a INT NOT NULL, b STRING, c DECIMAL(10, 2), d DATE, e TIMESTAMP(3), "
          "arr ARRAY<INT>, m MAP<STRING, INT>, r ROW<x INT, y STRING>)")
    s.run("INSERT INTO f (b, a) VALUES ('x', 1)")
    s.run("INSERT INTO f VALUES (2, 'y', 1.5, DATE '2024-01-02', TIMESTAMP '2024-01-02 03:04:05.123', "
          "ARRAY[1, 2], MAP['k', 1], ROW(1, 'z'))")
    s.run("INSERT INTO f SELECT a + 10, b, c, d, e, arr, m, r FROM f WHERE a = 2")
    out = s.execute("SELECT * FROM f ORDER BY a")
    assert out.column("a").to_pylist() == [1, 2, 12]
    assert out.column("c").to_pylist()[1] == __import__("decimal").Decimal("1.50")
    assert str(out.column("d")[1]) == "2024-01-02" and out.column("arr").to_pylist()[2] == [1, 2]
    assert out.column("r").to_pylist()[1] == {"x": 1, "y": "z"}
    t = Catalog(s.catalogs["paimon"].catalog.warehouse).get_table("default.f")
    n = len(t.snapshots())
    with pytest.raises(SqlError, match="NOT NULL"):
        s.run("INSERT INTO f (b) VALUES ('no a')")
    with pytest.raises(SqlError):
        s.run("INSERT INTO f (a, c) VALUES (5, 'not a number')")
    assert len(t.snapshots()) == n  # failed statements change nothing


def test_spark_ddl_ctas_like(s):
    s.run("CREATE TABLE sp (id BIGINT, v STRING, dt STRING) USING paimon PARTITIONED BY (dt) "
          "TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '2')")
    t = Catalog(s.catalogs["paimon"].catalog.warehouse).get_table("default.sp")
    assert t.primary_keys == ["id", "dt"] and t.options == {"bucket": "2"}
    s.run("INSERT INTO sp VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    s.run("CREATE TABLE sp2 WITH ('bucket' = '1', 'bucket-key' = 'id') AS SELECT id, upper(v) AS v FROM sp")
    assert q(s, "SELECT * FROM sp2") == [(1, "A"), (2, "B")]
    s.run("CREATE TABLE sp3 LIKE sp")
    t3 = Catalog(s.catalogs["paimon"].catalog.warehouse).get_table("default.sp3")
    assert t3.primary_keys == ["id", "dt"] and t3.partition_keys == ["dt"] and q(s, "SELECT * FROM sp3") == []
    s.run("CREATE TABLE sp4 WITH ('file.format' = 'orc') LIKE sp")
    assert Catalog(s.catalogs["paimon"].catalog.warehouse).get_table("default.sp4").options["file.format"] == "orc"
    with pytest.raises(SqlError, match="'bucket-key'"):
        s.run("CREATE TABLE bad WITH ('bucket' = '2') AS SELECT 1 AS x")
    assert not Catalog(s.catalogs["paimon"].catalog.warehouse).table_exists("default.bad")


def test_alter_table(s):
    s.run("CREATE TABLE al (a INT, b STRING, c INT COMMENT 'see') WITH ('snapshot.num-retained.max' = '90')")
    s.run("INSERT INTO al VALUES (1, 'x', 3)")
    s.run("ALTER TABLE al ADD (d DOUBLE COMMENT 'new' FIRST, e STRING AFTER a)")
    assert s.execute("SELECT * FROM al").column_names == ["d", "a", "e", "b", "c"]
    s.run("ALTER TABLE al RENAME b TO bb; ALTER TABLE al DROP (e); ALTER TABLE al MODIFY c BIGINT COMMENT 'wide'")
    s.run("ALTER TABLE al RESET ('snapshot.num-retained.max'); ALTER TABLE al SET ('snapshot.num-retained.min' = '3')")
    s.run("ALTER TABLE al ALTER COLUMN d TYPE DOUBLE; ALTER TABLE al RENAME COLUMN bb TO b2; "
          "ALTER TABLE al ADD COLUMNS (z INT)")
    desc = s.execute("DESCRIBE al")
    assert desc.column("name").to_pylist() == ["d", "a", "b2", "c", "z"]
    assert desc.column("type").to_pylist()[3] == "BIGINT" and desc.column("comment").to_pylist()[3] == "wide"
    t = Catalog(s.catalogs["paimon"].catalog.warehouse).get_table("default.al")
    assert t.options == {"snapshot.num-retained.min": "3"}
    assert q(s, "SELECT a, b2, c FROM al") == [(1, "x", 3)]
    with pytest.raises(SqlError, match="widening"):
        s.run("ALTER TABLE al MODIFY c INT")
    s.run("ALTER TABLE al RENAME TO al2")
    assert q(s, "SHOW TABLES LIKE 'al%'") == [("al2",)]


def test_procedures(s):
    s.run("CREATE TABLE pr (k INT PRIMARY KEY NOT ENFORCED, v INT)")
    for i in range(4):
        s.run(f"INSERT INTO pr VALUES ({i}, {i})")
    s.run("CALL sys.create_tag('default.pr', 'tag', 1); CALL sys.create_tag(`table` => 'default.pr', tag => 't3')")
    assert q(s, "SELECT tag_name, snapshot_id FROM pr$tags") == [("t3", 4), ("tag", 1)]
    s.run("CALL sys.delete_tag('default.pr', 't3')")
    s.run("CALL sys.create_branch('default.pr', 'b1', 'tag'); CALL sys.create_branch('default.pr', 'empty')")
    s.run("INSERT INTO `pr$branch_b1` VALUES (100, 100)")
    assert q(s, "SELECT * FROM `pr$branch_b1`") == [(0, 0), (100, 100)]
    s.run("CALL sys.fast_forward('default.pr', 'b1')")
    assert q(s, "SELECT * FROM pr") == [(0, 0), (100, 100)]
    s.run("CALL sys.delete_branch('default.pr', 'b1,empty')")
    assert q(s, "SELECT * FROM pr$branches") == []
    s.run("INSERT INTO pr VALUES (5, 5); INSERT INTO pr VALUES (6, 6)")
    s.run("CALL sys.rollback_to('default.pr', 'tag')")
    assert q(s, "SELECT * FROM pr") == [(0, 0)]
    s.run("INSERT INTO pr VALUES (7, 7)")
    s.run("CALL sys.rollback_to(`table` => 'default.pr', snapshot_id => 1)")
    assert q(s, "SELECT * FROM pr") == [(0, 0)]
    assert q(s, "CALL sys.remove_orphan_files('default.pr', '2000-01-01 00:00:00')")[0] == ("0",)
    listed = s.execute("CALL sys.remove_orphan_files(`table` => 'default.pr', older_than => '2999-01-01 00:00:00', "
                       "dry_run => true)").column(0).to_pylist()
    assert int(listed[0]) == len(listed) - 1 and all(os.path.exists(p) for p in listed[1:])
    s.run("CALL sys.remove_orphan_files(`table` => 'default.*', older_than => '2000-01-01 00:00:00')")
    with pytest.raises(SqlError, match="no argument 'bogus'"):
        s.run("CALL sys.compact(`table` => 'default.pr', bogus => 1)")
    with pytest.raises(SqlError, match="Unknown procedure"):
        s.run("CALL sys.nope('default.pr')")


def test_show_describe_databases(s):
    s.run("CREATE DATABASE IF NOT EXISTS d1; CREATE DATABASE IF NOT EXISTS d1; USE d1; "
          "CREATE TABLE x (a INT, PRIMARY KEY (a) NOT ENFORCED)")
    assert q(s, "SHOW DATABASES") == [("d1",), ("default",)]
    assert q(s, "SHOW CURRENT DATABASE") == [("d1",)]
    assert q(s, "SHOW TABLES FROM d1") == [("x",)]
    desc = s.execute("DESC d1.x")
    assert rows(desc.select(["name", "type", "null", "key"])) == [("a", "INT", "FALSE", "PRI(a)")]
    with pytest.raises(SqlError, match="not empty"):
        s.run("USE `default`; DROP DATABASE d1")
    s.run("DROP DATABASE d1 CASCADE; DROP DATABASE IF EXISTS d1")
    assert q(s, "SHOW DATABASES") == [("default",)]
    s.run("SET 'a.b' = 'c'")
    assert ("a.b", "c") in q(s, "SET")


# ============================================================================================ errors

def test_errors_name_problem_and_place(s):
    s.run("CREATE TABLE e1 (a INT, b STRING)")
    with pytest.raises(SqlError, match="Syntax error") as e:
        s.execute("SELECT a,\n  FROM e1 WHERE")
    assert e.value.line == 2
    with pytest.raises(SqlError, match="Table 'paimon.default.nope' does not exist") as e:
        s.execute("SELECT *\nFROM   nope")
    assert (e.value.line, e.value.column) == (2, 8)
    with pytest.raises(SqlError, match='"zz"') as e:
        s.execute("SELECT a, zz FROM e1")
    assert (e.value.line, e.value.column) == (1, 11)
    with pytest.raises(SqlError, match="Unsupported statement 'GRANT'"):
        s.execute("GRANT SELECT ON e1 TO bob")
    with pytest.raises(SqlError, match="Unknown table option 'bukket'"):
        s.run("CREATE TABLE e2 (a INT) WITH ('bukket' = '2')")
    with pytest.raises(SqlError, match="Invalid data type"):
        s.run("CREATE TABLE e3 (a INTT)")
    with pytest.raises(SqlError, match="does not exist") as e:
        s.run("SELECT 1;\nINSERT INTO e1 VALUES (1, 'x');\nSELECT * FROM missing")
    assert e.value.line == 3
    assert q(s, "SELECT count(*) FROM e1") == [(1,)]  # statements before the failing one ran
    with pytest.raises(SqlError, match="one statement"):
        s.execute("SELECT 1; SELECT 2")
    with pytest.raises(SqlError, match="in-memory catalog"):
        Session().execute("CREATE TABLE t (a INT)")
    assert isinstance(SqlError("x"), PaimonLabError)


def test_paimon_lab_sql_function(wh):
    import paimon_lab
    import paimon_lab.sql as sql_module

    cat = Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    sql_module.sql("CREATE TABLE db.t (a INT); INSERT INTO db.t VALUES (1), (2)", catalog=cat, script=True)
    assert rows(sql_module.sql("SELECT sum(a) FROM db.t", catalog=cat)) == [(3,)]
    assert rows(sql_module("SELECT count(*) FROM db.t", catalog=wh)) == [(2,)]  # the module is callable
    assert rows(paimon_lab.sql.sql("USE db; SELECT max(a) FROM t", catalog=wh + "/", script=True)) == [(2,)]
    assert paimon_lab.sql.Session is Session


# ============================================================================================ pushdown into views

@pytest.fixture
def layered(s):
    """t (5 files, 3 partitions) and u, plus a view over t."""
    s.run("CREATE TABLE t (k INT, v STRING, g INT, dt STRING) PARTITIONED BY (dt)")
    for i in range(5):
        s.run("INSERT INTO t VALUES " + ", ".join(
            f"({i * 10 + j}, 'v{i * 10 + j}', {j % 3}, 'd{j % 3}')" for j in range(10)))
    s.run("CREATE TABLE u (k INT, w STRING); INSERT INTO u VALUES (1, 'x'), (12, 'y'), (99, 'z')")
    s.run("CREATE VIEW tv AS SELECT * FROM t")
    return s


def _reference(s, sql: str) -> list[tuple]:
    """The query run by plain DuckDB over whole copies of t and u (tv spelled as a subquery)."""
    import duckdb

    con = duckdb.connect()
    con.register("t", s.execute("SELECT * FROM t"))
    con.register("u", s.execute("SELECT * FROM u"))
    out = con.execute(sql.replace("FROM tv", "FROM (SELECT * FROM t) tv").replace("JOIN tv", "JOIN (SELECT * FROM t) tv"))
    return sorted(out.fetchall(), key=lambda r: tuple((x is None, str(x)) for x in r))


def _check(s, sql: str) -> list:
    got = rows(s.execute(sql))
    scans = [sc for sc in s.last_scans if sc.table == "paimon.default.t"]
    assert got == _reference(s, sql), sql
    return scans


@pytest.mark.parametrize("sql, pushed", [
    ("SELECT * FROM tv WHERE k = 12", "k"),
    ("SELECT v FROM tv WHERE dt = 'd1' AND k > 30", "dt"),
    ("SELECT * FROM (SELECT * FROM t) s WHERE s.k = 12", "k"),
    ("SELECT kk FROM (SELECT k AS kk, v FROM t) x WHERE kk IN (1, 12)", "k"),
    ("WITH c AS (SELECT * FROM t) SELECT v FROM c WHERE k = 2", "k"),
    ("WITH c AS (SELECT k, g FROM t WHERE g = 1) SELECT * FROM (SELECT * FROM c) y WHERE k < 20", "g"),
    ("SELECT * FROM (SELECT g, count(*) AS n FROM t GROUP BY g) x WHERE g = 2", "g"),
    ("SELECT * FROM (SELECT DISTINCT dt FROM tv) x WHERE dt = 'd0'", "dt"),
    ("SELECT * FROM (SELECT k, v FROM t UNION ALL SELECT k, w FROM u) x WHERE k = 12", "k"),
    ("SELECT x.k, x.w FROM (SELECT t.k, u.w FROM t JOIN u ON t.k = u.k) x WHERE x.k = 12", "k"),
    ("SELECT * FROM u JOIN tv ON u.k = tv.k WHERE tv.g = 0", "g"),
    ("SELECT * FROM (SELECT * FROM (SELECT * FROM tv) a WHERE g = 1) b WHERE k > 40", "k"),
])
def test_filters_reach_the_scan_through_views_and_subqueries(layered, sql, pushed):
    scans = _check(layered, sql)
    assert scans and all(sc.filter is not None and f"column='{pushed}'" in sc.filter for sc in scans), scans
    assert all(sc.rows < 50 for sc in scans)  # only matching rows left the read


@pytest.mark.parametrize("sql", [
    "SELECT * FROM (SELECT g, count(*) AS n FROM t GROUP BY g) x WHERE n > 16",  # filter on an aggregate
    "SELECT count(*) FROM (SELECT count(*) AS c FROM t) x WHERE c = 0",  # global aggregate
    "SELECT * FROM (SELECT * FROM t ORDER BY k LIMIT 5) x WHERE k > 2",  # LIMIT inside
    "SELECT * FROM (SELECT k, row_number() OVER (ORDER BY k) AS rn FROM t) x WHERE k > 45",  # window
    "SELECT * FROM u LEFT JOIN (SELECT * FROM t) x ON u.k = x.k WHERE x.k IS NULL",  # null-supplying side
    "WITH c AS (SELECT * FROM t) SELECT a.v FROM c a JOIN c b ON a.k = b.k + 1 WHERE a.k = 2",  # CTE read twice
])
def test_filters_that_must_not_move_below(layered, sql):
    scans = _check(layered, sql)
    assert all(sc.filter is None for sc in scans) and all(sc.rows == 50 for sc in scans), scans


def test_projection_through_views(layered):
    s = layered
    assert _check(s, "SELECT k FROM tv WHERE k < 3")[0].columns == ["k"]
    assert _check(s, "SELECT count(*) FROM tv")[0].columns is not None
    assert _check(s, "SELECT x.v FROM (SELECT * FROM t) x WHERE g = 2")[0].columns == ["v", "g"]
    # a star whose columns matter stays whole: DISTINCT, renamed columns, the outer SELECT *
    assert _check(s, "SELECT count(*) FROM (SELECT DISTINCT * FROM t) x")[0].columns is None
    assert _check(s, "SELECT a FROM (SELECT * FROM t) AS x(a, b, c, d)")[0].columns is None
    assert _check(s, "SELECT * FROM (SELECT * FROM t) x")[0].columns is None
    assert _check(s, "SELECT to_json(x) FROM (SELECT * FROM t) x WHERE k = 1")[0].columns is None  # the row
    assert _check(s, "SELECT COLUMNS('^[kv]$') FROM (SELECT * FROM t) x")[0].columns is None
    plan = s.execute("EXPLAIN SELECT v FROM tv WHERE k = 7")
    assert "column='k'" in plan.column("filter")[0].as_py() and plan.column("columns")[0].as_py() == "k, v"


# ============================================================================================ ALTER VIEW

def test_alter_view(s, wh):
    s.run("CREATE TABLE base (a INT, b STRING); INSERT INTO base VALUES (1, 'x'), (2, 'y'), (3, 'z')")
    s.run("CREATE VIEW v (c1, c2) COMMENT 'small' AS SELECT a, b FROM base WHERE a < 3")
    s.run("ALTER VIEW v AS SELECT a * 10, b FROM base WHERE a > 1")
    assert q(s, "SELECT * FROM v") == [(20, "y"), (30, "z")]
    text = s.execute("SHOW CREATE VIEW v").column(0)[0].as_py()
    assert "(`c1`, `c2`) COMMENT 'small' AS\nSELECT a * 10, b FROM base WHERE a > 1" in text
    with pytest.raises(SqlError, match="names 2 columns but its query gives 1"):
        s.run("ALTER VIEW v AS SELECT a FROM base")
    s.run("CREATE DATABASE db2")
    s.run("ALTER VIEW v RENAME TO db2.w")
    assert q(s, "SHOW VIEWS") == [] and q(s, "SHOW VIEWS IN db2") == [("w",)]
    assert not os.path.exists(os.path.join(wh, "default.db", ".views", "v.json"))
    assert q(s, "SELECT c1 FROM db2.w") == [(20,), (30,)]  # still resolves `base` in `default`
    s.run("ALTER VIEW db2.w RENAME TO w2")  # stays in db2
    assert q(s, "SHOW VIEWS IN db2") == [("w2",)]
    # persisted: a new session sees the altered, renamed view
    s2 = Session(wh)
    assert q(s2, "SELECT * FROM db2.w2") == [(20, "y"), (30, "z")]
    with pytest.raises(SqlError, match="View 'paimon.default.nope' does not exist"):
        s.run("ALTER VIEW nope AS SELECT 1")
    s.run("CREATE VIEW other AS SELECT 1 AS one")
    with pytest.raises(SqlError, match="already exists"):
        s.run("ALTER VIEW other RENAME TO base")
    with pytest.raises(SqlError, match="ALTER VIEW supports"):
        s.run("ALTER VIEW other SET ('a' = 'b')")
    # temporary views too
    s.run("CREATE TEMPORARY VIEW tmp AS SELECT 1 AS x")
    s.run("ALTER VIEW tmp AS SELECT 2 AS x")
    s.run("ALTER VIEW tmp RENAME TO tmp2")
    assert q(s, "SELECT * FROM tmp2") == [(2,)]


# ============================================================================================ materialized table state

def test_materialized_table_state_survives_a_new_session(s, wh):
    s.run("CREATE TABLE src (k INT, v INT); INSERT INTO src VALUES (1, 1), (2, 5);")
    s.run("CREATE MATERIALIZED TABLE mt FRESHNESS = INTERVAL '2' HOUR REFRESH_MODE = FULL AS "
          "SELECT k, sum(v) AS total FROM src GROUP BY k")
    opts = Catalog(wh).get_table("default.mt").options
    assert opts["materialized-table.definition-query"] == "SELECT k, sum(v) AS total FROM src GROUP BY k"
    assert opts["materialized-table.interval-freshness"] == "2"
    assert opts["materialized-table.interval-freshness-time-unit"] == "HOUR"
    assert opts["materialized-table.refresh-mode"] == "FULL"
    assert opts["materialized-table.refresh-status"] == "ACTIVATED"
    s.run("ALTER MATERIALIZED TABLE mt SUSPEND")
    assert not s.timers
    s.close()
    assert Catalog(wh).get_table("default.mt").options["materialized-table.refresh-status"] == "SUSPENDED"

    s2 = Session(wh)  # a restarted notebook
    try:
        props = dict(rows(s2.execute("SHOW TBLPROPERTIES mt")))
        assert props["materialized-table.refresh-status"] == "SUSPENDED"
        assert props["materialized-table.last-refresh-time"].startswith(time.strftime("%Y-"))
        s2.run("INSERT INTO src VALUES (1, 10)")
        assert q(s2, "SELECT * FROM mt") == [(1, 1), (2, 5)]
        assert not s2.timers  # suspended: reading starts no refresh
        before = Catalog(wh).get_table("default.mt").latest_snapshot().id
        s2.run("ALTER MATERIALIZED TABLE mt REFRESH")
        assert q(s2, "SELECT * FROM mt") == [(1, 11), (2, 5)]
        assert Catalog(wh).get_table("default.mt").latest_snapshot().id == before + 1
        s2.run("ALTER MATERIALIZED TABLE mt RESUME")
        assert ("paimon", "default", "mt") in s2.timers
        assert Catalog(wh).get_table("default.mt").options["materialized-table.refresh-status"] == "ACTIVATED"
        text = s2.execute("SHOW CREATE MATERIALIZED TABLE mt").column(0)[0].as_py()
        assert "FRESHNESS = INTERVAL '2' HOUR" in text and "REFRESH_MODE = FULL" in text
    finally:
        s2.close()
    s3 = Session(wh)  # an activated table gets its refresh timer back when a session reads it
    try:
        assert not s3.timers
        q(s3, "SELECT * FROM mt")
        assert ("paimon", "default", "mt") in s3.timers
    finally:
        s3.close()


def test_materialized_table_stale_refresh_after_restart(s, wh):
    s.run("CREATE TABLE src (k INT, v INT); INSERT INTO src VALUES (1, 1);")
    s.run("CREATE MATERIALIZED TABLE mt FRESHNESS = INTERVAL '1' SECOND AS SELECT k, sum(v) AS total FROM src GROUP BY k")
    s.close()  # the process "stops": no timer runs
    Session(wh).run("INSERT INTO src VALUES (1, 5)")
    time.sleep(1.2)
    s2 = Session(wh)
    try:
        q(s2, "SELECT * FROM mt")  # stale: the timer refreshes it at once
        deadline = time.time() + 10
        while time.time() < deadline and q(s2, "SELECT total FROM mt") != [(6,)]:
            time.sleep(0.2)
        assert q(s2, "SELECT total FROM mt") == [(6,)]
    finally:
        s2.close()


# ============================================================================================ DECIMAL filters

def test_integer_and_float_literals_filter_decimal_columns(s, wh):
    from decimal import Decimal as D

    from paimon_lab.core.predicate import col

    s.run("CREATE TABLE p (id INT, price DECIMAL(10, 2))")
    s.run("INSERT INTO p VALUES (1, 9.99), (2, 10.00), (3, 10.55), (4, 10.56), (5, NULL), (6, -3.50)")
    cases = {
        "price > 10": [3, 4], "price >= 10": [2, 3, 4], "price = 10": [2], "price <> 10": [1, 3, 4, 6],
        "price > 10.555": [4], "price >= 10.555": [4], "price < 10.555": [1, 2, 3, 6],
        "price <= 10.555": [1, 2, 3, 6], "price = 10.555": [], "price != 10.555": [1, 2, 3, 4, 6],
        "price IN (10, 10.555, 9.99)": [1, 2], "price NOT IN (10, 10.555)": [1, 3, 4, 6],
        "price BETWEEN 10 AND 10.555": [2, 3], "price > 1e20": [], "price < 1e20": [1, 2, 3, 4, 6],
        "price > -4": [1, 2, 3, 4, 6], "price = 0.1": [], "-3.5 = price": [6],
    }
    table = Catalog(wh).get_table("default.p")
    for cond, want in cases.items():
        assert [r[0] for r in q(s, f"SELECT id FROM p WHERE {cond}")] == want, cond
        assert s.last_scans[0].filter is not None, cond  # the filter reached the read
        got = table.to_arrow(filter=cond.replace("<>", "!="))
        assert sorted(got.column("id").to_pylist()) == want, cond
    assert sorted(table.to_arrow(filter=col("price") > 10).column("id").to_pylist()) == [3, 4]
    assert sorted(table.to_arrow(filter=col("price") <= 10.555).column("id").to_pylist()) == [1, 2, 3, 6]
    assert sorted(table.to_arrow(filter=col("price") == D("10.5500")).column("id").to_pylist()) == [3]
    with pytest.raises(PaimonLabError, match="cannot be compared"):
        table.to_arrow(filter=col("price") > "abc")


# ============================================================================================ exact types

def test_create_table_keeps_declared_types(s, wh):
    s.run("CREATE TABLE typed (s VARCHAR(20), ts TIMESTAMP(3), c CHAR(5), d DECIMAL(12, 3), "
          "r ROW<x VARCHAR(3), y TIMESTAMP(6)>, k INT PRIMARY KEY NOT ENFORCED)")
    schema = json.load(open(os.path.join(wh, "default.db", "typed", "schema", "schema-0")))
    types = {f["name"]: f["type"] for f in schema["fields"]}
    assert types["s"] == "VARCHAR(20)" and types["ts"] == "TIMESTAMP(3)" and types["c"] == "CHAR(5)"
    assert types["d"] == "DECIMAL(12, 3)" and types["k"] == "INT NOT NULL"
    assert [f["type"] for f in types["r"]["fields"]] == ["VARCHAR(3)", "TIMESTAMP(6)"]
    assert schema["highestFieldId"] == 7


def test_catalog_create_table_with_paimon_fields(tmp_path):
    from paimon_lab.core import types as T
    from paimon_lab.errors import SchemaError

    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    fields = [T.DataField(0, "k", T.parse_type("INT")), T.DataField(1, "s", T.parse_type("VARCHAR(20)")),
              T.DataField(2, "c", T.parse_type("CHAR(5)")), T.DataField(3, "ts", T.parse_type("TIMESTAMP(3)"))]
    t = cat.create_table("db.t", fields=fields, primary_keys=["k"], options={"bucket": "1"}, comment="typed")
    raw = json.load(open(tmp_path / "wh" / "db.db" / "t" / "schema" / "schema-0"))
    assert [f["type"] for f in raw["fields"]] == ["INT NOT NULL", "VARCHAR(20)", "CHAR(5)", "TIMESTAMP(3)"]
    assert raw["comment"] == "typed" and raw["primaryKeys"] == ["k"]
    t.write(pa.table({"k": pa.array([1], pa.int32()), "s": ["a"], "c": ["b"],
                      "ts": pa.array([0], pa.timestamp("ms"))}))
    assert t.to_arrow().num_rows == 1
    # a whole TableSchema is taken as schema 0
    t2 = cat.create_table("db.t2", t.schema)
    assert [str(f.type) for f in t2.schema.fields] == [str(f.type) for f in t.schema.fields]
    with pytest.raises(SchemaError, match="not both"):
        cat.create_table("db.t3", t.schema, primary_keys=["k"])
    with pytest.raises(SchemaError, match="DataField"):
        cat.create_table("db.t3", fields=[("k", "INT")])
    with pytest.raises(SchemaError, match="needs a pyarrow.Schema"):
        cat.create_table("db.t3", {"k": "INT"})


def test_sql_package_layers():
    """paimon_lab.sql is a pipeline: no import cycles, each module imports only lower layers (every
    import counts, in functions and under TYPE_CHECKING too), and no handler imports another."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("paimon_lab", cache_dir=None)
    handlers = sorted(m.rsplit(".", 1)[1] for m in graph.find_children("paimon_lab.sql.handlers"))
    layers = ["materialized", grimp.Layer("session", "complete", independent=True), "dispatch", grimp.Layer(*(f"handlers.{h}" for h in handlers), independent=True),
              "common", "plan", "resolve",
              grimp.Layer("format_table", "object_table", "materialized_table", independent=True),
              grimp.Layer("schemas", "writing", independent=True), "context", "catalogs", "prepared",
              grimp.Layer("duck", "relations", "datagen", "plain", independent=True),
              grimp.Layer("clauses", "spelling", "params", "rewrite", "feedback", "timestamp_text", independent=True),
              "lexer", "errors"]
    assert graph.find_illegal_dependencies_for_layers(layers=layers, containers={"paimon_lab.sql"}) == set()
    assert not {m for m in graph.find_modules_that_directly_import("paimon_lab.sql") if m.startswith("paimon_lab.sql")}
    listed = {"materialized", "session", "complete", "dispatch", "common", "plan", "resolve", "format_table", "object_table",
              "materialized_table", "schemas", "writing", "context", "catalogs", "prepared", "duck", "relations",
              "datagen", "plain", "clauses", "spelling", "params", "rewrite", "feedback", "timestamp_text", "lexer",
              "errors"}
    modules = {m.split(".", 2)[2] for m in graph.find_children("paimon_lab.sql")} - {"handlers"}
    assert modules <= listed, f"place {sorted(modules - listed)} in a layer"


# ============================================================================================ errors: where and what

def test_syntax_error_position_and_caret(s):
    s.run("CREATE TABLE t (k INT, v STRING)")
    with pytest.raises(SqlError) as e:
        s.execute("SELECT k FROM t WHERE v = = 3")
    err = e.value
    assert (err.line, err.column) == (1, 27) and err.reason == "Syntax error: unexpected '='"
    assert "sqlglot" in err.detail  # sqlglot's own words stay in the details
    assert err.excerpt() == "1 | SELECT k FROM t WHERE v = = 3\n  |                           ^"
    with pytest.raises(SqlError) as e:
        s.execute("SELECT k,\n  v FROM t WHERE k > 2 AND (")
    assert (e.value.line, e.value.column) == (2, 28)
    assert e.value.reason == "Syntax error: something is missing after '(': the statement ends there"


def test_script_error_points_into_the_script(s):
    script = "CREATE TABLE t (k INT);\nINSERT INTO t VALUES (1);\nSELECT k\n  FROM t WHERE k IN (1,"
    with pytest.raises(SqlError) as e:
        s.run(script)
    err = e.value
    assert err.index == 3 and len(err.done) == 2 and err.progress == "statements 1-2 ran; statement 3 failed"
    assert (err.line, err.column) == (4, 23) and err.source == script
    assert err.excerpt().split("\n") == ["3 | SELECT k", "4 |   FROM t WHERE k IN (1,", "  |                       ^"]


def test_count_and_min_max_from_metadata_read_the_tables_scan_options(s):
    """count(*), min and max answered from the manifests take the snapshot the table's own
    'scan.*' options choose, as its rows do."""
    s.run("CREATE TABLE t (k INT, v STRING); INSERT INTO t VALUES (1, 'a'); INSERT INTO t VALUES (2, 'b'), (3, 'c')")
    s.run("ALTER TABLE t SET ('scan.snapshot-id' = '1')")
    assert s.execute("SELECT * FROM t").to_pylist() == [{"k": 1, "v": "a"}]
    assert s.execute("SELECT count(*) AS n, min(k) AS lo, max(k) AS hi FROM t").to_pylist() == [
        {"n": 1, "lo": 1, "hi": 1}]
    assert s.last_scans[0].metadata  # still answered from the manifests
    s.run("ALTER TABLE t RESET ('scan.snapshot-id'); ALTER TABLE t SET ('incremental-between' = '1,2')")
    assert s.execute("SELECT count(*) AS n, min(k) AS lo, max(k) AS hi FROM t").to_pylist() == [
        {"n": 2, "lo": 2, "hi": 3}]


def test_missing_comma_between_columns_is_named(s):
    with pytest.raises(SqlError, match=r"is a ',' missing after 'STRING'\?") as e:
        s.execute("CREATE TABLE ap (\n  dt STRING\n  order_id BIGINT,\n  amount INT\n) PARTITIONED BY (dt)")
    assert (e.value.line, e.value.column) == (2, 6)
    with pytest.raises(SqlError) as e:  # a bad type on one line: no such hint
        s.execute("CREATE TABLE ap (dt STRIN, k INT)")
    assert "missing" not in e.value.reason


def test_array_index_counts_from_one_as_in_flink(s):
    s.run("CREATE TABLE t (k INT, a ARRAY<INT>, m MAP<INT, STRING>);"
          "INSERT INTO t VALUES (1, ARRAY[10, 20, 30], MAP[1, 'one', 2, 'two'])")
    assert q(s, "SELECT a[1], a[k + 1], m[1], m[2] FROM t") == [(10, 20, "one", "two")]
    s.run("UPDATE t SET k = a[3] WHERE a[1] = 10")
    assert q(s, "SELECT k FROM t") == [(30,)]


def test_alter_table_drop_partition(s):
    s.run("CREATE TABLE t (k INT, dt STRING, h INT) PARTITIONED BY (dt, h);"
          "INSERT INTO t VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 1), (4, 'c', 1)")
    s.run("ALTER TABLE t DROP PARTITION (dt = 'a', h = 1)")  # Flink's and Spark's syntax
    assert q(s, "SELECT k FROM t ORDER BY k") == [(2,), (3,), (4,)]
    s.run("ALTER TABLE t DROP IF EXISTS PARTITION (`dt` = 'b'), PARTITION (dt = 'zz', h = 1)")
    assert q(s, "SELECT k FROM t ORDER BY k") == [(2,), (4,)]
    assert q(s, "SELECT commit_kind FROM `t$snapshots` ORDER BY snapshot_id") == [
        ("APPEND",), ("OVERWRITE",), ("OVERWRITE",)]
    with pytest.raises(SqlError, match=r"'k' is not a partition column of default.t"):
        s.execute("ALTER TABLE t DROP PARTITION (k = 2)")
    assert q(s, "SELECT count(*) FROM t") == [(2,)]


def test_unix_timestamp_as_flink_has_it(s):
    s.run("SET 'table.local-time-zone' = 'UTC'")  # a string is read in the session's zone
    before = int(time.time())
    row = s.execute("SELECT UNIX_TIMESTAMP() AS now, UNIX_TIMESTAMP('2024-01-01 00:00:01') AS t").to_pylist()[0]
    assert before - 1 <= row["now"] <= time.time() + 1 and row["t"] == 1704067201
    assert s.execute("SELECT UNIX_TIMESTAMP() AS now").schema.field("now").type == pa.int64()


def test_missing_table_suggests_the_nearest_name(s):
    s.run("CREATE TABLE orders (k INT); CREATE TABLE Users (k INT)")
    with pytest.raises(SqlError) as e:
        s.execute("SELECT * FROM ordres")
    assert e.value.reason == "Table 'paimon.default.ordres' does not exist; did you mean 'orders'?"
    with pytest.raises(SqlError, match=r"did you mean 'Users'\?"):
        s.execute("SELECT * FROM users")
    with pytest.raises(SqlError) as e:  # nothing near: no hint
        s.execute("SELECT * FROM nope")
    assert e.value.reason == "Table 'paimon.default.nope' does not exist"


def test_values_rows_of_mixed_types_cast_each_value_to_its_column(s):
    """DuckDB types a VALUES list as a whole: a number in one row and a string in another do not
    unify. Each value is then cast to its own column, as a one-row VALUES would be."""
    s.run("CREATE TABLE t (k INT, dt STRING, amount DOUBLE, n BIGINT)")
    with pytest.raises(SqlError) as e:  # DuckDB alone: "Cannot combine types VARCHAR and DECIMAL(2,1)"
        s.execute("INSERT INTO t VALUES (1, 'a', 'ten', 1), (2, 'b', 1.5, 2)")
    err = e.value
    assert err.reason == ("Conversion Error: Could not convert string 'ten' to DOUBLE for column amount "
                          "(row 1 of the rows written)")
    assert (err.line, err.column) == (1, 31)  # at 'ten'
    with pytest.raises(SqlError) as e:  # DuckDB alone: "to INT", the type of the first row's 10
        s.execute("INSERT INTO t (k, n) VALUES (1, 10), (2, 'x'), (3, 'y')")
    assert e.value.reason == ("Conversion Error: Could not convert string 'x' to BIGINT for column n "
                              "(row 2 of the rows written)")
    assert s.execute("SELECT count(*) AS c FROM t").column("c").to_pylist() == [0]
    s.execute("INSERT INTO t VALUES (1, 'a', '20', 7), (2, 'b', 10.5, '8'), (3, NULL, NULL, NULL)")
    assert s.execute("SELECT * FROM t ORDER BY k").to_pylist() == [
        {"k": 1, "dt": "a", "amount": 20.0, "n": 7}, {"k": 2, "dt": "b", "amount": 10.5, "n": 8},
        {"k": 3, "dt": None, "amount": None, "n": None}]


def test_cast_error_names_our_column_and_type(s):
    s.run("CREATE TABLE t (k INT, v STRING, amount BIGINT, d DECIMAL(10, 2))")
    with pytest.raises(SqlError) as e:
        s.execute("INSERT INTO t VALUES (1, 'a', '7', 1.5), (2, 'b', 'lots', 2.5)")
    err = e.value
    assert err.reason.startswith("Conversion Error: Could not convert string 'lots' to BIGINT for column amount")
    assert "(row 2 of the rows written)" in err.reason
    assert "c2" not in err.reason and "INT64" not in err.reason and "INT64" in err.detail  # DuckDB's words kept
    assert (err.line, err.column) == (1, 51)  # at the literal 'lots'
    with pytest.raises(SqlError, match=r"to DECIMAL\(10, 2\) for column d") as e:
        s.execute("INSERT INTO t SELECT 1, 'x', 2, v FROM (VALUES ('no')) AS x(v)")
    with pytest.raises(SqlError) as e:  # out of range: DuckDB names the physical types
        s.execute("INSERT INTO t (k) VALUES (3000000000)")
    assert "for the destination type INT for column k" in e.value.reason and "INT32" not in e.value.reason
    with pytest.raises(SqlError) as e:  # a query's cast: the user's own column, Paimon's type name
        s.execute("SELECT CAST(v AS INT) FROM (VALUES ('x')) AS x(v)")
    assert "to INT when casting from source column v" in e.value.reason
    with pytest.raises(SqlError, match=r"argument types '\+\(INT, STRING\)'"):
        s.execute("SELECT k + v FROM t")


def test_complete_names_columns_and_system_tables(s):
    from paimon_lab.sql.complete import complete

    s.run("CREATE DATABASE shop; CREATE TABLE shop.`order lines` (id BIGINT, qty INT); CREATE TABLE t (k INT)")
    s.register("events", pa.table({"ts": [1], "kind": ["a"]}))

    def texts(text, cursor=None):
        start, items = complete(s, text, len(text) if cursor is None else cursor)
        return start, [c.text for c in items if c.kind != "keyword"]

    assert texts("SELECT * FROM shop.") == (19, ["`order lines`"])
    assert texts("SELECT l. FROM shop.`order lines` AS l", 9) == (9, ["id", "qty"])
    assert texts("SELECT * FROM default_catalog.default_database.") [1] == ["events"]
    assert texts("SELECT k FROM default_catalog.default_database.events e WHERE e.k")[1] == ["kind"]
    assert texts("SELECT * FROM t$ta") == (16, ["tags", "table_indexes"])
    assert texts("SELECT * FROM t$snapshots WHERE commit_k")[1] == ["commit_kind"]
    assert texts("SELECT * FROM t$audit_log WHERE r")[1] == ["rowkind"]
    assert texts("CALL sys.rollback")[1] == ["rollback_to", "rollback_to_timestamp", "rollback_to_watermark"]
    assert texts("USE CATALOG p")[1] == ["paimon"]
    assert texts("SELECT 'FROM ")[1] == [] and texts("SELECT 1; SELECT * FROM t WHERE ")[1] == ["k"]
    text = "SELECT * FROM t WHERE  AND k = 'still typing"  # an open quote after the cursor
    assert texts(text, text.index("  ") + 1)[1] == ["k"]
    _, items = complete(s, "SEL", 3)
    assert [(c.text, c.kind) for c in items] == [("SELECT", "keyword")]


def test_materialized_refresh_cli_refreshes_only_due_tables(wh):
    """The cron/systemd entry refreshes a materialized table whose freshness has passed, leaves a
    fresh one and a suspended one alone, and exits 0."""
    import subprocess
    import sys

    from paimon_lab.utils.clock import now_millis, use_clock

    two_hours_ago = now_millis() - 2 * 3600 * 1000
    s = Session(wh)
    try:
        s.run("CREATE TABLE src (k INT, v INT); INSERT INTO src VALUES (1, 1);")
        with use_clock(two_hours_ago):  # its last refresh was two hours ago: due
            s.run("CREATE MATERIALIZED TABLE due FRESHNESS = INTERVAL '1' HOUR AS SELECT sum(v) AS total FROM src")
        s.run("CREATE MATERIALIZED TABLE fresh FRESHNESS = INTERVAL '1' HOUR AS SELECT sum(v) AS total FROM src")
        with use_clock(two_hours_ago):
            s.run("CREATE MATERIALIZED TABLE paused FRESHNESS = INTERVAL '1' HOUR AS SELECT sum(v) AS total FROM src")
        s.run("ALTER MATERIALIZED TABLE paused SUSPEND")
    finally:
        s.close()
    Session(wh).run("INSERT INTO src VALUES (1, 5)")
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-m", "paimon_lab.sql.materialized", "refresh", "--warehouse", wh],
                         check=False, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "default.due: refreshed" in out.stdout
    assert "default.fresh: fresh" in out.stdout and "default.paused: suspended" in out.stdout
    cat = Catalog(wh)
    assert cat.get_table("default.due").to_arrow().column("total").to_pylist() == [6]
    assert cat.get_table("default.fresh").to_arrow().column("total").to_pylist() == [1]
    assert cat.get_table("default.paused").to_arrow().column("total").to_pylist() == [1]
    # --table with --force refreshes a named table even when it is fresh; a wrong name fails clearly
    out = subprocess.run([sys.executable, "-m", "paimon_lab.sql.materialized", "refresh", "--warehouse", wh,
                          "--table", "default.fresh", "--force"], check=False, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and "default.fresh: refreshed" in out.stdout, out.stderr
    assert cat.get_table("default.fresh").to_arrow().column("total").to_pylist() == [6]
    out = subprocess.run([sys.executable, "-m", "paimon_lab.sql.materialized", "refresh", "--warehouse", wh,
                          "--table", "default.src"], check=False, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 2 and "not a materialized table" in out.stderr


@pytest.mark.parametrize("argv0, prog", [("/usr/bin/paimon-lab-refresh", "paimon-lab-refresh"),
                                          ("/x/paimon_lab/sql/materialized.py", "python -m paimon_lab.sql.materialized")])
def test_materialized_refresh_usage_names_how_it_was_run(monkeypatch, capsys, argv0, prog):
    from paimon_lab.sql.materialized import main

    monkeypatch.setattr("sys.argv", [argv0, "--help"])
    with pytest.raises(SystemExit):
        main()
    assert capsys.readouterr().out.startswith(f"usage: {prog} ")


def test_materialized_refresh_loop_sleeps_until_the_next_table_is_due(wh):
    """--loop waits until the earliest ACTIVATED table falls due (bounded by --max-sleep); suspended
    tables do not shorten the wait."""
    from paimon_lab.sql.materialized import (
        _seconds_to_next,
        materialized_tables,
        refresh_due,
    )
    from paimon_lab.utils.clock import use_clock

    t0 = 1_900_000_000_000
    s = Session(wh)
    try:
        s.run("CREATE TABLE src (k INT, v INT); INSERT INTO src VALUES (1, 1);")
        with use_clock(t0):
            s.run("CREATE MATERIALIZED TABLE a FRESHNESS = INTERVAL '10' MINUTE AS SELECT sum(v) AS total FROM src")
            s.run("CREATE MATERIALIZED TABLE b FRESHNESS = INTERVAL '1' HOUR AS SELECT sum(v) AS total FROM src")
        s.run("ALTER MATERIALIZED TABLE b SUSPEND")
        s.close()
        assert {(d.name, d.due_millis) for d in materialized_tables(s)} == {("a", t0 + 600_000), ("b", None)}
        with use_clock(t0 + 60_000):
            assert _seconds_to_next(s, [], cap=3600) == 540
            assert _seconds_to_next(s, [], cap=60) == 60
            assert refresh_due(s, log=lambda m: None) == ([], [])
        with use_clock(t0 + 600_000):
            assert refresh_due(s, log=lambda m: None) == (["default.a"], [])
            assert _seconds_to_next(s, [], cap=3600) == 600
    finally:
        s.close()
