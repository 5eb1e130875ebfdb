"""What the filesystem and JDBC catalogs share: a warehouse, the :class:`FileIO` over it, and
the ``{warehouse}/{db}.db/{table}`` directory layout."""

from __future__ import annotations

from paimon_lab.errors import DatabaseAlreadyExistError
from paimon_lab.io.file_io import CommitLock, FileIO, check_name, join
from paimon_lab.catalog.identifier import DB_SUFFIX, split_identifier
from paimon_lab.table import Table


class WarehouseCatalog:
    """Base of :class:`~paimon_lab.Catalog` and :class:`~paimon_lab.JdbcCatalog`. A subclass sets
    ``self.warehouse`` (normalized) and ``self.options``, calls :meth:`_open_warehouse`, and says
    where a database's tables live (:meth:`database_path`)."""

    warehouse: str
    options: dict[str, str]
    file_io: FileIO

    def close(self) -> None:
        """Release what the catalog holds open (a database connection, a metastore client)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _open_warehouse(self, filesystem, lock: CommitLock | None) -> None:
        """The FileIO of the warehouse; a local warehouse directory is created."""
        self.file_io = FileIO(self.warehouse, filesystem, lock)
        if self.file_io.is_local:
            self.file_io.mkdirs(self.warehouse)

    def _is_new_database(self, name: str, ignore_if_exists: bool) -> bool:
        """For create_database: True if ``name`` (a valid name) is free; False if it exists and
        ``ignore_if_exists``; else DatabaseAlreadyExistError."""
        check_name("database", name)
        if not self.database_exists(name):
            return True
        if ignore_if_exists:
            return False
        raise DatabaseAlreadyExistError(name)

    def _warehouse_database_path(self, name: str) -> str:
        """``{warehouse}/{name}.db``: where a database lives unless the catalog says otherwise."""
        return join(self.warehouse, check_name("database", name) + DB_SUFFIX)

    def database_path(self, name: str) -> str:
        raise NotImplementedError

    def list_databases(self) -> list[str]:
        raise NotImplementedError

    def list_tables(self, database: str) -> list[str]:
        raise NotImplementedError

    def get_table(self, identifier: str) -> "Table":
        raise NotImplementedError

    def table_path(self, identifier: str) -> str:
        db, name = split_identifier(identifier)
        return join(self.database_path(db), name)


__all__ = ["WarehouseCatalog"]
