"""A SQL session: catalogs, the current catalog and database, settings, and statement dispatch."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa
from sqlglot import exp

from paimon_lab.core import types as T
from paimon_lab.catalog import Catalog
from paimon_lab.errors import PaimonLabError, TableNotExistError
from paimon_lab.io.file_io import join
from paimon_lab.sql.datagen import DatagenSpec
from paimon_lab.sql.ddl import quote
from paimon_lab.sql.errors import SqlError, position
from paimon_lab.sql.lexer import split_statements
from paimon_lab.sql.query import Planner, Prepared, Scan, connect, fetch_arrow
from paimon_lab.sql.relations import (ArrowRelation, ChangesRelation, FunctionRelation, PaimonRelation,
                                      Relation)
from paimon_lab.sql.rewrite import Rewritten, parse, rewrite

DEFAULT_CATALOG = "default_catalog"
DEFAULT_MEMORY_DB = "default_database"
SYSTEM_DB = "sys"
VIEWS_DIR = ".views"


@dataclass(frozen=True)
class Context:
    catalog: str
    database: str


@dataclass
class ViewDef:
    catalog: str
    database: str
    name: str
    query: str
    ctx: Context
    columns: list[str] | None = None
    comment: str | None = None


@dataclass
class MemTable:
    kind: str  # datagen | data | print | blackhole | view
    schema: pa.Schema | None = None
    spec: DatagenSpec | None = None
    data: pa.Table | None = None
    view: ViewDef | None = None
    options: dict[str, str] = field(default_factory=dict)
    fields: list[T.DataField] = field(default_factory=list)
    primary_keys: list[str] = field(default_factory=list)


class MemoryCatalog:
    """Flink's in-memory default catalog: connector tables (datagen, print, blackhole),
    registered data and views, for the session's lifetime."""

    kind = "memory"

    def __init__(self, name: str):
        self.name = name
        self.databases: dict[str, dict[str, MemTable]] = {DEFAULT_MEMORY_DB: {}}
        self.options = {"type": "generic_in_memory"}


class PaimonCatalog:
    """A Paimon catalog in a session: the filesystem :class:`Catalog` or a
    :class:`~paimon_lab.catalog.jdbc.JdbcCatalog`. Views live in the JDBC catalog's database, or
    for the filesystem catalog in ``{warehouse}/{db}.db/.views/{name}.json``."""

    kind = "paimon"

    def __init__(self, name: str, catalog, options: dict[str, str]):
        self.name = name
        self.catalog = catalog
        self.options = options

    @property
    def is_jdbc(self) -> bool:
        return hasattr(self.catalog, "create_view") and hasattr(self.catalog, "db")

    # ------------------------------------------------------------------ views
    def view_path(self, db: str, name: str) -> str:
        return join(self.catalog.database_path(db), VIEWS_DIR, f"{name}.json")

    def _context(self, catalog: str | None, db: str) -> Context:
        return Context(catalog or self.name, db)

    def get_view(self, db: str, name: str) -> ViewDef | None:
        if self.is_jdbc:
            from paimon_lab.errors import ViewNotExistError

            try:
                v = self.catalog.get_view(f"{quote(db)}.{quote(name)}")
            except ViewNotExistError:
                return None
            o = v.options
            columns = json.loads(o[VIEW_COLUMNS]) if o.get(VIEW_COLUMNS) else None
            return ViewDef(self.name, db, name, v.query, self._context(o.get(VIEW_CATALOG), o.get(VIEW_DATABASE, db)),
                           columns, v.comment)
        try:
            text = self.catalog.file_io.read_text(self.view_path(db, name))
        except (FileNotFoundError, OSError):
            return None
        obj = json.loads(text)
        return ViewDef(self.name, db, name, obj["query"], self._context(obj.get("catalog"), obj.get("database") or db),
                       obj.get("columns"), obj.get("comment"))

    def list_views(self, db: str) -> list[str]:
        if self.is_jdbc:
            return self.catalog.list_views(db)
        names = self.catalog.file_io.list_names(join(self.catalog.database_path(db), VIEWS_DIR))
        return sorted(n[:-5] for n in names if n.endswith(".json"))

    def put_view(self, view: ViewDef, schema: pa.Schema, *, exists: bool) -> None:
        """Store a view (replacing the one of that name when ``exists``)."""
        ctx_catalog = None if view.ctx.catalog == self.name else view.ctx.catalog
        if self.is_jdbc:
            ident = f"{quote(view.database)}.{quote(view.name)}"
            options = {VIEW_DATABASE: view.ctx.database}
            if ctx_catalog:
                options[VIEW_CATALOG] = ctx_catalog
            if view.columns:
                options[VIEW_COLUMNS] = json.dumps(view.columns)
            if exists:
                self.catalog.alter_view(ident, view.query, schema, view.comment, options=options)
            else:
                self.catalog.create_view(ident, view.query, schema, view.comment, options=options)
            return
        obj = {"query": view.query, "catalog": ctx_catalog, "database": view.ctx.database,
               "columns": view.columns, "comment": view.comment}
        self.catalog.file_io.write_bytes(self.view_path(view.database, view.name),
                                         json.dumps(obj, indent=2).encode())

    def drop_view(self, db: str, name: str) -> None:
        if self.is_jdbc:
            self.catalog.drop_view(f"{quote(db)}.{quote(name)}")
        else:
            self.catalog.file_io.delete(self.view_path(db, name))

    def rename_view(self, db: str, name: str, new_db: str, new_name: str) -> None:
        if self.is_jdbc:
            self.catalog.rename_view(f"{quote(db)}.{quote(name)}", f"{quote(new_db)}.{quote(new_name)}")
            return
        text = self.catalog.file_io.read_text(self.view_path(db, name))
        self.catalog.file_io.write_bytes(self.view_path(new_db, new_name), text.encode())
        self.catalog.file_io.delete(self.view_path(db, name))


