"""System tables: a table's metadata (``t$snapshots``, ``t$files``, ...) read as Arrow tables,
the catalog-wide ``sys.all_table_options`` / ``sys.catalog_options``, and ``ANALYZE TABLE``.

    from paimon_lab.system_tables import system_table, analyze
    system_table(table, "snapshots")                 # one row per snapshot
    system_table(table, "files", tag="t1")           # live data files of a tag
    analyze(table)                                   # writes statistics, commits an ANALYZE snapshot
    system_table(table, "statistics")

Columns and their order follow Paimon's documented output (the Flink ``SELECT * FROM t$x``
examples); values are rendered the way Java renders them: partitions and keys as
``Arrays.toString`` (``[v1, v2]``), per-column stats as a sorted ``TreeMap`` (``{a=1, b=x}``),
JSON as Jackson's compact form. Timestamps are ``timestamp[ms]`` (no zone) holding the stored
epoch millis read as UTC wall-clock time.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pandas as pd

from paimon_lab.core import binary_row
from paimon_lab.errors import InvalidIdentifierError, PaimonLabError, SchemaError
from paimon_lab.io.file_io import join
from paimon_lab.core.partition import java_float_string
from paimon_lab.core.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from paimon_lab.core.consumer import ConsumerManager
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.operation.changes import changes
from paimon_lab.mergetree.merge_engine import merge_function_of
from paimon_lab.operation.scan import plan_splits
from paimon_lab.operation.split_read import read_table

if TYPE_CHECKING:
    from paimon_lab.catalog import Catalog
    from paimon_lab.store.file_store import FileStore
    from paimon_lab.core.types import DataField, DataType

SYSTEM_TABLE_SPLITTER = "$"
BRANCH_PREFIX = "branch_"
SYSTEM_DATABASE = "sys"

SYSTEM_TABLES: tuple[str, ...] = (
    "snapshots", "schemas", "options", "audit_log", "binlog", "ro", "files", "tags", "branches",
    "consumers", "manifests", "aggregation_fields", "partitions", "buckets", "statistics",
    "table_indexes",
)
GLOBAL_SYSTEM_TABLES: tuple[str, ...] = ("all_table_options", "catalog_options")

# System tables that read one snapshot (default: the latest) and so accept snapshot_id / tag.
TIME_TRAVEL_TABLES = frozenset({"files", "manifests", "partitions", "buckets", "table_indexes", "statistics",
                                "audit_log", "binlog", "ro"})

STATISTICS_DIR = "statistics"
STATISTICS_PREFIX = "stat-"  # FileStorePathFactory.STATISTICS_PREFIX

_TS = pa.timestamp("ms")
_STR = pa.string()
_I64 = pa.int64()
_I32 = pa.int32()


def _schema(*fields: tuple[str, pa.DataType, bool]) -> pa.Schema:
    return pa.schema([pa.field(n, t, nullable=nullable) for n, t, nullable in fields])


DV_RANGES_TYPE = pa.list_(pa.struct([
    pa.field("f0", _STR, nullable=False), pa.field("f1", _I32, nullable=False),
    pa.field("f2", _I32, nullable=False), pa.field("_CARDINALITY", _I64)]))

SCHEMAS: dict[str, pa.Schema] = {
    "snapshots": _schema(
        ("snapshot_id", _I64, False), ("schema_id", _I64, False), ("commit_user", _STR, False),
        ("commit_identifier", _I64, False), ("commit_kind", _STR, False), ("commit_time", _TS, False),
        ("base_manifest_list", _STR, False), ("delta_manifest_list", _STR, False),
        ("changelog_manifest_list", _STR, True), ("total_record_count", _I64, True),
        ("delta_record_count", _I64, True), ("changelog_record_count", _I64, True), ("watermark", _I64, True)),
    "schemas": _schema(
        ("schema_id", _I64, False), ("fields", _STR, False), ("partition_keys", _STR, False),
        ("primary_keys", _STR, False), ("options", _STR, False), ("comment", _STR, True),
        ("update_time", _TS, False)),
    "options": _schema(("key", _STR, False), ("value", _STR, False)),
    "files": _schema(
        ("partition", _STR, True), ("bucket", _I32, False), ("file_path", _STR, False),
        ("file_format", _STR, False), ("schema_id", _I64, False), ("level", _I32, False),
        ("record_count", _I64, False), ("file_size_in_bytes", _I64, False), ("min_key", _STR, True),
        ("max_key", _STR, True), ("null_value_counts", _STR, False), ("min_value_stats", _STR, False),
        ("max_value_stats", _STR, False), ("min_sequence_number", _I64, True),
        ("max_sequence_number", _I64, True), ("creation_time", _TS, True)),
    "tags": _schema(
        ("tag_name", _STR, False), ("snapshot_id", _I64, False), ("schema_id", _I64, False),
        ("commit_time", _TS, False), ("record_count", _I64, True), ("branches", _STR, True)),
    "branches": _schema(("branch_name", _STR, False), ("create_time", _TS, False)),
    "consumers": _schema(("consumer_id", _STR, False), ("next_snapshot_id", _I64, False)),
    "manifests": _schema(
        ("file_name", _STR, False), ("file_size", _I64, False), ("num_added_files", _I64, False),
        ("num_deleted_files", _I64, False), ("schema_id", _I64, False)),
    "aggregation_fields": _schema(
        ("field_name", _STR, False), ("field_type", _STR, False), ("function", _STR, True),
        ("function_options", _STR, True), ("comment", _STR, True)),
    "partitions": _schema(
        ("partition", _STR, True), ("record_count", _I64, False), ("file_size_in_bytes", _I64, False),
        ("file_count", _I64, False), ("last_update_time", _TS, True)),
    "buckets": _schema(
        ("partition", _STR, True), ("bucket", _I32, False), ("record_count", _I64, False),
        ("file_size_in_bytes", _I64, False), ("file_count", _I64, False), ("last_update_time", _TS, True)),
    "statistics": _schema(
        ("snapshot_id", _I64, False), ("schema_id", _I64, False), ("mergedRecordCount", _I64, True),
        ("mergedRecordSize", _I64, True), ("colstat", _STR, True)),
    "table_indexes": _schema(
        ("partition", _STR, True), ("bucket", _I32, False), ("index_type", _STR, False),
        ("file_name", _STR, False), ("file_size", _I64, False), ("row_count", _I64, False),
        ("dv_ranges", DV_RANGES_TYPE, True)),
    "all_table_options": _schema(
        ("database_name", _STR, False), ("table_name", _STR, False), ("key", _STR, False), ("value", _STR, False)),
    "catalog_options": _schema(("key", _STR, False), ("value", _STR, False)),
}


# ---------------------------------------------------------------------------------- identifiers

def _split_dotted(identifier: str) -> list[str]:
    """Split on dots outside backticks; backticks are dropped."""
    parts, current, quoted = [], [], False
    for ch in identifier:
        if ch == "`":
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if quoted:
        raise InvalidIdentifierError(f"Unclosed backtick in identifier {identifier!r}")
    parts.append("".join(current))
    return parts


def parse_system_identifier(identifier: str) -> tuple[str | None, str | None]:
    """Split a possibly system-table identifier into (table identifier, system table name).

    ``db.t$snapshots`` -> ``('db.t', 'snapshots')``; ```db`.`t$files``` -> ``('db.t', 'files')``;
    ``t$branch_b1$snapshots`` -> ``('t$branch_b1', 'snapshots')`` (the branch stays on the table
    identifier, as :meth:`Catalog.get_table` understands it); ``db.t`` and ``db.t$branch_b1`` ->
    ``(identifier, None)``; the catalog-wide ``sys.all_table_options`` / ``sys.catalog_options``
    -> ``(None, 'all_table_options')``. System table names are case-insensitive.
    """
    if not isinstance(identifier, str) or not identifier.strip():
        raise InvalidIdentifierError(f"Invalid table identifier {identifier!r}")
    parts = _split_dotted(identifier.strip())
    if len(parts) > 2 or any(not p for p in parts):
        raise InvalidIdentifierError(f"Invalid table identifier {identifier!r}: use 'database.table'")
    if len(parts) == 2 and parts[0].lower() == SYSTEM_DATABASE and SYSTEM_TABLE_SPLITTER not in parts[1]:
        name = parts[1].lower()
        if name not in GLOBAL_SYSTEM_TABLES:
            raise InvalidIdentifierError(
                f"Unknown global system table '{parts[1]}'; known are {list(GLOBAL_SYSTEM_TABLES)}")
        return None, name
    db = parts[0] if len(parts) == 2 else None
    segments = parts[-1].split(SYSTEM_TABLE_SPLITTER)
    table, branch, system = segments[0], None, None
    if len(segments) == 2:
        if segments[1].startswith(BRANCH_PREFIX):
            branch = segments[1][len(BRANCH_PREFIX):]
        else:
            system = segments[1]
    elif len(segments) == 3:
        if not segments[1].startswith(BRANCH_PREFIX):
            raise InvalidIdentifierError(
                f"Invalid identifier {identifier!r}: a system table name has one '$' (or '$branch_NAME$')")
        branch, system = segments[1][len(BRANCH_PREFIX):], segments[2]
    elif len(segments) > 3:
        raise InvalidIdentifierError(f"Invalid identifier {identifier!r}: too many '$'")
    if not table or (branch is not None and not branch) or (system is not None and not system):
        raise InvalidIdentifierError(f"Invalid identifier {identifier!r}")
    if system is not None:
        system = system.lower()
        if system not in SYSTEM_TABLES:
            raise InvalidIdentifierError(f"Unknown system table '{system}'; known are {list(SYSTEM_TABLES)}")
    obj = table if branch is None else f"{table}{SYSTEM_TABLE_SPLITTER}{BRANCH_PREFIX}{branch}"
    return (obj if db is None else f"{db}.{obj}"), system


# ---------------------------------------------------------------------------------- Java-style text

def _java_time_of_day(hour: int, minute: int, second: int, nanos: int) -> str:
    """LocalTime.toString(): seconds only if non-zero (or a fraction follows), fraction in groups of 3."""
    text = f"{hour:02d}:{minute:02d}"
    if second or nanos:
        text += f":{second:02d}"
    if nanos:
        if nanos % 1_000_000 == 0:
            text += f".{nanos // 1_000_000:03d}"
        elif nanos % 1000 == 0:
            text += f".{nanos // 1000:06d}"
        else:
            text += f".{nanos:09d}"
    return text


def _nanos(value) -> int:
    return value.microsecond * 1000 + int(getattr(value, "nanosecond", 0) or 0)


def _naive_utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def java_local_datetime(value: dt.datetime) -> str:
    """LocalDateTime.toString() (also Paimon's Timestamp.toString())."""
    value = _naive_utc(value)
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}T" + \
        _java_time_of_day(value.hour, value.minute, value.second, _nanos(value))


