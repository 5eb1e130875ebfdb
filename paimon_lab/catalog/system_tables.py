"""The catalog-wide system tables of the ``sys`` database: ``all_table_options`` and ``catalog_options``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.errors import PaimonLabError

from paimon_lab.system.identifier import GLOBAL_SYSTEM_TABLES, SYSTEM_DATABASE
from paimon_lab.system.metadata_tables import SCHEMAS, table_of

if TYPE_CHECKING:
    from paimon_lab.catalog.base import WarehouseCatalog


def catalog_system_table(catalog: "WarehouseCatalog", name: str) -> pa.Table:
    """A catalog-wide system table: ``all_table_options`` (database_name, table_name, key, value
    for every table's latest schema) or ``catalog_options`` (key, value)."""
    key = name.lower()
    if key.startswith(SYSTEM_DATABASE + "."):
        key = key[len(SYSTEM_DATABASE) + 1:]
    if key not in GLOBAL_SYSTEM_TABLES:
        raise PaimonLabError(f"Unknown global system table '{name}'; known are {list(GLOBAL_SYSTEM_TABLES)}")
    if key == "catalog_options":
        options = {"warehouse": catalog.warehouse}
        options.update({str(k): str(v) for k, v in catalog.options.items()})
        return table_of(list(options.items()), SCHEMAS["catalog_options"])
    rows = []
    for db in catalog.list_databases():
        for name_ in catalog.list_tables(db):
            t = catalog.get_table(f"{db}.{name_}")
            rows.extend((db, name_, str(k), str(v)) for k, v in t.schema.options.items())
    return table_of(rows, SCHEMAS["all_table_options"])
