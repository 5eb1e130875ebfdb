"""Refresh materialized tables outside a notebook: ``python -m paimon_lab.sql.materialized refresh
--warehouse W`` (or the ``paimon-lab-refresh`` script) refreshes every ACTIVATED materialized table
whose freshness interval has passed since its last refresh, once (for cron) or with ``--loop``
until stopped (for a systemd service), sleeping until the next table falls due."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from paimon_lab.catalog import Catalog
from paimon_lab.errors import PaimonLabError
from paimon_lab.sql.materialized_table import (
    ACTIVATED,
    MT,
    interval_seconds,
    last_refresh_millis,
    refresh,
)
from paimon_lab.sql.session import Session
from paimon_lab.utils.clock import now_millis

CATALOG = "paimon"


@dataclass
class Due:
    """One materialized table and when it next falls due (epoch millis; ``None``: never)."""

    database: str
    name: str
    due_millis: int | None


def materialized_tables(session: Session, tables: Sequence[str] = ()) -> list[Due]:
    """The materialized tables of the session's catalog (or just ``tables``, ``db.t`` names) with
    the time each falls due: last refresh + freshness; ``None`` for a SUSPENDED one."""
    catalog = session.catalogs[CATALOG].catalog
    if tables:
        names = []
        for full in tables:
            db, sep, name = full.partition(".")
            if not sep or not db or not name:
                raise PaimonLabError(f"--table takes 'database.table', got '{full}'")
            names.append((db, name))
    else:
        names = [(db, t) for db in catalog.list_databases() for t in catalog.list_tables(db)]
    out = []
    for db, name in names:
        table = catalog.get_table(f"{db}.{name}")
        o = table.options
        if o.get("type") != "materialized-table":
            if tables:
                raise PaimonLabError(f"'{db}.{name}' is not a materialized table")
            continue
        if o.get(MT + "refresh-status", ACTIVATED) != ACTIVATED:
            out.append(Due(db, name, None))
            continue
        last = last_refresh_millis(table)
        out.append(Due(db, name, 0 if last is None else last + interval_seconds(table) * 1000))
    return out


def refresh_due(session: Session, tables: Sequence[str] = (), *, force: bool = False,
                log=lambda m: print(m, flush=True)) -> tuple[list[str], list[str]]:
    """Refresh each due (or, with ``force``, each ACTIVATED) materialized table once; returns the
    ``db.t`` names refreshed and those whose refresh failed (reported; the others still run)."""
    done, failed = [], []
    now = now_millis()
    for d in materialized_tables(session, tables):
        full = f"{d.database}.{d.name}"
        if d.due_millis is None:
            log(f"{full}: suspended, skipped")
            continue
        if not force and d.due_millis > now:
            log(f"{full}: fresh, next refresh due in {(d.due_millis - now) / 1000:.0f} s")
            continue
        try:
            refresh(session, CATALOG, d.database, d.name)
        except Exception as e:  # noqa: BLE001 - keep going with the other tables; the exit code reports it
            log(f"{full}: refresh failed: {e}")
            failed.append(full)
            continue
        log(f"{full}: refreshed")
        done.append(full)
    return done, failed


def _seconds_to_next(session: Session, tables: Sequence[str], cap: float) -> float:
    dues = [d.due_millis for d in materialized_tables(session, tables) if d.due_millis is not None]
    if not dues:
        return cap
    return max(0.0, min(cap, (min(dues) - now_millis()) / 1000.0))


def main(argv: Sequence[str] | None = None) -> int:
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    prog = "paimon-lab-refresh" if script.startswith("paimon-lab-refresh") else "python -m paimon_lab.sql.materialized"
    parser = argparse.ArgumentParser(prog=prog,
                                     description="Refresh Paimon materialized tables that are due.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("refresh", help="refresh every due materialized table of a warehouse")
    p.add_argument("--warehouse", required=True, help="warehouse path or URI")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="catalog option (e.g. metastore=hive, uri=..., s3.endpoint=...); repeatable")
    p.add_argument("--table", action="append", default=[], metavar="DB.TABLE",
                   help="only this materialized table; repeatable")
    p.add_argument("--force", action="store_true", help="refresh ACTIVATED tables even if not yet due")
    p.add_argument("--loop", action="store_true",
                   help="keep running, refreshing each table when its freshness interval has passed")
    p.add_argument("--max-sleep", type=float, default=60.0,
                   help="with --loop, look for new or resumed tables at least this often (seconds)")
    args = parser.parse_args(argv)
    options = {}
    for kv in args.option:
        k, sep, v = kv.partition("=")
        if not sep:
            parser.error(f"--option takes KEY=VALUE, got '{kv}'")
        options[k] = v
    try:
        session = Session(Catalog(args.warehouse, options=options or None), name=CATALOG)
        while True:
            _, failed = refresh_due(session, args.table, force=args.force)
            if not args.loop:
                return 1 if failed else 0
            time.sleep(_seconds_to_next(session, args.table, args.max_sleep))
            args.force = False
    except PaimonLabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
