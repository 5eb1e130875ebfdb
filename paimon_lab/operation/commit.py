"""The one commit path: turn commit messages into manifests and a new snapshot, atomically.

Order of work: write the delta manifest, write base and delta manifest lists, then create
``snapshot-N``. Only the last step makes anything visible; it is atomic create-if-absent, so two
committers can never both make snapshot N. A loser re-reads the latest snapshot, re-checks for
conflicts and tries again as N+1. Files written by a failed attempt are deleted.
"""

from __future__ import annotations

import random
import time
import warnings
from typing import TYPE_CHECKING, Sequence

from paimon_lab.core import binary_row
from paimon_lab.errors import CommitConflictError, CommitError
from paimon_lab.io.file_io import join
from paimon_lab.core.index_manifest import commit_index_changes
from paimon_lab.core.manifest import (ADD, DELETE, FileNamer, ManifestEntry, ManifestFileMeta, SimpleStats,
                                 merge_entries)
from paimon_lab.core.snapshot import BATCH_COMMIT_IDENTIFIER, WATERMARK_MIN, Snapshot
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.store.file_store import MAIN_BRANCH
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.core.index_manifest import IndexManifestEntry
from paimon_lab.core.deletion_vector import DELETION_VECTORS_INDEX
from paimon_lab.core.index_manifest import HASH_INDEX
from paimon_lab.operation.rebase import SequenceRebase, check_key_conflicts
from paimon_lab.core.index_manifest import merge_index_entries
from paimon_lab.utils.clock import now_millis

if TYPE_CHECKING:
    from paimon_lab.core.options import CoreOptions
    from paimon_lab.core.predicate import Predicate
    from paimon_lab.store.file_store import FileStore


