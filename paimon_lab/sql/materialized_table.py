"""Materialized tables: a query's result stored in a Paimon table whose options keep the
definition and refresh state; refreshed on demand and, while ACTIVATED, on a daemon timer every
freshness interval while the process runs (outside a process: :mod:`paimon_lab.sql.materialized`)."""

from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING

from sqlglot import exp

from paimon_lab.sql.catalogs import Scope
from paimon_lab.sql.duck import session_time_zone
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.rewrite import parse, rewrite
from paimon_lab.sql.spelling import quote, sql_string
from paimon_lab.sql.writing import write_rows
from paimon_lab.utils.clock import now_millis

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext

MT = "materialized-table."
UNITS = {"SECOND": 1, "SECONDS": 1, "MINUTE": 60, "MINUTES": 60, "HOUR": 3600, "HOURS": 3600, "DAY": 86400,
         "DAYS": 86400}
ACTIVATED, SUSPENDED = "ACTIVATED", "SUSPENDED"


def _activated(table) -> bool:
    return table.options.get(MT + "refresh-status", ACTIVATED) == ACTIVATED


def _time_unit(o) -> str:
    # Flink's key; 'interval-freshness.time-unit' is what earlier paimon-lab versions wrote
    return o.get(MT + "interval-freshness-time-unit") or o.get(MT + "interval-freshness.time-unit") or "SECOND"


def interval_seconds(table) -> int:
    o = table.options
    return int(o.get(MT + "interval-freshness", "180")) * UNITS.get(_time_unit(o).upper(), 1)


def last_refresh_millis(table) -> int | None:
    """When the materialized table was last refreshed: the commit time of its newest snapshot
    that is not a compaction (every refresh commits one; nothing else writes the table)."""
    try:
        for snap in reversed(table.snapshots()):
            if snap.commit_kind != "COMPACT":
                return snap.time_millis
    except Exception:  # pragma: no cover - an unreadable table has no refresh time
        return None
    return None


def refresh_state(table) -> dict:
    """The stored definition and refresh state of a materialized table (what survives a
    restart): query, freshness, refresh mode and status, last refresh time (epoch millis)."""
    o = table.options
    return {"definition-query": o.get(MT + "definition-query"),
            "definition-database": o.get(MT + "definition-database"),
            "interval-freshness": o.get(MT + "interval-freshness"),
            "interval-freshness-time-unit": _time_unit(o),
            "refresh-mode": o.get(MT + "refresh-mode", "CONTINUOUS"),
            "refresh-status": o.get(MT + "refresh-status", ACTIVATED),
            "last-refresh-time": last_refresh_millis(table)}


def ensure_scheduled(ctx: SessionContext, cat: str, db: str, name: str, table) -> None:
    """A session that meets an ACTIVATED materialized table without a refresh timer (a new
    session, a restarted notebook) starts one; a table staler than its freshness is refreshed
    on the timer right away."""
    if (cat, db, name) in ctx.timers or not _activated(table):
        return
    interval = interval_seconds(table)
    last = last_refresh_millis(table)
    now = now_millis() / 1000.0
    delay = interval if last is None else max(0.0, min(interval, last / 1000.0 + interval - now))
    schedule(ctx, cat, db, name, delay=delay)


def refresh(ctx: SessionContext, cat: str, db: str, name: str, partition: dict | None = None) -> int | None:
    """Run the definition query again and overwrite the table (or the one ``partition``) with it."""
    table = ctx.get_table([cat, db, name])
    o = table.options
    if o.get("type") != "materialized-table":
        raise SqlError(f"'{cat}.{db}.{name}' is not a materialized table")
    query = o[MT + "definition-query"]
    rw = rewrite(query)
    ast = parse(rw)
    if partition:
        cond = None
        for k, v in partition.items():
            c = exp.EQ(this=exp.column(exp.to_identifier(k, quoted=True)), expression=exp.Literal.string(str(v)))
            cond = c if cond is None else exp.and_(cond, c)
        ast = exp.select("*").from_(exp.Subquery(this=ast, alias=exp.TableAlias(this=exp.to_identifier("__mt"))))\
            .where(cond)
    token = session_time_zone.set(ctx.time_zone_name())  # a timer's refresh runs outside a statement
    try:
        data = ctx.query(rw, ast, scope=Scope(cat, o.get(MT + "definition-database", db)))
        return write_rows(ctx, table, data, overwrite=partition or True)
    finally:
        session_time_zone.reset(token)


def schedule(ctx: SessionContext, cat: str, db: str, name: str, delay: float | None = None) -> None:
    """Refresh every freshness interval on a daemon timer while the process runs (the first
    time after ``delay`` seconds if given)."""
    ctx.stop_refresh(cat, db, name)
    try:
        table = ctx.get_table([cat, db, name])
        seconds = interval_seconds(table) if delay is None else delay
    except SqlError:
        return
    if not _activated(table):
        return

    def tick():
        if ctx.timers.get((cat, db, name)) is not timer:
            return
        try:
            with ctx.lock:
                if not _activated(ctx.get_table([cat, db, name])):
                    ctx.timers.pop((cat, db, name), None)  # suspended by another session
                    return
                refresh(ctx, cat, db, name)
        except Exception as e:  # keep refreshing; report
            warnings.warn(f"Refreshing materialized table {cat}.{db}.{name} failed: {e}", stacklevel=1)
        if ctx.timers.get((cat, db, name)) is timer:
            schedule(ctx, cat, db, name)

    timer = threading.Timer(seconds, tick)
    timer.daemon = True
    ctx.timers[(cat, db, name)] = timer
    timer.start()


def show_create_materialized(full: str, schema) -> str:
    """SHOW CREATE TABLE text of a materialized table."""
    o = schema.options
    text = f"CREATE MATERIALIZED TABLE {full}"
    if schema.primary_keys:
        text += f" (\n  PRIMARY KEY ({', '.join(quote(k) for k in schema.primary_keys)}) NOT ENFORCED\n)"
    if schema.comment:
        text += f"\nCOMMENT {sql_string(schema.comment)}"
    if schema.partition_keys:
        text += f"\nPARTITIONED BY ({', '.join(quote(k) for k in schema.partition_keys)})"
    user = {k: v for k, v in o.items() if not k.startswith(MT) and k != "type"}
    if user:
        text += "\nWITH (\n" + ",\n".join(f"  {sql_string(k)} = {sql_string(v)}" for k, v in sorted(user.items())) \
            + "\n)"
    text += f"\nFRESHNESS = INTERVAL '{o.get(MT + 'interval-freshness')}' {_time_unit(o)}"
    text += f"\nREFRESH_MODE = {o.get(MT + 'refresh-mode', 'CONTINUOUS')}"
    return text + f"\nAS {o.get(MT + 'definition-query')}"
