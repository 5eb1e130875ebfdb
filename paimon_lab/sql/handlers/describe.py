"""DESCRIBE / SHOW COLUMNS: name, type, nullability, key and comment of each column — a Paimon
table's from its schema, anything else's (views, system and connector tables) from a read."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.errors import PaimonLabError
from paimon_lab.sql.rewrite import parse, rewrite
from paimon_lab.sql.spelling import quote, type_sql

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext, Statement


def describe(ctx: SessionContext, st: Statement) -> pa.Table:
    """DESCRIBE [EXTENDED | FORMATTED] [TABLE] t | SHOW COLUMNS FROM | IN t: one row per column."""
    ts = st.ts
    if st.kind == "SHOW COLUMNS":
        ts.accept_kw("FROM") or ts.accept_kw("IN")
        parts, tok = ts.qualified_name()
    else:
        ts.accept_kw("EXTENDED") or ts.accept_kw("FORMATTED")
        ts.accept_kw("TABLE")
        parts, tok = ts.qualified_name()
        ts.expect_end()
    cat, db, name = ctx.qualify(parts, error=ts.error_at(tok))
    entry = ctx.catalog_entry(cat, ts.error_at(tok))
    table = None
    if entry.kind == "paimon" and db.lower() != "sys" and "$" not in name and entry.catalog.database_exists(db) \
            and entry.catalog.table_exists(f"{db}.{name}"):
        table = ctx.get_table([cat, db, name])
    if table is not None:
        sch = table.schema
        pk = ", ".join(sch.primary_keys)
        rows = [(f.name, type_sql(f.type.copy(True)), "TRUE" if f.type.nullable else "FALSE",
                 f"PRI({pk})" if f.name in sch.primary_keys else None,
                 "PARTITION KEY" if f.name in sch.partition_keys else None, None, f.description)
                for f in sch.fields]
    else:
        # views, system tables, connector tables: the schema of a read
        ident = ".".join(quote(p) for p in (cat, db, name))
        rw = rewrite(f"SELECT * FROM {ident} LIMIT 0")
        data = ctx.query(rw, parse(rw))
        rows = []
        for f in data.schema:
            try:
                tname = type_sql(T.from_arrow(f.type, True))
            except PaimonLabError:
                tname = str(f.type)
            rows.append((f.name, tname, "TRUE" if f.nullable else "FALSE", None, None, None, None))
    cols = list(zip(*rows)) if rows else [[]] * 7
    names = ["name", "type", "null", "key", "extras", "watermark", "comment"]
    return pa.table({n: pa.array(list(c), pa.string()) for n, c in zip(names, cols)})
