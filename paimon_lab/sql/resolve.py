"""Name resolution for queries: what a table name reads in a scope — a temporary or in-memory
table, a registered or generated Arrow table, a view (expanded by the planner), a global or
per-table system table, a format table, or a Paimon table at a snapshot / tag / time or over an
incremental range (OPTIONS hints and FOR VERSION/TIMESTAMP AS OF)."""

from __future__ import annotations

import datetime as dt
import difflib
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa
from sqlglot import exp

from paimon_lab import system as st
from paimon_lab.catalog.system_tables import catalog_system_table
from paimon_lab.errors import PaimonLabError
from paimon_lab.operation.scan import incremental_bounds, machine_zone_millis, timestamp_range
from paimon_lab.system.row_tables import binlog, binlog_schema
from paimon_lab.sql.catalogs import SYSTEM_DB, Scope, ViewDef, memory_table
from paimon_lab.sql.duck import connect, fetch_arrow
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.format_table import FormatTableRelation
from paimon_lab.sql.materialized_table import ensure_scheduled
from paimon_lab.sql.relations import (ArrowRelation, ChangesRelation, FunctionRelation, PaimonRelation,
                                      Relation)
from paimon_lab.sql.rewrite import Rewritten, parse, rewrite
from paimon_lab.sql.spelling import quote

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext


def _did_you_mean(catalog, db: str, name: str) -> str:
    """The database's table whose name is nearest to a missing ``name``, as a hint ('' if none is)."""
    try:
        names = catalog.list_tables(db)
    except PaimonLabError:
        return ""
    near = difflib.get_close_matches(name, names, n=1) or \
        [n for n in names if n.lower() == name.lower()]  # a case slip of a short name
    return f"; did you mean '{near[0]}'?" if near else ""


def lookup(ctx: SessionContext, parts: list[str], scope: Scope, *, options: dict[str, str] | None = None,
           version: exp.Version | None = None, error: Callable[[str], SqlError]) -> Relation | ViewDef:
    """What a table name of a query reads: a relation, or a view to expand."""
    options = options or {}
    cat, db, name = ctx.qualify(parts, scope, error)
    entry = ctx.catalog_entry(cat, error)
    full = f"{cat}.{db}.{name}"
    mt = memory_table(ctx.temporary, entry, cat, db, name)
    if mt is None and entry.kind == "memory":
        raise error(f"Table '{full}' does not exist")
    if mt is not None:
        if mt.kind == "view":
            return mt.view
        if mt.kind == "data":
            return ArrowRelation(full, mt.data)
        if mt.kind == "datagen":
            spec = mt.spec
            return FunctionRelation(full, spec.schema,
                                    lambda: spec.generate(ctx.datagen_total(spec, error), ctx.seed()), datagen=spec)
        raise error(f"Table '{full}' is a '{mt.options.get('connector')}' sink and cannot be read")
    catalog = entry.catalog
    if db.lower() == SYSTEM_DB:
        if name.lower() not in st.GLOBAL_SYSTEM_TABLES:
            raise error(f"Unknown system table 'sys.{name}'; known are {list(st.GLOBAL_SYSTEM_TABLES)}")
        return ArrowRelation(f"{cat}.sys.{name}", lambda: catalog_system_table(catalog, name.lower()))
    system = None
    base = name
    if "$" in name:
        try:
            base_id, system = st.parse_system_identifier(f"{quote(db)}.{quote(name)}")
        except PaimonLabError as e:
            raise error(str(e)) from None
        base = base_id.split(".", 1)[1]
    if system is None and "$" not in name:
        view = entry.get_view(db, name) if catalog.database_exists(db) else None
        if view is not None:
            if options or version is not None:
                raise error(f"'{full}' is a view; time travel and OPTIONS apply to tables")
            return view
    if not catalog.database_exists(db):
        raise error(f"Database '{cat}.{db}' does not exist")
    try:
        table = catalog.get_table(f"{db}.{base}")
    except PaimonLabError:
        raise error(f"Table '{full}' does not exist{_did_you_mean(catalog, db, base)}") from None
    if options.get("branch"):
        table = table.on_branch(options["branch"])
    dynamic = {k: v for k, v in options.items() if k != "branch"}
    version_text = dynamic.pop("scan.version", None)
    if version_text is not None:  # Java's copy travels first: a tag of that name, else a snapshot id
        key = "scan.tag-name" if table.tag_manager.exists(version_text) or not version_text.strip().isdigit() \
            else "scan.snapshot-id"
        dynamic[key] = version_text
    try:  # the read sees Java's copy of the table with the hint's options
        table = table.copy(dynamic) if dynamic else table
    except PaimonLabError as e:
        raise error(f"OPTIONS hint on '{full}': {e}") from None
    ttype = table.options.get("type", "table")
    if ttype == "materialized-table" and system is None and not options.get("branch"):
        ensure_scheduled(ctx, cat, db, base, table)
    if ttype == "format-table":
        if system:
            raise error("Format tables have no system tables")
        return FormatTableRelation(table, full)
    scan = _scan_target(ctx, table, options, version, error)
    if scan.get("empty"):
        if system is not None:
            raise error(f"Table {table.identifier} has no snapshot at or before "
                        f"{scan['at']['timestamp_millis']} for system table '{system}'")
        return ArrowRelation(full, lambda: table.schema.arrow_schema().empty_table())
    if system is not None:
        if system == "ro":
            return PaimonRelation(table, read_optimized=True, label=full, **scan["at"])
        if scan.get("incremental"):
            if system not in ("audit_log", "binlog"):
                raise error(f"'incremental-between' does not apply to system table '{system}'")
            start, end = scan["incremental"]
            mode = scan.get("incremental_mode")

            def incremental_log() -> pa.Table:
                audit = table.incremental_changes(start, end, mode=mode)
                return audit if system == "audit_log" else binlog(audit, binlog_schema(table.store), True)

            return ArrowRelation(full, incremental_log)
        at = scan["at"]
        kwargs = {}
        if at.get("snapshot_id") is not None:
            kwargs["snapshot_id"] = at["snapshot_id"]
        elif at.get("tag") is not None:
            kwargs["tag"] = at["tag"]
        elif at.get("timestamp_millis") is not None:
            snap = table.snapshot(timestamp_millis=at["timestamp_millis"])
            kwargs["snapshot_id"] = snap.id
        if kwargs and system not in st.TIME_TRAVEL_TABLES:
            raise error(f"System table '{system}' does not read a snapshot; time travel does not apply")
        return ArrowRelation(full, lambda: table.system(system, **kwargs))
    if scan.get("incremental"):
        start, end = scan["incremental"]
        return ChangesRelation(table, start, end, label=full, mode=scan.get("incremental_mode"))
    return PaimonRelation(table, label=full, **scan["at"])

