"""``ANALYZE TABLE``: table and column statistics written as a statistics file and committed
as an ANALYZE snapshot, read back as ``$statistics``."""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.errors import PaimonLabError, SchemaError
from paimon_lab.io.file_io import join
from paimon_lab.core.partition import java_float_string
from paimon_lab.core.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from paimon_lab.operation.commit import commit_metadata_only, write_manifest_lists
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.operation.split_read import read_table

from paimon_lab.system.metadata_tables import SCHEMAS, table_of
from paimon_lab.system.java_text import flat_json, jackson_pretty, naive_utc, nanos, plain_decimal

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore
    from paimon_lab.core.types import DataField, DataType


STATISTICS_DIR = "statistics"
STATISTICS_PREFIX = "stat-"  # FileStorePathFactory.STATISTICS_PREFIX

def read_statistics(store: "FileStore", snap: Snapshot | None = None) -> dict | None:
    """The statistics JSON a snapshot (default latest) names, or None."""
    snap = snap if snap is not None else store.snapshot_manager.latest()
    if snap is None or not snap.statistics:
        return None
    return json.loads(store.file_io.read_text(join(store.path, STATISTICS_DIR, snap.statistics)))


def statistics(store: "FileStore", snap: Snapshot | None) -> pa.Table:
    stats = read_statistics(store, snap) if snap is not None else None
    if stats is None:
        return SCHEMAS["statistics"].empty_table()
    row = (stats["snapshotId"], stats["schemaId"], stats.get("mergedRecordCount"), stats.get("mergedRecordSize"),
           flat_json(stats.get("colStats") or {}))
    return table_of([row], SCHEMAS["statistics"])

# ---------------------------------------------------------------------------------- ANALYZE

_MINMAX_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "DATE",
                 "TIMESTAMP", "TIMESTAMP_LTZ")
_STRING_TYPES = ("CHAR", "VARCHAR")
_BINARY_TYPES = ("BINARY", "VARBINARY")
ANALYZABLE_TYPES = _MINMAX_TYPES + _STRING_TYPES + _BINARY_TYPES + ("BOOLEAN",)


def _serialize_stat(value: Any, dtype: "DataType") -> str:
    """ColStats min/max as Paimon's serializers write them (``Serializer.serializeToString``)."""
    root = dtype.root
    if root in ("FLOAT", "DOUBLE"):
        return java_float_string(float(value), single=root == "FLOAT")
    if root == "DECIMAL":
        return plain_decimal(Decimal(value))
    if root == "DATE":
        return str((value - dt.date(1970, 1, 1)).days)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        # DateTimeUtils.formatTimestamp(ts, precision): trailing zeros trimmed down to `precision` digits
        value = naive_utc(value)
        fraction = f"{nanos(value):09d}"
        while len(fraction) > dtype.precision and fraction.endswith("0"):
            fraction = fraction[:-1]
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + ("." + fraction if fraction else "")
    return str(value)


def column_statistics(column: pa.ChunkedArray, field: "DataField") -> dict:
    """One column's ColStats JSON (without nulls), as Paimon's Flink ANALYZE produces them."""
    root = field.type.root
    nulls = column.null_count
    out: dict[str, Any] = {"colId": field.id}
    valid = pc.drop_null(column)
    if root in _BINARY_TYPES:
        out["nullCount"] = nulls
        return out
    if root == "BOOLEAN":
        values = set(valid.to_pylist())
        out["distinctCount"] = len(values)
        out["nullCount"] = nulls
        return out
    out["distinctCount"] = pc.count_distinct(valid).as_py() if len(valid) else 0
    if root in _MINMAX_TYPES and len(valid):
        if pa.types.is_floating(valid.type):
            valid = pc.drop_null(pc.if_else(pc.is_nan(valid), None, valid))
        if len(valid):
            mm = pc.min_max(valid)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            out["min"] = _serialize_stat(lo, field.type)
            out["max"] = _serialize_stat(hi, field.type)
    out["nullCount"] = nulls
    if root in _STRING_TYPES and len(valid):
        if root == "CHAR":  # CHAR(n) values are blank-padded to n
            out["avgLen"] = out["maxLen"] = field.type.length
        else:
            lengths = pc.utf8_length(valid)
            out["avgLen"] = int(pc.mean(lengths).as_py())  # Double.longValue(): truncation
            out["maxLen"] = pc.max(lengths).as_py()
    return out


