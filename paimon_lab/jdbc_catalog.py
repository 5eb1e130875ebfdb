"""The JDBC catalog: databases, tables, views and the commit lock kept in a relational database.

Table files stay where the filesystem catalog puts them, ``{warehouse}/{db}.db/{table}``, with
the usual schema and snapshot files; the database is the registry of what exists. A table
directory that is not registered is not a table of this catalog (adopt one with
:meth:`JdbcCatalog.register_table`).

The database layout is the one Java Paimon's ``JdbcCatalog`` uses, so both can share a
catalog database:

``paimon_tables`` (catalog_key, database_name, table_name)
    one row per table.
``paimon_database_properties`` (catalog_key, database_name, property_key, property_value)
    one row per database property; every database has ``exists=true`` and ``location``.
``paimon_views`` (catalog_key, database_name, view_name, view_schema)
    ``view_schema`` is the JSON of a Paimon ``ViewSchema``: fields, query, dialects,
    comment, options.
``paimon_distributed_locks`` (lock_id, acquired_at, expire_time_seconds, lock_owner)
    the commit lock: a row exists while someone holds the lock ``{catalog_key}.{db}.{table}``.

``catalog_key`` lets several catalogs share one database. Supported databases: SQLite
(standard library; ``sqlite:///path/to/file.db`` or a plain path, by default a file inside a
local warehouse) and PostgreSQL (``postgresql://user:password@host:port/dbname``, through
``psycopg`` 3: ``pip install 'psycopg[binary]'``). ``jdbc:sqlite:`` and ``jdbc:postgresql:``
URIs are accepted too; then ``jdbc.user`` / ``jdbc.password`` options give the credentials.

On object stores (``s3://``...) creating ``snapshot-N`` is not atomic, so :class:`FileIO`
creates it under a :class:`JdbcCommitLock`: committers on any number of machines are
serialized by the database row.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import threading
import time
import uuid
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence
from urllib.parse import urlparse

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.catalog import DB_SUFFIX, split_branch, split_identifier, table_schema_for
from paimon_lab.errors import (CatalogError, CommitError, DatabaseAlreadyExistError,
                               DatabaseNotEmptyError, DatabaseNotExistError, OptionError,
                               TableAlreadyExistError, TableNotExistError)
from paimon_lab.io.file_io import (CommitLock, FileIO, _local_path, check_name, check_new_table_name, join,
                           normalize_path)
from paimon_lab.io.fs_options import filesystem_from_options
from paimon_lab.core.options import parse_duration
from paimon_lab.core.schema import SchemaManager, TableSchema
from paimon_lab.table import Table

DEFAULT_CATALOG_KEY = "jdbc"
DEFAULT_SQLITE_FILE = "paimon-jdbc-catalog.sqlite"

TABLES = "paimon_tables"
DATABASE_PROPERTIES = "paimon_database_properties"
VIEWS = "paimon_views"
LOCKS = "paimon_distributed_locks"

DATABASE_EXISTS_PROPERTY = "exists"
DATABASE_LOCATION_PROPERTY = "location"

# Options (names as in Java Paimon where it has them).
OPT_CATALOG_KEY = "catalog-key"
OPT_USER = "jdbc.user"
OPT_PASSWORD = "jdbc.password"
OPT_LOCK_ENABLED = "lock.enabled"
OPT_ACQUIRE_TIMEOUT = "lock-acquire-timeout"      # Java default 8 min
OPT_CHECK_MAX_SLEEP = "lock-check-max-sleep"      # Java default 8 s; ours 1 s (see JdbcCommitLock)
OPT_EXPIRE_TIME = "lock-expire-time"              # paimon-lab only: the lease of a lock row
OPT_KEY_MAX_LENGTH = "lock-key-max-length"        # Java default 255


# --------------------------------------------------------------------------- errors

def _view_of(action: str, full: str, query: str, schema: pa.Schema, comment: str | None,
             dialects: Mapping[str, str] | None, options: Mapping[str, str] | None) -> View:
    """A checked view definition (``action``: 'create' or 'alter', for the error messages)."""
    if not isinstance(query, str) or not query.strip():
        raise CatalogError(f"Cannot {action} view '{full}': the query is empty")
    if not isinstance(schema, pa.Schema):
        raise CatalogError(f"Cannot {action} view '{full}': the schema must be a pyarrow.Schema, "
                           f"got {type(schema).__name__}")
    if len(set(schema.names)) != len(schema.names):
        raise CatalogError(f"Cannot {action} view '{full}': duplicate column names in {schema.names}")
    return View(full, query, tuple(T.fields_from_arrow(schema)), comment,
                {str(k): str(v) for k, v in (dialects or {}).items()},
                {str(k): str(v) for k, v in (options or {}).items()})


class JdbcCatalogError(CatalogError):
    """The catalog database could not be reached or refused a statement."""


class ViewNotExistError(CatalogError):
    def __init__(self, identifier: str):
        super().__init__(f"View '{identifier}' does not exist")
        self.identifier = identifier


class ViewAlreadyExistError(CatalogError):
    def __init__(self, identifier: str, detail: str | None = None):
        super().__init__(f"View '{identifier}' already exists" if detail is None
                         else f"Cannot create view '{identifier}': {detail}")
        self.identifier = identifier


class LockTimeoutError(CommitError):
    """The commit lock could not be acquired in time; nothing was committed."""


# --------------------------------------------------------------------------- the database

def _describe(uri: str) -> str:
    """The URI without its password, for messages."""
    parsed = urlparse(uri)
    if parsed.password:
        return uri.replace(f":{parsed.password}@", ":***@")
    return uri


class JdbcConnection:
    """One DB-API connection to the catalog database, shared by threads (statements are
    serialized) and re-opened after a fork. SQL is written with ``?`` placeholders."""

    def __init__(self, uri: str | None, *, warehouse: str | None = None,
                 options: Mapping[str, str] | None = None):
        options = dict(options or {})
        self.uri = uri
        self._mutex = threading.RLock()
        self._conn = None
        self._pid = None
        u = (uri or "").strip()
        if u.lower().startswith("jdbc:"):
            u = u[5:]
        low = u.lower()
        if low in ("", "sqlite", "sqlite:", "sqlite://"):
            local = _local_path(warehouse) if warehouse else None
            if local is None:
                raise JdbcCatalogError(
                    f"A JDBC catalog on warehouse {warehouse!r} needs a database uri: the default SQLite "
                    "file can only live in a local warehouse (use sqlite:///path or postgresql://...)")
            self.dialect, self._target = "sqlite", os.path.join(local, DEFAULT_SQLITE_FILE)
        elif low.startswith("sqlite:"):
            rest = u[len("sqlite:"):]
            if rest.startswith("//"):
                rest = rest[2:]
            if not rest:
                raise JdbcCatalogError(f"Catalog database uri {uri!r} names no SQLite file")
            self.dialect = "sqlite"
            if rest.startswith("/"):
                rest = "/" + rest.lstrip("/")  # sqlite:///abs and SQLAlchemy's sqlite:////abs alike
            self._target = rest if rest == ":memory:" or rest.startswith("file:") else os.path.abspath(rest)
        elif low.startswith(("postgresql:", "postgres:")):
            self.dialect, self._target = "postgresql", u
            self._user = options.get(OPT_USER) or None
            self._password = options.get(OPT_PASSWORD) or None
        elif "://" in u or ":" in u.split("/", 1)[0] and not os.path.isabs(u):
            raise JdbcCatalogError(
                f"Unsupported catalog database uri {_describe(uri)!r}: use sqlite:///path/to/file.db, "
                "a plain file path, or postgresql://user:password@host:port/dbname")
        else:
            self.dialect, self._target = "sqlite", os.path.abspath(u)
        self.describe = _describe(self._target) if self.dialect == "postgresql" else f"sqlite:{self._target}"
        if self.dialect == "postgresql":
            try:
                import psycopg  # noqa: F401
            except ImportError:
                raise JdbcCatalogError("A PostgreSQL catalog needs psycopg 3: pip install 'psycopg[binary]'") from None
        self._connection()  # fail early on a bad uri

    # -- connection handling
    def _open(self):
        if self.dialect == "sqlite":
            if self._target != ":memory:" and not self._target.startswith("file:"):
                os.makedirs(os.path.dirname(self._target) or ".", exist_ok=True)
            conn = sqlite3.connect(self._target, timeout=60, isolation_level=None, check_same_thread=False,
                                   uri=self._target.startswith("file:"))
            conn.execute("PRAGMA busy_timeout = 60000")
            return conn
        import psycopg

        kwargs: dict[str, Any] = {"autocommit": True}
        if self._user:
            kwargs["user"] = self._user
        if self._password:
            kwargs["password"] = self._password
        if "connect_timeout" not in self._target:
            kwargs["connect_timeout"] = 10
        return psycopg.connect(self._target, **kwargs)

    def _connection(self):
        if self._conn is None or self._pid != os.getpid():
            try:
                self._conn = self._open()
            except (sqlite3.Error, OSError) as e:
                raise JdbcCatalogError(f"Cannot open the catalog database {self.describe}: {e}") from e
            except Exception as e:
                if type(e).__module__.startswith("psycopg"):
                    raise JdbcCatalogError(f"Cannot connect to the catalog database {self.describe}: {e}") from e
                raise
            self._pid = os.getpid()
        return self._conn

    def close(self) -> None:
        with self._mutex:
            if self._conn is not None and self._pid == os.getpid():
                try:
                    self._conn.close()
                except Exception:
                    pass
            self._conn = None

    # -- statements
    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.dialect == "postgresql" else sql

    def _is_integrity_error(self, e: BaseException) -> bool:
        if self.dialect == "sqlite":
            return isinstance(e, sqlite3.IntegrityError)
        import psycopg

        return isinstance(e, psycopg.IntegrityError)

    def _is_db_error(self, e: BaseException) -> bool:
        if isinstance(e, sqlite3.Error):
            return True
        if self.dialect == "postgresql":
            import psycopg

            return isinstance(e, psycopg.Error)
        return False

    def _run(self, sql: str, params: Sequence[Any], fetch: bool):
        with self._mutex:
            conn = self._connection()
            cur = conn.cursor()
            try:
                cur.execute(self._sql(sql), tuple(params))
                return cur.fetchall() if fetch else cur.rowcount
            finally:
                cur.close()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; the number of rows it changed."""
        try:
            return self._run(sql, params, False)
        except Exception as e:
            if self._is_db_error(e):
                raise JdbcCatalogError(f"Catalog database {self.describe} failed on {sql.split('(')[0].strip()!r}: {e}") from e
            raise

    def insert(self, sql: str, params: Sequence[Any] = ()) -> bool:
        """Run an INSERT; False (instead of an error) when it breaks a primary key."""
        try:
            self._run(sql, params, False)
            return True
        except Exception as e:
            if self._is_integrity_error(e):
                return False
            if self._is_db_error(e):
                raise JdbcCatalogError(f"Catalog database {self.describe} failed on {sql.split('(')[0].strip()!r}: {e}") from e
            raise

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        try:
            return self._run(sql, params, True)
        except Exception as e:
            if self._is_db_error(e):
                raise JdbcCatalogError(f"Catalog database {self.describe} failed on {sql.split(' FROM')[0].strip()!r}: {e}") from e
            raise

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Statements inside run as one transaction (the connection is held meanwhile)."""
        with self._mutex:
            conn = self._connection()
            if self.dialect == "postgresql":
                with conn.transaction():
                    yield
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- dialect bits
    def lock_expired_condition(self) -> str:
        """SQL true for a lock row older than its ``expire_time_seconds`` (by the database clock)."""
        if self.dialect == "sqlite":
            return ("CAST(strftime('%s', 'now') AS INTEGER) - CAST(strftime('%s', acquired_at) AS INTEGER)"
                    " > expire_time_seconds")
        return "EXTRACT(EPOCH FROM (LOCALTIMESTAMP - acquired_at)) > expire_time_seconds"

    def table_columns(self, table: str) -> set[str]:
        if self.dialect == "sqlite":
            return {row[1].lower() for row in self.query(f"PRAGMA table_info({table})")}
        return {row[0].lower() for row in self.query(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
            "AND table_schema = current_schema()", (table,))}

    def create_table(self, ddl: str) -> None:
        """CREATE TABLE IF NOT EXISTS, tolerating a concurrent creator."""
        try:
            self.execute(ddl)
        except JdbcCatalogError as e:
            # PostgreSQL can report a unique violation when two sessions create at once.
            table = ddl.split("EXISTS", 1)[1].split("(", 1)[0].strip()
            if not self.table_columns(table):
                raise e

    def __repr__(self) -> str:
        return f"JdbcConnection({self.describe!r})"


def _create_catalog_tables(db: JdbcConnection) -> None:
    db.create_table(
        f"CREATE TABLE IF NOT EXISTS {TABLES} ("
        "catalog_key VARCHAR(255) NOT NULL, database_name VARCHAR(255) NOT NULL, "
        "table_name VARCHAR(255) NOT NULL, "
        "PRIMARY KEY (catalog_key, database_name, table_name))")
    db.create_table(
        f"CREATE TABLE IF NOT EXISTS {DATABASE_PROPERTIES} ("
        "catalog_key VARCHAR(255) NOT NULL, database_name VARCHAR(255) NOT NULL, "
        "property_key VARCHAR(255), property_value VARCHAR(1000), "
        "PRIMARY KEY (catalog_key, database_name, property_key))")
    db.create_table(
        f"CREATE TABLE IF NOT EXISTS {VIEWS} ("
        "catalog_key VARCHAR(255) NOT NULL, database_name VARCHAR(255) NOT NULL, "
        "view_name VARCHAR(255) NOT NULL, view_schema TEXT NOT NULL, "
        "PRIMARY KEY (catalog_key, database_name, view_name))")


def _create_lock_table(db: JdbcConnection, key_max_length: int = 255) -> None:
    db.create_table(
        f"CREATE TABLE IF NOT EXISTS {LOCKS} ("
        f"lock_id VARCHAR({int(key_max_length)}) NOT NULL, "
        "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL, "
        "expire_time_seconds BIGINT DEFAULT 0 NOT NULL, "
        "lock_owner VARCHAR(36), "
        "PRIMARY KEY (lock_id))")
    if "lock_owner" not in db.table_columns(LOCKS):  # created by an older Java Paimon
        try:
            db.execute(f"ALTER TABLE {LOCKS} ADD COLUMN lock_owner VARCHAR(36)")
        except JdbcCatalogError:
            if "lock_owner" not in db.table_columns(LOCKS):
                raise


# --------------------------------------------------------------------------- the lock

def _seconds(options: Mapping[str, str], key: str, default: float) -> float:
    if key not in options:
        return default
    try:
        return parse_duration(str(options[key])) / 1000.0
    except ValueError as e:
        raise OptionError(f"Option '{key}': {e}") from None


class JdbcCommitLock(CommitLock):
    """A commit lock held as a row of ``paimon_distributed_locks``, for every process and
    machine that uses the same catalog database.

    ``hold(key)`` inserts the row ``lock_id`` (INSERT fails while another holder's row is
    there), retrying with exponential backoff (up to ``check_max_sleep`` seconds between tries)
    until ``acquire_timeout`` seconds have passed, and deletes its own row when done. A row
    older than ``expire_seconds`` (by the database clock) is taken to belong to a crashed holder
    and is removed by the next one who wants the lock. The lock id of a path under the warehouse
    is ``{catalog_key}.{database}.{table}``, as in Java Paimon, so Java writers that lock the
    same table through the same catalog database are serialized with us.

    Our critical section is creating one small metadata file, so the defaults are shorter
    than Java's: at most 1 s between tries, a 60 s lease, 8 min to give up.
    """

    def __init__(self, connection: JdbcConnection | str, catalog_key: str = DEFAULT_CATALOG_KEY, *,
                 warehouse: str | None = None, acquire_timeout: float = 480.0, check_max_sleep: float = 1.0,
                 expire_seconds: int = 60, key_max_length: int = 255,
                 table_of: Callable[[str], tuple[str, str] | None] | None = None):
        # No super().__init__(): this lock needs no lock directory.
        self.db = connection if isinstance(connection, JdbcConnection) else JdbcConnection(connection)
        self.catalog_key = catalog_key
        self.warehouse = warehouse.rstrip("/") if warehouse else None
        self.acquire_timeout = float(acquire_timeout)
        self.check_max_sleep = max(0.001, float(check_max_sleep))
        self.expire_seconds = max(1, int(round(expire_seconds)))
        self.key_max_length = int(key_max_length)
        self._table_of = table_of
        _create_lock_table(self.db, self.key_max_length)

    # -- lock ids
    def _default_table_of(self, path: str) -> tuple[str, str] | None:
        if not self.warehouse or not path.startswith(self.warehouse + "/"):
            return None
        parts = path[len(self.warehouse) + 1:].split("/")
        if len(parts) >= 2 and parts[0].endswith(DB_SUFFIX) and len(parts[0]) > len(DB_SUFFIX):
            return parts[0][: -len(DB_SUFFIX)], parts[1]
        return None

    def lock_id(self, key: str) -> str:
        """The lock row for a path: one per table (or one per path outside any table)."""
        table = (self._table_of or self._default_table_of)(key)
        if table is not None:
            out = f"{self.catalog_key}.{table[0]}.{table[1]}"
        else:
            out = f"{self.catalog_key}.path-{hashlib.sha1(key.encode()).hexdigest()}"
        if len(out) > self.key_max_length:
            digest = hashlib.sha1(out.encode()).hexdigest()[:16]
            out = out[: self.key_max_length - 17] + "-" + digest
        return out

    # -- primitives
    def try_acquire(self, lock_id: str, owner: str) -> bool:
        """One attempt: clear an expired row, then insert ours. True if we hold the lock."""
        self.db.execute(f"DELETE FROM {LOCKS} WHERE lock_id = ? AND {self.db.lock_expired_condition()}", (lock_id,))
        return self.db.insert(f"INSERT INTO {LOCKS} (lock_id, expire_time_seconds, lock_owner) VALUES (?, ?, ?)",
                              (lock_id, self.expire_seconds, owner))

    def release(self, lock_id: str, owner: str) -> bool:
        """Delete our row; False if it was not ours any more (it expired and was taken)."""
        return self.db.execute(f"DELETE FROM {LOCKS} WHERE lock_id = ? AND lock_owner = ?", (lock_id, owner)) > 0

    def holder(self, lock_id: str) -> str | None:
        rows = self.db.query(f"SELECT lock_owner FROM {LOCKS} WHERE lock_id = ?", (lock_id,))
        return rows[0][0] if rows else None

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        lock_id = self.lock_id(key)
        owner = str(uuid.uuid4())
        start = time.monotonic()
        pause = 0.005
        while not self.try_acquire(lock_id, owner):
            waited = time.monotonic() - start
            if waited >= self.acquire_timeout:
                raise LockTimeoutError(
                    f"Could not acquire the commit lock '{lock_id}' in {self.db.describe} within "
                    f"{self.acquire_timeout:g} s (held by {self.holder(lock_id) or 'nobody now'}); "
                    f"raise '{OPT_ACQUIRE_TIMEOUT}' or remove a stale row from {LOCKS}")
            time.sleep(min(pause * random.uniform(0.5, 1.0), self.acquire_timeout - waited))
            pause = min(pause * 2, self.check_max_sleep)
        acquired = time.monotonic()
        try:
            yield
        finally:
            held = time.monotonic() - acquired
            try:
                still_ours = self.release(lock_id, owner)
            except JdbcCatalogError as e:
                warnings.warn(f"Could not release the commit lock '{lock_id}' ({e}); "
                              f"it expires after {self.expire_seconds} s", stacklevel=3)
                still_ours = True
            if not still_ours or held > self.expire_seconds:
                warnings.warn(f"The commit lock '{lock_id}' was held for {held:.1f} s, longer than its "
                              f"{self.expire_seconds} s lease; raise '{OPT_EXPIRE_TIME}'", stacklevel=3)

    def __repr__(self) -> str:
        return f"JdbcCommitLock({self.db.describe!r}, catalog_key={self.catalog_key!r})"


# --------------------------------------------------------------------------- views

@dataclass(frozen=True)
class View:
    """A persisted view: its SQL text and the schema of its result, kept for the SQL layer."""

    identifier: str
    query: str
    fields: tuple[T.DataField, ...]
    comment: str | None = None
    dialects: dict[str, str] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)

    @property
    def schema(self) -> pa.Schema:
        return T.arrow_schema(self.fields)

    def to_json(self) -> str:
        """Paimon's ``ViewSchema`` JSON (what Java stores in ``paimon_views.view_schema``)."""
        obj: dict[str, Any] = {"fields": [f.to_json() for f in self.fields], "query": self.query,
                               "dialects": dict(self.dialects)}
        if self.comment is not None:
            obj["comment"] = self.comment
        obj["options"] = dict(self.options)
        return json.dumps(obj)

    @staticmethod
    def from_json(identifier: str, text: str) -> "View":
        try:
            obj = json.loads(text)
            return View(identifier, obj["query"], tuple(T.DataField.from_json(f) for f in obj["fields"]),
                        obj.get("comment"), dict(obj.get("dialects") or {}), dict(obj.get("options") or {}))
        except (ValueError, KeyError, TypeError) as e:
            raise JdbcCatalogError(f"The stored schema of view '{identifier}' is not a Paimon view schema: {e}") from None


