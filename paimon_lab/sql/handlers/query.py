"""Queries and EXPLAIN."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.sql.common import QUERY_TYPES, text_table
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.rewrite import parse, rewrite

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext, Statement


def run(ctx: SessionContext, st: Statement) -> pa.Table:
    """A query: SELECT, WITH, VALUES, FROM, TABLE or a parenthesized query."""
    ts = st.ts
    rw = rewrite(ts.text, ts.tokens, ts.i)
    ast = parse(rw)
    if not isinstance(ast, QUERY_TYPES):
        raise SqlError("Expected a query", statement=ts.text)
    return ctx.query(rw, ast)


def explain(ctx: SessionContext, st: Statement) -> pa.Table:
    """EXPLAIN [PLAN FOR] [EXTENDED] <query>: each read (columns, filter, limit pushed into it) and
    the SQL DuckDB runs (or that the one read's rows are the answer)."""
    ts = st.ts
    ts.accept_kw("PLAN", "FOR")
    ts.accept_kw("EXTENDED")
    rw = rewrite(ts.text, ts.tokens, ts.i)
    ast = parse(rw)
    prepared = ctx.prepare_query(rw, ast)
    lines = []
    for r in prepared.rels:
        cols = None if r.columns is None else [n for n in r.relation.schema.names if n in r.columns]
        pred = r.predicate if r.relation.pushdown else None
        lines.append((f"scan {r.relation.describe()} AS {r.alias}",
                      "*" if cols is None else ", ".join(cols),
                      repr(pred) if pred is not None else "", "" if r.limit is None else str(r.limit)))
    if prepared.plain_columns() is not None:
        lines.append(("answer", "the scan's rows as they are (no DuckDB)", "", ""))
    else:
        lines.append(("duckdb", prepared.sql, "", ""))
    step, cols, filt, lim = zip(*lines)
    return text_table(step=list(step), columns=list(cols), filter=list(filt), limit=list(lim))
