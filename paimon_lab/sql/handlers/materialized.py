"""CREATE and ALTER MATERIALIZED TABLE (the table kind itself: ``materialized_table``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.errors import PaimonLabError
from paimon_lab.core.schema import SchemaChange
from paimon_lab.sql.clauses import ColumnDef, TableDef, parse_name_list, parse_options
from paimon_lab.sql.materialized_table import ACTIVATED, MT, SUSPENDED, UNITS, refresh, schedule
from paimon_lab.sql.rewrite import parse, rewrite
from paimon_lab.sql.schemas import create_paimon_table
from paimon_lab.sql.writing import write_rows

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext, Statement


def create(ctx: SessionContext, st: Statement) -> None:
    """CREATE MATERIALIZED TABLE t [(PRIMARY KEY ...)] [COMMENT] [PARTITIONED BY] [WITH]
    [FRESHNESS = INTERVAL ...] [REFRESH_MODE = ...] AS <query>."""
    ts = st.ts
    if_not_exists = ts.accept_kw("IF", "NOT", "EXISTS")
    parts, tok = ts.qualified_name()
    d = TableDef(parts, tok, if_not_exists)
    freshness = None
    refresh_mode = "CONTINUOUS"
    if ts.peek() is not None and ts.peek().is_op("("):
        ts.next()
        if ts.accept_kw("CONSTRAINT"):
            ts.identifier()
        ts.expect_kw("PRIMARY", "KEY")
        d.primary_keys = parse_name_list(ts)
        ts.accept_kw("NOT", "ENFORCED")
        ts.expect_op(")")
    while not ts.at_end() and not ts.at_kw("AS"):
        if ts.accept_kw("COMMENT"):
            d.comment = ts.string()
        elif ts.accept_kw("PARTITIONED", "BY"):
            d.partition_keys = parse_name_list(ts)
        elif ts.accept_kw("WITH"):
            d.options.update(parse_options(ts))
        elif ts.accept_kw("FRESHNESS"):
            ts.expect_op("=")
            ts.expect_kw("INTERVAL")
            amount = ts.literal("an interval amount")
            unit = ts.identifier("a time unit").upper()
            if unit not in UNITS or not str(amount).strip().isdigit():
                raise ts.error(f"FRESHNESS = INTERVAL '<n>' SECOND|MINUTE|HOUR|DAY (got '{amount}' {unit})")
            freshness = (int(amount), unit.rstrip("S") if unit.endswith("S") and unit != "S" else unit)
        elif ts.accept_kw("REFRESH_MODE"):
            ts.expect_op("=")
            refresh_mode = ts.identifier("FULL or CONTINUOUS").upper()
            if refresh_mode not in ("FULL", "CONTINUOUS"):
                raise ts.error("REFRESH_MODE is FULL or CONTINUOUS")
        else:
            raise ts.error(f"Unexpected '{ts.peek().text}' in CREATE MATERIALIZED TABLE")
    ts.expect_kw("AS")
    query_text = ts.rest_text().strip()
    if freshness is None:
        freshness = (3, "MINUTE") if refresh_mode == "CONTINUOUS" else (1, "HOUR")
    cat, db, name = ctx.qualify(parts, error=ts.error_at(tok))
    ctx.feedback.target = f"{cat}.{db}.{name}"
    entry = ctx.paimon_catalog(cat, ts.error_at(tok))
    if entry.catalog.table_exists(f"{db}.{name}"):
        if if_not_exists:
            ctx.feedback.note = "already exists"
            return None
        raise ts.error(f"Table '{cat}.{db}.{name}' already exists", tok)
    rw = rewrite(ts.text, ts.tokens, ts.i)
    ast = parse(rw)
    data = ctx.query(rw, ast)
    columns = []
    for f in data.schema:
        dtype = T.parse_type("STRING") if pa.types.is_null(f.type) else T.from_arrow(f.type, True)
        columns.append(ColumnDef(f.name, dtype))
    raw = {"type": "materialized-table", MT + "definition-query": query_text,
           MT + "definition-database": ctx.current.database,
           MT + "interval-freshness": str(freshness[0]), MT + "interval-freshness-time-unit": freshness[1],
           MT + "refresh-mode": refresh_mode, MT + "logical-refresh-mode": "AUTOMATIC",
           MT + "refresh-status": ACTIVATED}
    table = create_paimon_table(ts, entry, db, name, columns, d.primary_keys, d.partition_keys,
                                d.options, d.comment, tok, raw_options=raw)
    try:
        write_rows(ctx, table, data, overwrite=True)
    except BaseException:
        entry.catalog.drop_table(f"{db}.{name}", ignore_if_not_exists=True)
        raise
    schedule(ctx, cat, db, name)
    return None


def alter(ctx: SessionContext, st: Statement) -> None:
    """ALTER MATERIALIZED TABLE t REFRESH [PARTITION (...)] | SUSPEND | RESUME [WITH (...)]."""
    ts = st.ts
    parts, tok = ts.qualified_name()
    cat, db, name = ctx.qualify(parts, error=ts.error_at(tok))
    ctx.feedback.target = f"{cat}.{db}.{name}"
    table = ctx.get_table([cat, db, name], error=ts.error_at(tok))
    if table.options.get("type") != "materialized-table":
        raise ts.error(f"'{cat}.{db}.{name}' is not a materialized table", tok)
    if ts.accept_kw("REFRESH"):
        partition = None
        if ts.accept_kw("PARTITION"):
            ts.expect_op("(")
            partition = {}
            while True:
                k = ts.identifier("a partition column")
                ts.expect_op("=")
                partition[k] = ts.literal("a partition value")
                if ts.accept_op(")"):
                    break
                ts.expect_op(",")
        ts.expect_end()
        refresh(ctx, cat, db, name, partition)
        return None
    if ts.accept_kw("SUSPEND"):
        ts.expect_end()
        ctx.stop_refresh(cat, db, name)
        if table.options.get(MT + "refresh-status") != SUSPENDED:
            table.alter(SchemaChange.set_option(MT + "refresh-status", SUSPENDED))
        return None
    if ts.accept_kw("RESUME"):
        changes = []
        if ts.accept_kw("WITH"):
            for k, v in parse_options(ts).items():
                changes.append(SchemaChange.set_option(k, v))
        ts.expect_end()
        if table.options.get(MT + "refresh-status") != ACTIVATED:
            changes.append(SchemaChange.set_option(MT + "refresh-status", ACTIVATED))
        if changes:
            try:
                table.alter(*changes)
            except PaimonLabError as e:
                raise ts.error(str(e), tok) from None
        schedule(ctx, cat, db, name)
        return None
    raise ts.error("ALTER MATERIALIZED TABLE supports REFRESH [PARTITION (...)], SUSPEND and RESUME")
