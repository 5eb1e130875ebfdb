"""Tables: CREATE TABLE (Paimon tables from columns, LIKE or AS SELECT; format and object tables;
connector tables of the in-memory catalog), DROP TABLE / VIEW, TRUNCATE and ANALYZE."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.errors import PaimonLabError
from paimon_lab.sql.catalogs import MemTable
from paimon_lab.sql.clauses import (ColumnDef, TableDef, parse_options, parse_partitioned_by,
                                    parse_table_elements)
from paimon_lab.sql.datagen import DatagenSpec
from paimon_lab.sql.format_table import create_format_table
from paimon_lab.sql.lexer import TokenStream
from paimon_lab.sql.object_table import create_object_table
from paimon_lab.sql.rewrite import parse, rewrite
from paimon_lab.sql.schemas import create_paimon_table
from paimon_lab.sql.writing import write_rows

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext, Statement


def create(ctx: SessionContext, st: Statement) -> None:
    """CREATE [TEMPORARY] TABLE: a Paimon table (columns, LIKE or AS SELECT), a format or object
    table, or a connector table (datagen, print, blackhole) of the in-memory catalog."""
    ts = st.ts
    temporary = st.temporary
    d = parse_create_table(ts, temporary)
    cat, db, name = ctx.qualify(d.parts, error=ts.error_at(d.token))
    entry = ctx.catalog_entry(cat, ts.error_at(d.token))
    connector = d.options.get("connector")
    full = ctx.feedback.target = f"{cat}.{db}.{name}"
    if d.using is not None and d.using.lower() != "paimon":
        raise ts.error(f"USING {d.using}: only paimon tables can be created", d.token)
    if entry.kind == "memory" or temporary or (connector and connector.lower() != "paimon"):
        if connector is None or connector.lower() == "paimon":
            raise ts.error(f"'{cat}' is Flink's in-memory catalog: it holds connector tables ('connector'='datagen', "
                           "'print', 'blackhole') and views. Create a Paimon catalog (CREATE CATALOG c WITH "
                           "('type'='paimon', 'warehouse'='...')) and USE CATALOG c", d.token)
        if entry.kind == "paimon" and not temporary:
            raise ts.error(f"A Paimon catalog holds Paimon tables only; create the '{connector}' table in "
                           "default_catalog or as CREATE TEMPORARY TABLE", d.token)
        return _create_connector_table(ctx, ts, d, cat, db, name, entry)
    if d.as_query is not None and (d.like is not None):
        raise ts.error("CREATE TABLE cannot have both LIKE and AS", d.token)
    ttype = d.options.get("type", "table").lower()
    if ttype in ("format-table", "object-table"):
        fn = create_format_table if ttype == "format-table" else create_object_table
        return fn(ts, d, entry, db, name)
    if ttype == "materialized-table":
        raise ts.error("Create materialized tables with CREATE MATERIALIZED TABLE ... AS SELECT", d.token)
    if not entry.catalog.database_exists(db):
        raise ts.error(f"Database '{cat}.{db}' does not exist", d.token)
    if entry.get_view(db, name) is not None:
        raise ts.error(f"A view named '{full}' exists", d.token)
    if entry.catalog.table_exists(f"{db}.{name}"):
        if d.if_not_exists:
            ctx.feedback.note = "already exists"
            return None
        raise ts.error(f"Table '{full}' already exists", d.token)
    if d.like is not None:
        src = ctx.get_table(d.like[0], error=ts.error_at(d.like[1]))
        sch = src.schema
        if d.columns:
            raise ts.error("CREATE TABLE ... LIKE cannot add columns here; ALTER TABLE ADD them after", d.token)
        d.columns = [ColumnDef(f.name, f.type, f.description) for f in sch.fields]
        d.primary_keys = d.primary_keys or list(sch.primary_keys)
        d.partition_keys = d.partition_keys or list(sch.partition_keys)
        d.options = {**{k: v for k, v in sch.options.items() if k != "path"}, **d.options}
        d.comment = d.comment if d.comment is not None else sch.comment
    if d.as_query is not None:
        return _ctas(ctx, ts, d, entry, db, name)
    if not d.columns:
        raise ts.error("CREATE TABLE needs columns (or LIKE / AS SELECT)", d.token)
    create_paimon_table(ts, entry, db, name, d.columns, d.primary_keys, d.partition_keys, d.options,
                        d.comment, d.token)
    return None


def parse_create_table(ts: TokenStream, temporary: bool) -> TableDef:
    if_not_exists = ts.accept_kw("IF", "NOT", "EXISTS")
    parts, tok = ts.qualified_name()
    d = TableDef(parts, tok, if_not_exists, temporary)
    if ts.peek() is not None and ts.peek().is_op("("):
        # a column list, unless it is a parenthesized query for CTAS
        nxt = ts.peek(1)
        if not (nxt is not None and nxt.upper in ("SELECT", "WITH", "VALUES")):
            parse_table_elements(ts, d)
    while not ts.at_end():
        if ts.accept_kw("COMMENT"):
            d.comment = ts.string("a comment")
        elif ts.accept_kw("PARTITIONED", "BY"):
            parse_partitioned_by(ts, d)
        elif ts.accept_kw("WITH"):
            d.options.update(parse_options(ts))
        elif ts.accept_kw("TBLPROPERTIES") or ts.accept_kw("OPTIONS"):
            d.options.update(parse_options(ts))
        elif ts.accept_kw("USING"):
            d.using = ts.identifier("a table provider")
        elif ts.accept_kw("LOCATION"):
            d.options["path"] = ts.string("a location")
        elif ts.accept_kw("LIKE"):
            like_parts, like_tok = ts.qualified_name()
            d.like = (like_parts, like_tok)
            if ts.peek() is not None and ts.peek().is_op("("):
                ts.balanced()  # (INCLUDING ALL ...) like options: everything is copied
        elif ts.at_kw("AS"):
            ts.next()
            d.as_query = ts.i
            break
        else:
            raise ts.error(f"Unexpected '{ts.peek().text}' in CREATE TABLE")
    return d


def _create_connector_table(ctx, ts, d: TableDef, cat, db, name, entry):
    connector = (d.options.get("connector") or "").lower()
    fields = [T.DataField(i, c.name, c.type, c.comment) for i, c in enumerate(d.columns)]
    if not fields:
        raise ts.error("A connector table needs columns", d.token)
    schema = T.arrow_schema(fields)
    if connector == "datagen":
        mt = MemTable("datagen", schema, spec=DatagenSpec(name, fields, dict(d.options)), options=dict(d.options),
                      fields=fields, primary_keys=d.primary_keys)
        mt.spec.bound()  # validates sequence fields
    elif connector in ("print", "blackhole"):
        mt = MemTable(connector, schema, options=dict(d.options), fields=fields)
    else:
        raise ts.error(f"Connector '{connector}' is not available (datagen, print, blackhole are)", d.token)
    if d.temporary:
        key = (cat, db, name)
        if key in ctx.temporary:
            if d.if_not_exists:
                ctx.feedback.note = "already exists"
                return None
            raise ts.error(f"Temporary table '{cat}.{db}.{name}' already exists", d.token)
        ctx.temporary[key] = mt
        return None
    tables = entry.databases.get(db)
    if tables is None:
        raise ts.error(f"Database '{cat}.{db}' does not exist", d.token)
    if name in tables:
        if d.if_not_exists:
            ctx.feedback.note = "already exists"
            return None
        raise ts.error(f"Table '{cat}.{db}.{name}' already exists", d.token)
    tables[name] = mt
    return None


def _ctas(ctx, ts, d: TableDef, entry, db, name):
    rw = rewrite(ts.text, ts.tokens, d.as_query)
    ast = parse(rw)
    data = ctx.query(rw, ast)
    if d.columns:
        raise ts.error("CREATE TABLE ... AS SELECT takes its columns from the query", d.token)
    columns = []
    for f in data.schema:
        try:
            dtype = T.from_arrow(f.type, True)
        except PaimonLabError:
            if pa.types.is_null(f.type):
                dtype = T.parse_type("STRING")
            else:
                raise ts.error(f"Column '{f.name}' of type {f.type} cannot be stored", d.token) from None
        columns.append(ColumnDef(f.name, dtype))
    table = create_paimon_table(ts, entry, db, name, columns, d.primary_keys, d.partition_keys,
                                d.options, d.comment, d.token)
    try:
        write_rows(ctx, table, data)
        ctx.feedback.add_rows(data.num_rows)
    except BaseException:
        entry.catalog.drop_table(f"{db}.{name}", ignore_if_not_exists=True)
        raise
    return None


def drop(ctx: SessionContext, st: Statement) -> None:
    """DROP [TEMPORARY] [MATERIALIZED] TABLE | VIEW [IF EXISTS] t [PURGE]."""
    ts = st.ts
    temporary = st.temporary
    is_view = st.kind == "DROP VIEW"
    if_exists = ts.accept_kw("IF", "EXISTS")
    parts, tok = ts.qualified_name()
    ts.accept_kw("PURGE")
    ts.expect_end()
    cat, db, name = ctx.qualify(parts, error=ts.error_at(tok))
    entry = ctx.catalog_entry(cat, ts.error_at(tok))
    full = ctx.feedback.target = f"{cat}.{db}.{name}"
    if entry.kind == "memory" or (temporary and (cat, db, name) in ctx.temporary):
        store = ctx.temporary if temporary and (cat, db, name) in ctx.temporary else \
            entry.databases.get(db, {}) if entry.kind == "memory" else {}
        key = (cat, db, name) if store is ctx.temporary else name
        mt = store.get(key)
        if mt is None or (is_view != (mt.kind == "view")):
            if if_exists:
                ctx.feedback.note = "does not exist"
                return None
            raise ts.error(f"{'View' if is_view else 'Table'} '{full}' does not exist", tok)
        store.pop(key)
        return None
    if is_view:
        view = entry.get_view(db, name) if entry.catalog.database_exists(db) else None
        if view is None:
            if if_exists:
                ctx.feedback.note = "does not exist"
                return None
            raise ts.error(f"View '{full}' does not exist", tok)
        entry.drop_view(db, name)
        return None
    if not entry.catalog.table_exists(f"{db}.{name}"):
        if if_exists:
            ctx.feedback.note = "does not exist"
            return None
        raise ts.error(f"Table '{full}' does not exist", tok)
    ctx.stop_refresh(cat, db, name)  # a materialized table's timer, if any
    entry.catalog.drop_table(f"{db}.{name}")
    return None


def truncate(ctx: SessionContext, st: Statement) -> None:
    """TRUNCATE [TABLE] t: delete every row (one commit)."""
    ts = st.ts
    parts, tok = ts.qualified_name()
    ts.expect_end()
    table = ctx.get_table(parts, error=ts.error_at(tok))
    ctx.feedback.target = ".".join(ctx.qualify(parts))
    ctx.last_snapshot_id = table.delete()
    return None


def analyze(ctx: SessionContext, st: Statement) -> None:
    """ANALYZE TABLE t COMPUTE STATISTICS [FOR COLUMNS a, b | FOR ALL COLUMNS]."""
    ts = st.ts
    parts, tok = ts.qualified_name()
    ts.expect_kw("COMPUTE", "STATISTICS")
    columns: list[str] | None = []
    if ts.accept_kw("FOR", "ALL", "COLUMNS"):
        columns = None
    elif ts.accept_kw("FOR", "COLUMNS"):
        columns = [ts.identifier("a column name")]
        while ts.accept_op(","):
            columns.append(ts.identifier("a column name"))
    ts.expect_end()
    table = ctx.get_table(parts, error=ts.error_at(tok))
    ctx.feedback.target = ".".join(ctx.qualify(parts))
    ctx.last_snapshot_id = table.analyze(columns)
    return None
