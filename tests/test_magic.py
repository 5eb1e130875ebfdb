"""The %%paimon / %paimon magics through a real IPython shell."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("IPython")
pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def ip():
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    from paimon_lab.magic import load_ipython_extension

    load_ipython_extension(shell)
    return shell


@pytest.fixture
def fresh(ip, tmp_path):
    """A fresh default SQL session with catalog 'lab' over a temp warehouse."""
    import paimon_lab.sql as sql_module

    sql_module.set_default_session(None)
    res = ip.run_cell(f"""%%paimon
CREATE CATALOG lab WITH ('type' = 'paimon', 'warehouse' = '{tmp_path / "wh"}');
USE CATALOG lab;
CREATE TABLE t (k INT PRIMARY KEY NOT ENFORCED, v STRING);
INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');
""")
    assert res.success and res.result is None
    yield ip
    sql_module.default_session().close()
    sql_module.set_default_session(None)


def test_cell_magic_returns_last_query(fresh):
    res = fresh.run_cell("%%paimon\nSELECT count(*) AS n FROM t;\nSELECT k, v FROM t WHERE k >= 2 ORDER BY k\n")
    assert res.success
    assert isinstance(res.result, pd.DataFrame)
    assert res.result.to_dict("list") == {"k": [2, 3], "v": ["b", "c"]}
    assert fresh.user_ns["_"].equals(res.result)


def test_out_binds_and_arrow(fresh):
    res = fresh.run_cell("%%paimon --out counts --arrow\nSELECT v, count(*) AS n FROM t GROUP BY v ORDER BY v")
    assert res.success
    assert isinstance(fresh.user_ns["counts"], pa.Table)
    assert fresh.user_ns["counts"].column("v").to_pylist() == ["a", "b", "c"]
    res = fresh.run_cell("%%paimon --out quiet_one --quiet\nSELECT 1 AS x")
    assert res.success and res.result is None and fresh.user_ns["quiet_one"].to_dict("list") == {"x": [1]}


def test_line_magic(fresh):
    res = fresh.run_cell("%paimon SELECT max(k) AS m FROM t")
    assert res.success and res.result.to_dict("list") == {"m": [3]}
    assert fresh.user_ns["_"].to_dict("list") == {"m": [3]}
    res = fresh.run_cell("%paimon --out top SELECT v FROM t WHERE k = 1")
    assert fresh.user_ns["top"].to_dict("list") == {"v": ["a"]}
    res = fresh.run_cell("%paimon INSERT INTO t VALUES (4, 'd')")
    assert res.success and res.result is None
    assert fresh.run_cell("%paimon SELECT count(*) AS n FROM t").result.to_dict("list") == {"n": [4]}


def test_errors_are_short(fresh, capsys):
    res = fresh.run_cell("%%paimon\nSELECT *\nFROM missing_table")
    assert not res.success
    assert "does not exist" in str(res.error_in_exec)
    assert res.error_in_exec._render_traceback_() == [str(res.error_in_exec)]
    out = capsys.readouterr()
    text = out.out + out.err
    assert "missing_table" in text and "Traceback" not in text and "line 2" in text
    res = fresh.run_cell("%%paimon\nSELEC 1")
    assert not res.success and "Unsupported statement" in str(res.error_in_exec)


def test_engine_spark_without_spark(fresh):
    try:
        import paimon_lab.spark  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError:
        res = fresh.run_cell("%%paimon --engine spark\nSELECT 1")
        assert not res.success and "--engine spark needs PySpark" in str(res.error_in_exec)
    else:
        pytest.skip("PySpark is installed: the Spark path is tested with paimon_lab.spark")


def test_load_ext_by_module_name(ip):
    # `%load_ext paimon_lab.magic` works today; `%load_ext paimon_lab` once the package exports it
    res = ip.run_cell("%load_ext paimon_lab.magic")
    assert res.success
    assert "paimon" in ip.magics_manager.magics["cell"] and "paimon" in ip.magics_manager.magics["line"]


def test_engine_spark(fresh, spark):
    """With PySpark and Java present, --engine spark runs the cell through paimon_lab.spark."""
    res = fresh.run_cell("%%paimon --engine spark --out sdf\nSELECT k, v FROM db_default_alias ORDER BY k"
                         .replace("db_default_alias", "`default`.t"))
    assert res.success, res.error_in_exec
    assert res.result.to_dict("list") == {"k": [1, 2, 3], "v": ["a", "b", "c"]}
    assert fresh.user_ns["sdf"].to_dict("list") == res.result.to_dict("list")


def test_jdbc_catalog_views_and_materialized_table_across_a_restart(ip, tmp_path):
    """A notebook on a JDBC (SQLite) catalog: views and a materialized table survive a kernel
    restart (a new default session)."""
    import paimon_lab.sql as sql_module

    create = (f"CREATE CATALOG j WITH ('type'='paimon', 'metastore'='jdbc', "
              f"'uri'='jdbc:sqlite:{tmp_path}/cat.db', 'catalog-key'='nb', 'warehouse'='{tmp_path / 'wh'}');\n"
              "USE CATALOG j;\n")
    sql_module.set_default_session(None)
    try:
        res = ip.run_cell("%%paimon\n" + create + """
CREATE TABLE sales (id INT, amount DECIMAL(10, 2), region VARCHAR(10));
INSERT INTO sales VALUES (1, 5.50, 'eu'), (2, 20.00, 'us'), (3, 12.25, 'eu');
CREATE VIEW big AS SELECT * FROM sales WHERE amount > 10;
ALTER VIEW big AS SELECT id, region FROM sales WHERE amount > 6;
CREATE MATERIALIZED TABLE by_region FRESHNESS = INTERVAL '1' HOUR REFRESH_MODE = FULL
  AS SELECT region, count(*) AS n FROM sales GROUP BY region;
ALTER MATERIALIZED TABLE by_region SUSPEND;
""")
        assert res.success, res.error_in_exec
        sql_module.default_session().close()
        sql_module.set_default_session(None)  # the kernel restarts
        res = ip.run_cell("%%paimon\n" + create + """
INSERT INTO sales VALUES (4, 99.00, 'us');
ALTER MATERIALIZED TABLE by_region REFRESH;
SELECT b.region, n FROM (SELECT region FROM big WHERE region = 'us') b JOIN by_region USING (region)
""")
        assert res.success, res.error_in_exec
        assert res.result.to_dict("list") == {"region": ["us", "us"], "n": [2, 2]}
        assert not sql_module.default_session().timers  # still suspended
    finally:
        sql_module.default_session().close()
        sql_module.set_default_session(None)
