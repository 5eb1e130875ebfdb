"""The %%paimon / %paimon magics through a real IPython shell."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("IPython")
pytest.importorskip("duckdb")

from paimon_lab.magic import PaimonMagicError
from paimon_lab.sql import SqlError


@pytest.fixture(scope="module")
def ip():
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython() or get_ipython()  # None when another test module started it
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


def test_show_create_table_is_shown_as_text(fresh):
    assert fresh.run_cell("%paimon CREATE TABLE t2 (k INT, v STRING) WITH ('snapshot.num-retained.max' = '20')").success
    res = fresh.run_cell("%paimon SHOW CREATE TABLE t2")
    assert res.success and isinstance(res.result, str)
    lines = res.result.split("\n")
    assert lines[0] == "CREATE TABLE `lab`.`default`.`t2` (" and "  `v` STRING" in lines
    assert "  'snapshot.num-retained.max' = '20'" in lines         # one option per line
    assert "<pre" in res.result._repr_html_() and "&#x27;snapshot.num-retained.max&#x27;" in res.result._repr_html_()
    from IPython.lib.pretty import pretty

    assert pretty(res.result) == res.result                      # shown as the text itself, not quoted
    bound = fresh.run_cell("%paimon --out ddl SHOW CREATE TABLE t2")
    assert bound.success and list(fresh.user_ns["ddl"].columns) == ["result"]   # --out still binds the table
    assert isinstance(fresh.run_cell("%paimon --arrow SHOW CREATE TABLE t2").result, pa.Table)


def test_errors_are_short(fresh, capsys):
    res = fresh.run_cell("%%paimon\nSELECT *\nFROM missing_table")
    assert not res.success
    assert "does not exist" in str(res.error_in_exec)
    assert res.error_in_exec._render_traceback_() == [f"\x1b[31m{res.error_in_exec}\x1b[0m",
                                                      "1 | SELECT *", "2 | FROM missing_table", "  |      ^"]
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
        assert "pip install 'paimon-lab[spark]'" in str(res.error_in_exec)
    else:
        pytest.skip("PySpark is installed: the Spark path is tested with paimon_lab.spark")


def test_without_pyspark_the_spark_extra_is_named():
    """As a core or [notebook] install sees it: PySpark not importable."""
    code = ("import sys; sys.modules['pyspark'] = None\n"
            "try:\n    import paimon_lab.spark\nexcept ImportError as e:\n    print('import:', e)\n"
            "from IPython.core.interactiveshell import InteractiveShell\n"
            "ip = InteractiveShell.instance(); ip.run_line_magic('load_ext', 'paimon_lab')\n"
            "print('magic:', ip.run_cell('%%paimon --engine spark\\nSELECT 1').error_in_exec)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120).stdout
    assert "import: paimon_lab.spark needs PySpark >= 4.1" in out and "pip install 'paimon-lab[spark]'" in out, out
    magic = next(line for line in out.splitlines() if line.startswith("magic:"))
    assert "--engine spark needs PySpark" in magic and magic.count("pip install 'paimon-lab[spark]'") == 1, out


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


# ---------------------------------------------------------------------------------- #16 item 1

def test_help_and_docstring(ip, capsys):
    res = ip.run_cell("%paimon --help")
    assert res.success and res.result is None
    out = capsys.readouterr().out
    for option in ("--out", "--arrow", "--quiet", "--engine", "--catalog", "NAME <<", "{name}", "{{name}}",
                   "displaylimit", "autopandas", "feedback"):
        assert option in out, option
    res = ip.run_cell("%paimon -h")
    assert res.success and "--out NAME" in capsys.readouterr().out
    # %%paimon? / %paimon? show the magic's docstring, which lists the options
    doc = ip.find_cell_magic("paimon").__doc__
    assert "--out NAME" in doc and "displaylimit" in doc and "NAME <<" in doc
    res = ip.run_cell("%%paimon?")
    assert res.success
    out = capsys.readouterr().out
    assert "--out NAME" in out and "--quiet" in out and "displaylimit" in out
    res = ip.run_cell("%paimon --bogus SELECT 1")
    assert not res.success and "usage:" in str(res.error_in_exec) and "--help" in str(res.error_in_exec)


def test_out_and_assignment_for_every_statement(fresh, capsys):
    res = fresh.run_cell("%%paimon --out did\nINSERT INTO t VALUES (4, 'd'), (5, 'e');\nDELETE FROM t WHERE k = 1")
    assert res.success and res.result is None
    did = fresh.user_ns["did"]
    assert isinstance(did, pd.DataFrame)
    assert did["kind"].tolist() == ["INSERT", "DELETE"]
    assert did["rows"].tolist() == [2, 1]
    assert did["target"].tolist() == ["lab.default.t", "lab.default.t"]
    assert did["snapshot_id"].tolist() == [2, 3]
    # jupysql's NAME << convention, cell and line
    res = fresh.run_cell("%%paimon rows <<\nSELECT k FROM t ORDER BY k")
    assert res.success and fresh.user_ns["rows"]["k"].tolist() == [2, 3, 4, 5]
    res = fresh.run_cell("%paimon one << SELECT v FROM t WHERE k = 2")
    assert res.success and fresh.user_ns["one"].to_dict("list") == {"v": ["b"]}
    res = fresh.run_cell("%paimon --arrow ins << INSERT INTO t VALUES (6, 'f')")
    assert res.success and isinstance(fresh.user_ns["ins"], pa.Table)
    assert fresh.user_ns["ins"].column("rows").to_pylist() == [1]
    res = fresh.run_cell("%paimon --out a b << SELECT 1")
    assert not res.success and "use one" in str(res.error_in_exec)


def test_displaylimit_truncates_without_converting_everything(fresh, capsys):
    fresh.run_cell("%%paimon\nCREATE TABLE big (i BIGINT);\nINSERT INTO big SELECT * FROM range(2500)")
    capsys.readouterr()
    res = fresh.run_cell("%%paimon\nSELECT i FROM big ORDER BY i")
    assert res.success
    assert isinstance(res.result, pd.DataFrame) and len(res.result) == 10  # jupysql's default
    assert res.result["i"].tolist() == list(range(10))
    assert "showing 10 of 2,500 rows" in capsys.readouterr().out
    # --out (and NAME <<) get every row
    res = fresh.run_cell("%%paimon --out everything\nSELECT i FROM big ORDER BY i")
    assert len(res.result) == 10 and len(fresh.user_ns["everything"]) == 2500
    res = fresh.run_cell("%config PaimonMagic.displaylimit = 50")
    assert res.success
    try:
        res = fresh.run_cell("%paimon SELECT i FROM big")
        assert len(res.result) == 50 and "showing 50 of 2,500 rows" in capsys.readouterr().out
        res = fresh.run_cell("%paimon SELECT i FROM big LIMIT 50")
        assert len(res.result) == 50 and "showing" not in capsys.readouterr().out
        fresh.run_cell("%config PaimonMagic.displaylimit = 0")
        res = fresh.run_cell("%paimon SELECT i FROM big")
        assert len(res.result) == 2500 and "showing" not in capsys.readouterr().out
    finally:
        fresh.run_cell("%config PaimonMagic.displaylimit = 10")


def test_head_slices_before_pandas():
    """Only the rows shown become pandas: head() is a zero-copy Arrow slice, and its total comes
    from the Arrow table's row count."""
    from paimon_lab.magic import head

    table = pa.table({"i": pa.array(range(100_000), pa.int64())})
    shown, total = head(table, 10)
    assert total == 100_000 and shown.num_rows == 10
    assert shown.column(0).chunks[0].buffers()[1].address == table.column(0).chunks[0].buffers()[1].address
    assert head(table, None) == (table, 100_000) and head(table, 0)[0] is table


