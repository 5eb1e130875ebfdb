"""The metadata system tables: snapshots, changelogs, schemas, options, files, tags, branches, consumers,
manifests, partitions, buckets, table indexes, aggregation fields."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import pyarrow as pa

from paimon_lab.core import binary_row
from paimon_lab.utils.clock import local_wall_millis
from paimon_lab.errors import PaimonLabError
from paimon_lab.io.file_io import join
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.store.consumer import ConsumerManager
from paimon_lab.operation.scan import FileStoreScan

from paimon_lab.system.java_text import (external_text, flat_json, internal_text, java_duration, java_list, java_map,
                                         naive_utc)
from paimon_lab.store.file_store import branch_path
from paimon_lab.operation.branch import list_branches
from paimon_lab.store.file_store import live_index_entries

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


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
        ("commit_time", _TS, False), ("record_count", _I64, True), ("branches", _STR, True),
        ("create_time", _TS, True), ("time_retained", _STR, True)),
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

# ---------------------------------------------------------------------------------- helpers

def table_of(rows: Sequence[tuple] | list[list], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows)) if rows else [[] for _ in schema]
    return pa.Table.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(columns, schema)], schema=schema)


def resolve(store: "FileStore", snapshot_id: int | None, tag: str | None) -> Snapshot | None:
    if snapshot_id is not None and tag is not None:
        raise PaimonLabError("Give at most one of snapshot_id and tag")
    return store.snapshot(snapshot_id, tag=tag)


def _partition_text(store: "FileStore", partition: bytes) -> str:
    codec = store.partition_codec
    return java_list(external_text(v, f.type) for v, f in zip(codec.from_bytes(partition), codec.fields))


def _partition_order(store: "FileStore", partition: bytes) -> tuple:
    """Sort key of a partition: by value per column, nulls last."""
    return tuple((True, 0) if v is None else (False, v) for v in store.partition_codec.from_bytes(partition))


def _sort_by_partition_bucket(store: "FileStore", entries: list) -> list:
    return sorted(entries, key=lambda e: (_partition_order(store, e.partition), e.bucket))


# ---------------------------------------------------------------------------------- tables

def _snapshot_rows(snaps) -> pa.Table:
    rows = [(s.id, s.schema_id, s.commit_user, s.commit_identifier, s.commit_kind, local_wall_millis(s.time_millis),
             s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list, s.total_record_count,
             s.delta_record_count, s.changelog_record_count, s.watermark)
            for s in snaps]
    return table_of(rows, SCHEMAS["snapshots"])


def snapshots(store: "FileStore") -> pa.Table:
    return _snapshot_rows(store.snapshot_manager.snapshots())


def changelogs(store: "FileStore") -> pa.Table:
    """The long-lived changelogs (``changelog/changelog-N``: expired snapshots whose changes are
    kept by 'changelog.*' retention), with the columns of ``$snapshots``. paimon-lab's own: Java
    Paimon has no system table listing them."""
    return _snapshot_rows(store.changelog_manager.changelogs())


def schemas(store: "FileStore") -> pa.Table:
    rows = []
    for sid in store.schema_manager.list_ids():
        s = store.schema_for(sid)
        rows.append((s.id, flat_json([f.to_json() for f in s.fields]), flat_json(list(s.partition_keys)),
                     flat_json(list(s.primary_keys)), flat_json(dict(s.options)), s.comment,
                     local_wall_millis(s.time_millis)))
    return table_of(rows, SCHEMAS["schemas"])


def options(store: "FileStore") -> pa.Table:
    store.refresh()
    return table_of([(str(k), "" if v is None else str(v)) for k, v in store.schema.options.items()],
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
        return java_list(external_text(v, t) for v, t in zip(values, types))

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
        return java_map(nulls), java_map(lows), java_map(highs)


def files(store: "FileStore", snap: Snapshot | None) -> pa.Table:
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
    return table_of(rows, SCHEMAS["files"])


def tags(store: "FileStore") -> pa.Table:

    tag_branches: dict[str, list[str]] = {}
    for b in list_branches(store):
        for name in store.file_io.list_names(join(branch_path(store.path, b), "tag")):
            if name.startswith("tag-"):
                tag_branches.setdefault(name[4:], []).append(b)
    rows = [(t.name, t.snapshot.id, t.snapshot.schema_id, local_wall_millis(t.snapshot.time_millis),
             t.snapshot.total_record_count, java_list(tag_branches.get(t.name, [])),
             None if t.create_time is None else naive_utc(t.create_time),  # the writer's wall clock
             None if t.time_retained_seconds is None else java_duration(t.time_retained_seconds))
            for t in store.tags()]
    return table_of(rows, SCHEMAS["tags"])


def branches(store: "FileStore") -> pa.Table:
    """Branch name and the modification time of its directory (as Java reports create_time)."""
    rows = []
    for info in store.file_io.list_dir(join(store.path, "branch")):
        if info.base_name.startswith("branch-") and info.type.name == "Directory":
            mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
            rows.append((info.base_name[len("branch-"):], local_wall_millis(mtime)))
    return table_of(sorted(rows), SCHEMAS["branches"])


def consumers(store: "FileStore") -> pa.Table:
    consumers = ConsumerManager(store).list()
    rows = [(cid, consumers[cid].next_snapshot) for cid in sorted(consumers)]
    return table_of(rows, SCHEMAS["consumers"])


def manifests(store: "FileStore", snap: Snapshot | None) -> pa.Table:
    if snap is None:
        return SCHEMAS["manifests"].empty_table()
    rows = [(m.file_name, m.file_size, m.num_added_files, m.num_deleted_files, m.schema_id)
            for m in FileStoreScan(store).manifests(snap)]
    return table_of(rows, SCHEMAS["manifests"])


def aggregation_fields(store: "FileStore") -> pa.Table:
    store.refresh()
    schema = store.schema
    functions: dict[str, list[str]] = {}
    function_options: dict[str, list[str]] = {}
    for key, value in schema.options.items():
        parts = key.split(".")
        if len(parts) > 2 and parts[0] == "fields":
            functions.setdefault(parts[1], []).append(str(value))
            function_options.setdefault(parts[1], []).append(key)
    rows = [(f.name, str(f.type), java_list(functions.get(f.name, [])),
             java_list(function_options.get(f.name, [])), f.description)
            for f in schema.fields]
    return table_of(rows, SCHEMAS["aggregation_fields"])


def aggregate_files(store: "FileStore", snap: Snapshot | None, by_bucket: bool) -> pa.Table:
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
    return table_of(rows, SCHEMAS[name])


def table_indexes(store: "FileStore", snap: Snapshot | None) -> pa.Table:

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
    return table_of(rows, SCHEMAS["table_indexes"])