# --------------------------------------------------------------------------- the catalog

class JdbcCatalog:
    """A Paimon catalog whose metadata lives in a relational database.

    >>> catalog = JdbcCatalog("sqlite:///tmp/catalog.db", "/tmp/warehouse")
    >>> catalog = JdbcCatalog("postgresql://paimon@db-host/paimon", "s3://bucket/warehouse",
    ...                       options={"s3.endpoint": "...", "s3.access-key": "...", "s3.secret-key": "..."})

    ``uri`` None (or ``"sqlite:"``) keeps the catalog in a SQLite file inside a local warehouse.
    ``filesystem`` is a pyarrow file system for the warehouse; without one, object store options
    (see :mod:`paimon_lab.io.fs_options`) in ``options`` configure it. Other options: ``catalog-key``,
    ``jdbc.user``, ``jdbc.password``, ``lock.enabled`` (default true), ``lock-acquire-timeout``,
    ``lock-check-max-sleep``, ``lock-expire-time``, ``lock-key-max-length``.
    """

    def __init__(self, uri: str | None, warehouse: str, *, catalog_key: str | None = None, filesystem=None,
                 options: Mapping[str, str] | None = None):
        if not isinstance(warehouse, str) or not warehouse:
            raise CatalogError("A JDBC catalog needs a warehouse path or URI")
        self.options = {k: str(v) for k, v in (options or {}).items()}
        self.catalog_key = catalog_key or self.options.get(OPT_CATALOG_KEY) or DEFAULT_CATALOG_KEY
        if len(self.catalog_key) > 255:
            raise CatalogError("catalog_key is longer than 255 characters")
        self.warehouse = normalize_path(warehouse)
        self.uri = uri
        self.db = JdbcConnection(uri, warehouse=self.warehouse, options=self.options)
        _create_catalog_tables(self.db)
        self._locations: dict[str, str] = {}  # custom database location -> database name
        if filesystem is None:
            filesystem = filesystem_from_options(self.warehouse, self.options)
        lock_enabled = self.options.get(OPT_LOCK_ENABLED, "true").strip().lower() != "false"
        if lock_enabled:
            try:
                key_max = int(self.options.get(OPT_KEY_MAX_LENGTH, "255"))
            except ValueError:
                raise OptionError(f"Option '{OPT_KEY_MAX_LENGTH}' must be an integer") from None
            self.lock: CommitLock = JdbcCommitLock(
                self.db, self.catalog_key, warehouse=self.warehouse,
                acquire_timeout=_seconds(self.options, OPT_ACQUIRE_TIMEOUT, 480.0),
                check_max_sleep=_seconds(self.options, OPT_CHECK_MAX_SLEEP, 1.0),
                expire_seconds=int(_seconds(self.options, OPT_EXPIRE_TIME, 60.0)),
                key_max_length=key_max, table_of=self._table_of_path)
        else:
            self.lock = CommitLock()
        self.file_io = FileIO(self.warehouse, filesystem, self.lock)
        if self.file_io.is_local:
            self.file_io.mkdirs(self.warehouse)

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "JdbcCatalog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _table_of_path(self, path: str) -> tuple[str, str] | None:
        """(database, table) of a path inside a table directory, for the lock id."""
        prefix = self.warehouse + "/"
        if path.startswith(prefix):
            parts = path[len(prefix):].split("/")
            if len(parts) >= 2 and parts[0].endswith(DB_SUFFIX) and len(parts[0]) > len(DB_SUFFIX):
                return parts[0][: -len(DB_SUFFIX)], parts[1]
        for location, db in self._locations.items():
            if path.startswith(location + "/"):
                rest = path[len(location) + 1:].split("/")
                if rest and rest[0]:
                    return db, rest[0]
        return None

    # ------------------------------------------------------------------ databases
    def default_database_path(self, name: str) -> str:
        return join(self.warehouse, check_name("database", name) + DB_SUFFIX)

    def database_path(self, name: str) -> str:
        """Where the database's tables live: its ``location`` property, else ``{warehouse}/{name}.db``."""
        check_name("database", name)
        rows = self.db.query(
            f"SELECT property_value FROM {DATABASE_PROPERTIES} WHERE catalog_key = ? AND database_name = ? "
            "AND property_key = ?", (self.catalog_key, name, DATABASE_LOCATION_PROPERTY))
        default = self.default_database_path(name)
        if rows and rows[0][0]:
            location = rows[0][0].rstrip("/")
            if location != default:
                self._locations[location] = name
            return location
        return default

    def database_exists(self, name: str) -> bool:
        check_name("database", name)
        return bool(self.db.query(
            f"SELECT 1 FROM {DATABASE_PROPERTIES} WHERE catalog_key = ? AND database_name = ? LIMIT 1",
            (self.catalog_key, name))) or bool(self.db.query(
                f"SELECT 1 FROM {TABLES} WHERE catalog_key = ? AND database_name = ? LIMIT 1",
                (self.catalog_key, name)))

    def list_databases(self) -> list[str]:
        rows = self.db.query(f"SELECT DISTINCT database_name FROM {DATABASE_PROPERTIES} WHERE catalog_key = ?",
                             (self.catalog_key,))
        rows += self.db.query(f"SELECT DISTINCT database_name FROM {TABLES} WHERE catalog_key = ?",
                              (self.catalog_key,))
        return sorted({r[0] for r in rows})

    def database_properties(self, name: str) -> dict[str, str]:
        """The database's properties (``location`` included, the internal ``exists`` marker not)."""
        if not self.database_exists(name):
            raise DatabaseNotExistError(name)
        rows = self.db.query(
            f"SELECT property_key, property_value FROM {DATABASE_PROPERTIES} "
            "WHERE catalog_key = ? AND database_name = ?", (self.catalog_key, name))
        props = {k: v for k, v in rows if k != DATABASE_EXISTS_PROPERTY}
        props.setdefault(DATABASE_LOCATION_PROPERTY, self.default_database_path(name))
        return props

    def create_database(self, name: str, ignore_if_exists: bool = False,
                        properties: Mapping[str, str] | None = None) -> None:
        check_name("database", name)
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistError(name)
        props = {DATABASE_EXISTS_PROPERTY: "true"}
        props.update({str(k): str(v) for k, v in (properties or {}).items()})
        location = props.setdefault(DATABASE_LOCATION_PROPERTY, self.default_database_path(name)).rstrip("/")
        props[DATABASE_LOCATION_PROPERTY] = location
        for k, v in props.items():
            if len(k) > 255 or len(v) > 1000:
                raise CatalogError(f"Database property '{k[:40]}' is too long for the catalog "
                                   "(keys up to 255 characters, values up to 1000)")
        values = ", ".join(["(?, ?, ?, ?)"] * len(props))
        params: list[str] = []
        for k, v in props.items():
            params += [self.catalog_key, name, k, v]
        # One statement: either all properties are there or none (a racing creator loses here).
        if not self.db.insert(f"INSERT INTO {DATABASE_PROPERTIES} "
                              f"(catalog_key, database_name, property_key, property_value) VALUES {values}", params):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistError(name)
        if self.file_io.is_local:
            self.file_io.mkdirs(location)

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        """Drop a database; with ``cascade`` its tables (files included) and views go too."""
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise DatabaseNotExistError(name)
        tables, views = self.list_tables(name), self.list_views(name)
        if (tables or views) and not cascade:
            raise DatabaseNotEmptyError(name)
        location = self.database_path(name)
        paths = [join(location, t) for t in tables]
        with self.db.transaction():
            for table in (TABLES, DATABASE_PROPERTIES, VIEWS):
                self.db.execute(f"DELETE FROM {table} WHERE catalog_key = ? AND database_name = ?",
                                (self.catalog_key, name))
        for path in paths:
            self.file_io.delete_dir(path)
        # The directory goes only if nothing else (e.g. another catalog's table) is left in it.
        if not self.file_io.list_dir(location):
            self.file_io.delete_dir(location)
        self._locations.pop(location, None)

    # ------------------------------------------------------------------ tables
    def table_path(self, identifier: str) -> str:
        db, name = split_identifier(identifier)
        return join(self.database_path(db), name)

    def _registered(self, db: str, name: str) -> bool:
        return bool(self.db.query(
            f"SELECT 1 FROM {TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
            (self.catalog_key, db, name)))

    def table_exists(self, identifier: str) -> bool:
        db, name = split_identifier(identifier)
        return self._registered(db, name)

    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotExistError(database)
        return sorted(r[0] for r in self.db.query(
            f"SELECT table_name FROM {TABLES} WHERE catalog_key = ? AND database_name = ?",
            (self.catalog_key, database)))

    def create_table(self, identifier: str, schema: "pa.Schema | TableSchema | None" = None, *,
                     fields: "Sequence[T.DataField] | None" = None, primary_keys: Sequence[str] = (),
                     partition_keys: Sequence[str] = (), options: dict[str, Any] | None = None,
                     comment: str | None = None, ignore_if_exists: bool = False) -> Table:
        """Create a table and register it; returns it. Columns come from a pyarrow ``schema``,
        from ``fields`` (Paimon :class:`~paimon_lab.core.types.DataField` s, exact types) or ``schema``
        is a whole :class:`~paimon_lab.core.schema.TableSchema` (see :meth:`Catalog.create_table`)."""
        db, name = split_identifier(identifier)
        check_new_table_name(name)
        full = f"{db}.{name}"
        if not self.database_exists(db):
            raise DatabaseNotExistError(db)
        if self._registered(db, name):
            if ignore_if_exists:
                return self.get_table(full)
            raise TableAlreadyExistError(full)
        if self._view_json(db, name) is not None:
            raise CatalogError(f"Cannot create table '{full}': a view with that name exists")
        table_schema = table_schema_for(schema, fields=fields, primary_keys=primary_keys,
                                        partition_keys=partition_keys, options=options, comment=comment)
        path = join(self.database_path(db), name)
        manager = SchemaManager(self.file_io, path)
        if manager.list_ids() or not manager.create(table_schema):
            if self._registered(db, name):  # a concurrent creator registered it meanwhile
                if ignore_if_exists:
                    return self.get_table(full)
                raise TableAlreadyExistError(full)
            raise CatalogError(
                f"Cannot create table '{full}': {path} already holds a Paimon table that this catalog has "
                "not registered; adopt it with register_table() or delete the directory")
        if not self.db.insert(f"INSERT INTO {TABLES} (catalog_key, database_name, table_name) VALUES (?, ?, ?)",
                              (self.catalog_key, db, name)):
            # We created schema-0, so nobody else can have registered a table here; be safe anyway.
            raise TableAlreadyExistError(full)
        return Table(self.file_io, path, full)

    def register_table(self, identifier: str) -> Table:
        """Register an existing table directory at the catalog's path for ``identifier``."""
        db, name = split_identifier(identifier)
        full = f"{db}.{name}"
        if not self.database_exists(db):
            raise DatabaseNotExistError(db)
        path = join(self.database_path(db), name)
        if not SchemaManager(self.file_io, path).list_ids():
            raise TableNotExistError(full)
        if self._view_json(db, name) is not None:
            raise CatalogError(f"Cannot register table '{full}': a view with that name exists")
        if not self.db.insert(f"INSERT INTO {TABLES} (catalog_key, database_name, table_name) VALUES (?, ?, ?)",
                              (self.catalog_key, db, name)):
            raise TableAlreadyExistError(full)
        return Table(self.file_io, path, full)

    def get_table(self, identifier: str) -> Table:
        """Load ``db.table`` (or ``db.table$branch_NAME`` for a branch)."""
        identifier, branch = split_branch(identifier)
        db, name = split_identifier(identifier)
        full = f"{db}.{name}"
        if not self._registered(db, name):
            raise TableNotExistError(full)
        path = join(self.database_path(db), name)
        if branch == "main" and not SchemaManager(self.file_io, path).list_ids():
            raise CatalogError(f"Table '{full}' is registered in the catalog but {path} holds no Paimon schema")
        return Table(self.file_io, path, full, branch)

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        db, name = split_identifier(identifier)
        path = join(self.database_path(db), name)
        deleted = self.db.execute(
            f"DELETE FROM {TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
            (self.catalog_key, db, name))
        if not deleted:
            if ignore_if_not_exists:
                return
            raise TableNotExistError(f"{db}.{name}")
        self.file_io.delete_dir(path)

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Rename a table: its directory moves to the new name's place and the registry row follows."""
        db, name = split_identifier(identifier)
        ndb, nname = split_identifier(new_identifier)
        check_new_table_name(nname)
        if not self._registered(db, name):
            raise TableNotExistError(f"{db}.{name}")
        if not self.database_exists(ndb):
            raise DatabaseNotExistError(ndb)
        if self._registered(ndb, nname) or self._view_json(ndb, nname) is not None:
            raise TableAlreadyExistError(f"{ndb}.{nname}")
        src, dst = join(self.database_path(db), name), join(self.database_path(ndb), nname)
        if self.file_io.exists(dst):
            raise CatalogError(f"Cannot rename table '{db}.{name}' to '{ndb}.{nname}': {dst} exists")
        if not self.db.insert(f"INSERT INTO {TABLES} (catalog_key, database_name, table_name) VALUES (?, ?, ?)",
                              (self.catalog_key, ndb, nname)):
            raise TableAlreadyExistError(f"{ndb}.{nname}")
        try:
            self.file_io.fs.move(self.file_io.arrow_path(src), self.file_io.arrow_path(dst))
        except BaseException:
            self.db.execute(f"DELETE FROM {TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
                            (self.catalog_key, ndb, nname))
            raise
        self.db.execute(f"DELETE FROM {TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
                        (self.catalog_key, db, name))

    # ------------------------------------------------------------------ views
    def _view_json(self, db: str, name: str) -> str | None:
        rows = self.db.query(
            f"SELECT view_schema FROM {VIEWS} WHERE catalog_key = ? AND database_name = ? AND view_name = ?",
            (self.catalog_key, db, name))
        return rows[0][0] if rows else None

    def view_exists(self, identifier: str) -> bool:
        db, name = split_identifier(identifier)
        return self._view_json(db, name) is not None

    def create_view(self, identifier: str, query: str, schema: pa.Schema, comment: str | None = None, *,
                    dialects: Mapping[str, str] | None = None, options: Mapping[str, str] | None = None,
                    ignore_if_exists: bool = False) -> View:
        """Store a view: its SQL ``query`` and the ``schema`` of its result."""
        db, name = split_identifier(identifier)
        full = f"{db}.{name}"
        view = _view_of("create", full, query, schema, comment, dialects, options)
        if not self.database_exists(db):
            raise DatabaseNotExistError(db)
        if self._registered(db, name):
            raise ViewAlreadyExistError(full, "a table with that name exists")
        if not self.db.insert(f"INSERT INTO {VIEWS} (catalog_key, database_name, view_name, view_schema) "
                              "VALUES (?, ?, ?, ?)", (self.catalog_key, db, name, view.to_json())):
            if ignore_if_exists:
                return self.get_view(full)
            raise ViewAlreadyExistError(full)
        return view

    def get_view(self, identifier: str) -> View:
        db, name = split_identifier(identifier)
        text = self._view_json(db, name)
        if text is None:
            raise ViewNotExistError(f"{db}.{name}")
        return View.from_json(f"{db}.{name}", text)

    def drop_view(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        db, name = split_identifier(identifier)
        deleted = self.db.execute(
            f"DELETE FROM {VIEWS} WHERE catalog_key = ? AND database_name = ? AND view_name = ?",
            (self.catalog_key, db, name))
        if not deleted and not ignore_if_not_exists:
            raise ViewNotExistError(f"{db}.{name}")

    def alter_view(self, identifier: str, query: str, schema: pa.Schema, comment: str | None = None, *,
                   dialects: Mapping[str, str] | None = None, options: Mapping[str, str] | None = None) -> View:
        """Replace the definition (query and result schema) of an existing view."""
        db, name = split_identifier(identifier)
        full = f"{db}.{name}"
        view = _view_of("alter", full, query, schema, comment, dialects, options)
        changed = self.db.execute(
            f"UPDATE {VIEWS} SET view_schema = ? WHERE catalog_key = ? AND database_name = ? AND view_name = ?",
            (view.to_json(), self.catalog_key, db, name))
        if not changed:
            raise ViewNotExistError(full)
        return view

    def rename_view(self, identifier: str, new_identifier: str) -> None:
        db, name = split_identifier(identifier)
        ndb, nname = split_identifier(new_identifier)
        if self._view_json(db, name) is None:
            raise ViewNotExistError(f"{db}.{name}")
        if not self.database_exists(ndb):
            raise DatabaseNotExistError(ndb)
        if self._registered(ndb, nname):
            raise ViewAlreadyExistError(f"{ndb}.{nname}", "a table with that name exists")
        with self.db.transaction():
            if not self.db.insert(
                    f"INSERT INTO {VIEWS} (catalog_key, database_name, view_name, view_schema) "
                    f"SELECT catalog_key, ?, ?, view_schema FROM {VIEWS} "
                    "WHERE catalog_key = ? AND database_name = ? AND view_name = ?",
                    (ndb, nname, self.catalog_key, db, name)):
                raise ViewAlreadyExistError(f"{ndb}.{nname}")
            self.db.execute(f"DELETE FROM {VIEWS} WHERE catalog_key = ? AND database_name = ? AND view_name = ?",
                            (self.catalog_key, db, name))

    def list_views(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotExistError(database)
        return sorted(r[0] for r in self.db.query(
            f"SELECT view_name FROM {VIEWS} WHERE catalog_key = ? AND database_name = ?",
            (self.catalog_key, database)))

    def __repr__(self) -> str:
        return f"JdbcCatalog({self.db.describe!r}, {self.warehouse!r}, catalog_key={self.catalog_key!r})"


__all__ = ["JdbcCatalog", "JdbcCommitLock", "JdbcConnection", "View", "JdbcCatalogError",
           "ViewNotExistError", "ViewAlreadyExistError", "LockTimeoutError"]