def _scan_target(ctx: SessionContext, table, options: dict[str, str], version, error) -> dict:
    """Snapshot / tag / time / incremental range from scan options and time-travel clauses."""
    at: dict[str, Any] = {}
    out: dict[str, Any] = {"at": at}
    o = options

    mode = o.get("incremental-between-scan-mode")   # its value was checked with the table's copy
    if mode is not None:
        if "incremental-between" not in o and "incremental-between-timestamp" not in o:
            raise error("'incremental-between-scan-mode' needs 'incremental-between' or 'incremental-between-timestamp'")
        out["incremental_mode"] = mode.strip().lower()
    for key, bounds in (("incremental-between", incremental_bounds),
                        ("incremental-between-timestamp", timestamp_range)):
        if key in o:
            try:
                out["incremental"] = bounds(table.store, o[key])
            except PaimonLabError as e:
                raise error(str(e)) from None
            return out
    mode = o.get("scan.mode", "default").lower()
    if "scan.snapshot-id" in o:
        at["snapshot_id"] = int(o["scan.snapshot-id"])
    if "scan.tag-name" in o:
        at["tag"] = o["scan.tag-name"]
    if "scan.timestamp-millis" in o:
        at["timestamp_millis"] = int(o["scan.timestamp-millis"])
    if "scan.timestamp" in o:  # Java parses it in the JVM's default zone, not the session's
        try:
            at["timestamp_millis"] = machine_zone_millis(o["scan.timestamp"])
        except PaimonLabError as e:
            raise error(str(e)) from None
    if "scan.version" in o:
        v = o["scan.version"]
        if v.isdigit():
            at["snapshot_id"] = int(v)
        else:
            at["tag"] = v
    if mode == "compacted-full":
        compacted = [s for s in table.snapshots() if s.commit_kind == "COMPACT"]
        if not compacted:
            raise error(f"scan.mode 'compacted-full': table {table.identifier} has no COMPACT snapshot")
        at["snapshot_id"] = compacted[-1].id
    elif mode not in ("default", "latest-full", "full", "latest", "from-snapshot", "from-snapshot-full",
                      "from-timestamp", "incremental"):
        raise error(f"Unknown scan.mode '{mode}'")
    if version is not None:
        kind = str(version.name or version.this or "").upper()
        value = _eval_constant(version.args.get("expression"), error)
        if kind == "VERSION":
            if isinstance(value, (int, float)) or str(value).isdigit():
                at["snapshot_id"] = int(value)
            else:
                at["tag"] = str(value)
        else:
            if isinstance(value, dt.datetime):
                v = value if value.tzinfo else value.replace(tzinfo=ctx.local_tz())
                at["timestamp_millis"] = int(v.timestamp() * 1000)
            elif isinstance(value, (int, float)):
                at["timestamp_millis"] = int(value)
            else:
                at["timestamp_millis"] = ctx.parse_timestamp(str(value))
    if len([k for k in ("snapshot_id", "tag", "timestamp_millis") if at.get(k) is not None]) > 1:
        raise error("Give one time-travel target: a snapshot id, a tag or a timestamp")
    try:
        if at.get("timestamp_millis") is not None and at.get("snapshot_id") is None and at.get("tag") is None \
                and table.snapshot_manager.earlier_or_equal_time(at["timestamp_millis"]) is None:
            out["empty"] = True  # no snapshot at or before that time: Java reads no rows
        elif at:
            snap = table.snapshot(**at)
            if snap is None:
                raise error(f"Table {table.identifier} has no snapshot to read")
    except SqlError:
        raise
    except PaimonLabError as e:
        raise error(str(e)) from None
    return out


def view_ast(view: ViewDef, error: Callable[[str], SqlError]) -> tuple[exp.Expression, Rewritten]:
    """The parsed query of a view (a parse error names the view)."""
    rw = rewrite(view.query)
    try:
        return parse(rw), rw
    except SqlError as e:
        raise error(f"View '{view.catalog}.{view.database}.{view.name}' does not parse: {e.reason}") from None


def _eval_constant(node, error) -> Any:
    """The value of a constant expression (literal, TIMESTAMP '...', or anything DuckDB evaluates)."""
    if node is None:
        raise error("Expected a value after AS OF")
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else (float(node.this) if "." in node.this else int(node.this))
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        return node.this.this
    con = connect()
    try:
        value = fetch_arrow(con, f"SELECT {node.sql(dialect='duckdb')} AS v").column(0)[0].as_py()
    except Exception as e:
        raise error(f"Cannot evaluate '{node.sql()}': {e}") from None
    finally:
        con.close()
    return value