def _java_instant(value: dt.datetime) -> str:
    """Instant.toString(): always seconds, fraction in groups of 3, 'Z'."""
    value = _naive_utc(value)
    nanos = _nanos(value)
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if nanos:
        text += _java_time_of_day(0, 0, 1, nanos)[8:]
    return text + "Z"


def _plain_decimal(value: Decimal) -> str:
    return format(value, "f")


def _scalar_text(value: Any, dtype: "DataType") -> str | None:
    """Text shared by the internal and external renderings (None: type-specific)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    root = dtype.root
    if root in ("FLOAT", "DOUBLE"):
        return java_float_string(float(value), single=root == "FLOAT")
    if isinstance(value, Decimal):
        return _plain_decimal(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()  # Java prints byte[] identities; hex is the readable stand-in
    if isinstance(value, (str, int)) and root not in ("DATE", "TIME"):
        return str(value)
    return None


def external_text(value: Any, dtype: "DataType") -> str:
    """How Java prints a value converted to its external class (partition and key columns)."""
    text = _scalar_text(value, dtype)
    if text is not None:
        return text
    root = dtype.root
    if root == "DATE":
        return value.isoformat() if isinstance(value, dt.date) else str(value)
    if root == "TIME":
        return _java_time_of_day(value.hour, value.minute, value.second, _nanos(value))
    if root == "TIMESTAMP_LTZ":
        return _java_instant(value)
    if root == "TIMESTAMP":
        return java_local_datetime(value)
    return str(value)


def internal_text(value: Any, dtype: "DataType") -> str:
    """How Java prints a value of its internal class (file min/max statistics)."""
    text = _scalar_text(value, dtype)
    if text is not None:
        return text
    root = dtype.root
    if root == "DATE":  # int days since epoch
        return str((value - dt.date(1970, 1, 1)).days) if isinstance(value, dt.date) else str(value)
    if root == "TIME":  # int millis of day
        return str(((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return java_local_datetime(value)
    return str(value)


def _java_list(items: Iterable[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _java_map(pairs: dict[str, str]) -> str:
    """TreeMap<String, ?>.toString(): keys sorted."""
    return "{" + ", ".join(f"{k}={pairs[k]}" for k in sorted(pairs)) + "}"


def _flat_json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _jackson_pretty(obj: Any, indent: int = 0) -> str:
    """Jackson's default pretty printer (``"key" : value``, ``[ a, b ]``, ``{ }``)."""
    pad = "  " * indent
    if isinstance(obj, dict):
        if not obj:
            return "{ }"
        inner = ",\n".join(f"{pad}  {json.dumps(k, ensure_ascii=False)} : {_jackson_pretty(v, indent + 1)}"
                           for k, v in obj.items())
        return "{\n" + inner + "\n" + pad + "}"
    if isinstance(obj, (list, tuple)):
        if not obj:
            return "[ ]"
        return "[ " + ", ".join(_jackson_pretty(v, indent) for v in obj) + " ]"
    return json.dumps(obj, ensure_ascii=False)


