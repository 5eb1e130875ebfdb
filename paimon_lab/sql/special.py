"""Format tables (a directory of CSV/Parquet/ORC files), object tables (a Paimon table indexing
the files under a location) and materialized tables (a query's result, refreshed on demand and
by a timer while the process runs)."""

from __future__ import annotations

import threading
import time
import uuid
import warnings
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core import types as T
from paimon_lab.errors import PaimonLabError
from paimon_lab.core.schema import SchemaChange
from paimon_lab.io.file_io import FileIO, join
from paimon_lab.sql.ddl import ColumnDef, parse_name_list, parse_options, quote, sql_string
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.lexer import TokenStream
from paimon_lab.sql.relations import Relation
from paimon_lab.sql.rewrite import parse, rewrite

if TYPE_CHECKING:
    from paimon_lab.sql.session import Session

FORMATS = {"csv": "csv", "parquet": "parquet", "orc": "orc", "json": "json"}


# ======================================================================================== format tables

def _format(table) -> str:
    fmt = table.options.get("file.format", "parquet").lower()
    if fmt not in FORMATS:
        raise SqlError(f"Format table {table.identifier}: file.format '{fmt}' is not supported (csv, parquet, orc)")
    return fmt


def _delimiter(table) -> str:
    o = table.options
    return o.get("csv.field-delimiter", o.get("field-delimiter", ","))


def _data_files(table) -> list[str]:
    import pyarrow.fs as pafs

    io = table.file_io
    sel = pafs.FileSelector(io.arrow_path(table.path), allow_not_found=True, recursive=True)
    root = io.arrow_path(table.path).rstrip("/") + "/"
    out = []
    for info in io.fs.get_file_info(sel):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root):] if info.path.startswith(root) else info.base_name
        if rel.startswith("schema/") or any(p.startswith(".") or p.startswith("_") for p in rel.split("/")):
            continue
        out.append(info.path)
    return sorted(out)


class FormatTableRelation(Relation):
    def __init__(self, table, label: str):
        self.table = table
        self.label = label

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema.arrow_schema()

    def read(self, columns=None, predicate=None, limit=None) -> pa.Table:
        import pyarrow.dataset as ds

        t = self.table
        schema = self.schema
        parts = t.partition_keys
        files = _data_files(t)
        if not files:
            data = schema.empty_table()
        else:
            data_fields = [f for f in schema if f.name not in parts]
            fmt = _format(t)
            if fmt == "csv":
                import pyarrow.csv as csv

                file_format = ds.CsvFileFormat(
                    parse_options=csv.ParseOptions(delimiter=_delimiter(t)),
                    read_options=csv.ReadOptions(column_names=[f.name for f in data_fields]),
                    convert_options=csv.ConvertOptions(column_types={f.name: f.type for f in data_fields}))
            elif fmt == "json":
                file_format = ds.JsonFileFormat()
            else:
                file_format = fmt
            partitioning = ds.partitioning(pa.schema([schema.field(p) for p in parts]), flavor="hive") \
                if parts else None
            dataset = ds.dataset(files, schema=schema, format=file_format, filesystem=t.file_io.fs,
                                 partitioning=partitioning, partition_base_dir=t.file_io.arrow_path(t.path))
            data = dataset.to_table()
        data = data.select(schema.names).cast(schema)
        return data.select(columns) if columns is not None else data


def format_insert(table, rows: pa.Table, overwrite: bool, static: dict) -> None:
    """Append files (INSERT INTO) or replace the written partitions' files (INSERT OVERWRITE)."""
    fmt = _format(table)
    parts = table.partition_keys
    io = table.file_io
    groups: list[tuple[dict, pa.Table]] = []
    if parts:
        keys = rows.select(parts).group_by(parts, use_threads=False).aggregate([]).to_pylist()
        for key in keys:
            mask = None
            for k, v in key.items():
                m = pc.is_null(rows.column(k)) if v is None else pc.equal(rows.column(k), pa.scalar(v, rows.schema.field(k).type))
                mask = m if mask is None else pc.and_(mask, m)
            groups.append((key, rows.filter(mask)))
    else:
        groups.append(({}, rows))
    default = table.options.get("partition.default-name", "__DEFAULT_PARTITION__")

    def directory(key: dict) -> str:
        segs = [f"{k}={default if v is None else v}" for k, v in key.items()]
        return join(table.path, *segs) if segs else table.path

    if overwrite:
        if parts:
            targets = [directory({k: static[k] for k in parts})] if static and set(static) >= set(parts) else \
                [directory(k) for k, _ in groups]
        else:
            targets = [table.path]
        old = [f for f in _data_files(table) if any(
            f.startswith(io.arrow_path(d).rstrip("/") + "/") for d in targets)]
        if not parts:
            old = _data_files(table)
    else:
        old = []
    written = []
    try:
        for key, data in groups:
            if data.num_rows == 0:
                continue
            body = data.drop_columns(parts) if parts else data
            path = join(directory(key), f"data-{uuid.uuid4()}-0.{fmt}")
            with io.open_output(path) as out:
                if fmt == "csv":
                    import pyarrow.csv as csv

                    csv.write_csv(body, out, csv.WriteOptions(include_header=False, delimiter=_delimiter(table)))
                elif fmt in ("parquet", "orc"):
                    from paimon_lab.core.file_format import write_table_bytes

                    # laid out as Java Paimon writes these formats (short DECIMALs as integers,
                    # TIMESTAMP(7..9) as INT96, TIME in ORC as an int), so Java reads them too
                    out.write(write_table_bytes(body, fmt, "snappy" if fmt == "parquet" else "none"))
                else:
                    raise SqlError("Writing JSON format tables is not supported")
            written.append(path)
    except BaseException:
        io.delete_quietly(written)
        raise
    for f in old:
        try:
            io.fs.delete_file(f)
        except OSError:
            pass


