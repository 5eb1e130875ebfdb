"""paimon-lab: a Python read/write engine for Apache Paimon tables, built for notebooks.

    from paimon_lab import Catalog
    catalog = Catalog("/tmp/warehouse")
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table("db.t", schema, partition_keys=["dt"])
    table.write(df)
    table.to_pandas(filter="dt = '2024-01-01'")
"""

from paimon_lab.catalog import Catalog, HiveCatalog, JdbcCatalog
from paimon_lab.errors import *
from paimon_lab.core.predicate import col, parse_filter
from paimon_lab.core.schema import SchemaChange, TableSchema
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.table import Table, TableWriter

from paimon_lab import sql
from paimon_lab.io.memory import prefer_jemalloc

prefer_jemalloc()  # only with PAIMON_LAB_MEMORY_POOL=jemalloc: see paimon_lab/io/memory.py

__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """``%load_ext paimon_lab``: the ``%paimon`` / ``%%paimon`` magics."""
    from paimon_lab.magic import load_ipython_extension as _load

    _load(ipython)
__all__ = ["sql", "Catalog", "HiveCatalog", "JdbcCatalog", "Table", "TableWriter", "TableSchema", "SchemaChange", "Snapshot", "col", "parse_filter"]
