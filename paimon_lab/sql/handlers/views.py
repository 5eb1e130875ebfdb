"""Views: CREATE VIEW and ALTER VIEW (AS <query> | RENAME TO) — temporary, in the in-memory
catalog, or stored in a Paimon catalog; the query must resolve when the view is defined."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.errors import PaimonLabError
from paimon_lab.sql.catalogs import MemTable, ViewDef
from paimon_lab.sql.clauses import parse_name_list
from paimon_lab.sql.common import QUERY_TYPES, rename_scope
from paimon_lab.sql.lexer import Token, TokenStream
from paimon_lab.sql.rewrite import parse, rewrite

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext, Statement


def create(ctx: SessionContext, st: Statement) -> None:
    """CREATE [OR REPLACE] [TEMPORARY] VIEW [IF NOT EXISTS] v [(columns)] [COMMENT ...] AS <query>."""
    ts, temporary, or_replace = st.ts, st.temporary, st.or_replace
    if_not_exists = ts.accept_kw("IF", "NOT", "EXISTS")
    parts, tok = ts.qualified_name("a view name")
    columns = None
    if ts.peek() is not None and ts.peek().is_op("("):
        columns = parse_name_list(ts)
    comment = None
    if ts.accept_kw("COMMENT"):
        comment = ts.string()
    ts.expect_kw("AS")
    query_text = ts.rest_text().strip()
    schema = _view_schema(ctx, ts, columns, tok)  # every name must resolve now
    cat, db, name = ctx.qualify(parts, error=ts.error_at(tok))
    entry = ctx.catalog_entry(cat, ts.error_at(tok))
    view = ViewDef(cat, db, name, query_text, ctx.current, columns, comment)
    full = ctx.feedback.target = f"{cat}.{db}.{name}"
    if temporary or entry.kind == "memory":
        store = entry.databases.get(db) if entry.kind == "memory" and not temporary else None
        key = name if store is not None else (cat, db, name)
        store = store if store is not None else ctx.temporary
        if key in store and not or_replace:
            if if_not_exists:
                ctx.feedback.note = "already exists"
                return None
            raise ts.error(f"View '{full}' already exists", tok)
        store[key] = MemTable("view", view=view)
        return None
    if not entry.catalog.database_exists(db):
        raise ts.error(f"Database '{cat}.{db}' does not exist", tok)
    if entry.catalog.table_exists(f"{db}.{name}"):
        raise ts.error(f"A table named '{full}' exists", tok)
    exists = entry.get_view(db, name) is not None
    if exists and not or_replace:
        if if_not_exists:
            ctx.feedback.note = "already exists"
            return None
        raise ts.error(f"View '{full}' already exists", tok)
    try:
        entry.put_view(view, schema, exists=exists)
    except PaimonLabError as e:
        raise ts.error(f"Cannot store view '{full}': {e}", tok) from None
    return None


def alter(ctx: SessionContext, st: Statement) -> None:
    """ALTER VIEW v AS <query> | ALTER VIEW v RENAME TO w."""
    ts = st.ts
    parts, tok = ts.qualified_name("a view name")
    cat, db, name = ctx.qualify(parts, error=ts.error_at(tok))
    entry = ctx.catalog_entry(cat, ts.error_at(tok))
    full = ctx.feedback.target = f"{cat}.{db}.{name}"
    # where the view is: a temporary view, the in-memory catalog, or a Paimon catalog
    store = key = None
    current = None
    if (cat, db, name) in ctx.temporary and ctx.temporary[(cat, db, name)].kind == "view":
        store, key = ctx.temporary, (cat, db, name)
    elif entry.kind == "memory":
        mt = entry.databases.get(db, {}).get(name)
        if mt is not None and mt.kind == "view":
            store, key = entry.databases[db], name
    if store is not None:
        current = store[key].view
    elif entry.kind == "paimon" and entry.catalog.database_exists(db):
        current = entry.get_view(db, name)
    if current is None:
        raise ts.error(f"View '{full}' does not exist", tok)
    if ts.accept_kw("RENAME", "TO"):
        new_parts, ntok = ts.qualified_name("a view name")
        ts.expect_end()
        ncat, ndb, nname = ctx.qualify(new_parts if len(new_parts) > 1 else [db, new_parts[0]],
                                           rename_scope(ctx, cat), ts.error_at(ntok))
        if ncat != cat:
            raise ts.error("A view cannot be renamed into another catalog", ntok)
        nfull = f"{ncat}.{ndb}.{nname}"
        if store is not None:
            nkey = (ncat, ndb, nname) if store is ctx.temporary else nname
            if store is not ctx.temporary and ndb != db:
                raise ts.error("A view of the in-memory catalog cannot move to another database", ntok)
            if nkey in store:
                raise ts.error(f"'{nfull}' already exists", ntok)
            mt = store.pop(key)
            mt.view.database, mt.view.name = ndb, nname
            store[nkey] = mt
            return None
        if not entry.catalog.database_exists(ndb):
            raise ts.error(f"Database '{ncat}.{ndb}' does not exist", ntok)
        if entry.catalog.table_exists(f"{ndb}.{nname}") or entry.get_view(ndb, nname) is not None:
            raise ts.error(f"'{nfull}' already exists", ntok)
        try:
            entry.rename_view(db, name, ndb, nname)
        except PaimonLabError as e:
            raise ts.error(f"Cannot rename view '{full}': {e}", tok) from None
        return None
    if ts.accept_kw("AS"):
        query_text = ts.rest_text().strip()
        schema = _view_schema(ctx, ts, current.columns, tok)
        view = ViewDef(current.catalog, current.database, current.name, query_text, ctx.current,
                       current.columns, current.comment)
        if store is not None:
            store[key] = MemTable("view", view=view)
            return None
        try:
            entry.put_view(view, schema, exists=True)
        except PaimonLabError as e:
            raise ts.error(f"Cannot alter view '{full}': {e}", tok) from None
        return None
    raise ts.error("ALTER VIEW supports AS <query> and RENAME TO <name>")


def _view_schema(ctx: SessionContext, ts: TokenStream, columns: list[str] | None, tok: Token) -> pa.Schema:
    """The result schema of the view query starting at the current token (no data is read)."""
    rw = rewrite(ts.text, ts.tokens, ts.i)
    ast = parse(rw)
    if not isinstance(ast, QUERY_TYPES):
        raise ts.error("A view is defined by a query (AS SELECT ...)", tok)
    prepared = ctx.prepare_query(rw, ast)
    empty = {r.index: r.relation.schema.empty_table() for r in prepared.rels}
    schema = prepared.execute(overrides=empty).schema
    if columns is not None:
        if len(columns) != len(schema.names):
            raise ts.error(f"The view names {len(columns)} columns but its query gives {len(schema.names)} "
                           f"({', '.join(schema.names)})", tok)
        schema = pa.schema([f.with_name(c) for f, c in zip(schema, columns)])
    if len(set(schema.names)) != len(schema.names):
        dup = sorted({n for n in schema.names if schema.names.count(n) > 1})
        raise ts.error(f"The view query gives duplicate column names {dup}; name them with AS", tok)
    return schema