def create_format_table(session: "Session", ts: TokenStream, d, entry, db: str, name: str):
    from paimon_lab.sql.statements import create_paimon_table

    fmt = d.options.get("file.format", "parquet").lower()
    if fmt not in ("csv", "parquet", "orc", "json"):
        raise ts.error(f"Format tables support file.format csv, parquet, orc (got '{fmt}')", d.token)
    if not d.columns:
        raise ts.error("A format table needs columns", d.token)
    if d.primary_keys:
        raise ts.error("Format tables have no primary key", d.token)
    if entry.catalog.table_exists(f"{db}.{name}"):
        if d.if_not_exists:
            return None
        raise ts.error(f"Table '{entry.name}.{db}.{name}' already exists", d.token)
    create_paimon_table(session, ts, entry, db, name, d.columns, [], d.partition_keys, {}, d.comment, d.token,
                        raw_options=dict(d.options))
    return None


# ======================================================================================== object tables

OBJECT_FIELDS = [("path", "STRING"), ("name", "STRING"), ("length", "BIGINT"), ("mtime", "BIGINT"),
                 ("atime", "BIGINT"), ("owner", "STRING")]


def create_object_table(session: "Session", ts: TokenStream, d, entry, db: str, name: str):
    from paimon_lab.sql.statements import create_paimon_table

    if d.columns:
        raise ts.error("An object table has a fixed schema; give no columns", d.token)
    if not d.options.get("object-location"):
        raise ts.error("An object table needs 'object-location'", d.token)
    if entry.catalog.table_exists(f"{db}.{name}"):
        if d.if_not_exists:
            return None
        raise ts.error(f"Table '{entry.name}.{db}.{name}' already exists", d.token)
    cols = [ColumnDef(n, T.parse_type(t)) for n, t in OBJECT_FIELDS]
    create_paimon_table(session, ts, entry, db, name, cols, [], [], dict(d.options), d.comment, d.token)
    return None


def refresh_object_table(session: "Session", table) -> int:
    import pyarrow.fs as pafs

    if table.options.get("type") != "object-table":
        raise SqlError(f"'{table.identifier}' is not an object table")
    location = table.options["object-location"].rstrip("/")
    try:
        io = FileIO(location)
        root = io.arrow_path(location).rstrip("/")
        infos = io.fs.get_file_info(pafs.FileSelector(root, allow_not_found=True, recursive=True))
    except (OSError, ValueError, pa.ArrowException) as e:
        raise SqlError(f"Cannot list object-location '{location}': {e}") from None
    rows = []
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root) + 1:] if info.path.startswith(root + "/") else info.base_name
        mtime = int(info.mtime.timestamp() * 1000) if info.mtime is not None else None
        rows.append({"path": rel, "name": info.base_name, "length": info.size, "mtime": mtime, "atime": mtime,
                     "owner": None})
    rows.sort(key=lambda r: r["path"])
    data = pa.Table.from_pylist(rows, schema=table.schema.arrow_schema()) if rows else \
        table.schema.arrow_schema().empty_table()
    session.last_snapshot_id = table.write(data, overwrite=True)
    return len(rows)


# ======================================================================================== materialized tables

MT = "materialized-table."
_UNITS = {"SECOND": 1, "SECONDS": 1, "MINUTE": 60, "MINUTES": 60, "HOUR": 3600, "HOURS": 3600, "DAY": 86400,
          "DAYS": 86400}


def create_materialized_table(session: "Session", ts: TokenStream):
    from paimon_lab.sql.ddl import TableDef
    from paimon_lab.sql.statements import create_paimon_table
    from paimon_lab.sql.dml import write_rows

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
            if unit not in _UNITS or not str(amount).strip().isdigit():
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
    cat, db, name = session.qualify(parts, error=lambda m: ts.error(m, tok))
    entry = session.paimon_catalog(cat, lambda m: ts.error(m, tok))
    if entry.catalog.table_exists(f"{db}.{name}"):
        if if_not_exists:
            return None
        raise ts.error(f"Table '{cat}.{db}.{name}' already exists", tok)
    rw = rewrite(ts.text, ts.tokens, ts.i)
    ast = parse(rw)
    data = session.query(rw, ast)
    columns = []
    for f in data.schema:
        dtype = T.parse_type("STRING") if pa.types.is_null(f.type) else T.from_arrow(f.type, True)
        columns.append(ColumnDef(f.name, dtype))
    raw = {"type": "materialized-table", MT + "definition-query": query_text,
           MT + "definition-database": session.current.database,
           MT + "interval-freshness": str(freshness[0]), MT + "interval-freshness-time-unit": freshness[1],
           MT + "refresh-mode": refresh_mode, MT + "logical-refresh-mode": "AUTOMATIC",
           MT + "refresh-status": ACTIVATED}
    table = create_paimon_table(session, ts, entry, db, name, columns, d.primary_keys, d.partition_keys,
                                d.options, d.comment, tok, raw_options=raw)
    try:
        write_rows(session, table, data, overwrite=True)
    except BaseException:
        entry.catalog.drop_table(f"{db}.{name}", ignore_if_not_exists=True)
        raise
    schedule(session, cat, db, name)
    return None