# ---------------------------------------------------------------------------------- helpers

def _table_of(rows: Sequence[tuple] | list[list], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows)) if rows else [[] for _ in schema]
    return pa.Table.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(columns, schema)], schema=schema)


def _resolve(store: "FileStore", snapshot_id: int | None, tag: str | None) -> Snapshot | None:
    if snapshot_id is not None and tag is not None:
        raise PaimonLabError("Give at most one of snapshot_id and tag")
    return store.snapshot(snapshot_id, tag=tag)


def _partition_text(store: "FileStore", partition: bytes) -> str:
    codec = store.partition_codec
    return _java_list(external_text(v, f.type) for v, f in zip(codec.from_bytes(partition), codec.fields))


def _partition_order(store: "FileStore", partition: bytes) -> tuple:
    """Sort key of a partition: by value per column, nulls last."""
    return tuple((True, 0) if v is None else (False, v) for v in store.partition_codec.from_bytes(partition))


def _sort_by_partition_bucket(store: "FileStore", entries: list) -> list:
    return sorted(entries, key=lambda e: (_partition_order(store, e.partition), e.bucket))


# ---------------------------------------------------------------------------------- tables

def _snapshots(store: "FileStore") -> pa.Table:
    rows = [(s.id, s.schema_id, s.commit_user, s.commit_identifier, s.commit_kind, s.time_millis,
             s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list, s.total_record_count,
             s.delta_record_count, s.changelog_record_count, s.watermark)
            for s in store.snapshot_manager.snapshots()]
    return _table_of(rows, SCHEMAS["snapshots"])


