"""What snapshots changed, as rows with a ``rowkind`` column ('+I', '-U', '+U', '-D'), like
Paimon's audit log: the changelog files where a changelog producer writes them, otherwise the
delta files of APPEND snapshots (for primary-key tables, each commit's merged input records)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import pyarrow as pa

from paimon_lab.core.key_value import KIND_NAMES, VALUE_KIND
from paimon_lab.core.manifest import ADD, ManifestEntry
from paimon_lab.core.schema import POSTPONE_BUCKET, is_postpone
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.mergetree.compact_rewriter import BucketFiles
from paimon_lab.operation.scan import DataSplit, FileStoreScan
from paimon_lab.operation.split_read import TableRead

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


def changes(store: "FileStore", start_snapshot: int, end_snapshot: int | None = None,
            columns: Sequence[str] | None = None) -> pa.Table:
    """The rows that changed after ``start_snapshot`` up to ``end_snapshot`` (default latest);
    expired snapshots are read from their long-lived changelogs."""
    end = end_snapshot if end_snapshot is not None else store.snapshot_manager.latest_id()
    names = list(columns) if columns is not None else store.schema.field_names
    parts = []
    if end is not None:
        for sid in range(start_snapshot + 1, end + 1):
            parts.append(snapshot_changes(store, store.snapshot_or_changelog(sid), names))
    return pa.concat_tables(parts) if parts else changes_schema(store, names).empty_table()


def changes_schema(store: "FileStore", names: Sequence[str]) -> pa.Schema:
    return pa.schema([pa.field("rowkind", pa.string(), nullable=False)] +
                     list(store.schema.arrow_schema(names)))


def snapshot_changes(store: "FileStore", snap: Snapshot, columns: Sequence[str] | None = None) -> pa.Table:
    """What one snapshot changed. COMPACT snapshots change nothing unless they carry changelog;
    OVERWRITE ones are skipped unless 'streaming-read-overwrite' is set (then their new rows
    count as +I)."""
    core = store.schema.core
    names = list(columns) if columns is not None else store.schema.field_names
    out_schema = changes_schema(store, names)
    if store.schema.primary_keys and core.get("changelog-producer") != "none":
        list_name = snap.changelog_manifest_list
    elif snap.commit_kind == "APPEND" or (snap.commit_kind == "OVERWRITE" and core.get("streaming-read-overwrite")):
        list_name = snap.delta_manifest_list
    else:
        list_name = None
    if not list_name:
        return out_schema.empty_table()
    mio = store.manifest_io
    entries = [e for m in mio.read_manifest_list(list_name) for e in mio.read_manifest(m.file_name) if e.kind == ADD]
    parts = [_changed_rows(store, e, names)
             for e in sorted(entries, key=lambda e: (e.partition, e.bucket, e.file.min_sequence_number))]
    return pa.concat_tables(parts).cast(out_schema) if parts else out_schema.empty_table()


def postponed_rows(store: FileStore, snap: Snapshot, columns: Sequence[str] | None = None) -> pa.Table:
    """The rows a postpone-bucket table still holds in its postpone buckets at ``snap``, unmerged,
    oldest file first, with their row kinds: what Java's streaming full scan adds to the merged
    real buckets when the table has no changelog producer."""
    names = list(columns) if columns is not None else store.schema.field_names
    out_schema = changes_schema(store, names)
    if not is_postpone(store.schema) or store.schema.core.get("changelog-producer") != "none":
        return out_schema.empty_table()
    entries = [e for e in FileStoreScan(store).read_entries(snap) if e.bucket == POSTPONE_BUCKET]
    parts = [_changed_rows(store, e, names)
             for e in sorted(entries, key=lambda e: (e.partition, e.file.creation_time_millis or 0))]
    return pa.concat_tables(parts).cast(out_schema) if parts else out_schema.empty_table()


def _changed_rows(store: "FileStore", entry: ManifestEntry, names: list[str]) -> pa.Table:
    if store.schema.primary_keys:
        kv = BucketFiles(store, store.kv_layout, entry.partition, entry.bucket).read([entry.file])
        labels = pa.array(list(KIND_NAMES.values()), pa.string())
        kind_text = labels.take(kv.column(VALUE_KIND).cast(pa.int32()))
        rows = kv.select(names)
    else:
        rows = TableRead(store, names).read([DataSplit(entry.partition, entry.bucket, [entry.file], 0)])
        kind_text = pa.array(["+I"] * rows.num_rows, pa.string())
    return rows.add_column(0, "rowkind", kind_text)