ACTIVATED, SUSPENDED = "ACTIVATED", "SUSPENDED"


def _time_unit(o) -> str:
    # Flink's key; 'interval-freshness.time-unit' is what earlier paimon-lab versions wrote
    return o.get(MT + "interval-freshness-time-unit") or o.get(MT + "interval-freshness.time-unit") or "SECOND"


def interval_seconds(table) -> int:
    o = table.options
    return int(o.get(MT + "interval-freshness", "180")) * _UNITS.get(_time_unit(o).upper(), 1)


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


def ensure_scheduled(session: "Session", cat: str, db: str, name: str, table) -> None:
    """A session that meets an ACTIVATED materialized table without a refresh timer (a new
    session, a restarted notebook) starts one; a table staler than its freshness is refreshed
    on the timer right away."""
    if (cat, db, name) in session._timers or table.options.get(MT + "refresh-status", ACTIVATED) != ACTIVATED:
        return
    interval = interval_seconds(table)
    last = last_refresh_millis(table)
    now = time.time()
    delay = interval if last is None else max(0.0, min(interval, last / 1000.0 + interval - now))
    schedule(session, cat, db, name, delay=delay)


def refresh(session: "Session", cat: str, db: str, name: str, partition: dict | None = None) -> int | None:
    from paimon_lab.sql.dml import write_rows
    from paimon_lab.sql.session import Context

    table = session.get_table([cat, db, name])
    o = table.options
    if o.get("type") != "materialized-table":
        raise SqlError(f"'{cat}.{db}.{name}' is not a materialized table")
    query = o[MT + "definition-query"]
    rw = rewrite(query)
    ast = parse(rw)
    if partition:
        from sqlglot import exp

        cond = None
        for k, v in partition.items():
            c = exp.EQ(this=exp.column(exp.to_identifier(k, quoted=True)), expression=exp.Literal.string(str(v)))
            cond = c if cond is None else exp.and_(cond, c)
        ast = exp.select("*").from_(exp.Subquery(this=ast, alias=exp.TableAlias(this=exp.to_identifier("__mt"))))\
            .where(cond)
    data = session.query(rw, ast, ctx=Context(cat, o.get(MT + "definition-database", db)))
    return write_rows(session, table, data, overwrite=partition or True)


def schedule(session: "Session", cat: str, db: str, name: str, delay: float | None = None) -> None:
    """Refresh every freshness interval on a daemon timer while the process runs (the first
    time after ``delay`` seconds if given)."""
    session.stop_refresh(cat, db, name)
    try:
        table = session.get_table([cat, db, name])
        seconds = interval_seconds(table) if delay is None else delay
    except SqlError:
        return
    if table.options.get(MT + "refresh-status", ACTIVATED) != ACTIVATED:
        return

    def tick():
        if session._timers.get((cat, db, name)) is not timer:
            return
        try:
            with session._lock:
                current = session.get_table([cat, db, name])
                if current.options.get(MT + "refresh-status", ACTIVATED) != ACTIVATED:
                    session._timers.pop((cat, db, name), None)  # suspended by another session
                    return
                refresh(session, cat, db, name)
        except Exception as e:  # keep refreshing; report
            warnings.warn(f"Refreshing materialized table {cat}.{db}.{name} failed: {e}", stacklevel=1)
        if session._timers.get((cat, db, name)) is timer:
            schedule(session, cat, db, name)

    timer = threading.Timer(seconds, tick)
    timer.daemon = True
    session._timers[(cat, db, name)] = timer
    timer.start()


def alter_materialized_table(session: "Session", ts: TokenStream):
    parts, tok = ts.qualified_name()
    cat, db, name = session.qualify(parts, error=lambda m: ts.error(m, tok))
    table = session.get_table([cat, db, name], error=lambda m: ts.error(m, tok))
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
        refresh(session, cat, db, name, partition)
        return None
    if ts.accept_kw("SUSPEND"):
        ts.expect_end()
        session.stop_refresh(cat, db, name)
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
        schedule(session, cat, db, name)
        return None
    raise ts.error("ALTER MATERIALIZED TABLE supports REFRESH [PARTITION (...)], SUSPEND and RESUME")


def show_create_materialized(full: str, schema) -> str:
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