def _schemas(store: "FileStore") -> pa.Table:
    rows = []
    for sid in store.schema_manager.list_ids():
        s = store.schema_for(sid)
        rows.append((s.id, _flat_json([f.to_json() for f in s.fields]), _flat_json(list(s.partition_keys)),
                     _flat_json(list(s.primary_keys)), _flat_json(dict(s.options)), s.comment, s.time_millis))
    return _table_of(rows, SCHEMAS["schemas"])


def _options(store: "FileStore") -> pa.Table:
    store.refresh()
    return _table_of([(str(k), "" if v is None else str(v)) for k, v in store.schema.options.items()],
                     SCHEMAS["options"])


class _StatsRenderer:
    """Value stats of data files evolved (by field id) to the current schema, rendered as Java does."""

    def __init__(self, store: "FileStore"):
        self.store = store
        self.current = list(store.schema.fields)
        self._key_types: dict[int, list] = {}

    def key_types(self, schema_id: int) -> list:
        got = self._key_types.get(schema_id)
        if got is None:
            s = self.store.schema_for(schema_id)
            names = s.trimmed_primary_keys if s.primary_keys else []
            got = self._key_types[schema_id] = [f.type for f in s.fields_of(names)]
        return got

    def key_text(self, data: bytes, schema_id: int) -> str | None:
        types = self.key_types(schema_id)
        if not types or not data or len(data) < 4 or int.from_bytes(data[:4], "big", signed=True) <= 0:
            return None  # Java: minKey().getFieldCount() <= 0 -> null
        values = binary_row.deserialize(data, types)
        return _java_list(external_text(v, t) for v, t in zip(values, types))

    def render(self, f) -> tuple[str, str, str]:
        file_schema = self.store.schema_for(f.schema_id)
        stats_fields = file_schema.fields if f.value_stats_cols is None else file_schema.fields_of(f.value_stats_cols)
        types = [x.type for x in stats_fields]
        mins = binary_row.deserialize(f.value_stats.min_values, types) if types else []
        maxs = binary_row.deserialize(f.value_stats.max_values, types) if types else []
        counts = list(f.value_stats.null_counts or ())
        counts += [None] * (len(stats_fields) - len(counts))
        pos = {x.id: i for i, x in enumerate(stats_fields)}
        in_file = {x.id for x in file_schema.fields}
        nulls, lows, highs = {}, {}, {}
        for field in self.current:
            i = pos.get(field.id)
            if i is not None:
                t = stats_fields[i].type
                nulls[field.name] = "null" if counts[i] is None else str(counts[i])
                lows[field.name] = internal_text(mins[i], t)
                highs[field.name] = internal_text(maxs[i], t)
            else:
                # Not among the file's stats columns: unknown; not in the file at all: all nulls.
                nulls[field.name] = "null" if field.id in in_file else str(f.row_count)
                lows[field.name] = highs[field.name] = "null"
        return _java_map(nulls), _java_map(lows), _java_map(highs)


