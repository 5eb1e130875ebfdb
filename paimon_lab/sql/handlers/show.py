"""SHOW statements: catalogs, the current catalog and database, databases, tables and views
(with LIKE patterns), CREATE TABLE / VIEW text, partitions and table properties."""

from __future__ import annotations

import datetime as dt
import fnmatch
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.system import GLOBAL_SYSTEM_TABLES
from paimon_lab.sql.catalogs import memory_table
from paimon_lab.sql.common import db_name, statement_text, text_table
from paimon_lab.sql.lexer import TokenStream
from paimon_lab.sql.materialized_table import MT, last_refresh_millis, show_create_materialized
from paimon_lab.sql.spelling import create_table_sql, quote, sql_string, type_sql

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext, Statement


def catalogs(ctx: SessionContext, st: Statement) -> pa.Table:
    """SHOW CATALOGS."""
    st.ts.expect_end()
    return text_table(catalog_name=sorted(ctx.catalogs))


def current_catalog(ctx: SessionContext, st: Statement) -> pa.Table:
    """SHOW CURRENT CATALOG."""
    return text_table(**{"current catalog name": [ctx.current.catalog]})


def current_database(ctx: SessionContext, st: Statement) -> pa.Table:
    """SHOW CURRENT DATABASE."""
    return text_table(**{"current database name": [ctx.current.database]})


def databases(ctx: SessionContext, st: Statement) -> pa.Table:
    """SHOW DATABASES [FROM c] [LIKE 'pattern']."""
    ts = st.ts
    cat = ctx.current.catalog
    if ts.accept_kw("FROM") or ts.accept_kw("IN"):
        cat = ts.identifier("a catalog name")
    pattern = _like(ts)
    entry = ctx.catalog_entry(cat, ts.error_at())
    names = sorted(entry.databases) if entry.kind == "memory" else entry.catalog.list_databases()
    return text_table(database_name=_filter(names, pattern))


def tables(ctx: SessionContext, st: Statement) -> pa.Table:
    """SHOW TABLES | VIEWS [FROM [c.]db] [LIKE 'pattern']."""
    ts = st.ts
    views = st.kind == "SHOW VIEWS"
    cat, db = ctx.current.catalog, ctx.current.database
    if ts.accept_kw("FROM") or ts.accept_kw("IN"):
        parts, tok = ts.qualified_name("a database name")
        cat, db = db_name(ctx, parts, ts, tok)
    pattern = _like(ts)
    entry = ctx.catalog_entry(cat, ts.error_at())
    temp = sorted(n for (c, d, n), mt in ctx.temporary.items()
                  if c == cat and d == db and (mt.kind == "view") == views)
    if entry.kind == "memory":
        names = sorted(n for n, mt in entry.databases.get(db, {}).items() if (mt.kind == "view") == views)
    elif db.lower() == "sys":
        names = [] if views else list(GLOBAL_SYSTEM_TABLES)
    else:
        if not entry.catalog.database_exists(db):
            raise ts.error(f"Database '{cat}.{db}' does not exist")
        names = entry.list_views(db) if views else entry.catalog.list_tables(db)
    col = "view name" if views else "table name"
    return text_table(**{col: _filter(sorted(set(names) | set(temp)), pattern)})


def create(ctx: SessionContext, st: Statement) -> pa.Table:
    """SHOW CREATE TABLE | VIEW t."""
    ts = st.ts
    is_view = ts.accept_kw("VIEW")
    if not is_view:
        ts.accept_kw("MATERIALIZED")
        ts.expect_kw("TABLE")
    parts, tok = ts.qualified_name()
    ts.expect_end()
    cat, db, name = ctx.qualify(parts, error=ts.error_at(tok))
    entry = ctx.catalog_entry(cat, ts.error_at(tok))
    full = f"{quote(cat)}.{quote(db)}.{quote(name)}"
    view = None
    mt = memory_table(ctx.temporary, entry, cat, db, name)
    if mt is not None:
        if mt.kind == "view":
            view = mt.view
        elif not is_view:
            cols = ",\n".join(f"  {quote(f.name)} {type_sql(f.type)}" for f in mt.fields)
            opts = ",\n".join(f"  {sql_string(k)} = {sql_string(v)}" for k, v in sorted(mt.options.items()))
            return statement_text(f"CREATE TEMPORARY TABLE {full} (\n{cols}\n) WITH (\n{opts}\n)")
    elif entry.kind == "paimon":
        view = entry.get_view(db, name) if entry.catalog.database_exists(db) else None
    if is_view or view is not None:
        if view is None:
            raise ts.error(f"View '{cat}.{db}.{name}' does not exist", tok)
        text = f"CREATE VIEW {full}"
        if view.columns:
            text += " (" + ", ".join(quote(c) for c in view.columns) + ")"
        if view.comment:
            text += f" COMMENT {sql_string(view.comment)}"
        return statement_text(text + f" AS\n{view.query}")
    table = ctx.get_table([cat, db, name], error=ts.error_at(tok))
    schema = table.schema
    if schema.options.get("type") == "materialized-table":
        return statement_text(show_create_materialized(full, schema))
    return statement_text(create_table_sql(full, schema))


def partitions(ctx: SessionContext, st: Statement) -> pa.Table:
    """SHOW PARTITIONS t."""
    ts = st.ts
    parts, tok = ts.qualified_name()
    table = ctx.get_table(parts, error=ts.error_at(tok))
    if not table.partition_keys:
        raise ts.error(f"Table '{table.identifier}' is not partitioned", tok)
    data = table.to_arrow(columns=table.partition_keys)
    rows = sorted({tuple(r.values()) for r in data.to_pylist()}, key=lambda r: tuple(str(x) for x in r))
    text = ["/".join(f"{k}={v}" for k, v in zip(table.partition_keys, r)) for r in rows]
    return text_table(partition=text)


def properties(ctx: SessionContext, st: Statement) -> pa.Table:
    """SHOW TBLPROPERTIES t."""
    ts = st.ts
    parts, tok = ts.qualified_name()
    table = ctx.get_table(parts, error=ts.error_at(tok))
    props = dict(table.options)
    if props.get("type") == "materialized-table":
        last = last_refresh_millis(table)
        if last is not None:  # derived from the snapshots, shown with the stored state
            props[MT + "last-refresh-time"] = dt.datetime.fromtimestamp(
                last / 1000, ctx.local_tz()).isoformat(sep=" ", timespec="milliseconds")
    items = sorted(props.items())
    return text_table(key=[k for k, _ in items], value=[v for _, v in items])


def _like(ts: TokenStream) -> str | None:
    if ts.accept_kw("LIKE") or ts.accept_kw("ILIKE"):
        return ts.string("a LIKE pattern")
    return None


def _filter(names: list[str], pattern: str | None) -> list[str]:
    if pattern is None:
        return list(names)
    glob = pattern.replace("*", "\x00").replace("%", "*").replace("_", "?").replace("\x00", "*")
    return [n for n in names if fnmatch.fnmatchcase(n, glob)]