def test_settings_through_config(fresh, capsys):
    magic = next(c for c in fresh.configurables if type(c).__name__ == "PaimonMagic")
    assert magic.displaylimit == 10 and magic.autopandas is True and magic.feedback is True
    res = fresh.run_cell("%config PaimonMagic")
    assert res.success and "displaylimit" in capsys.readouterr().out
    try:
        fresh.run_cell("%config PaimonMagic.autopandas = False")
        fresh.run_cell("%config PaimonMagic.feedback = False")
        res = fresh.run_cell("%%paimon\nINSERT INTO t VALUES (9, 'z');\nSELECT k FROM t WHERE k = 9")
        assert isinstance(res.result, pa.Table) and res.result.column("k").to_pylist() == [9]
        assert "inserted" not in capsys.readouterr().out
    finally:
        fresh.run_cell("%config PaimonMagic.autopandas = True")
        fresh.run_cell("%config PaimonMagic.feedback = True")
    fresh.run_cell("%config PaimonMagic.displaylimit = 'many'")  # traitlets refuses it
    assert magic.displaylimit == 10


def test_variables_become_quoted_literals(fresh):
    fresh.user_ns.update(wanted="b", low=1, flag=True, nothing=None, ids=[1, 3], tname="t")
    import datetime as dt

    fresh.user_ns["day"] = dt.date(2024, 5, 1)
    res = fresh.run_cell("%%paimon\nSELECT k FROM {{tname}} WHERE v = {wanted} OR k IN {ids} ORDER BY k")
    assert res.success, res.error_in_exec
    assert res.result["k"].tolist() == [1, 2, 3]
    res = fresh.run_cell("%paimon SELECT {low} AS a, {flag} AS b, {nothing} AS c, {day} AS d, '{wanted}' AS e")
    assert res.success, res.error_in_exec
    row = res.result.iloc[0]
    assert row["a"] == 1 and bool(row["b"]) is True and pd.isna(row["c"]) and str(row["d"]) == "2024-05-01"
    assert row["e"] == "{wanted}"  # inside a string literal: left alone

    def in_a_function():
        local_only = 3  # noqa: F841 (read by the magic from the caller frame)
        return fresh.run_line_magic("paimon", "SELECT v FROM t WHERE k = {local_only}")

    assert in_a_function().to_dict("list") == {"v": ["c"]}
    res = fresh.run_cell("%paimon SELECT {no_such_variable}")
    assert not res.success and "no variable 'no_such_variable'" in str(res.error_in_exec)
    assert res.error_in_exec.excerpt == "1 | SELECT {no_such_variable}\n  |        ^"