def _files(store: "FileStore", snap: Snapshot | None) -> pa.Table:
    if snap is None:
        return SCHEMAS["files"].empty_table()
    renderer = _StatsRenderer(store)
    entries = sorted(FileStoreScan(store).live_entries(snap),
                     key=lambda e: (_partition_order(store, e.partition), e.bucket, e.file.level,
                                    e.file.min_sequence_number, e.file.file_name))
    rows = []
    for e in entries:
        f = e.file
        nulls, lows, highs = renderer.render(f)
        path = f.external_path or join(store.bucket_path(e.partition, e.bucket), f.file_name)
        rows.append((_partition_text(store, e.partition), e.bucket, path, f.format, f.schema_id, f.level,
                     f.row_count, f.file_size, renderer.key_text(f.min_key, f.schema_id),
                     renderer.key_text(f.max_key, f.schema_id), nulls, lows, highs,
                     f.min_sequence_number, f.max_sequence_number, f.creation_time_millis))
    return _table_of(rows, SCHEMAS["files"])


def _tags(store: "FileStore") -> pa.Table:
    from paimon_lab.store.file_store import branch_path
    from paimon_lab.operation.branch import list_branches

    tag_branches: dict[str, list[str]] = {}
    for b in list_branches(store):
        for name in store.file_io.list_names(join(branch_path(store.path, b), "tag")):
            if name.startswith("tag-"):
                tag_branches.setdefault(name[4:], []).append(b)
    rows = [(t.name, t.snapshot.id, t.snapshot.schema_id, t.snapshot.time_millis, t.snapshot.total_record_count,
             _java_list(tag_branches.get(t.name, [])))
            for t in store.tags()]
    return _table_of(rows, SCHEMAS["tags"])


def _branches(store: "FileStore") -> pa.Table:
    """Branch name and the modification time of its directory (as Java reports create_time)."""
    rows = []
    for info in store.file_io.list_dir(join(store.path, "branch")):
        if info.base_name.startswith("branch-") and info.type.name == "Directory":
            mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
            rows.append((info.base_name[len("branch-"):], mtime))
    return _table_of(sorted(rows), SCHEMAS["branches"])


def _consumers(store: "FileStore") -> pa.Table:
    consumers = ConsumerManager(store).list()
    rows = [(cid, consumers[cid].next_snapshot) for cid in sorted(consumers)]
    return _table_of(rows, SCHEMAS["consumers"])


def _manifests(store: "FileStore", snap: Snapshot | None) -> pa.Table:
    if snap is None:
        return SCHEMAS["manifests"].empty_table()
    rows = [(m.file_name, m.file_size, m.num_added_files, m.num_deleted_files, m.schema_id)
            for m in FileStoreScan(store).manifests(snap)]
    return _table_of(rows, SCHEMAS["manifests"])


def _aggregation_fields(store: "FileStore") -> pa.Table:
    store.refresh()
    schema = store.schema
    functions: dict[str, list[str]] = {}
    function_options: dict[str, list[str]] = {}
    for key, value in schema.options.items():
        parts = key.split(".")
        if len(parts) > 2 and parts[0] == "fields":
            functions.setdefault(parts[1], []).append(str(value))
            function_options.setdefault(parts[1], []).append(key)
    rows = [(f.name, str(f.type), _java_list(functions.get(f.name, [])),
             _java_list(function_options.get(f.name, [])), f.description)
            for f in schema.fields]
    return _table_of(rows, SCHEMAS["aggregation_fields"])


def _aggregate_files(store: "FileStore", snap: Snapshot | None, by_bucket: bool) -> pa.Table:
    name = "buckets" if by_bucket else "partitions"
    if snap is None:
        return SCHEMAS[name].empty_table()
    groups: dict[tuple, list] = {}
    for e in FileStoreScan(store).live_entries(snap):
        key = (e.partition, e.bucket) if by_bucket else (e.partition,)
        acc = groups.setdefault(key, [0, 0, 0, None])
        acc[0] += e.file.row_count
        acc[1] += e.file.file_size
        acc[2] += 1
        created = e.file.creation_time_millis
        if created is not None and (acc[3] is None or created > acc[3]):
            acc[3] = created
    rows = []
    for key in sorted(groups, key=lambda k: (_partition_order(store, k[0]),) + k[1:]):
        count, size, files, last = groups[key]
        rows.append((_partition_text(store, key[0]),) + key[1:] + (count, size, files, last))
    return _table_of(rows, SCHEMAS[name])


