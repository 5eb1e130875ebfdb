"""Catalogs: where a warehouse's databases, tables and views are registered.

- :mod:`.filesystem`: :class:`Catalog`, the warehouse directory is the registry.
- :mod:`.jdbc`: :class:`JdbcCatalog`, a SQLite or PostgreSQL database is (Java Paimon's layout),
  with :mod:`.jdbc_connection` (the database), :mod:`.jdbc_lock` (the commit lock) and
  :mod:`.views` (stored views).
- :mod:`.hive`: :class:`HiveCatalog`, a Hive Metastore is (Java Paimon's entries), with
  :mod:`.hive_client` (the Thrift client and the metastore's commit lock) and :mod:`.hive_format`
  (Hive Parquet/ORC/text tables as read-only format tables).
- :mod:`.identifier`: ``db.table$branch_b`` identifiers; :mod:`.table_schema`: schema 0 of a
  new table; :mod:`.base`: what both catalogs share.
"""

from paimon_lab.errors import JdbcCatalogError, LockTimeoutError, ViewAlreadyExistError, ViewNotExistError
from paimon_lab.catalog.filesystem import Catalog
from paimon_lab.catalog.identifier import DB_SUFFIX, DEFAULT_DATABASE, split_branch, split_identifier
from paimon_lab.catalog.hive import HiveCatalog
from paimon_lab.catalog.jdbc import JdbcCatalog
from paimon_lab.catalog.jdbc_connection import JdbcConnection
from paimon_lab.catalog.jdbc_lock import JdbcCommitLock
from paimon_lab.catalog.table_schema import table_schema_for
from paimon_lab.catalog.views import View

__all__ = ["Catalog", "HiveCatalog", "JdbcCatalog", "JdbcCommitLock", "JdbcConnection", "View", "split_identifier",
           "split_branch", "table_schema_for", "DB_SUFFIX", "DEFAULT_DATABASE", "JdbcCatalogError",
           "ViewNotExistError", "ViewAlreadyExistError", "LockTimeoutError"]
