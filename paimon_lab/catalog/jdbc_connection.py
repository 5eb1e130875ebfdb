"""The connection to a JDBC catalog's database (SQLite or PostgreSQL) and the catalog's tables in it."""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence
from urllib.parse import urlparse

from paimon_lab.errors import JdbcCatalogError
from paimon_lab.io.file_io import _local_path

DEFAULT_SQLITE_FILE = "paimon-jdbc-catalog.sqlite"

TABLES = "paimon_tables"
DATABASE_PROPERTIES = "paimon_database_properties"
VIEWS = "paimon_views"

OPT_USER = "jdbc.user"
OPT_PASSWORD = "jdbc.password"


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

    @contextmanager
    def _errors(self, statement: str) -> Iterator[None]:
        """Database errors inside become a :class:`JdbcCatalogError` that names ``statement``."""
        try:
            yield
        except Exception as e:
            if self._is_db_error(e):
                raise JdbcCatalogError(f"Catalog database {self.describe} failed on {statement.strip()!r}: {e}") from e
            raise

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; the number of rows it changed."""
        with self._errors(sql.split("(")[0]):
            return self._run(sql, params, False)

    def insert(self, sql: str, params: Sequence[Any] = ()) -> bool:
        """Run an INSERT; False (instead of an error) when it breaks a primary key."""
        with self._errors(sql.split("(")[0]):
            try:
                self._run(sql, params, False)
            except Exception as e:
                if self._is_integrity_error(e):
                    return False
                raise
        return True

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._errors(sql.split(" FROM")[0]):
            return self._run(sql, params, True)

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


def create_catalog_tables(db: JdbcConnection) -> None:
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


__all__ = ["JdbcConnection", "create_catalog_tables", "TABLES", "DATABASE_PROPERTIES", "VIEWS"]