def _table_indexes(store: "FileStore", snap: Snapshot | None) -> pa.Table:
    from paimon_lab.store.index_files import live_index_entries

    if snap is None:
        return SCHEMAS["table_indexes"].empty_table()
    rows = []
    for e in _sort_by_partition_bucket(store, live_index_entries(store, snapshot=snap)):
        meta = e.index_file
        ranges = None
        if meta.dv_ranges is not None:
            ranges = [{"f0": r.data_file_name, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality}
                      for r in meta.dv_ranges]
        rows.append((_partition_text(store, e.partition), e.bucket, meta.index_type, meta.file_name,
                     meta.file_size, meta.row_count, ranges))
    return _table_of(rows, SCHEMAS["table_indexes"])


def read_statistics(store: "FileStore", snap: Snapshot | None = None) -> dict | None:
    """The statistics JSON a snapshot (default latest) names, or None."""
    snap = snap if snap is not None else store.snapshot_manager.latest()
    if snap is None or not snap.statistics:
        return None
    return json.loads(store.file_io.read_text(join(store.path, STATISTICS_DIR, snap.statistics)))


def _statistics(store: "FileStore", snap: Snapshot | None) -> pa.Table:
    stats = read_statistics(store, snap) if snap is not None else None
    if stats is None:
        return SCHEMAS["statistics"].empty_table()
    row = (stats["snapshotId"], stats["schemaId"], stats.get("mergedRecordCount"), stats.get("mergedRecordSize"),
           _flat_json(stats.get("colStats") or {}))
    return _table_of([row], SCHEMAS["statistics"])


# ---------------------------------------------------------------------------------- row tables

def _merged_kv(store: "FileStore", split) -> pa.Table:
    """Merge-on-read of one bucket keeping each key's row kind and its deletes (Java's
    ``forceKeepDelete`` read under the audit log); mirrors :meth:`TableRead._read_merged`."""
    from paimon_lab.mergetree.compact_rewriter import BucketFiles, merge_order, merge_sorted
    from paimon_lab.store.file_store import batch_scan_skips_level0

    layout = store.kv_layout
    files = BucketFiles(store, layout, split.partition, split.bucket)
    if store.schema.core.get("deletion-vectors.enabled"):
        _, dvs = store.deletion_vectors_at(split.snapshot or split.snapshot_id).get((split.partition, split.bucket), (None, {}))
        return files.read([f for f in split.files if f.level > 0], dvs)
    chosen = merge_order([f for f in split.files if f.level > 0] if batch_scan_skips_level0(store.schema.core)
                         else split.files)
    kv = files.read(chosen)
    levels = {f.level for f in chosen}
    if len(chosen) > 1 and not (len(levels) == 1 and 0 not in levels):
        kv = merge_sorted(layout, merge_function_of(store), kv)
    return kv


def _read_rows(store: "FileStore", snap: Snapshot, tag: str | None, read_optimized: bool) -> pa.Table:
    if tag is not None:  # a tag's snapshot may have expired from snapshot/: read it through the tag
        return read_table(store, tag=tag, read_optimized=read_optimized)
    return read_table(store, snapshot_id=snap.id, read_optimized=read_optimized)


def _audit_schema(store: "FileStore") -> pa.Schema:
    return pa.schema([pa.field("rowkind", _STR, nullable=False)] + list(store.schema.arrow_schema()))


def _audit_log(store: "FileStore", snap: Snapshot | None, tag: str | None = None) -> pa.Table:
    """Batch read of the audit log: every current row with its row kind."""
    schema = _audit_schema(store)
    if snap is None:
        return schema.empty_table()
    if not store.schema.primary_keys:
        rows = _read_rows(store, snap, tag, read_optimized=False)
        return rows.add_column(0, schema.field(0), pa.array(["+I"] * rows.num_rows, _STR)).cast(schema)
    from paimon_lab.core.key_value import KIND_NAMES, VALUE_KIND

    labels = pa.array([KIND_NAMES[i] for i in range(len(KIND_NAMES))], _STR)
    parts = []
    names = store.kv_layout.value_names
    for split in plan_splits(store, snap, None):
        kv = _merged_kv(store, split)
        if kv.num_rows == 0:
            continue
        kinds = labels.take(kv.column(VALUE_KIND).combine_chunks().cast(pa.int32()))
        parts.append(kv.select(names).add_column(0, "rowkind", kinds))
    if not parts:
        return schema.empty_table()
    out = pa.concat_tables([p.select(schema.names) for p in parts])
    return out.cast(schema)