VIEW_CATALOG = "lab.default-catalog"
VIEW_DATABASE = "lab.default-database"
VIEW_COLUMNS = "lab.column-names"


def _now_ms() -> int:
    return int(time.time() * 1000)


class Session:
    """Runs Flink/Spark-flavoured SQL against Paimon catalogs.

    >>> s = Session()
    >>> s.run("CREATE CATALOG paimon WITH ('type'='paimon', 'warehouse'='/tmp/wh'); USE CATALOG paimon")
    >>> s.execute("SELECT * FROM t")      # a pyarrow.Table
    """

    def __init__(self, catalog: Catalog | str | None = None, *, name: str = "paimon",
                 settings: dict[str, str] | None = None):
        self.catalogs: dict[str, MemoryCatalog | PaimonCatalog] = {DEFAULT_CATALOG: MemoryCatalog(DEFAULT_CATALOG)}
        self.current = Context(DEFAULT_CATALOG, DEFAULT_MEMORY_DB)
        self.settings: dict[str, str] = dict(settings or {})
        self.last_scans: list[Scan] = []
        self.last_snapshot_id: int | None = None
        self._timers: dict[tuple[str, str, str], threading.Timer] = {}
        self.temporary: dict[tuple[str, str, str], MemTable] = {}
        self._lock = threading.RLock()
        if catalog is not None:
            cat = Catalog(catalog) if isinstance(catalog, str) else catalog
            self.add_catalog(name, cat, use=True)

    # ------------------------------------------------------------------ public API
    def add_catalog(self, name: str, catalog, *, use: bool = False,
                    options: dict[str, str] | None = None) -> None:
        """Register an existing :class:`Catalog` or :class:`~paimon_lab.catalog.jdbc.JdbcCatalog`
        under ``name`` (and make it current with ``use``)."""
        default_db = (options or {}).get("default-database", "default")
        catalog.create_database(default_db, ignore_if_exists=True)
        self.catalogs[name] = PaimonCatalog(name, catalog, dict(options or {"warehouse": catalog.warehouse}))
        if use:
            self.current = Context(name, default_db)

    def register(self, name: str, data: Any) -> None:
        """Make an Arrow table or pandas DataFrame queryable as a temporary table ``name``."""
        if not isinstance(data, pa.Table):
            data = pa.Table.from_pandas(data, preserve_index=False)
        self.catalogs[DEFAULT_CATALOG].databases[DEFAULT_MEMORY_DB][name] = MemTable("data", data.schema, data=data)

    def execute(self, statement: str) -> pa.Table | None:
        """Run one statement; a query returns a pyarrow.Table, other statements None (SHOW,
        DESCRIBE, CALL and EXPLAIN return tables too)."""
        pieces = split_statements(statement)
        if len(pieces) > 1:
            offset = pieces[1][0]
            line, col = position(statement, offset)
            raise SqlError("execute() runs one statement; use run() for a script", line, col, statement)
        if not pieces:
            raise SqlError("Empty statement")
        return self._execute(pieces[0][1])

    def run(self, script: str, params: Any = None) -> pa.Table | None:
        """Run a script of ';'-separated statements; returns the last result that is a table.
        ``params`` binds ``?`` / ``:name`` placeholders as literals (see :func:`paimon_lab.sql.sql`)."""
        from paimon_lab.sql.params import bind

        script = bind(script, params)
        last = None
        for offset, text in split_statements(script):
            try:
                result = self._execute(text)
            except SqlError as e:
                raise _shift(e, script, offset) from e.__cause__
            if result is not None:
                last = result
        return last

    def stop_refresh(self, catalog: str, database: str, name: str) -> None:
        timer = self._timers.pop((catalog, database, name), None)
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        for t in list(self._timers.values()):
            t.cancel()
        self._timers.clear()

    # ------------------------------------------------------------------ settings
    def setting(self, key: str, default: str | None = None) -> str | None:
        return self.settings.get(key, default)

    @property
    def batch_mode(self) -> bool:
        return (self.setting("execution.runtime-mode", "streaming") or "").lower() == "batch"

    def local_tz(self):
        name = self.setting("table.local-time-zone")
        if name and name.lower() != "default":
            try:
                from zoneinfo import ZoneInfo

                return ZoneInfo(name)
            except Exception:
                raise SqlError(f"Unknown time zone '{name}' in table.local-time-zone") from None
        return dt.datetime.now().astimezone().tzinfo

    def parse_timestamp(self, text: str, what: str = "timestamp") -> int:
        """Epoch millis of a timestamp string in the session time zone (or epoch millis digits)."""
        s = str(text).strip()
        if s.lstrip("-").isdigit():
            return int(s)
        try:
            value = dt.datetime.fromisoformat(s.replace("T", " "))
        except ValueError:
            raise SqlError(f"Cannot read {what} '{text}' (use 'yyyy-MM-dd HH:mm:ss[.SSS]')") from None
        if value.tzinfo is None:
            value = value.replace(tzinfo=self.local_tz())
        return int(value.timestamp() * 1000)

    # ------------------------------------------------------------------ names
    def qualify(self, parts: list[str], ctx: Context | None = None,
                error: Callable[[str], SqlError] | None = None) -> tuple[str, str, str]:
        ctx = ctx or self.current
        err = error or (lambda m: SqlError(m))
        if len(parts) == 1:
            return ctx.catalog, ctx.database, parts[0]
        if len(parts) == 2:
            return ctx.catalog, parts[0], parts[1]
        if len(parts) == 3:
            return parts[0], parts[1], parts[2]
        raise err(f"Invalid name '{'.'.join(parts)}': use [catalog.][database.]name")

    def catalog_entry(self, name: str, error: Callable[[str], SqlError] | None = None):
        entry = self.catalogs.get(name)
        if entry is None:
            raise (error or SqlError)(f"Catalog '{name}' does not exist; catalogs are {sorted(self.catalogs)}")
        return entry

    def paimon_catalog(self, name: str, error=None) -> PaimonCatalog:
        entry = self.catalog_entry(name, error)
        if entry.kind != "paimon":
            raise (error or SqlError)(
                f"Catalog '{name}' is Flink's in-memory catalog; create a Paimon catalog with CREATE CATALOG "
                "c WITH ('type'='paimon', 'warehouse'='...') and USE CATALOG c")
        return entry

    def get_table(self, parts: list[str], ctx: Context | None = None, error=None):
        """The Paimon Table a name refers to (not views or connector tables)."""
        err = error or (lambda m: SqlError(m))
        cat, db, name = self.qualify(parts, ctx, err)
        entry = self.paimon_catalog(cat, err)
        try:
            table = entry.catalog.get_table(f"{db}.{name}")
        except (TableNotExistError, PaimonLabError):
            raise err(f"Table '{cat}.{db}.{name}' does not exist") from None
        return table

    # ------------------------------------------------------------------ lookup for queries
    def lookup(self, parts: list[str], ctx: Context, *, options: dict[str, str] | None = None,
               version: exp.Version | None = None, error: Callable[[str], SqlError]) -> Relation | ViewDef:
        options = options or {}
        cat, db, name = self.qualify(parts, ctx, error)
        entry = self.catalog_entry(cat, error)
        full = f"{cat}.{db}.{name}"
        mt = self.temporary.get((cat, db, name))
        if mt is None and entry.kind == "memory":
            mt = entry.databases.get(db, {}).get(name)
            if mt is None:
                raise error(f"Table '{full}' does not exist")
        if mt is not None:
            if mt.kind == "view":
                return mt.view
            if mt.kind == "data":
                return ArrowRelation(full, mt.data)
            if mt.kind == "datagen":
                spec = mt.spec
                return FunctionRelation(full, spec.schema, lambda: spec.generate(self._datagen_total(spec, error),
                                                                                 self._seed()), datagen=spec)
            raise error(f"Table '{full}' is a '{mt.options.get('connector')}' sink and cannot be read")
        from paimon_lab import system as st
        from paimon_lab.catalog.system_tables import catalog_system_table

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
            raise error(f"Table '{full}' does not exist") from None
        if options.get("branch"):
            table = table.on_branch(options["branch"])
        ttype = table.options.get("type", "table")
        if ttype == "materialized-table" and system is None and not options.get("branch"):
            from paimon_lab.sql.special import ensure_scheduled

            ensure_scheduled(self, cat, db, base, table)
        if ttype == "format-table":
            if system:
                raise error("Format tables have no system tables")
            from paimon_lab.sql.special import FormatTableRelation

            return FormatTableRelation(table, full)
        scan = self._scan_target(table, options, version, error)
        if system is not None:
            if system == "ro":
                return PaimonRelation(table, read_optimized=True, label=full, **scan["at"])
            if scan.get("incremental"):
                if system not in ("audit_log", "binlog"):
                    raise error(f"'incremental-between' does not apply to system table '{system}'")
                start, end = scan["incremental"]
                return ArrowRelation(full, lambda: table.system(system, start_snapshot=start,
                                                                    snapshot_id=end))
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
            return ChangesRelation(table, start, end, label=full)
        return PaimonRelation(table, label=full, **scan["at"])

    def _scan_target(self, table, options: dict[str, str], version, error) -> dict:
        """Snapshot / tag / time / incremental range from scan options and time-travel clauses."""
        at: dict[str, Any] = {}
        out: dict[str, Any] = {"at": at}
        o = options

        def tag_or_snapshot(v: str) -> int:
            v = str(v).strip()
            if v.isdigit():
                return int(v)
            try:
                return table.tag_manager.get(v).snapshot.id
            except PaimonLabError as e:
                raise error(str(e)) from None

        if "incremental-between" in o:
            parts = [p.strip() for p in o["incremental-between"].split(",")]
            if len(parts) != 2:
                raise error("'incremental-between' takes 'start,end' (snapshot ids or tag names)")
            out["incremental"] = (tag_or_snapshot(parts[0]), tag_or_snapshot(parts[1]))
            return out
        if "incremental-between-timestamp" in o:
            parts = [p.strip() for p in o["incremental-between-timestamp"].split(",")]
            if len(parts) != 2:
                raise error("'incremental-between-timestamp' takes 'start,end' (epoch millis)")

            def at_time(ms: int) -> int:
                snap = table.snapshot_manager.earlier_or_equal_time(ms)
                return snap.id if snap is not None else 0

            out["incremental"] = (at_time(int(parts[0])), at_time(int(parts[1])))
            return out
        mode = o.get("scan.mode", "default").lower()
        if "scan.snapshot-id" in o:
            at["snapshot_id"] = int(o["scan.snapshot-id"])
        if "scan.tag-name" in o:
            at["tag"] = o["scan.tag-name"]
        if "scan.timestamp-millis" in o:
            at["timestamp_millis"] = int(o["scan.timestamp-millis"])
        if "scan.timestamp" in o:
            at["timestamp_millis"] = self.parse_timestamp(o["scan.timestamp"], "scan.timestamp")
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
                    v = value if value.tzinfo else value.replace(tzinfo=self.local_tz())
                    at["timestamp_millis"] = int(v.timestamp() * 1000)
                elif isinstance(value, (int, float)):
                    at["timestamp_millis"] = int(value)
                else:
                    at["timestamp_millis"] = self.parse_timestamp(str(value))
        if len([k for k in ("snapshot_id", "tag", "timestamp_millis") if at.get(k) is not None]) > 1:
            raise error("Give one time-travel target: a snapshot id, a tag or a timestamp")
        try:
            if at:
                snap = table.snapshot(**at)
                if snap is None:
                    raise error(f"Table {table.identifier} has no snapshot to read")
        except SqlError:
            raise
        except PaimonLabError as e:
            raise error(str(e)) from None
        return out

    def view_ast(self, view: ViewDef, error) -> tuple[exp.Expression, Rewritten]:
        rw = rewrite(view.query)
        try:
            return parse(rw), rw
        except SqlError as e:
            raise error(f"View '{view.catalog}.{view.database}.{view.name}' does not parse: {e.reason}") from None

    def _seed(self) -> int:
        return int(self.setting("datagen.seed", "0"))

    def _datagen_total(self, spec: DatagenSpec, error=None) -> int:
        bound = spec.bound()
        if bound is not None:
            return bound
        interval = self._checkpoint_interval()
        if interval is None:
            raise (error or SqlError)(
                f"datagen table '{spec.name}' is unbounded: give it 'number-of-rows', or SET "
                "'execution.checkpointing.interval' (rows = rows-per-second x interval x 'datagen.checkpoints')")
        return spec.rows_per_second * interval * self._checkpoints()

    def _checkpoints(self) -> int:
        return int(self.setting("datagen.checkpoints", "2"))

    def _checkpoint_interval(self) -> int | None:
        text = self.setting("execution.checkpointing.interval")
        if not text:
            return None
        from paimon_lab.core.options import parse_duration

        try:
            return max(1, parse_duration(text.replace(" ", "")) // 1000) if not text.strip().isdigit() \
                else max(1, int(text) // 1000)
        except Exception:
            raise SqlError(f"Cannot read execution.checkpointing.interval '{text}'") from None

    # ------------------------------------------------------------------ queries
    def prepare_query(self, rw: Rewritten, ast: exp.Expression, ctx: Context | None = None,
                      bindings: dict[str, Relation] | None = None) -> Prepared:
        planner = Planner(self, ctx or self.current, rw, bindings)
        return planner.prepare(ast)

    def query(self, rw: Rewritten, ast: exp.Expression, ctx: Context | None = None,
              bindings: dict[str, Relation] | None = None) -> pa.Table:
        prepared = self.prepare_query(rw, ast, ctx, bindings)
        try:
            return prepared.execute()
        finally:
            self.last_scans = prepared.scans

    # ------------------------------------------------------------------ dispatch
    def _execute(self, text: str) -> pa.Table | None:
        from paimon_lab.core.options import OPTIONS, TYPE_LENGTH_ENFORCER
        from paimon_lab.operation.write_input import length_enforcer_override
        from paimon_lab.sql.statements import dispatch

        enforcer = self.setting(TYPE_LENGTH_ENFORCER)
        with self._lock:
            token = None
            try:
                if enforcer is not None:
                    try:
                        mode = OPTIONS[TYPE_LENGTH_ENFORCER].parse(enforcer)
                    except ValueError as e:
                        raise SqlError(f"SET '{TYPE_LENGTH_ENFORCER}': {e}") from None
                    token = length_enforcer_override.set(mode)
                return dispatch(self, text)
            except SqlError as e:
                if e.statement is None:
                    e.statement = text
                raise
            except PaimonLabError as e:
                raise SqlError(str(e), statement=text) from e
            except (pa.ArrowException, OverflowError) as e:
                raise SqlError(f"{type(e).__name__}: {e}", statement=text) from e
            finally:
                if token is not None:
                    length_enforcer_override.reset(token)


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


def _shift(e: SqlError, script: str, offset: int) -> SqlError:
    """Re-position an error of one statement to the whole script."""
    s_line, s_col = position(script, offset)
    if e.line is None:
        out = SqlError(e.reason, statement=e.statement)
    elif e.line == 1:
        out = SqlError(e.reason, s_line, s_col + e.column - 1, e.statement)
    else:
        out = SqlError(e.reason, s_line + e.line - 1, e.column, e.statement)
    return out
