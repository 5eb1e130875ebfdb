"""System tables: a table's metadata (``t$snapshots``, ``t$files``, ...) read as Arrow tables.

    table.system("snapshots")                 # one row per snapshot
    table.system("files", tag="t1")           # live data files of a tag
    table.analyze()                           # writes statistics, commits an ANALYZE snapshot
    table.system("statistics")

Columns and their order follow Paimon's documented output (the Flink ``SELECT * FROM t$x``
examples); values are rendered the way Java renders them: partitions and keys as
``Arrays.toString`` (``[v1, v2]``), per-column stats as a sorted ``TreeMap`` (``{a=1, b=x}``),
JSON as Jackson's compact form. Timestamps are ``timestamp[ms]`` (no zone) holding the stored
epoch millis read as UTC wall-clock time. The catalog-wide ``sys`` tables live with the catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.errors import PaimonLabError
from paimon_lab.system.identifier import (BRANCH_PREFIX, GLOBAL_SYSTEM_TABLES, SYSTEM_DATABASE, SYSTEM_TABLE_SPLITTER,
                                          SYSTEM_TABLES, TIME_TRAVEL_TABLES, parse_system_identifier)
from paimon_lab.system.layout import deletion_vector_rows, lsm_levels, table_html
from paimon_lab.system.metadata_tables import (SCHEMAS, aggregate_files, aggregation_fields, branches, changelogs, consumers,
                                               files, manifests, options, resolve, schemas, snapshots,
                                               table_indexes, tags)
from paimon_lab.system.row_tables import audit_log, binlog, binlog_schema, changes_log, read_rows
from paimon_lab.system.statistics import analyze, column_statistics, read_statistics, statistics

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore

__all__ = ["BRANCH_PREFIX", "GLOBAL_SYSTEM_TABLES", "SCHEMAS", "SYSTEM_DATABASE", "SYSTEM_TABLES",
           "SYSTEM_TABLE_SPLITTER", "TIME_TRAVEL_TABLES", "analyze", "column_statistics", "deletion_vector_rows",
           "lsm_levels", "parse_system_identifier", "read_statistics", "system_table", "table_html"]


# ---------------------------------------------------------------------------------- public API

def system_table(store: "FileStore", name: str, *, snapshot_id: int | None = None, tag: str | None = None,
                 start_snapshot: int | None = None) -> pa.Table:
    """A system table of ``table`` (one of :data:`SYSTEM_TABLES`) as an Arrow table.

    ``snapshot_id`` / ``tag`` choose the snapshot for the tables that read one
    (files, manifests, partitions, buckets, table_indexes, statistics, audit_log, binlog, ro);
    the default is the latest. ``audit_log`` and ``binlog`` read the snapshot's current rows
    (batch mode) unless ``start_snapshot`` is given: then they hold the changes committed after
    it, up to ``snapshot_id`` (default latest), and ``binlog`` packs each -U/+U pair into one
    ``+U`` row of ``[before, after]`` arrays, as Paimon's streaming binlog read does.
    """
    key = name.lower().lstrip(SYSTEM_TABLE_SPLITTER)
    if key not in SYSTEM_TABLES:
        raise PaimonLabError(f"Unknown system table '{name}'; known are {list(SYSTEM_TABLES)}")
    if (snapshot_id is not None or tag is not None) and key not in TIME_TRAVEL_TABLES:
        raise PaimonLabError(f"System table '{key}' does not read a snapshot; snapshot_id and tag do not apply")
    if start_snapshot is not None and key not in ("audit_log", "binlog"):
        raise PaimonLabError("start_snapshot applies to 'audit_log' and 'binlog' only")
    if start_snapshot is not None and tag is not None:
        raise PaimonLabError("start_snapshot reads up to a snapshot id, not a tag")
    if key == "snapshots":
        return snapshots(store)
    if key == "changelogs":
        return changelogs(store)
    if key == "schemas":
        return schemas(store)
    if key == "options":
        return options(store)
    if key == "tags":
        return tags(store)
    if key == "branches":
        return branches(store)
    if key == "consumers":
        return consumers(store)
    if key == "aggregation_fields":
        return aggregation_fields(store)
    if key in ("audit_log", "binlog") and start_snapshot is not None:
        audit = changes_log(store, start_snapshot, snapshot_id)
        return audit if key == "audit_log" else binlog(audit, binlog_schema(store), True)
    snap = resolve(store, snapshot_id, tag)
    if key == "files":
        return files(store, snap)
    if key == "manifests":
        return manifests(store, snap)
    if key == "partitions":
        return aggregate_files(store, snap, by_bucket=False)
    if key == "buckets":
        return aggregate_files(store, snap, by_bucket=True)
    if key == "table_indexes":
        return table_indexes(store, snap)
    if key == "statistics":
        return statistics(store, snap)
    if key == "ro":
        if snap is None:
            return store.schema.arrow_schema().empty_table()
        return read_rows(store, snap, tag, read_optimized=True)
    audit = audit_log(store, snap, tag)
    if key == "audit_log":
        return audit
    return binlog(audit, binlog_schema(store), False)