def test_injection_through_a_variable_changes_nothing(fresh):
    fresh.run_cell("%%paimon\nCREATE DATABASE db;\nCREATE TABLE db.t (k INT)")
    fresh.user_ns["evil"] = "x'; DROP TABLE db.t; --"
    res = fresh.run_cell("%%paimon\nINSERT INTO t VALUES (7, {evil});\nSELECT v FROM t WHERE k = 7")
    assert res.success, res.error_in_exec
    assert res.result["v"].tolist() == ["x'; DROP TABLE db.t; --"]
    res = fresh.run_cell("%paimon SELECT count(*) AS n FROM t WHERE v = {evil}")
    assert res.success and res.result["n"].tolist() == [1]
    fresh.user_ns["evil2"] = "a' OR '1'='1"
    res = fresh.run_cell("%paimon DELETE FROM t WHERE v = {evil2}")
    assert res.success
    assert fresh.run_cell("%paimon SELECT count(*) AS n FROM t").result["n"].tolist() == [4]
    # IPython's own {var} expansion of the line is off for %paimon: it would paste raw text
    res = fresh.run_cell("%paimon SELECT k FROM t WHERE v = {evil} OR k = 1")
    assert res.success and sorted(res.result["k"].tolist()) == [1, 7]
    assert fresh.run_cell("%paimon SHOW TABLES").result.iloc[:, 0].tolist() == ["t"]
    assert fresh.run_cell("%paimon SHOW TABLES IN db").result.iloc[:, 0].tolist() == ["t"]


def test_feedback_per_statement(fresh, capsys):
    res = fresh.run_cell("""%%paimon
CREATE TABLE t2 (k INT, v STRING);
CREATE TABLE IF NOT EXISTS t2 (k INT, v STRING);
INSERT INTO t2 SELECT k, v FROM t;
DELETE FROM t2 WHERE k > 1;
UPDATE t2 SET v = 'z' WHERE k = 1;
DROP TABLE t2;
SET 'table.local-time-zone' = 'UTC'
""")
    assert res.success, res.error_in_exec
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "created table lab.default.t2",
        "skipped CREATE TABLE lab.default.t2 (already exists)",
        "inserted 3 rows into lab.default.t2 — snapshot 1",
        "deleted 2 rows from lab.default.t2 — snapshot 2",
        "updated 1 row in lab.default.t2 — snapshot 3",
        "dropped table lab.default.t2",
        "set 'table.local-time-zone' = 'UTC'",
    ]
    res = fresh.run_cell("%%paimon --quiet\nINSERT INTO t VALUES (8, 'h')")
    assert res.success and capsys.readouterr().out == ""


def test_failure_half_way_says_what_ran(fresh, capsys):
    res = fresh.run_cell("%%paimon\nINSERT INTO t VALUES (10, 'j');\nINSERT INTO t VALUES (11, 'k');\n"
                         "SELECT * FROM missing;\nINSERT INTO t VALUES (12, 'l')")
    assert not res.success
    msg = str(res.error_in_exec)
    assert msg.startswith("statements 1-2 ran; statement 3 failed: SqlError:"), msg
    assert "missing" in msg and "line 3" in msg
    assert fresh.run_cell("%paimon SELECT count(*) AS n FROM t").result["n"].tolist() == [5]
    res = fresh.run_cell("%%paimon\nSELECT * FROM missing;\nSELECT 1")
    assert str(res.error_in_exec).startswith("statement 1 failed: ")
    res = fresh.run_cell("%%paimon\nSELECT * FROM missing")
    assert str(res.error_in_exec).startswith("SqlError: ")  # one statement: nothing to count


