"""The filesystem catalog: databases are ``{warehouse}/{db}.db`` directories, tables live inside."""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.errors import (CatalogError, DatabaseNotEmptyError, DatabaseNotExistError,
                               InvalidIdentifierError, TableAlreadyExistError, TableNotExistError)
from paimon_lab.io.file_io import CommitLock, check_new_table_name, join, normalize_path
from paimon_lab.io.fs_options import filesystem_from_options
from paimon_lab.core.schema import SchemaManager, TableSchema
from paimon_lab.catalog.system_tables import catalog_system_table
from paimon_lab.system import parse_system_identifier
from paimon_lab.table import Table
from paimon_lab.catalog.base import WarehouseCatalog
from paimon_lab.catalog.hive import HiveCatalog
from paimon_lab.catalog.jdbc import JdbcCatalog
from paimon_lab.catalog.identifier import DB_SUFFIX, split_branch, split_identifier
from paimon_lab.catalog.table_schema import table_schema_for


class Catalog(WarehouseCatalog):
    """A Paimon filesystem catalog over a warehouse directory or URI.

    >>> catalog = Catalog("/tmp/warehouse")
    >>> catalog.create_database("db", ignore_if_exists=True)
    """

    def __new__(cls, warehouse: str | None = None, *, filesystem=None, lock: CommitLock | None = None,
                options: dict[str, str] | None = None):
        """``options={'metastore': 'hive', 'uri': 'thrift://...'}`` gives a :class:`HiveCatalog`,
        ``options={'metastore': 'jdbc', 'uri': 'sqlite:///...' or 'postgresql://...'}`` a :class:`JdbcCatalog`."""
        metastore = str((options or {}).get("metastore", "filesystem")).lower()
        if metastore in ("hive", "jdbc"):
            if lock is not None:
                own = "the metastore's lock ('lock.enabled')" if metastore == "hive" else \
                    "the lock of its catalog database"
                raise CatalogError(f"A {metastore.capitalize()} catalog takes {own}, not a lock object")
            rest = {k: v for k, v in options.items() if k != "metastore"}
            factory = HiveCatalog if metastore == "hive" else JdbcCatalog
            return factory(rest.pop("uri", None), warehouse, filesystem=filesystem, options=rest)
        if metastore != "filesystem":
            raise CatalogError(f"Unknown metastore '{metastore}'; paimon-lab has filesystem (the default), hive and jdbc")
        return super().__new__(cls)

    def __init__(self, warehouse: str, *, filesystem=None, lock: CommitLock | None = None,
                 options: dict[str, str] | None = None):
        self.warehouse = normalize_path(warehouse)
        if filesystem is None and options:
            filesystem = filesystem_from_options(self.warehouse, options)
        self.options = dict(options or {})
        self._open_warehouse(filesystem, lock)

    # ------------------------------------------------------------------ databases
    def database_path(self, name: str) -> str:
        return self._warehouse_database_path(name)

    def database_exists(self, name: str) -> bool:
        return self.file_io.is_dir(self.database_path(name))

    def list_databases(self) -> list[str]:
        return sorted(i.base_name[: -len(DB_SUFFIX)] for i in self.file_io.list_dir(self.warehouse)
                      if i.base_name.endswith(DB_SUFFIX) and i.type.name == "Directory")

    def create_database(self, name: str, ignore_if_exists: bool = False) -> None:
        if self._is_new_database(name, ignore_if_exists):
            self.file_io.mkdirs(self.database_path(name))

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise DatabaseNotExistError(name)
        if self.list_tables(name) and not cascade:
            raise DatabaseNotEmptyError(name)
        self.file_io.delete_dir(self.database_path(name))

    # ------------------------------------------------------------------ tables
    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotExistError(database)
        out = []
        for info in self.file_io.list_dir(self.database_path(database)):
            if info.type.name == "Directory" and SchemaManager(self.file_io, join(
                    self.database_path(database), info.base_name)).list_ids():
                out.append(info.base_name)
        return sorted(out)

    def table_exists(self, identifier: str) -> bool:
        db, _ = split_identifier(identifier)
        return self.database_exists(db) and bool(SchemaManager(self.file_io, self.table_path(identifier)).list_ids())

    def create_table(self, identifier: str, schema: "pa.Schema | TableSchema | None" = None, *,
                     fields: "Sequence[T.DataField] | None" = None, primary_keys: Sequence[str] = (),
                     partition_keys: Sequence[str] = (), options: dict[str, Any] | None = None,
                     comment: str | None = None, ignore_if_exists: bool = False) -> Table:
        """Create a table; returns it. The columns come from a pyarrow ``schema``, or from
        ``fields`` (a list of :class:`paimon_lab.core.types.DataField`, for exact Paimon types such as
        VARCHAR(20), CHAR(5), TIMESTAMP(3)), or ``schema`` is a whole :class:`TableSchema`."""
        db, name = split_identifier(identifier)
        check_new_table_name(name)
        if not self.database_exists(db):
            raise DatabaseNotExistError(db)
        full = f"{db}.{name}"
        table_schema = table_schema_for(schema, fields=fields, primary_keys=primary_keys,
                                        partition_keys=partition_keys, options=options, comment=comment)
        path = self.table_path(full)
        manager = SchemaManager(self.file_io, path)
        if manager.list_ids():
            if ignore_if_exists:
                return self.get_table(full)
            raise TableAlreadyExistError(full)
        if not manager.create(table_schema):
            if ignore_if_exists:
                return self.get_table(full)
            raise TableAlreadyExistError(full)
        return Table(self.file_io, path, full)

    def system_table(self, identifier: str, **kwargs: Any) -> pa.Table:
        """A system table by name: ``db.t$snapshots``, ``db.t$branch_b$files``, ``sys.all_table_options``."""
        table_id, name = parse_system_identifier(identifier)
        if table_id is None:
            return catalog_system_table(self, name)
        if name is None:
            raise InvalidIdentifierError(f"'{identifier}' names no system table")
        return self.get_table(table_id).system(name, **kwargs)

    def get_table(self, identifier: str) -> Table:
        """Load ``db.table`` (or ``db.table$branch_NAME`` for a branch)."""
        identifier, branch = split_branch(identifier)
        db, name = split_identifier(identifier)
        full = f"{db}.{name}"
        if not self.database_exists(db):
            raise TableNotExistError(full)
        return Table(self.file_io, self.table_path(full), full, branch)

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            db, name = split_identifier(identifier)
            raise TableNotExistError(f"{db}.{name}")
        self.file_io.delete_dir(self.table_path(identifier))

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Rename ``db.t`` to ``db2.t2`` (the table directory moves)."""
        if not self.table_exists(identifier):
            db, name = split_identifier(identifier)
            raise TableNotExistError(f"{db}.{name}")
        ndb, nname = split_identifier(new_identifier)
        check_new_table_name(nname)
        if not self.database_exists(ndb):
            raise DatabaseNotExistError(ndb)
        if self.table_exists(new_identifier) or self.file_io.exists(self.table_path(new_identifier)):
            raise TableAlreadyExistError(f"{ndb}.{nname}")
        self.file_io.fs.move(self.file_io.arrow_path(self.table_path(identifier)),
                             self.file_io.arrow_path(self.table_path(new_identifier)))

    def __repr__(self) -> str:
        return f"Catalog({self.warehouse!r})"


__all__ = ["Catalog"]
