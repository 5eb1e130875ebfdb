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

from typing import Any, Mapping, Sequence

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.errors import (CatalogError, DatabaseAlreadyExistError, DatabaseNotEmptyError,
                               DatabaseNotExistError, TableAlreadyExistError, TableNotExistError,
                               ViewAlreadyExistError, ViewNotExistError)
from paimon_lab.io.file_io import CommitLock, check_name, check_new_table_name, join, normalize_path
from paimon_lab.io.fs_options import filesystem_from_options
from paimon_lab.core.schema import SchemaManager, TableSchema
from paimon_lab.table import Table
from paimon_lab.catalog.base import WarehouseCatalog
from paimon_lab.catalog.identifier import split_branch, split_identifier, table_of_warehouse_path
from paimon_lab.catalog.jdbc_connection import (DATABASE_PROPERTIES, TABLES, VIEWS, JdbcConnection,
                                                create_catalog_tables)
from paimon_lab.catalog.jdbc_lock import DEFAULT_CATALOG_KEY, commit_lock_from_options
from paimon_lab.catalog.table_schema import table_schema_for
from paimon_lab.catalog.views import View, checked_view

OPT_CATALOG_KEY = "catalog-key"

DATABASE_EXISTS_PROPERTY = "exists"
DATABASE_LOCATION_PROPERTY = "location"


class JdbcCatalog(WarehouseCatalog):
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
        create_catalog_tables(self.db)
        self._locations: dict[str, str] = {}  # custom database location -> database name
        if filesystem is None:
            filesystem = filesystem_from_options(self.warehouse, self.options)
        lock = commit_lock_from_options(self.db, self.catalog_key, self.warehouse, self.options,
                                        table_of=self._table_of_path)
        self._open_warehouse(filesystem, lock)
        self.lock: CommitLock = self.file_io.lock

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        self.db.close()

    def _table_of_path(self, path: str) -> tuple[str, str] | None:
        """(database, table) of a path inside a table directory, for the lock id."""
        table = table_of_warehouse_path(self.warehouse, path)
        if table is not None:
            return table
        for location, db in self._locations.items():
            if path.startswith(location + "/"):
                rest = path[len(location) + 1:].split("/")
                if rest and rest[0]:
                    return db, rest[0]
        return None

    # ------------------------------------------------------------------ databases
    def default_database_path(self, name: str) -> str:
        return self._warehouse_database_path(name)

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
        if not self._is_new_database(name, ignore_if_exists):
            return
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
    def _registered(self, db: str, name: str) -> bool:
        return bool(self.db.query(
            f"SELECT 1 FROM {TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
            (self.catalog_key, db, name)))

    def _add_table_row(self, db: str, name: str) -> bool:
        """Add the table's registry row; False if it is there already."""
        return self.db.insert(f"INSERT INTO {TABLES} (catalog_key, database_name, table_name) VALUES (?, ?, ?)",
                              (self.catalog_key, db, name))

    def _delete_table_row(self, db: str, name: str) -> int:
        """Delete the table's registry row; how many rows went (0 or 1)."""
        return self.db.execute(
            f"DELETE FROM {TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
            (self.catalog_key, db, name))

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
        if not self._add_table_row(db, name):
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
        if not self._add_table_row(db, name):
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
        if not self._delete_table_row(db, name):
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
        if not self._add_table_row(ndb, nname):
            raise TableAlreadyExistError(f"{ndb}.{nname}")
        try:
            self.file_io.fs.move(self.file_io.arrow_path(src), self.file_io.arrow_path(dst))
        except BaseException:
            self._delete_table_row(ndb, nname)
            raise
        self._delete_table_row(db, name)

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
        view = checked_view("create", full, query, schema, comment, dialects, options)
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
        view = checked_view("alter", full, query, schema, comment, dialects, options)
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



__all__ = ["JdbcCatalog"]