# ---------------------------------------------------------------------------------- errors a person can act on

def _shown(capsys) -> str:
    out = capsys.readouterr()
    return re.sub(r"\x1b\[[0-9;]*m", "", out.out + out.err)


def test_syntax_error_shows_line_column_and_caret(fresh, capsys):
    res = fresh.run_cell("%%paimon\nINSERT INTO t VALUES (4, 'd');\nSELECT k\n  FROM t WHERE k = = 3")
    assert not res.success and isinstance(res.error_in_exec, PaimonMagicError)
    text = _shown(capsys)
    first = next(line for line in text.split("\n") if "failed" in line)
    assert first == "statement 1 ran; statement 2 failed: SqlError: Syntax error: unexpected '=' (line 3, column 20)"
    assert "2 | SELECT k\n3 |   FROM t WHERE k = = 3\n  |                    ^" in text
    assert "Traceback" not in text and "sqlglot" in text  # its words in the details, after the caret
    assert text.index("^") < text.index("sqlglot")


def test_conversion_error_names_column_and_paimon_type(fresh, capsys):
    fresh.run_cell("%%paimon\nCREATE TABLE money (id INT, amount BIGINT)")
    res = fresh.run_cell("%%paimon\nINSERT INTO money VALUES (1, 'ten')")
    assert not res.success
    text = _shown(capsys)
    assert "Could not convert string 'ten' to BIGINT for column amount (row 1 of the rows written)" in text
    assert "1 | INSERT INTO money VALUES (1, 'ten')\n  |                              ^" in text
    summary = res.error_in_exec.message
    assert "c1" not in summary and "INT64" not in summary and "Traceback" not in text


def test_error_details_fold_in_a_notebook(fresh):
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        res = fresh.run_cell("%%paimon\nSELECT nope FROM t")
    assert not res.success
    html = [o.data["text/html"] for o in cap.outputs if "text/html" in o.data]
    assert len(html) == 1 and html[0].startswith("<details class='paimon-error-details'><summary>details</summary>")
    assert "DuckDB: Binder Error" in html[0] and "short_errors" in html[0]
    # a caught error shows no details: only a cell that failed on it does
    with capture_output() as cap:
        res = fresh.run_cell("try:\n    get_ipython().run_cell_magic('paimon', '', 'SELECT nope FROM t')\n"
                             "except Exception as e:\n    caught = e")
    assert res.success and not cap.outputs and isinstance(fresh.user_ns["caught"], PaimonMagicError)


def test_internal_errors_keep_their_traceback(fresh, capsys, monkeypatch):
    import paimon_lab.sql.session as session_module

    def broken(session, text):
        raise ZeroDivisionError("a bug of ours")

    monkeypatch.setattr(session_module, "dispatch", broken)
    res = fresh.run_cell("%%paimon\nSELECT 1")
    assert isinstance(res.error_in_exec, ZeroDivisionError)
    text = _shown(capsys)
    assert "Traceback" in text and "a bug of ours" in text and "broken" in text


def test_short_errors_off_shows_the_traceback(fresh, capsys):
    fresh.run_cell("%config PaimonMagic.short_errors = False")
    try:
        res = fresh.run_cell("%%paimon\nSELECT nope FROM t")
    finally:
        fresh.run_cell("%config PaimonMagic.short_errors = True")
    assert isinstance(res.error_in_exec, RuntimeError) and isinstance(res.error_in_exec.__cause__, SqlError)
    text = _shown(capsys)
    assert "Traceback" in text and "nope" in text


# ---------------------------------------------------------------------------------- completion

@pytest.fixture
def shop(fresh):
    res = fresh.run_cell("%%paimon\nCREATE DATABASE shop;\n"
                         "CREATE TABLE shop.orders (order_id BIGINT, customer STRING, total DECIMAL(10, 2))")
    assert res.success, res.error_in_exec
    return fresh


def completions(shell, text: str, cursor: int | None = None) -> list[tuple[str, str, str]]:
    """(text, type, replaced fragment) of IPython's completions at ``cursor`` (default: the end)."""
    from IPython.core.completer import provisionalcompleter

    cursor = len(text) if cursor is None else cursor
    with provisionalcompleter():
        found = list(shell.Completer.completions(text, cursor))
    return [(c.text, c.type, text[c.start:c.end]) for c in found]


def names(shell, text: str, cursor: int | None = None) -> list[str]:
    return [c[0] for c in completions(shell, text, cursor) if c[1] != "keyword"]


