"""What snapshots changed, as rows with a ``rowkind`` column ('+I', '-U', '+U', '-D'), like
Paimon's audit log: the changelog files where a changelog producer writes them, otherwise the
delta files of APPEND snapshots (for primary-key tables, each commit's merged input records)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.key_value import KIND_NAMES, VALUE_KIND
from paimon_lab.core.manifest import ADD, ManifestEntry
from paimon_lab.core.schema import POSTPONE_BUCKET, is_postpone
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.errors import ArgumentError, SnapshotNotExistError
from paimon_lab.mergetree.compact_rewriter import BucketFiles, concat_kv, latest_upper, merge_order, merge_sorted
from paimon_lab.mergetree.merge_engine import merge_function_of
from paimon_lab.operation.scan import DataSplit, FileStoreScan
from paimon_lab.operation.split_read import TableRead
from paimon_lab.utils.arrow import values_equal

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


#: values of 'incremental-between-scan-mode' ('diff': Java 1.3's)
INCREMENTAL_SCAN_MODES = ("auto", "delta", "changelog", "diff")


def check_incremental_range(store: "FileStore", start: int, end: int) -> bool:
    """Whether ``(start, end]`` can be read incrementally, as Java's IncrementalStartingScanner
    checks it: False for a table without snapshots; an error when start > end or the range leaves
    the snapshots (or long-lived changelogs) the table still has."""
    sm, cm = store.snapshot_manager, store.changelog_manager
    latest = sm.latest_id()
    if latest is None:
        return False
    if start > end:
        raise ArgumentError(f"The starting snapshot id {start} of an incremental read must not be greater "
                            f"than its ending snapshot id {end}")
    earliest = min(i for i in (sm.earliest_id(), cm.earliest_id()) if i is not None)
    if start < earliest - 1 or end > latest:
        raise SnapshotNotExistError(f"The incremental range ({start}, {end}] is out of the table's snapshots "
                                    f"[{earliest}, {latest}]")
    return True


def incremental_changes(store: "FileStore", start: int, end: int, columns: Sequence[str] | None = None,
                        mode: str = "auto") -> pa.Table:
    """Java's batch read with 'incremental-between' = 'start,end': the files the snapshots after
    ``start`` up to ``end`` added (``mode`` 'delta': the data files of APPEND snapshots;
    'changelog': the changelog files of all but OVERWRITE snapshots; 'auto': changelog when the
    table has a changelog producer; 'diff': :func:`snapshot_diff` of the two snapshots), read per bucket and, on primary-key tables, merged by key
    with the table's merge engine (a key updated twice in the range is one row). A ``rowkind``
    column comes first; retractions are kept (a table read drops them, ``$audit_log`` keeps them)."""
    mode = str(mode).strip().lower()
    if mode not in INCREMENTAL_SCAN_MODES:
        raise ArgumentError(f"Unknown incremental-between-scan-mode '{mode}'; use one of {', '.join(INCREMENTAL_SCAN_MODES)}")
    names = list(columns) if columns is not None else store.schema.field_names
    out_schema = changes_schema(store, names)
    if not check_incremental_range(store, start, end):
        return out_schema.empty_table()
    if mode == "diff":
        first = None
        if start >= (store.snapshot_manager.earliest_id() or 0):
            first = store.snapshot_manager.snapshot(start)
        return snapshot_diff(store, first, store.snapshot_manager.snapshot(end), names) if end > start \
            else out_schema.empty_table()
    pk = bool(store.schema.primary_keys)
    if mode == "auto":
        mode = "changelog" if pk and store.schema.core.get("changelog-producer") != "none" else "delta"
    groups: dict[tuple[bytes, int], list] = {}
    mio = store.manifest_io
    for sid in range(start + 1, end + 1):
        snap = store.snapshot_or_changelog(sid)
        if mode == "delta":
            list_name = snap.delta_manifest_list if snap.commit_kind == "APPEND" else None
        else:
            list_name = snap.changelog_manifest_list if snap.commit_kind != "OVERWRITE" else None
        if not list_name:
            continue
        for m in mio.read_manifest_list(list_name):
            for e in mio.read_manifest(m.file_name):
                if e.kind == ADD:
                    groups.setdefault((e.partition, e.bucket), []).append(e)
    if not pk:
        parts = [_changed_rows(store, e, names) for entries in groups.values() for e in entries]
    else:
        parts = [_merged_rows(store, partition, bucket, [e.file for e in entries], names, mode == "changelog")
                 for (partition, bucket), entries in groups.items()]
    parts = [p for p in parts if p.num_rows]
    return pa.concat_tables(parts).cast(out_schema) if parts else out_schema.empty_table()


def _merged_rows(store: "FileStore", partition: bytes, bucket: int, files: list, names: list[str],
                 changelog: bool) -> pa.Table:
    """One bucket's files merged by key (a lone row per key kept as written, as Java's reader)."""
    layout = store.kv_layout
    reader = BucketFiles(store, layout, partition, bucket)
    if changelog and reader.folded:     # a changelog file's level is not its age
        parts = [(f.level, reader.read_file(f, None, None)) for f in merge_order(files)]
        kv = concat_kv([t for _, t in latest_upper(layout.key_columns, parts)], layout.arrow_schema)
    else:
        kv = reader.read(merge_order(files))
    if len(files) > 1:
        kv = merge_sorted(layout, merge_function_of(store), kv)
    labels = pa.array(list(KIND_NAMES.values()), pa.string())
    return kv.select(names).add_column(0, "rowkind", labels.take(kv.column(VALUE_KIND).cast(pa.int32())))


def snapshot_diff(store: "FileStore", start: Snapshot | None, end: Snapshot,
                  columns: Sequence[str] | None = None) -> pa.Table:
    """Java's incremental diff of two snapshots (an 'incremental-between' of two tags, or scan mode
    'diff'): per bucket, the files only ``start`` has (None: before the first snapshot, no files)
    and the files only ``end`` has, each side merged by key (rows in deletion vectors left out).
    A key whose end row is new or has other values than its start row is read as its end row (with
    its row kind); a key only on the start side as -D. Append tables read the rows of the files
    only ``end`` has. A ``rowkind`` column comes first."""
    if start is not None and end.id <= start.id:
        raise ArgumentError(f"The end of an incremental diff (snapshot {end.id}) must be later than its "
                            f"start (snapshot {start.id})")
    names = list(columns) if columns is not None else store.schema.field_names
    out_schema = changes_schema(store, names)
    scan = FileStoreScan(store)
    sides = []
    for snap in (start, end):
        grouped: dict[tuple[bytes, int], dict[str, ManifestEntry]] = {}
        for e in (scan.read_entries(snap) if snap is not None else []):
            grouped.setdefault((e.partition, e.bucket), {})[e.file.file_name] = e
        sides.append(grouped)
    before_side, after_side = sides
    parts = []
    for key in sorted(set(before_side) | set(after_side)):
        before, after = before_side.get(key, {}), after_side.get(key, {})
        common = set(before) & set(after)
        only_before = [before[n].file for n in before if n not in common]
        only_after = [after[n].file for n in after if n not in common]
        if not store.schema.primary_keys:
            parts += [_changed_rows(store, after[n], names) for n in after if n not in common]
            continue
        if only_before or only_after:
            parts.append(_bucket_diff(store, key, (start, only_before), (end, only_after), names))
    parts = [p for p in parts if p.num_rows]
    return pa.concat_tables(parts).cast(out_schema) if parts else out_schema.empty_table()


def _bucket_diff(store: "FileStore", key: tuple[bytes, int], before: tuple, after: tuple,
                 names: list[str]) -> pa.Table:
    layout = store.kv_layout
    merge_fn = merge_function_of(store)
    merged = []
    for snap, files in (before, after):
        _, dvs = store.deletion_vectors_at(snap).get(key, (None, {})) if snap is not None else (None, {})
        kv = BucketFiles(store, layout, *key).read(merge_order(files), dvs or None)
        merged.append(merge_sorted(layout, merge_fn, kv) if len(files) > 1 else kv)
    b, a = merged
    keys = layout.key_columns
    joined = a.select(keys).append_column("__a", pa.array(np.arange(a.num_rows, dtype=np.int64))).join(
        b.select(keys).append_column("__b", pa.array(np.arange(b.num_rows, dtype=np.int64))), keys=keys,
        join_type="full outer")
    pos_a, pos_b = joined.column("__a").combine_chunks(), joined.column("__b").combine_chunks()
    changed = pc.is_null(pos_b).to_numpy(zero_copy_only=False).copy()      # keys only after
    both = np.flatnonzero(pc.and_(pc.is_valid(pos_a), pc.is_valid(pos_b)).to_numpy(zero_copy_only=False))
    if len(both):
        ia, ib = pos_a.take(both), pos_b.take(both)
        same = np.ones(len(both), dtype=bool)
        for c in layout.value_names:
            same &= values_equal(a.column(c).take(ia), b.column(c).take(ib))
        changed[both] = ~same
    labels = pa.array(list(KIND_NAMES.values()), pa.string())
    rows_a = a.take(pos_a.filter(pa.array(changed)))
    out_a = rows_a.select(names).add_column(0, "rowkind", labels.take(rows_a.column(VALUE_KIND).cast(pa.int32())))
    rows_b = b.take(pos_b.filter(pc.is_null(pos_a)))
    out_b = rows_b.select(names).add_column(0, "rowkind", pa.repeat(pa.scalar("-D", pa.string()), rows_b.num_rows))
    return pa.concat_tables([out_a, out_b.cast(out_a.schema)])