def retry_wait(core: "CoreOptions", attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` of a commit that lost a race: doubling from
    'commit.min-retry-wait' up to 'commit.max-retry-wait', jittered so that committers (on one
    machine or several) that lost together do not collide again."""
    low = core.get("commit.min-retry-wait") / 1000.0
    high = core.get("commit.max-retry-wait") / 1000.0
    return min(low * (2 ** attempt), high) * random.uniform(0.5, 1.0)


def write_manifest_lists(store: "FileStore", base: list[ManifestFileMeta], written: list[str]) -> dict:
    """Write ``base`` as a new base manifest list beside an empty delta list (a snapshot that
    changes no data file); returns the four manifest-list fields of a ``Snapshot``."""
    mio, lists = store.manifest_io, FileNamer("manifest-list-")
    base_name, delta_name = lists.next(), lists.next()
    base_size = mio.write_manifest_list(base_name, base)
    written.append(base_name)
    delta_size = mio.write_manifest_list(delta_name, [])
    written.append(delta_name)
    return dict(base_manifest_list=base_name, base_manifest_list_size=base_size,
                delta_manifest_list=delta_name, delta_manifest_list_size=delta_size)


def attempt_commit(store: "FileStore", build) -> tuple[bool, int | None]:
    """One try at the next snapshot. ``build(written)`` writes its files (naming each in
    ``written``) and returns the snapshot, or None when there is nothing to commit. Returns
    (done, snapshot id): done is False when another writer took the id. What a lost or failed try
    wrote is deleted, so nothing of it stays visible."""
    written: list[str] = []
    try:
        snapshot = build(written)
        if snapshot is None:
            return True, None
        if store.snapshot_manager.commit(snapshot):
            return True, snapshot.id
    except BaseException:
        store.file_io.delete_quietly([store.manifest_io.path(n) for n in written])
        raise
    store.file_io.delete_quietly([store.manifest_io.path(n) for n in written])
    return False, None


def commit_metadata_only(store: "FileStore", max_retries: int, attempt, what: str) -> int | None:
    """Commit a snapshot that rewrites metadata only (manifest compaction, statistics), retrying
    when another writer takes the next snapshot id. ``attempt(latest, written)`` writes its files
    (naming each in ``written``) and returns the snapshot to commit, or None for nothing to do."""
    for tries in range(max_retries + 1):
        latest = store.snapshot_manager.latest()
        done, sid = attempt_commit(store, lambda written: attempt(latest, written))
        if done:
            return sid
        time.sleep(retry_wait(store.schema.core, tries))
    raise CommitError(f"Gave up {what} {store.path} after {max_retries} retries")


class FileStoreCommit:
    """Commits to one table on behalf of one commit user."""

    def __init__(self, store: "FileStore", commit_user: str | None = None):
        self.store = store
        self.commit_user = commit_user or store.schema.core.new_commit_user()
        self.max_retries = store.schema.core.get("commit.max-retries")
        self._watermark: int | None = None

    def commit(self, messages: Sequence[CommitMessage], *, overwrite: "Predicate | bool | None" = None,
               identifier: int = BATCH_COMMIT_IDENTIFIER, deleted: Sequence[ManifestEntry] = (),
               commit_kind: str | None = None, watermark: int | None = None) -> tuple[int | None, int | None]:
        """Commit what writers produced; returns (APPEND/OVERWRITE snapshot id, COMPACT snapshot id).

        New data and changelog files (and ``deleted`` entries) go into one APPEND snapshot, or an
        OVERWRITE snapshot when ``overwrite`` is True (whole table) or a partition predicate.
        Files replaced by compaction then go into a COMPACT snapshot. Either id is None when
        that snapshot had nothing to do. ``watermark`` (epoch millis, e.g. event time the data is
        complete up to) goes into the snapshots; a snapshot keeps the latest one's watermark when
        that is higher, as in Java.
        """
        self._watermark = watermark
        added = [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f)
                 for m in messages for f in m.new_files]
        changelog = [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f)
                     for m in messages for f in m.changelog_files]
        compact = [ManifestEntry(DELETE, m.partition, m.bucket, m.total_buckets, f)
                   for m in messages for f in m.compact_before] + \
                  [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f)
                   for m in messages for f in m.compact_after]
        compact_changelog = [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f)
                             for m in messages for f in m.compact_changelog]
        index_changes = [e for m in messages for e in m.index_changes]
        compact_index = [e for m in messages for e in m.compact_index_changes]
        first = None
        rebase = None
        if added or deleted or changelog or index_changes or overwrite is not None:
            kind = commit_kind or ("OVERWRITE" if overwrite is not None else "APPEND")
            if added and kind == "APPEND" and overwrite is None and self.store.schema.primary_keys:
                rebase = SequenceRebase(self.store, messages)
            try:
                first = self._commit_with_retries(added, kind, identifier, list(deleted), overwrite, changelog,
                                                  index_changes, rebase)
            except BaseException:
                if rebase is not None:
                    rebase.discard()
                raise
            if self.store.metastore is not None and self.store.branch == MAIN_BRANCH:
                self.store.metastore.committed(self.store, {e.partition for e in added},
                                               removed=bool(deleted) or overwrite is not None)
        second = None
        if rebase is not None and rebase.replaced:
            # Our new files went in rewritten with higher sequence numbers: the originals are
            # unreferenced, and a compaction that read them would bring their old numbers back.
            self.store.file_io.delete_quietly(
                [join(self.store.bucket_path(m.partition, m.bucket), f.file_name)
                 for m in messages for f in m.new_files if f.file_name in rebase.replaced])
            if any(f.file_name in rebase.replaced for m in messages for f in m.compact_before):
                self._drop_compaction(messages)
                return first, None
        if compact or compact_changelog or compact_index:
            try:
                second = self._commit_with_retries([e for e in compact if e.kind == ADD], "COMPACT", identifier,
                                                   [e for e in compact if e.kind == DELETE], None,
                                                   compact_changelog, compact_index)
            except (CommitConflictError, OSError, CommitError) if first is not None else CommitConflictError:
                # The data is committed; only this compaction failed (or lost against another one).
                self._drop_compaction(messages)
                if first is None:
                    raise
                warnings.warn("Compaction skipped: its commit failed or lost to another compaction; the data is committed", stacklevel=2)
        return first, second

    def compact_manifests(self) -> int | None:
        """Rewrite the latest snapshot's data manifests fully merged (deleted files folded away)
        as a COMPACT snapshot, as Java's compactManifest; None when they already are one manifest
        of live files only."""
        t = self.store
        mio = t.manifest_io

        def attempt(latest: Snapshot | None, written: list[str]) -> Snapshot | None:
            if latest is None:
                return None
            metas = mio.read_manifest_list(latest.base_manifest_list) + \
                mio.read_manifest_list(latest.delta_manifest_list)
            entries = [e for m in metas for e in mio.read_manifest(m.file_name)]
            if len(metas) <= 1 and all(e.kind == ADD for e in entries):
                return None
            merged = merge_entries(entries)
            names = FileNamer("manifest-")
            target = t.schema.core.get("manifest.target-file-size")
            per_entry = max(1, sum(m.file_size for m in metas) // max(1, len(entries)))
            chunk = max(1, target // per_entry)
            out = []
            for start in range(0, len(merged), chunk):
                part = merged[start:start + chunk]
                name = names.next()
                out.append(mio.write_manifest(name, part, latest.schema_id, self._partition_stats(part)))
                written.append(name)
            lists = write_manifest_lists(t, out, written)
            return Snapshot(
                id=latest.id + 1, schema_id=latest.schema_id, **lists, commit_user=self.commit_user,
                commit_identifier=BATCH_COMMIT_IDENTIFIER, commit_kind="COMPACT", time_millis=now_millis(),
                log_offsets={}, total_record_count=latest.total_record_count, delta_record_count=0,
                changelog_record_count=0, watermark=latest.watermark, index_manifest=latest.index_manifest,
                statistics=latest.statistics, properties=latest.properties, next_row_id=latest.next_row_id)

        return commit_metadata_only(t, self.max_retries, attempt, "compacting the manifests of")

    def _drop_compaction(self, messages: Sequence[CommitMessage]) -> None:
        """Delete what compactions wrote for a COMPACT snapshot that will not be committed."""
        t = self.store
        t.file_io.delete_quietly(
            [join(t.bucket_path(m.partition, m.bucket), f.file_name)
             for m in messages for f in m.compact_written() + m.compact_changelog] +
            [t.index_path(e.index_file.file_name) for m in messages for e in m.compact_index_changes
             if e.kind == ADD])

    def _commit_with_retries(self, added: list[ManifestEntry], kind: str, identifier: int,
                             deleted: list[ManifestEntry], overwrite, changelog: list[ManifestEntry],
                             index_changes: list | None = None, rebase: SequenceRebase | None = None) -> int:
        for attempt in range(self.max_retries + 1):
            latest = self.store.snapshot_manager.latest()
            if rebase is not None:
                # Last committed wins: our rows go above whatever landed in our buckets since our
                # base; a cross-partition write whose keys another commit wrote must be redone.
                added = rebase.rebase(added, latest)
                check_key_conflicts(self.store, added, rebase.base_id, latest)
            removals = list(deleted)
            changes = list(index_changes or [])
            if overwrite is not None:
                overwritten = self._overwritten(latest, overwrite)
                removals += overwritten
                changes = self._drop_index_of(latest, {e.partition for e in overwritten}, changes)
            self._check_conflicts(latest, deleted)
            if changes or (removals and latest is not None and latest.index_manifest):
                self._check_vector_conflicts(latest, added, removals, changes)
            sid = self._try_commit(latest, added + [e.as_delete() for e in removals], kind, identifier, changelog,
                                   changes)
            if sid is not None:
                return sid
            time.sleep(retry_wait(self.store.schema.core, attempt))
        raise CommitError(f"Gave up committing to {self.store.path} after {self.max_retries} retries: "
                          "other writers kept winning the race for the next snapshot")

    def _overwritten(self, latest: Snapshot | None, overwrite: "Predicate | bool") -> list[ManifestEntry]:
        if latest is None:
            return []
        return FileStoreScan(self.store).read_entries(latest, None if overwrite is True else overwrite)

    def _drop_index_of(self, latest: Snapshot | None, partitions: set[bytes], changes: list) -> list:
        """An overwrite replaces whole partitions: their index files (hash indexes, deletion
        vectors) go with their data files, as in Java's overwrite commit."""

        if latest is None or not latest.index_manifest or not partitions:
            return changes
        t = self.store
        already = {e.index_file.file_name for e in changes if e.kind != ADD}
        drops = [IndexManifestEntry(1, e.partition, e.bucket, e.index_file)
                 for e in t.index_manifest_entries(latest.index_manifest)
                 if e.partition in partitions and e.index_file.file_name not in already]
        return drops + changes

    def _check_vector_conflicts(self, latest: Snapshot | None, added: Sequence[ManifestEntry],
                                removed: Sequence[ManifestEntry], index_changes: Sequence) -> None:
        """Deletion vectors stay attached to live data files: an index file this commit replaces
        must still be live (another commit may have replaced it since), no vector left live may
        point at a data file this commit removes (a compaction would bring its deleted rows
        back), and a new vector must point at a live data file."""

        t = self.store
        live_index = t.index_manifest_entries(latest.index_manifest) \
            if latest is not None and latest.index_manifest else []
        names = {e.index_file.file_name for e in live_index}
        stale = [e.index_file.file_name for e in index_changes if e.kind != ADD and e.index_file.file_name not in names]
        if stale:
            raise CommitConflictError(f"Index files to replace were already replaced by another commit: {stale[:5]}")
        # A bucket's new vectors were computed from the vectors its writer saw: if another commit
        # has given the bucket vectors since, adding ours would silently drop theirs.
        replaced = {e.index_file.file_name for e in index_changes if e.kind != ADD}
        for index_type, what in ((DELETION_VECTORS_INDEX, "deletion vectors"),
                                 # Dynamic bucket: two writers that both gave keys to one bucket
                                 # (or both opened it) assigned them on views that are now stale:
                                 # the same new key could sit in two buckets.
                                 (HASH_INDEX, "hash index (dynamic bucket assignment)")):
            adding = {(e.partition, e.bucket) for e in index_changes
                      if e.kind == ADD and e.index_file.index_type == index_type}
            raced = [e.index_file.file_name for e in live_index
                     if e.index_file.index_type == index_type and (e.partition, e.bucket) in adding
                     and e.index_file.file_name not in replaced]
            if raced:
                raise CommitConflictError(f"Another commit changed the {what} of the same buckets: {raced[:5]}")

        def referenced(entries) -> set[tuple]:
            return {(e.partition, e.bucket, name) for e in entries
                    if e.kind == ADD and e.index_file.index_type == DELETION_VECTORS_INDEX
                    for name in e.index_file.dv_range_map()}

        after = referenced(merge_index_entries(live_index, index_changes))
        # an upgraded file (removed at one level, added at another) keeps its name and its vector
        gone = {(e.partition, e.bucket, e.file.file_name) for e in removed} - \
            {(e.partition, e.bucket, e.file.file_name) for e in added}
        orphaned = after & gone
        if orphaned:
            raise CommitConflictError(
                "Data files with deletion vectors were rewritten or removed by this commit while another "
                f"commit changed their vectors: {sorted(n for _, _, n in orphaned)[:5]}")
        fresh = referenced(index_changes)
        if fresh:
            live = {(e.partition, e.bucket, e.file.file_name) for e in FileStoreScan(t).live_entries(latest)} \
                if latest is not None else set()
            live |= {(e.partition, e.bucket, e.file.file_name) for e in added if e.kind == ADD}
            missing = fresh - live
            if missing:
                raise CommitConflictError("Deletion vectors point at data files another commit removed: "
                                          f"{sorted(n for _, _, n in missing)[:5]}")

    def _check_conflicts(self, latest: Snapshot | None, deleted: Sequence[ManifestEntry]) -> None:
        if not deleted:
            return
        live = {e.identifier for e in FileStoreScan(self.store).live_entries(latest)} if latest else set()
        gone = [e.file.file_name for e in deleted if e.identifier not in live]
        if gone:
            raise CommitConflictError(
                f"Files to delete were already deleted by another commit: {gone[:5]}"
                + (" ..." if len(gone) > 5 else ""))

    def _try_commit(self, latest: Snapshot | None, delta: list[ManifestEntry], kind: str,
                    identifier: int, changelog: Sequence[ManifestEntry] = (), index_changes: Sequence = ()) -> int | None:
        return attempt_commit(self.store, lambda written: self._build_snapshot(
            latest, delta, kind, identifier, changelog, index_changes, written))[1]

    def _build_snapshot(self, latest: Snapshot | None, delta: list[ManifestEntry], kind: str, identifier: int,
                        changelog: Sequence[ManifestEntry], index_changes: Sequence, written: list[str]) -> Snapshot:
        t = self.store
        mio = t.manifest_io
        schema_id = t.schema.id
        manifest_names = FileNamer("manifest-")
        list_names = FileNamer("manifest-list-")
        delta_metas: list[ManifestFileMeta] = []
        if delta:
            name = manifest_names.next()
            delta_metas.append(mio.write_manifest(name, delta, schema_id, self._partition_stats(delta)))
            written.append(name)
        base_metas: list[ManifestFileMeta] = []
        total = 0
        if latest is not None:
            base_metas = mio.read_manifest_list(latest.base_manifest_list) + \
                mio.read_manifest_list(latest.delta_manifest_list)
            total = latest.total_record_count or 0
            base_metas = self._merge_manifests(base_metas, manifest_names, written)
        base_name, delta_name = list_names.next(), list_names.next()
        base_size = mio.write_manifest_list(base_name, base_metas)
        written.append(base_name)
        delta_size = mio.write_manifest_list(delta_name, delta_metas)
        written.append(delta_name)
        changelog_name = changelog_size = None
        if changelog:
            name = manifest_names.next()
            meta = mio.write_manifest(name, list(changelog), schema_id, self._partition_stats(changelog))
            written.append(name)
            changelog_name = list_names.next()
            changelog_size = mio.write_manifest_list(changelog_name, [meta])
            written.append(changelog_name)
        previous_index = latest.index_manifest if latest else None
        index_manifest = commit_index_changes(
            t.file_io, t.path, previous_index, list(index_changes), compression=t.schema.core.manifest_compression,
            previous_entries=t.index_manifest_entries(previous_index) if previous_index and index_changes else None)
        if index_manifest != previous_index:
            written.append(index_manifest)
        delta_count = sum(e.file.row_count for e in delta if e.kind == ADD) - \
            sum(e.file.row_count for e in delta if e.kind == DELETE)
        return Snapshot(
            id=(latest.id + 1) if latest else 1, schema_id=schema_id,
            base_manifest_list=base_name, base_manifest_list_size=base_size,
            delta_manifest_list=delta_name, delta_manifest_list_size=delta_size,
            commit_user=self.commit_user, commit_identifier=identifier, commit_kind=kind,
            time_millis=now_millis(), log_offsets={},
            total_record_count=total + delta_count, delta_record_count=delta_count,
            changelog_manifest_list=changelog_name, changelog_manifest_list_size=changelog_size,
            changelog_record_count=sum(e.file.row_count for e in changelog),
            watermark=self._next_watermark(latest),
            index_manifest=index_manifest,
            # Table statistics (ANALYZE) stay valid while the schema does, as in Java.
            statistics=latest.statistics if latest is not None and latest.schema_id == schema_id else None)

    def _next_watermark(self, latest: Snapshot | None) -> int:
        marks = [w for w in (self._watermark, latest.watermark if latest is not None else None) if w is not None]
        return max(marks) if marks else WATERMARK_MIN

    def _partition_stats(self, entries: Sequence[ManifestEntry]) -> SimpleStats:
        codec = self.store.partition_codec
        types = codec.types
        if not types:
            return SimpleStats(binary_row.EMPTY, binary_row.EMPTY, ())
        rows = [codec.from_bytes(p) for p in {e.partition for e in entries}]
        mins, maxs, nulls = [], [], []
        for i in range(len(types)):
            values = [r[i] for r in rows if r[i] is not None]
            mins.append(min(values) if values else None)
            maxs.append(max(values) if values else None)
            nulls.append(sum(1 for e in entries if codec.from_bytes(e.partition)[i] is None))
        return SimpleStats(binary_row.serialize(mins, types), binary_row.serialize(maxs, types), tuple(nulls))

    def _merge_manifests(self, metas: list[ManifestFileMeta], names: FileNamer,
                         written: list[str]) -> list[ManifestFileMeta]:
        """Paimon's manifest merge: once enough small manifests pile up, rewrite them as few big ones."""
        core = self.store.schema.core
        target = core.get("manifest.target-file-size")
        read = self.store.manifest_io.read_manifest
        # Full compaction (Java's tryFullCompaction): once the manifests that must change (small
        # ones, ones with DELETE entries) add up to the threshold, fold them together with every
        # big manifest whose files they delete, so that no DELETE entry is left behind.
        must = [m for m in metas if m.num_deleted_files > 0 or m.file_size < target]
        if must and sum(m.file_size for m in must) >= core.get("manifest.full-compaction-threshold-size"):
            entries = [e for m in must for e in read(m.file_name)]
            deleted = {e.identifier for e in entries if e.kind != ADD}
            big = []
            for m in metas:
                if m in must:
                    continue
                base = read(m.file_name)
                if any(e.identifier in deleted for e in base):
                    entries.extend(base)
                else:
                    big.append(m)
            per_entry = sum(m.file_size for m in must) // max(1, len(entries))
            return self._write_merged(big, merge_entries(entries), target, per_entry, names, written)
        small = [m for m in metas if m.file_size < target]
        if len(small) < core.get("manifest.merge-min-count"):
            return metas
        big = [m for m in metas if m.file_size >= target]
        entries: list[ManifestEntry] = []
        for m in small:
            entries.extend(read(m.file_name))
        per_entry = sum(m.file_size for m in small) // max(1, len(entries))
        return self._write_merged(big, merge_entries(entries), target, per_entry, names, written)

    def _write_merged(self, big: list[ManifestFileMeta], merged: list[ManifestEntry], target: int, per_entry: int,
                      names: FileNamer, written: list[str]) -> list[ManifestFileMeta]:
        """``big`` followed by ``merged`` rolled into manifests of about ``target`` bytes (an entry
        takes about ``per_entry`` bytes, estimated from the inputs)."""
        out = list(big)
        if merged:
            chunk = max(1, target // max(1, per_entry))
            for start in range(0, len(merged), chunk):
                part = merged[start:start + chunk]
                name = names.next()
                out.append(self.store.manifest_io.write_manifest(
                    name, part, self.store.schema.id, self._partition_stats(part)))
                written.append(name)
        return out

