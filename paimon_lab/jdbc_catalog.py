"""The former home of the JDBC catalog, kept so that old imports work; see :mod:`paimon_lab.catalog.jdbc`."""

from .catalog import (JdbcCatalog, JdbcCatalogError, JdbcCommitLock, JdbcConnection, LockTimeoutError, View,
                      ViewAlreadyExistError, ViewNotExistError)

__all__ = ["JdbcCatalog", "JdbcCommitLock", "JdbcConnection", "View", "JdbcCatalogError",
           "ViewNotExistError", "ViewAlreadyExistError", "LockTimeoutError"]
