"""Statements of the seed documents not run through ``%%paimon`` before: a new user's pass over
them in a real IPython shell (bucket rescaling, the system-table join, sequence groups with
aggregation, batch DELETE, the sys database, a TIMESTAMP_LTZ sequence field in a session zone)."""

from __future__ import annotations

import datetime as dt

import pytest

from seed_ddl import SEQUENCE_GROUPS_WITH_AGGREGATION

pytest.importorskip("IPython")
pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def ip():
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython() or get_ipython()  # None when another test module started it
    if "paimon" not in shell.magics_manager.magics["cell"]:
        from paimon_lab.magic import load_ipython_extension

        load_ipython_extension(shell)
    return shell


@pytest.fixture
def cell(ip, tmp_path):
    import paimon_lab.sql as sql_module

    sql_module.set_default_session(None)

    def run(text: str):
        res = ip.run_cell("%%paimon --arrow\n" + text)
        assert res.success, res.error_in_exec
        return res.result

    run(f"CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = 'file://{tmp_path}/wh'); "
        "USE CATALOG paimon;")
    yield run
    sql_module.default_session().close()
    sql_module.set_default_session(None)


def test_seed003_bucket_rescale_and_seed000_system_join(cell):
    cell("""CREATE TABLE T (
  dt STRING,
  shop_id BIGINT,
  user_id BIGINT,
  num_orders INT,
  total_amount INT,
  PRIMARY KEY (dt, shop_id, user_id) NOT ENFORCED
) PARTITIONED BY (dt) WITH (
  'bucket' = '4'
);""")
    cell("INSERT INTO T VALUES ('20240312', 1, 1, 2, 30), ('20240312', 1, 2, 1, 10), ('20240313', 2, 1, 5, 50)")
    cell("INSERT INTO T PARTITION (dt = '20240314') VALUES (3, 3, 1, 1)")
    cell("ALTER TABLE `paimon`.`default`.`T` SET ('bucket' = '2');")
    cell("""INSERT OVERWRITE `paimon`.`default`.`T`
PARTITION (dt = '20240312')
SELECT shop_id, user_id, num_orders, total_amount FROM `paimon`.`default`.`T`
WHERE dt = '20240312';""")
    buckets = cell("SELECT DISTINCT bucket FROM T$files WHERE `partition` = '[20240312]'").column(0).to_pylist()
    assert set(buckets) <= {0, 1}  # rewritten into the new bucket count
    assert cell("SELECT sum(total_amount) AS s FROM T").column("s").to_pylist() == [91]
    joined = cell("SELECT s.snapshot_id, t.schema_id, t.fields      FROM T$snapshots s JOIN T$schemas t      "
                  "ON s.schema_id=t.schema_id where s.snapshot_id=3; ")
    assert joined.column("schema_id").to_pylist() == [1] and "shop_id" in joined.column("fields")[0].as_py()


def test_seed003_sequence_groups_with_aggregation(cell):
    cell(SEQUENCE_GROUPS_WITH_AGGREGATION)
    cell("INSERT INTO T VALUES (1, 'a1', 5, 1, 'c1', 3, 1)")
    cell("INSERT INTO T VALUES (1, 'a2', 2, 2, 'c0', 4, 0)")  # g_2 older: c keeps c1, d still sums
    assert cell("SELECT * FROM T").to_pylist() == [{"k": 1, "a": "a2", "b": 5, "g_1": 2, "c": "c1", "d": 7, "g_2": 1}]


def test_seed004_batch_delete_compaction_option_and_seed000_sys(cell):
    cell("""CREATE TABLE T (
id BIGINT,
a INT,
b STRING,
dt STRING COMMENT 'timestamp string in format yyyyMMdd',
PRIMARY KEY(id, dt) NOT ENFORCED
) PARTITIONED BY (dt) WITH (
'merge-engine' = 'deduplicate'
);""")
    cell("""INSERT INTO T VALUES
(1, 10001, 'varchar00001', '20230501'),
(2, 10002, 'varchar00002', '20230502'),
(3, 10003, 'varchar00003', '20230503'),
(10, 10010, 'varchar00010', '20230510');""")
    cell("SET 'execution.runtime-mode' = 'batch';\nDELETE FROM T WHERE dt >= '20230503';")
    assert cell("SELECT id FROM T ORDER BY id").column("id").to_pylist() == [1, 2]
    audit = cell("SELECT rowkind, id FROM T$audit_log ORDER BY id").to_pylist()  # deletes kept, as Java's
    assert [(r["rowkind"], r["id"]) for r in audit] == [("+I", 1), ("+I", 2), ("-D", 3), ("-D", 10)]
    cell("ALTER TABLE T SET ('full-compaction.delta-commits' = '1');")
    cell("INSERT INTO T VALUES (4, 10004, 'varchar00004', '20230501')")
    kinds = cell("SELECT commit_kind FROM T$snapshots ORDER BY snapshot_id").column(0).to_pylist()
    assert kinds[-1] == "COMPACT"
    cell("USE sys; SHOW TABLES;")
    opts = cell("SELECT * FROM sys.all_table_options;").to_pylist()
    assert {"database_name": "default", "table_name": "T", "key": "full-compaction.delta-commits",
            "value": "1"} in opts


def test_seed003_ltz_sequence_field_in_a_session_zone(cell):
    cell("CREATE TABLE E (k INT, v STRING, ts TIMESTAMP_LTZ(3), PRIMARY KEY (k) NOT ENFORCED) "
         "WITH ('sequence.field' = 'ts');")
    cell("SET 'table.local-time-zone' = 'Asia/Shanghai';\n"
         "INSERT INTO E VALUES (1, 'new', TIMESTAMP '2024-01-01 12:00:00');\n"
         "INSERT INTO E VALUES (1, 'old', '2024-01-01 11:00:00');")
    out = cell("SELECT * FROM E")
    assert out.column("v").to_pylist() == ["new"]
    shown = out.column("ts")[0].as_py()
    assert shown.replace(tzinfo=None) == dt.datetime(2024, 1, 1, 12, 0)
    assert shown.astimezone(dt.timezone.utc).replace(tzinfo=None) == dt.datetime(2024, 1, 1, 4, 0)
