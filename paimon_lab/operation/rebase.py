"""Rebasing a primary-key commit onto what other writers committed since its writer started.

A bucket's writer numbers its rows from the bucket's max sequence number in the snapshot it
started from (its *base*). If another writer committed rows for the same bucket since, both
ranges start at the same number and the merge (newest sequence number wins) would prefer
whichever rows happen to carry higher numbers, not the rows committed last. Rule: **the commit
that lands last wins**. So, at commit, every bucket whose max sequence number in the latest
snapshot has reached the smallest one of our new files gets those files rewritten with their
sequence numbers shifted above it (:func:`rebase_sequences`). Only our own new files are read
and written, and only the delta manifests of the snapshots since our base are consulted: the
cost is that of the commit, plus what was committed concurrently.

Cross-partition update tables (dynamic bucket, partition keys outside the primary key) route a
key to the partition where the base snapshot had it. A key another commit wrote since then may
have moved, so :func:`check_key_conflicts` turns that into a :class:`CommitConflictError`: the
write is redone on the new latest snapshot (``write_rows`` does so by itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.key_value import SEQUENCE_NUMBER
from paimon_lab.core.manifest import ADD, DataFileMeta, FileNamer, ManifestEntry
from paimon_lab.core.schema import POSTPONE_BUCKET
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.errors import CommitConflictError, SnapshotNotExistError
from paimon_lab.io.file_io import join
from paimon_lab.mergetree.compact_rewriter import BucketFiles
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.utils.arrow import semi_join

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore

Bucket = tuple[bytes, int]


def is_cross_partition(store: "FileStore") -> bool:
    schema = store.schema
    return bool(schema.primary_keys) and schema.core.bucket <= 0 and any(
        k not in schema.primary_keys for k in schema.partition_keys)


def committed_since(store: "FileStore", base_id: int | None, latest: Snapshot | None,
                    kinds: Sequence[str] | None = None) -> list[ManifestEntry] | None:
    """The data file entries (ADD and DELETE) that snapshots ``base_id + 1 .. latest`` committed,
    from their delta manifests (only of commit ``kinds`` if given); None when that history is
    unknown (no base) or no longer complete (expired snapshots)."""
    if latest is None:
        return []
    if base_id is None:
        return None
    sm, mio = store.snapshot_manager, store.manifest_io
    out: list[ManifestEntry] = []
    for sid in range(base_id + 1, latest.id + 1):
        try:
            snap = latest if sid == latest.id else sm.snapshot(sid)
            if kinds is not None and snap.commit_kind not in kinds:
                continue
            for meta in mio.read_manifest_list(snap.delta_manifest_list):
                out.extend(store.manifest_cache.get(meta.file_name, mio.read_manifest))
        except (SnapshotNotExistError, FileNotFoundError):  # expired meanwhile
            return None
    return out


def bucket_max_sequences(store: "FileStore", buckets: set[Bucket], base_id: int | None,
                         latest: Snapshot | None) -> dict[Bucket, int]:
    """Max sequence number that commits since ``base_id`` brought into each bucket (all live
    files of the bucket when that history is not available)."""
    entries = committed_since(store, base_id, latest)
    if entries is None:
        entries = FileStoreScan(store).live_entries(latest)
    out: dict[Bucket, int] = {}
    for e in entries:
        key = (e.partition, e.bucket)
        if e.kind == ADD and key in buckets:
            out[key] = max(out.get(key, -1), e.file.max_sequence_number)
    return out


class SequenceRebase:
    """Rewrites a commit's new files above the sequence numbers committed since its base.
    Remembers the files it wrote, so that superseded rewrites and, on failure, all of them can
    be deleted."""

    def __init__(self, store: "FileStore", messages: Sequence[CommitMessage]):
        self.store = store
        # Per bucket, the oldest base of the messages that bring it new files.
        base: dict[Bucket, int | None] = {}
        for m in messages:
            if m.new_files:
                key = (m.partition, m.bucket)
                old = base.get(key, m.base_snapshot)
                base[key] = None if old is None or m.base_snapshot is None else min(old, m.base_snapshot)
        self.base = base
        core = store.schema.core
        self.namer = FileNamer(core.get("data-file.prefix"), "." + core.file_format)
        bases = set(base.values())
        # The oldest base of the commit's buckets (None: unknown, e.g. a writer of another kind).
        self.base_id: int | None = None if None in bases or not bases else min(bases)
        self.written: set[str] = set()        # paths of files this rebase wrote (not yet committed)
        self.replaced: set[str] = set()       # names of the writer's files a rewrite replaced

    def rebase(self, added: list[ManifestEntry], latest: Snapshot | None) -> list[ManifestEntry]:
        """``added`` with every file of a bucket that moved on rewritten above its new max."""
        if latest is None or not self.store.schema.primary_keys:
            return added
        lowest: dict[Bucket, int] = {}
        for e in added:
            if e.kind == ADD and e.bucket != POSTPONE_BUCKET:  # postponed rows are ordered by file, not sequence
                key = (e.partition, e.bucket)
                lowest[key] = min(lowest.get(key, e.file.min_sequence_number), e.file.min_sequence_number)
        if not lowest:
            return added
        ceiling = bucket_max_sequences(self.store, set(lowest), self.base_id, latest)
        shift = {k: ceiling[k] + 1 - low for k, low in lowest.items() if ceiling.get(k, -1) >= low}
        if not shift:
            return added
        out = []
        for e in added:
            offset = shift.get((e.partition, e.bucket))
            if e.kind != ADD or offset is None:
                out.append(e)
                continue
            for meta in self._rewrite(e, offset):
                out.append(ManifestEntry(ADD, e.partition, e.bucket, e.total_buckets, meta))
        return out

    def _rewrite(self, e: ManifestEntry, offset: int) -> list[DataFileMeta]:
        store = self.store
        layout = store.kv_layout
        files = BucketFiles(store, layout, e.partition, e.bucket)
        kv = files.read_file(e.file)
        i = kv.schema.get_field_index(SEQUENCE_NUMBER)
        kv = kv.set_column(i, kv.schema.field(i), pc.add(kv.column(i), pa.scalar(offset, pa.int64())))
        metas = layout.write_sorted(store.file_io, kv, store.schema.core, e.file.level,
                                    lambda: join(files.directory, self.namer.next()), indexer=store.file_indexer)
        old = files.path(e.file)
        if old in self.written:  # a rewrite of an earlier attempt: never committed, ours to drop
            self.written.discard(old)
            store.file_io.delete_quietly([old])
        else:
            self.replaced.add(e.file.file_name)
        self.written.update(files.path(m) for m in metas)
        self.written.update(join(files.directory, x) for m in metas for x in m.extra_files)
        return metas

    def discard(self) -> None:
        """The commit failed: delete what the rebase wrote."""
        self.store.file_io.delete_quietly(sorted(self.written))
        self.written.clear()


def check_key_conflicts(store: "FileStore", added: list[ManifestEntry], base_id: int | None,
                        latest: Snapshot | None) -> None:
    """Cross-partition update: refuse the commit when a commit since ``base_id`` wrote any of the
    keys this one writes (their partitions were routed on a view that is now stale)."""
    if latest is None or not added or not is_cross_partition(store):
        return
    theirs = committed_since(store, base_id, latest, kinds=("APPEND", "OVERWRITE"))
    if theirs is None:
        raise CommitConflictError("Cross-partition update: snapshots since this write started are gone; "
                                  "redo the write on the latest snapshot")
    theirs = [e for e in theirs if e.kind == ADD]
    if not theirs:
        return
    layout = store.kv_layout
    keys = layout.key_columns

    def read_keys(entries: list[ManifestEntry]) -> pa.Table:
        parts = [BucketFiles(store, layout, e.partition, e.bucket).read_file(e.file).select(keys) for e in entries]
        return pa.concat_tables(parts) if parts else None

    ours = read_keys([e for e in added if e.kind == ADD])
    other = read_keys(theirs)
    if ours is None or other is None:
        return
    hit = semi_join(ours, other, keys)
    if hit.num_rows:
        raise CommitConflictError(
            f"Cross-partition update: {hit.num_rows} key(s) of this write were written by another commit "
            f"since it started (e.g. {hit.slice(0, 1).to_pylist()[0]}); redo the write on the latest snapshot")
