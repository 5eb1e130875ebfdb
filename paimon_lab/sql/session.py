"""The Session: its state (catalogs, the current catalog and database, settings, temporary
tables, refresh timers) and the statement loop — split a script, dispatch each statement under
the session lock, and turn engine errors into positioned SqlErrors."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any, Callable, Iterator

import pyarrow as pa
from sqlglot import exp

from paimon_lab.catalog import Catalog
from paimon_lab.errors import PaimonLabError, TableNotExistError
from paimon_lab.core.options import OPTIONS, TYPE_LENGTH_ENFORCER, parse_duration, zone_of
from paimon_lab.operation.write_input import length_enforcer_override
from paimon_lab.sql.catalogs import (DEFAULT_CATALOG, DEFAULT_MEMORY_DB, MemoryCatalog, MemTable,
                                     PaimonCatalog, Scope)
from paimon_lab.sql.datagen import DatagenSpec
from paimon_lab.sql.dispatch import dispatch
from paimon_lab.sql.duck import LOCAL_TIME_ZONE, host_time_zone, session_time_zone
from paimon_lab.sql.errors import SqlError, position
from paimon_lab.sql.feedback import Feedback, ScriptError, StatementResult
from paimon_lab.sql.lexer import split_statements
from paimon_lab.sql.params import bind
from paimon_lab.sql.plan import Planner
from paimon_lab.sql.prepared import Prepared, Scan
from paimon_lab.sql.relations import Relation
from paimon_lab.sql.rewrite import Rewritten


class Session:
    """Runs Flink/Spark-flavoured SQL against Paimon catalogs.

    >>> s = Session()
    >>> s.run("CREATE CATALOG paimon WITH ('type'='paimon', 'warehouse'='/tmp/wh'); USE CATALOG paimon")
    >>> s.execute("SELECT * FROM t")      # a pyarrow.Table
    """

    def __init__(self, catalog: Catalog | str | None = None, *, name: str = "paimon",
                 settings: dict[str, str] | None = None):
        self.catalogs: dict[str, MemoryCatalog | PaimonCatalog] = {DEFAULT_CATALOG: MemoryCatalog(DEFAULT_CATALOG)}
        self.current = Scope(DEFAULT_CATALOG, DEFAULT_MEMORY_DB)
        self.settings: dict[str, str] = dict(settings or {})
        self.last_scans: list[Scan] = []
        self.feedback = Feedback()  # the running (or last) statement's
        self._last_snapshot_id: int | None = None
        self.timers: dict[tuple[str, str, str], threading.Timer] = {}
        self.temporary: dict[tuple[str, str, str], MemTable] = {}
        self.lock = threading.RLock()
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
            self.current = Scope(name, default_db)

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
        last = None
        for done in self.statements(script, params):
            if done.result is not None:
                last = done.result
        return last

    def statements(self, script: str, params: Any = None) -> Iterator[StatementResult]:
        """Run a script statement by statement, yielding each one's :class:`StatementResult` (its
        result table and :class:`Feedback`, e.g. ``inserted 3 rows into c.db.t — snapshot 2``).
        A failing statement raises a :class:`ScriptError`: its SqlError positioned in the script,
        with the statements that ran before it."""
        script = bind(script, params)
        done: list[StatementResult] = []
        for index, (offset, text) in enumerate(split_statements(script), start=1):
            try:
                result, feedback = self._run_one(text)
            except SqlError as e:
                raise ScriptError(_shift(e, script, offset), index, done, script) from e.__cause__
            done.append(StatementResult(index, text, None, feedback))  # without its rows
            yield StatementResult(index, text, result, feedback)

    @property
    def last_snapshot_id(self) -> int | None:
        """The snapshot the last writing statement committed (None if it committed none)."""
        return self._last_snapshot_id

    @last_snapshot_id.setter
    def last_snapshot_id(self, value: int | None) -> None:
        self._last_snapshot_id = value
        self.feedback.snapshot_id = value

    def stop_refresh(self, catalog: str, database: str, name: str) -> None:
        timer = self.timers.pop((catalog, database, name), None)
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        for t in list(self.timers.values()):
            t.cancel()
        self.timers.clear()

    # ------------------------------------------------------------------ settings
    def setting(self, key: str, default: str | None = None) -> str | None:
        return self.settings.get(key, default)

    @property
    def batch_mode(self) -> bool:
        return (self.setting("execution.runtime-mode", "streaming") or "").lower() == "batch"

    def time_zone_name(self) -> str:
        """'table.local-time-zone' as DuckDB (ICU) names it; the machine's zone when unset or
        'default', as in Flink. Java's offset ids ('GMT+08:00', 'UTC+8', '+08:00') become
        'Etc/GMT-8' for whole hours (the POSIX sign: east is minus; a name every DuckDB release
        knows, unlike 'GMT+08:00' before 1.5), else 'GMT+05:30'."""
        name = (self.setting(LOCAL_TIME_ZONE) or "").strip()
        if not name or name.lower() == "default":
            return host_time_zone()
        try:
            zone = zone_of(name)
        except ValueError as e:
            raise SqlError(f"SET '{LOCAL_TIME_ZONE}': {e}") from None
        if isinstance(zone, dt.timezone):
            minutes = int(zone.utcoffset(None).total_seconds()) // 60
            if minutes % 60 == 0:
                return "UTC" if minutes == 0 else f"Etc/GMT{'-' if minutes > 0 else '+'}{abs(minutes) // 60}"
            sign = "-" if minutes < 0 else "+"
            return f"GMT{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
        return name

    def local_tz(self) -> dt.tzinfo:
        name = self.time_zone_name()
        try:
            return zone_of(name)
        except ValueError:  # a host zone name Python's tz database lacks
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
    def qualify(self, parts: list[str], scope: Scope | None = None,
                error: Callable[[str], SqlError] | None = None) -> tuple[str, str, str]:
        scope = scope or self.current
        err = error or (lambda m: SqlError(m))
        if len(parts) == 1:
            return scope.catalog, scope.database, parts[0]
        if len(parts) == 2:
            return scope.catalog, parts[0], parts[1]
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

    def get_table(self, parts: list[str], scope: Scope | None = None, error=None):
        """The Paimon Table a name refers to (not views or connector tables)."""
        err = error or (lambda m: SqlError(m))
        cat, db, name = self.qualify(parts, scope, err)
        entry = self.paimon_catalog(cat, err)
        try:
            table = entry.catalog.get_table(f"{db}.{name}")
        except (TableNotExistError, PaimonLabError):
            raise err(f"Table '{cat}.{db}.{name}' does not exist") from None
        return table

    def seed(self) -> int:
        return int(self.setting("datagen.seed", "0"))

    def datagen_total(self, spec: DatagenSpec, error=None) -> int:
        bound = spec.bound()
        if bound is not None:
            return bound
        interval = self.checkpoint_interval()
        if interval is None:
            raise (error or SqlError)(
                f"datagen table '{spec.name}' is unbounded: give it 'number-of-rows', or SET "
                "'execution.checkpointing.interval' (rows = rows-per-second x interval x 'datagen.checkpoints')")
        return spec.rows_per_second * interval * self.checkpoints()

    def checkpoints(self) -> int:
        return int(self.setting("datagen.checkpoints", "2"))

    def checkpoint_interval(self) -> int | None:
        text = self.setting("execution.checkpointing.interval")
        if not text:
            return None
        try:
            return max(1, parse_duration(text.replace(" ", "")) // 1000) if not text.strip().isdigit() \
                else max(1, int(text) // 1000)
        except Exception:
            raise SqlError(f"Cannot read execution.checkpointing.interval '{text}'") from None

    # ------------------------------------------------------------------ queries
    def prepare_query(self, rw: Rewritten, ast: exp.Expression, scope: Scope | None = None,
                      bindings: dict[str, Relation] | None = None) -> Prepared:
        planner = Planner(self, scope or self.current, rw, bindings)
        return planner.prepare(ast)

    def query(self, rw: Rewritten, ast: exp.Expression, scope: Scope | None = None,
              bindings: dict[str, Relation] | None = None) -> pa.Table:
        prepared = self.prepare_query(rw, ast, scope, bindings)
        try:
            return _in_zone(prepared.execute(), self.time_zone_name())
        finally:
            self.last_scans = prepared.scans

    # ------------------------------------------------------------------ dispatch
    def _execute(self, text: str) -> pa.Table | None:
        return self._run_one(text)[0]

    def _run_one(self, text: str) -> tuple[pa.Table | None, Feedback]:
        enforcer = self.setting(TYPE_LENGTH_ENFORCER)
        with self.lock:
            feedback = self.feedback = Feedback()
            token = None
            try:
                if enforcer is not None:
                    try:
                        mode = OPTIONS[TYPE_LENGTH_ENFORCER].parse(enforcer)
                    except ValueError as e:
                        raise SqlError(f"SET '{TYPE_LENGTH_ENFORCER}': {e}") from None
                    token = length_enforcer_override.set(mode)
                zone_token = session_time_zone.set(self.time_zone_name())
                try:
                    return dispatch(self, text), feedback
                finally:
                    session_time_zone.reset(zone_token)
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


def _arrow_zone(zone: str) -> str:
    """An offset zone as Arrow spells it: '+08:00' for 'GMT+08:00' and for 'Etc/GMT-8'."""
    if zone.startswith("GMT") and zone[3:4] in "+-" and len(zone) > 3:
        return zone[3:]
    if zone.startswith("Etc/GMT") and zone[7:8] in "+-" and zone[8:].isdigit():
        return f"{'-' if zone[7] == '+' else '+'}{int(zone[8:]):02d}:00"
    return zone


def _in_zone(data: pa.Table, zone: str) -> pa.Table:
    """``data`` with its TIMESTAMP_LTZ columns shown in ``zone`` (the same instants)."""
    if not any(pa.types.is_timestamp(f.type) and f.type.tz for f in data.schema):
        return data
    arrow_zone = _arrow_zone(zone)
    fields = [f.with_type(pa.timestamp(f.type.unit, tz=arrow_zone))
              if pa.types.is_timestamp(f.type) and f.type.tz else f for f in data.schema]
    return data.cast(pa.schema(fields, metadata=data.schema.metadata))


def _shift(e: SqlError, script: str, offset: int) -> SqlError:
    """Re-position an error of one statement to the whole script."""
    s_line, s_col = position(script, offset)
    if e.line is None:
        out = SqlError(e.reason, statement=e.statement, detail=e.detail)
    elif e.line == 1:
        out = SqlError(e.reason, s_line, s_col + e.column - 1, e.statement, e.detail)
    else:
        out = SqlError(e.reason, s_line + e.line - 1, e.column, e.statement, e.detail)
    return out
