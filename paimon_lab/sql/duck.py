"""DuckDB, where queries run: a locked-down connection, Arrow results, and DuckDB errors as
positioned SqlErrors."""

from __future__ import annotations

import contextvars
import re
import threading

import pyarrow as pa

from paimon_lab.sql.errors import SqlError, position

EXTERNAL_ACCESS = "duckdb.enable_external_access"   # SET it to 'true' for read_csv and friends
LOCAL_TIME_ZONE = "table.local-time-zone"


# The session's 'table.local-time-zone' as a DuckDB (ICU) zone name, set by the session around each
# statement: every connection the statement opens (its query, the casts of the rows it writes,
# a constant it evaluates) must convert TIMESTAMP <-> TIMESTAMP_LTZ, parse strings and read the
# clock in that zone, and threading the zone through each of those calls would touch them all.
session_time_zone: contextvars.ContextVar[str | None] = contextvars.ContextVar("session_time_zone", default=None)

_DATABASES: dict[tuple[bool, str], object] = {}  # (external_access, zone) -> a locked in-memory database
_LOCK = threading.Lock()
_HOST_ZONE: list[str] = []
_UTC_ALIASES = {"Etc/UTC", "Etc/UCT", "Etc/Universal", "Etc/Zulu", "UCT", "Universal", "Zulu", "GMT", "Etc/GMT",
                "Etc/GMT0", "GMT0", "Greenwich", "Etc/Greenwich"}


def host_time_zone() -> str:
    """The machine's time zone as DuckDB names it (Flink's default 'table.local-time-zone')."""
    if not _HOST_ZONE:
        import duckdb  # heavy, imported when a query runs

        con = duckdb.connect()
        try:
            name = con.sql("SELECT current_setting('TimeZone')").fetchall()[0][0] or "UTC"
            _HOST_ZONE.append("UTC" if name in _UTC_ALIASES else name)
        except duckdb.Error:  # pragma: no cover - DuckDB without ICU
            _HOST_ZONE.append("UTC")
        finally:
            con.close()
    return _HOST_ZONE[0]


def connect(external_access: bool = False):
    """A fresh DuckDB connection (session time zone: :data:`session_time_zone`, else the machine's;
    no implicit Python-variable scans, and no access to files or the network unless
    ``external_access``: SQL in a notebook reads Paimon tables, not ``read_csv('/etc/passwd')``).
    The configuration is locked against SET.

    Opening a DuckDB database costs tens of milliseconds, so each process keeps one locked
    in-memory database per setting and zone and hands out a new connection to it (``cursor()``, a
    few microseconds): what a query registers is visible to its own connection only."""
    try:
        import duckdb
    except ImportError:  # pragma: no cover
        raise SqlError("SQL queries need DuckDB: pip install duckdb") from None
    zone = session_time_zone.get() or host_time_zone()
    with _LOCK:
        base = _DATABASES.get((external_access, zone))
        if base is None:
            base = duckdb.connect()
            try:
                base.execute(f"SET GLOBAL TimeZone = '{zone.replace(chr(39), '')}'")
            except duckdb.Error:
                raise SqlError(f"Unknown time zone '{zone}' in table.local-time-zone (DuckDB {duckdb.__version__}; "
                               "offsets that are not whole hours need DuckDB 1.5 or later)") from None
            base.execute("SET GLOBAL python_enable_replacements = false")
            if not external_access:
                base.execute("SET enable_external_access = false")
            base.execute("SET lock_configuration = true")
            _DATABASES[(external_access, zone)] = base
        return base.cursor()


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


# DuckDB's physical type names in its messages -> Paimon's type names
_PAIMON_TYPES = {"BOOL": "BOOLEAN", "INT8": "TINYINT", "INT16": "SMALLINT", "INT32": "INT", "INTEGER": "INT",
                 "INT64": "BIGINT", "HUGEINT": "DECIMAL(38, 0)", "INT128": "DECIMAL(38, 0)", "VARCHAR": "STRING",
                 "BLOB": "BYTES", "TIMESTAMP_S": "TIMESTAMP(0)", "TIMESTAMP_MS": "TIMESTAMP(3)",
                 "TIMESTAMP_NS": "TIMESTAMP(9)", "TIMESTAMP WITH TIME ZONE": "TIMESTAMP_LTZ",
                 "INTEGER_LITERAL": "INT literal", "STRING_LITERAL": "STRING literal"}
_TYPE_WORDS = re.compile(r"(?<![\w'\"])(" + "|".join(sorted(map(re.escape, _PAIMON_TYPES), key=len, reverse=True))
                         + r")(?![\w'\"])")
_SIGNATURE = re.compile(r"'[^'(]*\([A-Z0-9_, ()\[\]]*\)'")  # "argument types '+(INTEGER, VARCHAR)'"
_CAST_COLUMN = re.compile(r" when casting from source column (\w+)")
_CAST_TARGET = re.compile(r"(\bto (?:the destination type )?)([A-Z][A-Z0-9_]*(?:\([0-9, ]+\))?)")


def paimon_type_names(message: str) -> str:
    """``message`` with DuckDB's type names (INT64, VARCHAR, ...) as Paimon's (BIGINT, STRING, ...),
    outside quoted values (a quoted function signature is types, so it is renamed too)."""
    parts = re.split(r"('[^']*'|\"[^\"]*\")", message)
    signature = [i % 2 == 1 and parts[i - 1].rstrip().endswith("types") and _SIGNATURE.fullmatch(p) is not None
                 for i, p in enumerate(parts)]
    return "".join(p if i % 2 and not signature[i] else _TYPE_WORDS.sub(lambda m: _PAIMON_TYPES[m.group(1)], p)
                   for i, p in enumerate(parts))


def duckdb_error(e: Exception, statement: str, columns: dict[str, tuple[str, str]] | None = None) -> SqlError:
    """A DuckDB error as a SqlError in the statement's terms: ``columns`` maps the internal column
    names of a cast (``c2``) to the user's column and its Paimon type (``("amount", "BIGINT")``);
    DuckDB's type names become Paimon's; the position is that of the name or value it quotes."""
    text = str(e)
    lines = [ln for ln in text.split("\n") if ln.strip()]
    head = lines[0] if lines else text
    head = re.sub(r"__t\d+", "table", head)
    head = head.replace('"__target"', "target")
    head = paimon_type_names(head)
    cast = _CAST_COLUMN.search(head)
    if cast and columns and cast.group(1) in columns:
        name, type_text = columns[cast.group(1)]
        before = head[:cast.start()]
        targets = list(_CAST_TARGET.finditer(before))
        if targets:  # the destination type is the last one named before the column
            t = targets[-1]
            before = before[:t.start(2)] + type_text + before[t.end(2):]
        head = before + f" for column {name}" + head[cast.end():]
    extra = [ln for ln in lines[1:3] if ln.startswith(("Candidate", "Did you mean"))]
    msg = head + ("; " + extra[0] if extra else "")
    line = col = None
    for m in re.finditer(r"'([^']+)'|\"([^\"]+)\"", head):
        if m.group(1) is not None:  # a quoted value: find the literal
            found = re.search(re.escape("'" + m.group(1).replace("'", "''") + "'"), statement)
        else:  # a quoted name
            found = re.search(r"(?<![A-Za-z0-9_])`?" + re.escape(m.group(2)) + r"`?(?![A-Za-z0-9_])", statement)
        if found:
            line, col = position(statement, found.start())
            break
    return SqlError(msg, line, col, statement, detail=f"DuckDB: {text.strip()}")
