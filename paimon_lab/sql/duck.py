"""DuckDB, where queries run: a locked-down connection, Arrow results, and DuckDB errors as
positioned SqlErrors."""

from __future__ import annotations

import re

import pyarrow as pa

from paimon_lab.sql.errors import SqlError, position

EXTERNAL_ACCESS = "duckdb.enable_external_access"   # SET it to 'true' for read_csv and friends


def connect(external_access: bool = False):
    """A fresh DuckDB connection (UTC session time zone, no implicit Python-variable scans, and no
    access to files or the network unless ``external_access``: SQL in a notebook reads Paimon
    tables, not ``read_csv('/etc/passwd')``). The configuration is locked against SET."""
    try:
        import duckdb
    except ImportError:  # pragma: no cover
        raise SqlError("SQL queries need DuckDB: pip install duckdb") from None
    con = duckdb.connect()
    for setting in ("SET TimeZone = 'UTC'", "SET python_enable_replacements = false"):
        try:
            con.execute(setting)
        except Exception:  # pragma: no cover - older DuckDB / no ICU
            pass
    if not external_access:
        con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def fetch_arrow(con, sql: str) -> pa.Table:
    rel = con.sql(sql)
    if rel is None:
        return pa.table({})
    for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):
        fn = getattr(rel, name, None)
        if fn is not None:
            out = fn()
            return out.read_all() if isinstance(out, pa.RecordBatchReader) else out
    raise SqlError("Unsupported DuckDB version")  # pragma: no cover


def duckdb_error(e: Exception, statement: str) -> SqlError:
    text = str(e)
    lines = [ln for ln in text.split("\n") if ln.strip()]
    head = lines[0] if lines else text
    head = re.sub(r"__t\d+", "table", head)
    head = head.replace('"__target"', "target")
    extra = [ln for ln in lines[1:3] if ln.startswith("Candidate") or ln.startswith("Did you mean")]
    msg = head + ("; " + extra[0] if extra else "")
    m = re.search(r'"([^"]+)"', head)
    line = col = None
    if m:
        found = re.search(r"(?<![A-Za-z0-9_])`?" + re.escape(m.group(1)) + r"`?(?![A-Za-z0-9_])", statement)
        if found:
            line, col = position(statement, found.start())
    return SqlError(msg, line, col, statement)