def _changes_log(store: "FileStore", start: int, end: int | None) -> pa.Table:
    rows = changes(store, start, end)
    return rows.cast(_audit_schema(store))


def _binlog_schema(store: "FileStore") -> pa.Schema:
    fields = [pa.field("rowkind", _STR, nullable=False)]
    for f in store.schema.arrow_schema():
        fields.append(pa.field(f.name, pa.list_(pa.field("element", f.type, nullable=True))))
    return pa.schema(fields)


def _binlog(audit: pa.Table, schema: pa.Schema, pack_updates: bool) -> pa.Table:
    """Each column as an array: ``[value]``, or ``[before, after]`` for a -U/+U pair (packed
    into one +U row, as Java's streaming PackChangelogReader does)."""
    kinds = audit.column("rowkind").to_pylist()
    n = len(kinds)
    groups: list[list[int]] = []
    i = 0
    while i < n:
        if pack_updates and kinds[i] == "-U" and i + 1 < n and kinds[i + 1] == "+U":
            groups.append([i, i + 1])
            i += 2
        else:
            groups.append([i])
            i += 1
    out_kinds = [kinds[g[-1]] for g in groups]
    offsets = np.zeros(len(groups) + 1, dtype=np.int32)
    np.cumsum([len(g) for g in groups], out=offsets[1:])
    flat = np.array([i for g in groups for i in g], dtype=np.int64)
    arrays = [pa.array(out_kinds, _STR)]
    for f in schema:
        if f.name == "rowkind":
            continue
        values = audit.column(f.name).combine_chunks().take(pa.array(flat))
        arrays.append(pa.ListArray.from_arrays(pa.array(offsets), values).cast(f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


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
        return _snapshots(store)
    if key == "schemas":
        return _schemas(store)
    if key == "options":
        return _options(store)
    if key == "tags":
        return _tags(store)
    if key == "branches":
        return _branches(store)
    if key == "consumers":
        return _consumers(store)
    if key == "aggregation_fields":
        return _aggregation_fields(store)
    if key in ("audit_log", "binlog") and start_snapshot is not None:
        audit = _changes_log(store, start_snapshot, snapshot_id)
        return audit if key == "audit_log" else _binlog(audit, _binlog_schema(store), True)
    snap = _resolve(store, snapshot_id, tag)
    if key == "files":
        return _files(store, snap)
    if key == "manifests":
        return _manifests(store, snap)
    if key == "partitions":
        return _aggregate_files(store, snap, by_bucket=False)
    if key == "buckets":
        return _aggregate_files(store, snap, by_bucket=True)
    if key == "table_indexes":
        return _table_indexes(store, snap)
    if key == "statistics":
        return _statistics(store, snap)
    if key == "ro":
        if snap is None:
            return store.schema.arrow_schema().empty_table()
        return _read_rows(store, snap, tag, read_optimized=True)
    audit = _audit_log(store, snap, tag)
    if key == "audit_log":
        return audit
    return _binlog(audit, _binlog_schema(store), False)


def catalog_system_table(catalog: "Catalog", name: str) -> pa.Table:
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
        return _table_of(list(options.items()), SCHEMAS["catalog_options"])
    rows = []
    for db in catalog.list_databases():
        for name_ in catalog.list_tables(db):
            t = catalog.get_table(f"{db}.{name_}")
            rows.extend((db, name_, str(k), str(v)) for k, v in t.schema.options.items())
    return _table_of(rows, SCHEMAS["all_table_options"])


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
        return _plain_decimal(Decimal(value))
    if root == "DATE":
        return str((value - dt.date(1970, 1, 1)).days)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        # DateTimeUtils.formatTimestamp(ts, precision): trailing zeros trimmed down to `precision` digits
        value = _naive_utc(value)
        fraction = f"{_nanos(value):09d}"
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
    store.file_io.write_bytes(join(store.path, STATISTICS_DIR, name), _jackson_pretty(stats).encode())
    return name


def commit_statistics(store: "FileStore", stats_file: str, commit_user: str | None = None,
                      max_retries: int | None = None) -> int:
    """Commit an ANALYZE snapshot naming ``stats_file``: the latest snapshot's files unchanged
    (base = its base + delta manifests, an empty delta), as Java's ``commitStatistics``."""
    from paimon_lab.core.manifest import FileNamer

    user = commit_user or str(uuid.uuid4())
    retries = max_retries if max_retries is not None else store.schema.core.get("commit.max-retries")
    mio = store.manifest_io
    for attempt in range(retries + 1):
        latest = store.snapshot_manager.latest()
        if latest is None:
            raise PaimonLabError(f"Table {store.identifier} has no snapshot to attach statistics to")
        names = FileNamer("manifest-list-")
        base_name, delta_name = names.next(), names.next()
        written = []
        try:
            base_metas = mio.read_manifest_list(latest.base_manifest_list) + \
                mio.read_manifest_list(latest.delta_manifest_list)
            base_size = mio.write_manifest_list(base_name, base_metas)
            written.append(base_name)
            delta_size = mio.write_manifest_list(delta_name, [])
            written.append(delta_name)
            schema = store.schema_manager.latest()
            snapshot = Snapshot(
                id=latest.id + 1, schema_id=schema.id if schema is not None else latest.schema_id,
                base_manifest_list=base_name, base_manifest_list_size=base_size,
                delta_manifest_list=delta_name, delta_manifest_list_size=delta_size,
                commit_user=user, commit_identifier=BATCH_COMMIT_IDENTIFIER, commit_kind="ANALYZE",
                time_millis=int(time.time() * 1000), log_offsets={},
                total_record_count=latest.total_record_count, delta_record_count=0, changelog_record_count=0,
                index_manifest=latest.index_manifest, watermark=latest.watermark, statistics=stats_file,
                next_row_id=latest.next_row_id)
            if store.snapshot_manager.commit(snapshot):
                return snapshot.id
        except BaseException:
            store.file_io.delete_quietly([mio.path(n) for n in written])
            raise
        store.file_io.delete_quietly([mio.path(n) for n in written])
        time.sleep(min(0.01 * (2 ** attempt), 0.5))
    raise PaimonLabError(f"Gave up committing statistics to {store.path} after {retries} retries")


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


__all__ = ["SYSTEM_TABLES", "GLOBAL_SYSTEM_TABLES", "system_table", "catalog_system_table",
           "parse_system_identifier", "analyze", "read_statistics", "SCHEMAS"]


def lsm_levels(store: "FileStore", snap: Snapshot | None) -> pd.DataFrame:
    """The LSM layout of a snapshot: one row per data file with its partition, bucket, level,
    row count, size, min/max key, sequence range and deleted-row count."""
    columns = ["partition", "bucket", "level", "file_name", "row_count", "file_size", "min_key",
               "max_key", "min_sequence_number", "max_sequence_number", "deleted_rows", "schema_id"]
    if snap is None:
        return pd.DataFrame(columns=columns)
    key_types = store.kv_layout.key_types if store.schema.primary_keys else []
    dvs = store.deletion_vectors_at(snap) if store.schema.core.get("deletion-vectors.enabled") else {}
    codec = store.partition_codec
    rows = []
    for e in FileStoreScan(store).live_entries(snap):
        f = e.file
        dv = dvs.get((e.partition, e.bucket), (None, {}))[1].get(f.file_name)
        rows.append((codec.to_dict(e.partition), e.bucket, f.level, f.file_name, f.row_count, f.file_size,
                     tuple(binary_row.deserialize(f.min_key, key_types)) if key_types else None,
                     tuple(binary_row.deserialize(f.max_key, key_types)) if key_types else None,
                     f.min_sequence_number, f.max_sequence_number,
                     dv.cardinality if dv is not None else (f.delete_row_count or 0), f.schema_id))
    df = pd.DataFrame(rows, columns=columns)
    order = df["partition"].map(lambda d: tuple(str(v) for v in d.values()))
    return df.assign(_o=order).sort_values(["_o", "bucket", "level", "min_sequence_number"]) \
        .drop(columns="_o").reset_index(drop=True)


def deletion_vector_rows(store: "FileStore", snap: Snapshot | None) -> pd.DataFrame:
    """Per data file with deletions: partition, bucket, file name, cardinality and the deleted
    row positions (a sorted numpy array)."""
    rows = []
    if snap is not None:
        for (part, bucket), (_, vectors) in store.deletion_vectors_at(snap).items():
            for name, dv in vectors.items():
                rows.append((store.partition_codec.to_dict(part), bucket, name, dv.cardinality, dv.to_numpy()))
    return pd.DataFrame(rows, columns=["partition", "bucket", "file_name", "cardinality", "positions"])
