"""The primary-key write path: write buffer, level-0 flushes, compaction and changelog.

:class:`KeyValueFileStoreWrite` takes user rows with row kinds, buffers them up to
``write-buffer-size``, and on flush splits them by partition and bucket. Each bucket's
:class:`MergeTreeWriter` numbers its rows, sorts and merges them into a level-0 file, then
compacts its LSM tree as the table's options ask. A full buffer is spilled to local disk as
sorted runs (``write-buffer-spillable``), merged into one level-0 run at the flush; memory stays
bounded by the buffer whatever the total size of the write.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.deletion_vector import DeletionVector, write_dv_index
from paimon_lab.core.index_manifest import IndexFileMeta, IndexManifestEntry
from paimon_lab.io.file_io import join
from paimon_lab.core.manifest import DataFileMeta
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.store.file_store import FileStore
from paimon_lab.core.key_value import KeyValueLayout
from paimon_lab.core.manifest import FileNamer
from paimon_lab.core.options import CoreOptions
from paimon_lab.mergetree.compact_strategy import UniversalCompaction
from paimon_lab.mergetree.merge_engine import MergeFunction
from paimon_lab.mergetree.compact_rewriter import (BucketFiles, CompactRewriter, concat_kv, diff_changelog,
                                                  drop_retracts, merge_order, merge_sorted, newest_upper)
from paimon_lab.utils.arrow import semi_join
from paimon_lab.mergetree.levels import Levels
from paimon_lab.mergetree.record_expire import RecordExpire
from paimon_lab.mergetree.lookup_files import POSITION, LookupFiles
from paimon_lab.mergetree.compact_strategy import force_level0_unit
from paimon_lab.mergetree.upgrade import CHANGELOG, REWRITE, UPGRADE, UpgradeRules, compaction_steps
from paimon_lab.mergetree.spill import SpillDirectory, SpilledRun, merge_runs, merge_slice, table_batches


_BUCKET = "__bucket__"
_PRIME_MAX_ROWS = 1_000_000   # larger compaction outputs are left for the first lookup to decode
_KIND = "__kind__"
_HASH = "__hash__"
_POS = "__pos__"


def _null_safe_equal(a, b):
    eq = pc.fill_null(pc.equal(a, b), False)
    return pc.or_(eq, pc.and_(pc.is_null(a), pc.is_null(b)))


def _retract_mask(kinds):
    return pc.or_(pc.equal(kinds, 1), pc.equal(kinds, 3))


class BucketWriteContext(Protocol):
    """What a bucket's writer takes from the table write that owns it (shared by all buckets)."""

    store: FileStore
    layout: KeyValueLayout
    core: CoreOptions
    merge_fn: MergeFunction
    strategy: UniversalCompaction
    data_namer: FileNamer
    changelog_namer: FileNamer
    index_namer: FileNamer
    num_levels: int
    total_buckets: int
    buffer_limit: int
    changelog_producer: str
    row_deduplicate: bool
    write_only: bool
    compact_at_commit: bool
    lookup_wait: bool
    dv_enabled: bool
    lookup_files: LookupFiles | None
    spill_directory: SpillDirectory
    record_expire: RecordExpire | None

    def deletion_vectors(self, partition: bytes, bucket: int) -> tuple: ...


