"""paimon-lab: a Python read/write engine for Apache Paimon tables, built for notebooks.

    from paimon_lab import Catalog
    catalog = Catalog("/tmp/warehouse")
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table("db.t", schema, partition_keys=["dt"])
    table.write(df)
    table.to_pandas(filter="dt = '2024-01-01'")
"""

from .catalog import Catalog, JdbcCatalog
from .errors import *  # noqa: F401,F403  (the exception hierarchy is public API)
from .predicate import col, parse_filter
from .schema import SchemaChange, TableSchema
from .snapshot import Snapshot
from .table import Table, TableWriter

from . import sql  # callable module: paimon_lab.sql("SELECT ..."), paimon_lab.sql.Session

__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """``%load_ext paimon_lab``: the ``%paimon`` / ``%%paimon`` magics."""
    from .magic import load_ipython_extension as _load

    _load(ipython)
__all__ = ["sql", "Catalog", "JdbcCatalog", "Table", "TableWriter", "TableSchema", "SchemaChange", "Snapshot", "col", "parse_filter"]
