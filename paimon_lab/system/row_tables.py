"""The row system tables: ``$audit_log``, ``$binlog`` and ``$ro``, batch or incremental."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from paimon_lab.core.snapshot import Snapshot
from paimon_lab.operation.changes import changes
from paimon_lab.mergetree.merge_engine import merge_function_of
from paimon_lab.operation.scan import plan_splits
from paimon_lab.operation.split_read import read_table

from paimon_lab.system.metadata_tables import _STR
from paimon_lab.mergetree.compact_rewriter import BucketFiles, merge_order, merge_sorted
from paimon_lab.store.file_store import batch_scan_skips_level0
from paimon_lab.core.key_value import KIND_NAMES, VALUE_KIND

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


# ---------------------------------------------------------------------------------- row tables

def _merged_kv(store: "FileStore", split) -> pa.Table:
    """Merge-on-read of one bucket keeping each key's row kind and its deletes (Java's
    ``forceKeepDelete`` read under the audit log); mirrors :meth:`TableRead._read_merged`."""

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


def read_rows(store: "FileStore", snap: Snapshot, tag: str | None, read_optimized: bool) -> pa.Table:
    if tag is not None:  # a tag's snapshot may have expired from snapshot/: read it through the tag
        return read_table(store, tag=tag, read_optimized=read_optimized)
    return read_table(store, snapshot_id=snap.id, read_optimized=read_optimized)


def _audit_schema(store: "FileStore") -> pa.Schema:
    return pa.schema([pa.field("rowkind", _STR, nullable=False)] + list(store.schema.arrow_schema()))


def audit_log(store: "FileStore", snap: Snapshot | None, tag: str | None = None) -> pa.Table:
    """Batch read of the audit log: every current row with its row kind."""
    schema = _audit_schema(store)
    if snap is None:
        return schema.empty_table()
    if not store.schema.primary_keys:
        rows = read_rows(store, snap, tag, read_optimized=False)
        return rows.add_column(0, schema.field(0), pa.array(["+I"] * rows.num_rows, _STR)).cast(schema)

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


def changes_log(store: "FileStore", start: int, end: int | None) -> pa.Table:
    rows = changes(store, start, end)
    return rows.cast(_audit_schema(store))


def binlog_schema(store: "FileStore") -> pa.Schema:
    fields = [pa.field("rowkind", _STR, nullable=False)]
    for f in store.schema.arrow_schema():
        fields.append(pa.field(f.name, pa.list_(pa.field("element", f.type, nullable=True))))
    return pa.schema(fields)


def binlog(audit: pa.Table, schema: pa.Schema, pack_updates: bool) -> pa.Table:
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