class MergeTreeWriter:
    """Writes one partition and bucket of a primary-key table."""

    def __init__(self, owner: "BucketWriteContext", partition: bytes, bucket: int,
                 restored: list[DataFileMeta]):
        self.owner = owner
        t = owner.store
        self.partition, self.bucket = partition, bucket
        self.layout = owner.layout
        self.files = BucketFiles(t, self.layout, partition, bucket, owner.record_expire)
        self.data_namer = owner.data_namer.for_bucket(partition, bucket)
        self.changelog_namer = owner.changelog_namer.for_bucket(partition, bucket)
        self.index_namer = owner.index_namer.for_bucket(partition, bucket)
        self.levels = Levels.of(restored, owner.num_levels)
        self.upgrade_rules = UpgradeRules.of(owner.core, self.levels.max_level)
        self.next_sequence = max((f.max_sequence_number for f in restored), default=-1) + 1
        self.new_files: list[DataFileMeta] = []
        self.changelog_files: list[DataFileMeta] = []
        self.compact_before: list[DataFileMeta] = []
        self.compact_after: list[DataFileMeta] = []
        self.compact_changelog: list[DataFileMeta] = []
        self.dv_entry, dvs = owner.deletion_vectors(partition, bucket)
        self.dvs = {name: dv.copy() for name, dv in dvs.items()}
        self.dv_changed = False
        self.rewriter = CompactRewriter(self.files, owner.merge_fn, self._next_data_path,
                                        max_rows=owner.buffer_limit // 64)
        self.spilled: list[SpilledRun] = []   # sorted runs of full write buffers, merged at the next flush

    def _next_data_path(self) -> str:
        return join(self.files.directory, self.data_namer.next())

    def _next_changelog_path(self) -> str:
        return join(self.files.directory, self.changelog_namer.next())

    # ------------------------------------------------------------------ flush
    def flush(self, rows: pa.Table, kinds: np.ndarray) -> None:
        self.write_level0(rows, kinds)
        self.compact_after_flush()

    def _sorted_run(self, rows: pa.Table, kinds: np.ndarray) -> pa.Table:
        """Buffered rows numbered, sorted and merged to one row per key (the input changelog is
        written from the unmerged rows)."""
        layout, owner = self.layout, self.owner
        kv = layout.sort(layout.to_kv(rows, kinds, self.next_sequence))
        self.next_sequence += rows.num_rows
        if owner.changelog_producer == "input":
            self.changelog_files += self._write_changelog(kv)
        return owner.merge_fn.merge(kv, layout.key_columns)  # kv is in merge order already

    def spill(self, rows: pa.Table, kinds: np.ndarray) -> None:
        """Sort and merge buffered rows into a run on local disk (``write-buffer-spillable``): the
        next flush merges every run into one level-0 sorted run."""
        merged = self._sorted_run(rows, kinds)
        if merged.num_rows:
            self.spilled.append(self.owner.spill_directory.write(merged))

    def write_level0(self, rows: pa.Table | None, kinds: np.ndarray | None) -> None:
        """Sort, merge and write buffered rows (and the runs spilled before them) as level-0
        files. Touches only this bucket's state, so different buckets' writers may run it on
        different threads."""
        owner = self.owner
        merged = self._sorted_run(rows, kinds) if rows is not None and rows.num_rows else None
        if self.spilled:
            metas = self._merge_spilled(merged)
        elif merged is None or merged.num_rows == 0:
            return
        else:
            metas = self.layout.write_sorted(owner.store.file_io, merged, owner.core, 0, self._next_data_path,
                                             indexer=owner.store.file_indexer)
        for meta in metas:
            self.new_files.append(meta)
            self.levels.add(meta)

    def _merge_spilled(self, last: pa.Table | None) -> list[DataFileMeta]:
        """The spilled runs and ``last`` (the newest, in memory) merged, streamed, into level-0 files."""
        layout, owner = self.layout, self.owner
        runs = [run.batches() for run in self.spilled]
        if last is not None and last.num_rows:
            runs.append(table_batches(last))
        fn = owner.merge_fn
        writer = layout.writer(owner.store.file_io, owner.core, 0, self._next_data_path,
                               indexer=owner.store.file_indexer)
        try:
            merge_runs(layout, lambda parts: merge_slice(layout, fn, parts), runs, writer.write)
            metas = writer.close()
        except BaseException:
            owner.store.file_io.delete_quietly(writer.abort())
            raise
        for run in self.spilled:
            run.delete()
        self.spilled = []
        return metas

    def compact_after_flush(self) -> None:
        """The compaction a flush triggers (none for write-only tables and tables that compact
        at commit)."""
        if not self.owner.write_only and not self.owner.compact_at_commit:
            self.compact(full=False)

    def _write_changelog(self, kv: pa.Table, level: int = 0) -> list[DataFileMeta]:
        """Changelog files: level 0 for the input producer; a compaction's changelog carries the
        compaction's output level, as Java's does (Java's batch scans of deletion-vector and
        first-row tables skip level-0 files, its changelog reads included)."""
        if kv.num_rows == 0:
            return []
        s = self.owner
        return self.layout.write_sorted(s.store.file_io, kv, s.core, level, self._next_changelog_path,
                                        indexer=s.store.file_indexer)

    # ------------------------------------------------------------------ compaction
    def compact(self, full: bool) -> bool:
        """Run one compaction (universal pick, or everything into the top level). True if it did."""
        if full:
            files = self.levels.all_files()
            top = self.levels.max_level
            if all(f.level == top for f in files):
                # One sorted run, already at the top: as Java 1.2+ (apache/paimon#5638), rewrite
                # only the files that have a deletion vector.
                files = [f for f in files if self._has_deletion_vector(f)]
                if not files:
                    return False
                self._rewrite_unit(files, top)
                return True
            self._compact_unit(files, top)
            return True
        unit = self.owner.strategy.pick(self.levels.num_levels, self.levels.sorted_runs())
        if unit is None:
            return False
        self._compact_unit(unit.files, unit.output_level)
        return True

    def _has_deletion_vector(self, f: DataFileMeta) -> bool:
        dv = self.dvs.get(f.file_name)
        return dv is not None and not dv.is_empty()

    def compact_until_done(self, full: bool) -> None:
        """A full compaction, or universal compactions until the strategy picks nothing more."""
        if full:
            self.compact(full=True)
        else:
            while self.compact(full=False):
                pass

    def _compact_unit(self, files: list[DataFileMeta], output_level: int, lift: bool = False) -> None:
        """Compact a unit into ``output_level``, step by step (:func:`compaction_steps`).
        ``lift``: the unit lifts level 0 at a commit of a deletion-vector table."""
        steps = compaction_steps(files, self.layout.key_types, output_level, self.upgrade_rules)
        if steps is None:
            steps = [(REWRITE, files)]
        unit = frozenset(f.file_name for f in files)
        drop_delete = output_level != 0 and output_level >= self.levels.non_empty_highest_level()
        # deletion vectors mark the older rows of lifted keys; Java's full-compaction rewriter
        # does no lookup, so such a table's compactions but the commit's lift merge without it
        dv_lookup = self.owner.dv_enabled and (lift or self.upgrade_rules is not None)
        for step, group in steps:
            if step == UPGRADE:
                self._replace(group, [replace(f, level=output_level) for f in group])
            elif step == CHANGELOG:
                self._upgrade_with_changelog(group[0], unit, output_level, dv_lookup)
            elif dv_lookup:
                self._dv_rewrite(group, unit, output_level)
            else:
                self._rewrite_unit(group, output_level, unit, drop_delete)

    def _upgrade_with_changelog(self, f: DataFileMeta, unit: frozenset[str], output_level: int,
                                dv_lookup: bool) -> None:
        """Move ``f`` (alone in its key range) to ``output_level`` under its name, after reading its
        rows for what Java's changelog rewriters take from them without rewriting: the +I rows
        of a full-compaction changelog; a level-0 file's lookup changelog, and the deletion
        vectors of its keys' older rows."""
        owner = self.owner
        kv = self.files.read([f], self.dvs)
        if owner.changelog_producer == "full-compaction":
            # the file is alone in its range: none of its keys is at the top level yet
            self.compact_changelog += self._write_changelog(
                diff_changelog(self.layout, self.layout.arrow_schema.empty_table(), drop_retracts(kv),
                               owner.row_deduplicate), output_level)
        elif dv_lookup:
            older = self._mark_older(kv, unit)
            if owner.changelog_producer == "lookup":
                self._lookup_changelog(kv, older, output_level)
        elif owner.changelog_producer == "lookup":
            older, _ = self._lookup_older(kv, unit)
            self._lookup_changelog(kv, older, output_level)
        moved = replace(f, level=output_level)
        self._prime(kv, [moved])   # the rows just read: the next lift need not decode the file
        self._replace([f], [moved])

    def _lookup_older(self, level0_kv: pa.Table, unit: frozenset[str]) -> tuple[pa.Table, list[tuple[int, pa.Table]]]:
        """The rows above level 0 of the keys in ``level0_kv``: those a lookup changelog compares
        with, and (in a lookup-folded table) the ones outside ``unit`` the lifted rows fold in."""
        upper = [f for f in self.levels.all_files() if f.level > 0]
        hits = [(f, rows.drop_columns([POSITION])) for f, rows in self._look_up(upper, level0_kv)]
        older = [(f.level, rows) for f, rows in hits]
        looked_up: list[tuple[int, pa.Table]] = []
        if self.files.folded:
            # as Java's lookup compaction: the lifted row folds in the key's newest row above
            # the unit, and only that one (it already holds the older levels')
            looked_up = [(f.level, rows) for f, rows in hits if f.file_name not in unit]
            older = newest_upper(self.layout.key_columns, older)
        return concat_kv([t for _, t in older], self.layout.arrow_schema), looked_up

    def _rewrite_unit(self, files: list[DataFileMeta], output_level: int, unit: frozenset[str] | None = None,
                      drop_delete: bool | None = None) -> None:
        """Merge ``files`` (a unit, or a group of its files that shares no key with the rest of
        ``unit``) into new files at ``output_level``, with the changelog its producer asks."""
        owner = self.owner
        files = merge_order(files)
        unit = frozenset(f.file_name for f in files) if unit is None else unit
        if drop_delete is None:
            drop_delete = output_level != 0 and output_level >= self.levels.non_empty_highest_level()
        before_top = None
        if owner.changelog_producer == "full-compaction" and output_level == self.levels.max_level:
            # the other top-level files hold none of these files' keys
            before_top = drop_retracts(self.files.read([f for f in files if f.level == output_level], self.dvs))
        level0 = [f for f in files if f.level == 0]
        looked_up: list[tuple[int, pa.Table]] = []
        if level0 and (owner.changelog_producer == "lookup" or self.files.folded):
            level0_kv = self.files.read(level0, self.dvs)
            older, looked_up = self._lookup_older(level0_kv, unit)
            if owner.changelog_producer == "lookup":
                self._lookup_changelog(level0_kv, older, output_level)
        if owner.merge_fn.engine == "first-row" and level0:
            merged, written = self._first_row_lift(files, level0, output_level, drop_delete)
        else:
            # Java's lookup compaction merges every row of a unit that lifts level 0, lone ones too
            merged, written = self.rewriter.rewrite(files, output_level, drop_delete, self.dvs,
                                                    need_merged=before_top is not None,
                                                    merge_lone=owner.compact_at_commit and bool(level0)
                                                    and output_level != 0, looked_up=looked_up)
        if before_top is not None:
            self.compact_changelog += self._full_changelog(files, output_level, before_top, merged)
        self._prime(merged, written)
        self._replace(files, written)

    def _full_changelog(self, files: list[DataFileMeta], top: int, before_top: pa.Table,
                        merged: pa.Table) -> list[DataFileMeta]:
        """Full-compaction changelog of merging ``files`` into the top level: as Java's, only keys
        with rows below the top level change (a key alone at the top emits nothing)."""
        layout = self.layout
        keys = layout.key_columns
        lower = self.files.read([f for f in files if f.level != top], self.dvs).select(keys)
        after = drop_retracts(merged)
        if before_top.num_rows:
            before_top = semi_join(before_top, lower, keys)
            after = semi_join(after, lower, keys)
        return self._write_changelog(diff_changelog(layout, before_top, after, self.owner.row_deduplicate), top)

    def _first_row_lift(self, files: list[DataFileMeta], level0: list[DataFileMeta], output_level: int,
                        drop_delete: bool) -> tuple[pa.Table, list[DataFileMeta]]:
        """First-row lookup: level-0 rows whose key already lives in an older level are dropped
        rather than carried up, so every file holds only first rows (as Java's lookup does)."""
        layout = self.layout
        keys = layout.key_columns
        names = {f.file_name for f in files}
        new_kv = self.files.read(level0, self.dvs)
        older = [f for f in self.levels.all_files() if f.level > 0 and f.file_name not in names]
        if older and new_kv.num_rows:
            existing = [rows.select(keys) for _, rows in self._look_up(older, new_kv)]
            if existing:
                new_kv = semi_join(new_kv, pa.concat_tables(existing), keys, anti=True)
        unit_upper = self.files.read([f for f in files if f.level > 0], self.dvs)
        merged = merge_sorted(layout, self.owner.merge_fn, concat_kv([unit_upper, new_kv], layout.arrow_schema))
        if drop_delete:
            merged = drop_retracts(merged)
        return merged, self.rewriter.write(merged, output_level)

    def _replace(self, before: list[DataFileMeta], after: list[DataFileMeta]) -> None:
        self.levels.update(before, after)
        self.compact_before += before
        self.compact_after += after
        kept = {f.file_name for f in after}    # an upgraded file keeps its name and deletion vector
        for f in before:
            if f.file_name not in kept and self.dvs.pop(f.file_name, None) is not None:
                self.dv_changed = True

    def _lookup_compact(self, keep: frozenset[str] = frozenset()) -> None:
        """Deletion-vector mode: compact level 0 (but ``keep``) into the upper levels, merging each
        key with its older version found there, which is then marked deleted instead of rewritten."""
        unit = force_level0_unit(self.levels, self.owner.strategy, keep)
        if unit is not None:
            self._compact_unit(unit.files, unit.output_level, lift=True)

    def _mark_older(self, kv: pa.Table, unit: frozenset[str]) -> pa.Table:
        """Deletion-vector mode: the live rows outside ``unit`` (above level 0) of the keys in
        ``kv``, now marked deleted in their files' deletion vectors."""
        layout = self.layout
        # level-0 files left out of the unit are newer than it
        others = [f for f in self.levels.all_files() if f.file_name not in unit and f.level != 0]
        bitmap64 = self.owner.core.get("deletion-vectors.bitmap64")
        old_parts = []
        for f, hit in self._look_up(others, kv):
            self.dvs.setdefault(f.file_name, DeletionVector(bitmap64=bitmap64)).delete(hit.column(POSITION).to_numpy())
            self.dv_changed = True
            old_parts.append(hit.drop_columns([POSITION]))
        return concat_kv(old_parts, layout.arrow_schema)

    def _dv_rewrite(self, files: list[DataFileMeta], unit: frozenset[str], output_level: int) -> None:
        """Deletion-vector mode: merge ``files`` (of ``unit``) into ``output_level``, deletes
        dropped. Where they lift level 0, each key's older live row outside the unit is merged in
        and marked deleted (as Java, a rewrite of upper levels only looks nothing up: a key has
        one live row above level 0)."""
        layout = self.layout
        level0_kv = self.files.read([f for f in files if f.level == 0], self.dvs)
        upper_kv = self.files.read([f for f in files if f.level > 0], self.dvs)
        group_kv = concat_kv([upper_kv, level0_kv], layout.arrow_schema)
        lifts = level0_kv.num_rows > 0
        old = self._mark_older(group_kv, unit) if lifts else layout.arrow_schema.empty_table()
        merged = drop_retracts(merge_sorted(layout, self.owner.merge_fn, concat_kv([old, group_kv], layout.arrow_schema),
                                            merge_lone=lifts))
        if self.owner.changelog_producer == "lookup":
            self._lookup_changelog(level0_kv, concat_kv([old, upper_kv], layout.arrow_schema), output_level)
        written = self.rewriter.write(merged, output_level)
        self._prime(merged, written)
        self._replace(files, written)

    def _prime(self, merged: pa.Table | None, written: list[DataFileMeta]) -> None:
        """Hand the rows just written (in key order, file after file) to the lookup files, so the
        next lift looks keys up in them without reading the new files back."""
        lookup = self.owner.lookup_files
        if lookup is None or merged is None or merged.num_rows > _PRIME_MAX_ROWS \
                or sum(f.row_count for f in written) != merged.num_rows:
            return
        start = 0
        for f in written:
            lookup.prime(f, merged.slice(start, f.row_count))
            start += f.row_count

    def _look_up(self, files: list[DataFileMeta], kv: pa.Table) -> list[tuple[DataFileMeta, pa.Table]]:
        """The rows of ``files`` (deletion vectors applied) whose keys occur in ``kv``, per file,
        with their positions: from the local lookup files, without reading the data files whole.
        Expired records (record-level expiration) are not found, but in first-row tables (Java
        looks those up with a reader of its own)."""
        hits = self._look_up_all(files, kv)
        expire = self.owner.record_expire
        if expire is None or self.owner.merge_fn.engine == "first-row":
            return hits
        hits = [(f, expire.apply(rows)) for f, rows in hits]
        return [(f, rows) for f, rows in hits if rows.num_rows]

    def _look_up_all(self, files: list[DataFileMeta], kv: pa.Table) -> list[tuple[DataFileMeta, pa.Table]]:
        if not files or kv.num_rows == 0:
            return []
        keys = self.layout.key_columns
        affected = kv.select(keys).group_by(keys, use_threads=False).aggregate([])
        lookup = self.owner.lookup_files
        if lookup is None:   # a table that never looks up (a full compaction's first-row lift)
            out = []
            for f in files:
                rows = self.files.read_file(f)
                rows = rows.append_column(POSITION, pa.array(np.arange(rows.num_rows), pa.int64()))
                dv = self.dvs.get(f.file_name)
                if dv is not None:
                    rows = rows.filter(pa.array(dv.mask(rows.num_rows)))
                rows = semi_join(rows, affected, keys)
                if rows.num_rows:
                    out.append((f, rows))
            return out
        return lookup.lookup(self.files, files, affected, self.dvs)

    def _dv_index_changes(self) -> list:
        """A new deletion-vector index file for this bucket (replacing the old one) if anything changed."""
        if not self.dv_changed:
            return []
        self.dv_changed = False
        live = {f.file_name for f in self.levels.all_files()}
        vectors = {name: dv for name, dv in self.dvs.items() if name in live and not dv.is_empty()}
        changes = []
        if self.dv_entry is not None:
            changes.append(IndexManifestEntry(1, self.partition, self.bucket, self.dv_entry.index_file))
            self.dv_entry = None
        if vectors:
            data, metas = write_dv_index(vectors)
            name = self.index_namer.next()
            self.owner.store.file_io.write_bytes(self.owner.store.index_path(name), data)
            self.dv_entry = IndexManifestEntry(0, self.partition, self.bucket,
                                               IndexFileMeta.for_deletion_vectors(name, len(data), metas))
            changes.append(self.dv_entry)
        return changes

    def _lookup_changelog(self, level0_kv: pa.Table, older_kv: pa.Table, output_level: int) -> None:
        """Lookup changelog producer: for every key in the level-0 rows being lifted, compare its
        merged value in the older levels with its value after the level-0 rows are applied."""
        if level0_kv.num_rows == 0:
            return
        layout, fn = self.layout, self.owner.merge_fn
        keys = layout.key_columns
        affected = level0_kv.select(keys).group_by(keys, use_threads=False).aggregate([])
        if older_kv.num_rows:
            older_kv = semi_join(older_kv, affected, keys)
        if fn.engine == "first-row":
            # as Java's first-row lookup: a key found above keeps its first row and emits nothing,
            # a new key emits +I
            before = layout.arrow_schema.empty_table()
            after = drop_retracts(merge_sorted(layout, fn, level0_kv, merge_lone=True))
            if older_kv.num_rows:
                after = semi_join(after, older_kv, keys, anti=True)
        else:
            before = drop_retracts(merge_sorted(layout, fn, older_kv))
            after = drop_retracts(merge_sorted(layout, fn, concat_kv([older_kv, level0_kv], layout.arrow_schema),
                                               merge_lone=True))
        self.compact_changelog += self._write_changelog(
            diff_changelog(layout, before, after, self.owner.row_deduplicate), output_level)

    # ------------------------------------------------------------------ commit
    def prepare_commit(self, full_compaction: bool) -> CommitMessage:
        owner = self.owner
        if not owner.write_only:
            # 'lookup-wait' = false: Java commits without waiting for the lookup compaction it
            # started; here that compaction lands with the next commit, lifting the level-0
            # files of earlier commits and leaving this commit's in level 0 until then.
            keep = frozenset() if owner.lookup_wait else frozenset(f.file_name for f in self.new_files)
            if owner.dv_enabled:
                self._lookup_compact(keep)
            if full_compaction:
                self.compact(full=True)
            elif owner.compact_at_commit and not owner.dv_enabled:
                unit = force_level0_unit(self.levels, self.owner.strategy, keep)
                if unit is not None:
                    self._compact_unit(unit.files, unit.output_level)
        msg = CommitMessage(self.partition, self.bucket, owner.total_buckets, list(self.new_files))
        msg.changelog_files = list(self.changelog_files)
        before, after = self._net_compaction()
        msg.compact_before, msg.compact_after = before, after
        msg.compact_changelog = list(self.compact_changelog)
        msg.compact_index_changes = self._dv_index_changes()
        self.new_files, self.changelog_files, self.compact_changelog = [], [], []
        self.compact_before, self.compact_after = [], []
        return msg

    def _net_compaction(self) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
        """Drop files that were both produced and consumed by compactions inside this commit."""
        # An upgraded file is in both lists under one name at two levels: (name, level) tells them apart.
        after_ids = {(f.file_name, f.level) for f in self.compact_after}
        transient = {(f.file_name, f.level) for f in self.compact_before if (f.file_name, f.level) in after_ids}
        kept_names = {f.file_name for f in self.compact_after if (f.file_name, f.level) not in transient}
        # a file upgraded and then compacted away is still the committed (or new) input of the net
        # compaction: it is not this commit's to delete (Java's updateCompactResult)
        inputs = {f.file_name for f in self.compact_before if (f.file_name, f.level) not in transient}
        doomed = {name for name, _ in transient} - kept_names - inputs
        if doomed:
            self.owner.store.file_io.delete_quietly(
                [self.files.path(f) for f in self.compact_after if f.file_name in doomed])
        before = [f for f in self.compact_before if (f.file_name, f.level) not in transient]
        after = [f for f in self.compact_after if (f.file_name, f.level) not in transient]
        return before, after

    def written_paths(self) -> list[str]:
        inputs = {f.file_name for f in self.compact_before}   # upgraded files keep an input's name
        return [self.files.path(f) for f in
                self.new_files + self.changelog_files + self.compact_changelog +
                [f for f in self.compact_after if f.file_name not in inputs]]
