"""paimon-lab: a Python read/write engine for Apache Paimon tables, built for notebooks.

    from paimon_lab import Catalog
    catalog = Catalog("/tmp/warehouse")
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table("db.t", schema, partition_keys=["dt"])
    table.write(df)
    table.to_pandas(filter="dt = '2024-01-01'")
"""

from .catalog import Catalog
from .jdbc_catalog import JdbcCatalog
from .errors import *  # noqa: F401,F403  (the exception hierarchy is public API)
from .predicate import col, parse_filter
from .schema import SchemaChange, TableSchema
from .snapshot import Snapshot
from .table import Table, TableWriter

__version__ = "0.1.0"
__all__ = ["Catalog", "JdbcCatalog", "Table", "TableWriter", "TableSchema", "SchemaChange", "Snapshot", "col", "parse_filter"]