def write_statistics(store: "FileStore", stats: dict) -> str:
    """Write a statistics JSON file under ``{table}/statistics``; returns its name."""
    name = f"{STATISTICS_PREFIX}{uuid.uuid4()}-0"
    store.file_io.write_bytes(join(store.path, STATISTICS_DIR, name), jackson_pretty(stats).encode())
    return name


def commit_statistics(store: "FileStore", stats_file: str, commit_user: str | None = None,
                      max_retries: int | None = None) -> int:
    """Commit an ANALYZE snapshot naming ``stats_file``: the latest snapshot's files unchanged
    (base = its base + delta manifests, an empty delta), as Java's ``commitStatistics``."""

    user = commit_user or store.schema.core.new_commit_user()
    retries = max_retries if max_retries is not None else store.schema.core.get("commit.max-retries")
    mio = store.manifest_io

    def attempt(latest: Snapshot | None, written: list[str]) -> Snapshot:
        if latest is None:
            raise PaimonLabError(f"Table {store.identifier} has no snapshot to attach statistics to")
        base = mio.read_manifest_list(latest.base_manifest_list) + mio.read_manifest_list(latest.delta_manifest_list)
        lists = write_manifest_lists(store, base, written)
        schema = store.schema_manager.latest()
        return Snapshot(
            id=latest.id + 1, schema_id=schema.id if schema is not None else latest.schema_id, **lists,
            commit_user=user, commit_identifier=BATCH_COMMIT_IDENTIFIER, commit_kind="ANALYZE",
            time_millis=int(time.time() * 1000), log_offsets={},
            total_record_count=latest.total_record_count, delta_record_count=0, changelog_record_count=0,
            index_manifest=latest.index_manifest, watermark=latest.watermark, statistics=stats_file,
            next_row_id=latest.next_row_id)

    return commit_metadata_only(store, retries, attempt, "committing statistics to")


def analyze(store: "FileStore", columns: Sequence[str] | None = None) -> int | None:
    """``ANALYZE TABLE ... COMPUTE STATISTICS [FOR ALL COLUMNS | FOR COLUMNS ...]``.

    Reads the latest snapshot, computes ``mergedRecordCount`` (rows after merging),
    ``mergedRecordSize`` (live data file bytes scaled by merged / total records, as Spark's
    analyze does) and, per column, ``colStats`` (distinctCount, min, max, nullCount, avgLen,
    maxLen by type, as Paimon's Flink analyze does). ``columns=None`` analyzes every column of a
    supported type, ``[]`` none (table-level statistics only). Writes the statistics file
    ``{table}/statistics/stat-<uuid>-0`` and commits an ANALYZE snapshot naming it; returns that
    snapshot's id (None for a table without snapshots, which Paimon skips).
    """
    store.refresh()
    snap = store.snapshot_manager.latest()
    if snap is None:
        return None
    schema = store.schema_for(snap.schema_id)
    current = store.schema
    if columns is None:
        chosen = [f for f in current.fields if f.type.root in ANALYZABLE_TYPES]
    else:
        chosen = []
        for c in columns:
            f = current.field(c)
            if f.type.root not in ANALYZABLE_TYPES:
                raise SchemaError(f"Analyzing column '{c}' of type {f.type} is not supported")
            chosen.append(f)
    data = read_table(store, snapshot_id=snap.id, columns=[f.name for f in chosen] or None)
    merged = data.num_rows
    total_size = sum(e.file.file_size for e in FileStoreScan(store).live_entries(snap))
    total_records = snap.total_record_count or 0
    merged_size = int(total_size * merged / total_records) if total_records else 0
    col_stats = {f.name: column_statistics(data.column(f.name), f) for f in chosen}
    stats = {"snapshotId": snap.id, "schemaId": schema.id, "mergedRecordCount": merged,
             "mergedRecordSize": merged_size, "colStats": col_stats}
    name = write_statistics(store, stats)
    try:
        return commit_statistics(store, name)
    except BaseException:
        store.file_io.delete_quietly([join(store.path, STATISTICS_DIR, name)])
        raise


__all__ = ["analyze", "column_statistics", "commit_statistics", "read_statistics", "statistics",
           "write_statistics"]