def test_complete_tables_databases_and_catalogs(shop):
    assert completions(shop, "%%paimon\nSELECT * FROM ")[:3] == [
        ("t", "table", ""), ("default", "database", ""), ("shop", "database", "")]
    assert ("lab", "catalog", "") in completions(shop, "%%paimon\nSELECT * FROM ")
    assert completions(shop, "%%paimon\nSELECT * FROM shop.or") == [("orders", "table", "or")]
    assert names(shop, "%%paimon\nSELECT * FROM lab.shop.") == ["orders"]
    assert names(shop, "%%paimon\nSELECT * FROM lab.") == ["default", "shop", "sys"]
    assert names(shop, "%%paimon\nSELECT 1;\nINSERT INTO shop.") == ["orders"]
    assert names(shop, "%%paimon\nSELECT * FROM t JOIN shop.") == ["orders"]
    assert names(shop, "%%paimon\nUPDATE ") [:1] == ["t"]
    assert names(shop, "%%paimon\nSELECT * FROM shop.orders, ") [:1] == ["t"]


def test_complete_system_tables_and_procedures(shop):
    assert completions(shop, "%%paimon\nSELECT * FROM t$sn") == [("snapshots", "system table", "sn")]
    assert "audit_log" in names(shop, "%%paimon\nSELECT * FROM shop.orders$")
    assert names(shop, "%%paimon\nCALL sys.create_") == ["create_branch", "create_tag", "create_tag_from_timestamp",
                                                           "create_tag_from_watermark"]
    assert completions(shop, "%%paimon\nCALL sys.expire_s") == [("expire_snapshots", "procedure", "expire_s")]
    assert "sys.compact" in names(shop, "%%paimon\nCALL ")


def test_complete_columns_in_context(shop):
    cell = "%%paimon\nSELECT o. FROM shop.orders o"
    assert completions(shop, cell, cell.index("o.") + 2) == [
        ("order_id", "column", ""), ("customer", "column", ""), ("total", "column", "")]
    assert names(shop, "%%paimon\nSELECT * FROM shop.orders WHERE cu") == ["customer"]
    assert names(shop, "%%paimon\nSELECT * FROM t JOIN shop.orders AS o ON o.order_id = t.") == ["k", "v"]
    cell = "%%paimon\nSELECT  FROM t"
    assert names(shop, cell, cell.index("  ") + 1) == ["k", "v"]
    assert names(shop, "%%paimon\nINSERT INTO shop.orders (") == ["order_id", "customer", "total"]
    assert names(shop, "%%paimon\nSELECT * FROM t$snapshots WHERE commit_k") == ["commit_kind"]
    assert ("SELECT", "keyword", "sel") in completions(shop, "%%paimon\nsel")


def test_complete_use_and_line_magic(shop):
    assert names(shop, "%%paimon\nUSE CATALOG ") == ["default_catalog", "lab"]
    assert names(shop, "%%paimon\nUSE sh") == ["shop"]
    assert names(shop, "%paimon SELECT * FROM shop.") == ["orders"]
    assert names(shop, "%paimon --out x SELECT * FROM shop.") == ["orders"]
    assert names(shop, "rows = 3\n%paimon result << SELECT * FROM t WHERE ") == ["k", "v"]
    # Python cells and the magic's own line keep IPython's completions
    assert "import" not in names(shop, "%%paimon\nimp")
    assert any(c[0] == "import" for c in completions(shop, "imp"))
    assert not [c for c in completions(shop, "%%paimon --ou") if c[1] in ("table", "column")]


def test_complete_through_a_kernel(tmp_path):
    """A Jupyter complete_request (what JupyterLab's Tab sends) to a real kernel."""
    jupyter_client = pytest.importorskip("jupyter_client")
    pytest.importorskip("ipykernel")

    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        setup = ("%load_ext paimon_lab\nimport paimon_lab\n"
                 f"paimon_lab.sql(\"CREATE CATALOG lab WITH ('type'='paimon', 'warehouse'='{tmp_path}')\")\n"
                 "paimon_lab.sql('USE CATALOG lab')\npaimon_lab.sql('CREATE TABLE orders (id INT, item STRING)')")
        reply = kc.execute_interactive(setup, timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        cell = "%%paimon\nSELECT it FROM orders"
        msg_id = kc.complete(cell, cell.index("it") + 2)
        reply = kc.get_shell_msg(timeout=60)
        assert reply["parent_header"]["msg_id"] == msg_id
        content = reply["content"]
        assert content["matches"][:1] == ["item"]
        assert (content["cursor_start"], content["cursor_end"]) == (cell.index("it"), cell.index("it") + 2)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
