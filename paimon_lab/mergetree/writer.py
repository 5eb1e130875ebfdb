"""The primary-key write path: write buffer, level-0 flushes, compaction and changelog.

:class:`KeyValueFileStoreWrite` takes user rows with row kinds, buffers them up to
``write-buffer-size``, and on flush splits them by partition and bucket. Each bucket's
:class:`MergeTreeWriter` numbers its rows, sorts and merges them into a level-0 file, then
compacts its LSM tree as the table's options ask. Memory stays bounded by the buffer: a flush
empties it, whatever the total size of the write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import binary_row
from ..bucket import DynamicBucketAssigner, load_deletion_vectors
from ..deletion_vector import DeletionVector, write_dv_index
from ..index_manifest import IndexFileMeta, IndexManifestEntry
from ..errors import DataValidationError, SchemaError
from ..fs import join
from ..manifest import DataFileMeta, FileNamer
from ..parallel import thread_map
from ..write import CommitMessage, group_indices, group_rows, to_arrow_table
from .compact import BucketFiles, CompactRewriter, concat_kv, diff_changelog, drop_retracts, merge_order, merge_sorted
from .kv import ROW_KIND_COLUMN, KeyValueLayout, parse_row_kinds
from ..arrow_compat import semi_join
from .compact_strategy import UniversalCompaction, force_level0_unit
from .levels import Levels
from .merge_engine import merge_function_for

if TYPE_CHECKING:
    from ..table import Table

_BUCKET = "__bucket__"
_KIND = "__kind__"
_HASH = "__hash__"
_POS = "__pos__"


def needs_lookup(core) -> bool:
    """Tables whose commits lift level 0 into the upper levels (lookup changelog, deletion vectors,
    first-row): Java's ``needLookup``."""
    return (core.get("changelog-producer") == "lookup" or core.get("deletion-vectors.enabled")
            or core.get("merge-engine") == "first-row")


def batch_scan_skips_level0(core) -> bool:
    """Batch reads that leave level 0 out, as Java's ``batchScanSkipLevel0``: deletion-vector and
    first-row tables, whose level-0 rows are not merged with the levels above until lifted.
    Lookup-changelog tables without vectors merge level 0 on read like any other table (a Java
    ``write-only`` writer leaves level 0 for a separate compaction job, and those rows count)."""
    return bool(core.get("deletion-vectors.enabled")) or core.get("merge-engine") == "first-row"


def _null_safe_equal(a, b):
    eq = pc.fill_null(pc.equal(a, b), False)
    return pc.or_(eq, pc.and_(pc.is_null(a), pc.is_null(b)))


def _retract_mask(kinds):
    return pc.or_(pc.equal(kinds, 1), pc.equal(kinds, 3))


class MergeTreeWriter:
    """Writes one partition and bucket of a primary-key table."""

    def __init__(self, store: "KeyValueFileStoreWrite", partition: bytes, bucket: int,
                 restored: list[DataFileMeta]):
        self.store = store
        t = store.table
        self.partition, self.bucket = partition, bucket
        self.layout = store.layout
        self.files = BucketFiles(t, self.layout, partition, bucket)
        self.data_namer = store.data_namer.for_bucket(partition, bucket)
        self.changelog_namer = store.changelog_namer.for_bucket(partition, bucket)
        self.index_namer = store.index_namer.for_bucket(partition, bucket)
        self.levels = Levels.of(restored, store.num_levels)
        self.next_sequence = max((f.max_sequence_number for f in restored), default=-1) + 1
        self.new_files: list[DataFileMeta] = []
        self.changelog_files: list[DataFileMeta] = []
        self.compact_before: list[DataFileMeta] = []
        self.compact_after: list[DataFileMeta] = []
        self.compact_changelog: list[DataFileMeta] = []
        self.dv_entry, dvs = store.deletion_vectors(partition, bucket)
        self.dvs = {name: dv.copy() for name, dv in dvs.items()}
        self.dv_changed = False
        self.rewriter = CompactRewriter(self.files, store.merge_fn, self._next_data_path,
                                        max_rows=store.buffer_limit // 64)

    def _next_data_path(self) -> str:
        return join(self.files.directory, self.data_namer.next())

    def _next_changelog_path(self) -> str:
        return join(self.files.directory, self.changelog_namer.next())

    # ------------------------------------------------------------------ flush
    def flush(self, rows: pa.Table, kinds: np.ndarray) -> None:
        self.write_level0(rows, kinds)
        self.compact_after_flush()

    def write_level0(self, rows: pa.Table, kinds: np.ndarray) -> None:
        """Sort, merge and write buffered rows as a level-0 file. Touches only this bucket's
        state, so different buckets' writers may run it on different threads."""
        layout, store = self.layout, self.store
        kv = layout.sort(layout.to_kv(rows, kinds, self.next_sequence))
        self.next_sequence += rows.num_rows
        if store.changelog_producer == "input":
            self.changelog_files += self._write_changelog(kv)
        merged = store.merge_fn.merge(kv, layout.key_columns)  # kv is in merge order already
        if merged.num_rows == 0:
            return
        for meta in layout.write_sorted(store.table.file_io, merged, store.core, 0, self._next_data_path):
            self.new_files.append(meta)
            self.levels.add(meta)

    def compact_after_flush(self) -> None:
        """The compaction a flush triggers (none for write-only tables and tables that compact
        at commit)."""
        if not self.store.write_only and not self.store.compact_at_commit:
            self.compact(full=False)

    def _write_changelog(self, kv: pa.Table) -> list[DataFileMeta]:
        if kv.num_rows == 0:
            return []
        s = self.store
        return self.layout.write_sorted(s.table.file_io, kv, s.core, 0, self._next_changelog_path)

    # ------------------------------------------------------------------ compaction
    def compact(self, full: bool) -> bool:
        """Run one compaction (universal pick, or everything into the top level). True if it did."""
        if full:
            files = self.levels.all_files()
            top = self.levels.max_level
            if not files or (len(files) == 1 and files[0].level == top and not files[0].delete_row_count):
                return False
            self._compact_unit(files, top)
            return True
        unit = self.store.strategy.pick(self.levels.num_levels, self.levels.sorted_runs())
        if unit is None:
            return False
        self._compact_unit(unit.files, unit.output_level)
        return True

    def compact_until_done(self, full: bool) -> None:
        """A full compaction, or universal compactions until the strategy picks nothing more."""
        if full:
            self.compact(full=True)
        else:
            while self.compact(full=False):
                pass

    def _compact_unit(self, files: list[DataFileMeta], output_level: int) -> None:
        store = self.store
        files = merge_order(files)
        drop_delete = output_level != 0 and output_level >= self.levels.non_empty_highest_level()
        before_top = None
        if store.changelog_producer == "full-compaction" and output_level == self.levels.max_level:
            top_files = self.levels.levels.get(self.levels.max_level, [])
            before_top = drop_retracts(self.files.read(top_files, self.dvs))
        level0 = [f for f in files if f.level == 0]
        if store.changelog_producer == "lookup" and level0:
            upper = [f for f in self.levels.all_files() if f.level > 0]
            self._lookup_changelog(self.files.read(level0, self.dvs), self.files.read(upper, self.dvs))
        if store.merge_fn.engine == "first-row" and level0:
            merged, written = self._first_row_lift(files, level0, output_level, drop_delete)
        else:
            merged, written = self.rewriter.rewrite(files, output_level, drop_delete, self.dvs,
                                                    need_merged=before_top is not None)
        if before_top is not None:
            self.compact_changelog += self._write_changelog(
                diff_changelog(self.layout, before_top, drop_retracts(merged), store.row_deduplicate))
        self._replace(files, written)

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
            existing = self.files.read(older, self.dvs).select(keys)
            new_kv = semi_join(new_kv, existing, keys, anti=True)
        unit_upper = self.files.read([f for f in files if f.level > 0], self.dvs)
        merged = merge_sorted(layout, self.store.merge_fn, concat_kv([unit_upper, new_kv], layout.arrow_schema))
        if drop_delete:
            merged = drop_retracts(merged)
        return merged, self.rewriter.write(merged, output_level)

    def _replace(self, before: list[DataFileMeta], after: list[DataFileMeta]) -> None:
        self.levels.update(before, after)
        self.compact_before += before
        self.compact_after += after
        for f in before:
            if self.dvs.pop(f.file_name, None) is not None:
                self.dv_changed = True

    def _lookup_compact(self) -> None:
        """Deletion-vector mode: compact level 0 into the upper levels, merging each key with its
        older version found there, which is then marked deleted instead of rewritten."""
        unit = force_level0_unit(self.levels)
        if unit is None:
            return
        layout = self.layout
        unit_names = {f.file_name for f in unit.files}
        level0_kv = self.files.read([f for f in unit.files if f.level == 0], self.dvs)
        unit_upper_kv = self.files.read([f for f in unit.files if f.level > 0], self.dvs)
        unit_kv = concat_kv([unit_upper_kv, level0_kv], layout.arrow_schema)
        keys = layout.key_columns
        affected = unit_kv.select(keys).group_by(keys, use_threads=False).aggregate([])
        old_parts = []
        for f in self.levels.all_files():
            if f.file_name in unit_names:
                continue
            kv = self.files.read_file(f)
            kv = kv.append_column(_POS, pa.array(np.arange(kv.num_rows), pa.int64()))
            dv = self.dvs.get(f.file_name)
            if dv is not None:
                kv = kv.filter(pa.array(dv.mask(kv.num_rows)))
            hit = semi_join(kv, affected, keys)
            if hit.num_rows:
                self.dvs.setdefault(f.file_name, DeletionVector()).delete(hit.column(_POS).to_numpy())
                self.dv_changed = True
                old_parts.append(hit.drop_columns([_POS]))
        old = concat_kv(old_parts, layout.arrow_schema)
        merged = drop_retracts(merge_sorted(layout, self.store.merge_fn, concat_kv([old, unit_kv], layout.arrow_schema)))
        if self.store.changelog_producer == "lookup":
            self._lookup_changelog(level0_kv, concat_kv([old, unit_upper_kv], layout.arrow_schema))
        self._replace(unit.files, self.rewriter.write(merged, unit.output_level))

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
            self.store.table.file_io.write_bytes(join(self.store.table.path, "index", name), data)
            self.dv_entry = IndexManifestEntry(0, self.partition, self.bucket,
                                               IndexFileMeta.for_deletion_vectors(name, len(data), metas))
            changes.append(self.dv_entry)
        return changes

    def _lookup_changelog(self, level0_kv: pa.Table, older_kv: pa.Table) -> None:
        """Lookup changelog producer: for every key in the level-0 rows being lifted, compare its
        merged value in the older levels with its value after the level-0 rows are applied."""
        if level0_kv.num_rows == 0:
            return
        layout, fn = self.layout, self.store.merge_fn
        keys = layout.key_columns
        affected = level0_kv.select(keys).group_by(keys, use_threads=False).aggregate([])
        if older_kv.num_rows:
            older_kv = semi_join(older_kv, affected, keys)
        before = drop_retracts(merge_sorted(layout, fn, older_kv))
        after = drop_retracts(merge_sorted(layout, fn, concat_kv([older_kv, level0_kv], layout.arrow_schema)))
        self.compact_changelog += self._write_changelog(
            diff_changelog(layout, before, after, self.store.row_deduplicate))

    # ------------------------------------------------------------------ commit
    def prepare_commit(self, full_compaction: bool) -> CommitMessage:
        store = self.store
        if not store.write_only:
            if store.dv_enabled:
                self._lookup_compact()
            if full_compaction:
                self.compact(full=True)
            elif store.compact_at_commit and not store.dv_enabled:
                unit = force_level0_unit(self.levels)
                if unit is not None:
                    self._compact_unit(unit.files, unit.output_level)
        msg = CommitMessage(self.partition, self.bucket, store.total_buckets, list(self.new_files))
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
        after_names = {f.file_name for f in self.compact_after}
        transient = {f.file_name for f in self.compact_before if f.file_name in after_names}
        if transient:
            self.store.table.file_io.delete_quietly(
                [self.files.path(f) for f in self.compact_after if f.file_name in transient])
        before = [f for f in self.compact_before if f.file_name not in transient]
        after = [f for f in self.compact_after if f.file_name not in transient]
        return before, after

    def written_paths(self) -> list[str]:
        return [self.files.path(f) for f in
                self.new_files + self.changelog_files + self.compact_after + self.compact_changelog]


class KeyValueFileStoreWrite:
    """Writes a primary-key table: buffering, bucketing, and one MergeTreeWriter per bucket."""

    def __init__(self, table: "Table", commit_user: str, ignore_previous_files: bool = False,
                 file_uuid: str | None = None):
        self.table = table
        self.ignore_previous_files = ignore_previous_files
        self.schema = table.schema
        self.core = core = self.schema.core
        self.commit_user = commit_user
        self.layout = KeyValueLayout(self.schema)
        self.merge_fn = merge_function_for(self.schema)
        self.total_buckets = core.bucket
        self.dynamic = self.total_buckets <= 0
        self.assigner = DynamicBucketAssigner(table) if self.dynamic else None
        self.cross_partition = self.dynamic and any(
            k not in self.schema.primary_keys for k in self.schema.partition_keys)
        self._key_locations: pa.Table | None = None
        self.bucket_key_types = [f.type for f in self.schema.fields_of(
            self.layout.key_names if self.dynamic else self.schema.bucket_keys)]
        self.changelog_producer = core.get("changelog-producer")
        self.row_deduplicate = core.get("changelog-producer.row-deduplicate")
        self.write_only = core.get("write-only")
        self.dv_enabled = core.get("deletion-vectors.enabled")
        # Java's "needLookup": level 0 is lifted at every commit and batch reads skip it.
        self.compact_at_commit = needs_lookup(core)
        trigger = core.get("num-sorted-run.compaction-trigger")
        self.num_levels = table.kv_layout_num_levels()
        self.strategy = UniversalCompaction(core.get("compaction.max-size-amplification-percent"),
                                            core.get("compaction.size-ratio"), trigger)
        self.ignore_delete = core.get("ignore-delete")
        self.data_namer = FileNamer(core.get("data-file.prefix"), "." + core.file_format)
        self.changelog_namer = FileNamer(core.get("changelog-file.prefix"), "." + core.file_format)
        self.buffer: list[tuple[pa.Table, np.ndarray]] = []
        self.buffered_bytes = 0
        self.buffer_limit = core.get("write-buffer-size")
        self.writers: dict[tuple[bytes, int], MergeTreeWriter] = {}
        self._restored: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
        self._dvs: dict | None = None
        self.index_namer = FileNamer("index-")
        if file_uuid:
            for namer in (self.data_namer, self.changelog_namer, self.index_namer):
                namer.uuid = file_uuid

    # ------------------------------------------------------------------ input
    def write(self, data: Any, row_kinds=None) -> None:
        table = data
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        kinds_col = None
        if isinstance(table, pa.Table) and ROW_KIND_COLUMN in table.column_names:
            kinds_col = table.column(ROW_KIND_COLUMN)
            table = table.drop_columns([ROW_KIND_COLUMN])
        elif not isinstance(table, pa.Table):
            try:
                import pandas as pd
                if isinstance(table, pd.DataFrame) and ROW_KIND_COLUMN in table.columns:
                    kinds_col = pa.array(table[ROW_KIND_COLUMN].tolist())
                    table = table.drop(columns=[ROW_KIND_COLUMN])
            except ImportError:  # pragma: no cover
                pass
        if kinds_col is not None and row_kinds is not None:
            raise DataValidationError(f"Give row kinds either as row_kinds or as a '{ROW_KIND_COLUMN}' column")
        rows = self.merge_fn.prepare_input(to_arrow_table(table, self.schema))
        kind_field = self.core.get("rowkind.field")
        if kind_field and row_kinds is None and kinds_col is None:
            kinds_col = rows.column(kind_field)  # Java's RowKindGenerator
        kinds = parse_row_kinds(row_kinds if row_kinds is not None else kinds_col, rows.num_rows)
        if self.ignore_delete:
            keep = (kinds != 1) & (kinds != 3)
            if not keep.all():
                rows, kinds = rows.filter(pa.array(keep)), kinds[keep]
        if rows.num_rows == 0:
            return
        self.buffer.append((rows, kinds))
        self.buffered_bytes += rows.nbytes
        if self.buffered_bytes >= self.buffer_limit:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        rows = pa.concat_tables([r for r, _ in self.buffer]) if len(self.buffer) > 1 else self.buffer[0][0]
        kinds = np.concatenate([k for _, k in self.buffer])
        self.buffer, self.buffered_bytes = [], 0
        if self.cross_partition:
            rows, kinds = self._route_cross_partition(rows, kinds)
        rows = rows.append_column(_KIND, pa.array(kinds, pa.int8()))
        key_names = self.layout.key_names if self.dynamic else self.schema.bucket_keys
        hashes = binary_row.hash_codes([rows.column(k) for k in key_names], self.bucket_key_types)
        codec = self.table.partition_codec
        jobs: list[tuple[MergeTreeWriter, pa.Table, pa.Array]] = []   # (writer, rows, its row indices)
        if self.dynamic:
            rows = rows.append_column(_HASH, pa.array(hashes, pa.int32()))
            for partition, part in group_rows(rows, list(self.schema.partition_keys)):
                pbytes = codec.to_bytes(partition)
                buckets = self.assigner.index_for(pbytes).assign(part.column(_HASH).to_numpy())
                part = part.drop_columns([_HASH]).append_column(_BUCKET, pa.array(buckets, pa.int32()))
                jobs += [(self.writer(pbytes, bucket), part, idx) for (bucket,), idx in group_indices(part, [_BUCKET])]
        else:
            rows = rows.append_column(_BUCKET, pa.array(binary_row.bucket_of(hashes, self.total_buckets), pa.int32()))
            jobs = [(self.writer(codec.to_bytes(key[:-1]), key[-1]), rows, idx)
                    for key, idx in group_indices(rows, list(self.schema.partition_keys) + [_BUCKET])]
        # Buckets are independent (each writer has its own levels, files and deletion vectors;
        # writers are created above, on this thread): they flush and compact in parallel.
        thread_map(self._write_bucket, jobs, desc=f"flushing {rows.num_rows} rows", unit="bucket")
        thread_map(MergeTreeWriter.compact_after_flush, [w for w, _, _ in jobs])

    @staticmethod
    def _write_bucket(job: tuple[MergeTreeWriter, pa.Table, pa.Array]) -> None:
        writer, rows, indices = job
        part = rows.take(indices)
        writer.write_level0(part.drop_columns([_KIND, _BUCKET]), part.column(_KIND).to_numpy())

    # ------------------------------------------------------------------ cross-partition update
    def _locations(self) -> pa.Table:
        """Where each existing key lives: primary key and partition columns of the latest snapshot."""
        if self._key_locations is None:
            cols = list(self.schema.primary_keys) + [k for k in self.schema.partition_keys
                                                     if k not in self.schema.primary_keys]
            self._key_locations = self.table.to_arrow(columns=cols)
        return self._key_locations

    def _route_cross_partition(self, rows: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray]:
        """Seed 003's cross-partition update: deduplicate moves a key (a -D in its old partition),
        aggregation and partial-update update it in its old partition, first-row keeps the first."""
        pk = list(self.schema.primary_keys)
        parts = [k for k in self.schema.partition_keys if k not in pk]
        engine = self.core.get("merge-engine")
        n = rows.num_rows
        rows = rows.append_column(_POS, pa.array(np.arange(n), pa.int64()))
        rows = rows.append_column(_KIND, pa.array(kinds, pa.int8()))
        # Within this batch a key settles in one partition: its last row's (deduplicate) or first row's.
        agg = "max" if engine == "deduplicate" else "min"
        pick = rows.group_by(pk, use_threads=False).aggregate([(_POS, agg)]).column(f"{_POS}_{agg}")
        settled = rows.take(pick).select(pk + parts)
        settled = settled.rename_columns(pk + [f"__to_{p}" for p in parts])
        old = self._locations().rename_columns(pk + [f"__from_{p}" for p in parts])
        # Only keys and positions go through Arrow's join (it carries no nested columns); every row
        # meets exactly one settled and at most one old location, so sorted by position they line up.
        located = (rows.select(pk + [_POS]).join(settled, keys=pk).join(old, keys=pk, join_type="left outer")
                   .sort_by(_POS))
        joined = rows
        for name in located.column_names[len(pk) + 1:]:
            joined = joined.append_column(name, located.column(name))
        exists = pc.is_valid(joined.column(f"__from_{parts[0]}"))
        if engine in ("aggregation", "partial-update"):
            # Update in place: the key's old partition wins over the row's.
            for p in parts:
                target = pc.if_else(exists, joined.column(f"__from_{p}"), joined.column(f"__to_{p}"))
                joined = joined.set_column(joined.schema.get_field_index(p), p,
                                           target.cast(rows.schema.field(p).type))
            kept = joined
        else:
            keep = None
            for p in parts:
                same = _null_safe_equal(joined.column(p), joined.column(f"__to_{p}"))
                keep = same if keep is None else pc.and_(keep, same)
            if engine == "first-row":
                keep = pc.and_(keep, pc.invert(exists))
            kept = joined.filter(keep)
        out = [kept]
        if engine == "deduplicate":
            moved = None
            for p in parts:
                differs = pc.invert(_null_safe_equal(joined.column(f"__from_{p}"), joined.column(f"__to_{p}")))
                moved = differs if moved is None else pc.or_(moved, differs)
            moved = pc.and_(pc.fill_null(exists, False), moved)
            gone = joined.filter(moved).group_by(pk, use_threads=False).aggregate([(_POS, "min")])
            deletes = joined.take(pc.index_in(gone.column(f"{_POS}_min"), joined.column(_POS)))
            for p in parts:
                deletes = deletes.set_column(deletes.schema.get_field_index(p), p,
                                             deletes.column(f"__from_{p}").cast(rows.schema.field(p).type))
            deletes = deletes.set_column(deletes.schema.get_field_index(_KIND), _KIND,
                                         pa.array(np.full(deletes.num_rows, 3, np.int8), pa.int8()))
            out.insert(0, deletes)
        result = pa.concat_tables([t.select(rows.column_names).cast(rows.schema) for t in out])
        self._remember_locations(result.filter(pc.invert(_retract_mask(result.column(_KIND)))), pk, parts)
        new_kinds = result.column(_KIND).to_numpy()
        return result.drop_columns([_POS, _KIND]), new_kinds

    def _remember_locations(self, rows: pa.Table, pk: list[str], parts: list[str]) -> None:
        latest = rows.select(pk + parts)
        old = self._locations()
        kept = semi_join(old, latest, pk, anti=True)
        self._key_locations = pa.concat_tables([kept.select(pk + parts).cast(old.schema), latest.cast(old.schema)])

    def writer(self, partition: bytes, bucket: int) -> MergeTreeWriter:
        key = (partition, bucket)
        w = self.writers.get(key)
        if w is None:
            w = self.writers[key] = MergeTreeWriter(self, partition, bucket, self.restored().get(key, []))
        return w

    def deletion_vectors(self, partition: bytes, bucket: int) -> tuple:
        """(index entry, {file: DeletionVector}) of a bucket in the latest snapshot."""
        if not self.dv_enabled:
            return None, {}
        if self._dvs is None:
            self._dvs = load_deletion_vectors(self.table)
        return self._dvs.get((partition, bucket), (None, {}))

    def restored(self) -> dict[tuple[bytes, int], list[DataFileMeta]]:
        if self._restored is None:
            latest = None if self.ignore_previous_files else self.table.snapshot_manager.latest()
            self._restored = {}
            for key, entries in self.table.store_scan().files_by_bucket(latest).items():
                stale = [e for e in entries if e.total_buckets != self.total_buckets and not self.dynamic]
                if stale:
                    raise SchemaError(
                        f"Partition {self.table.partition_codec.to_dict(key[0])} was written with "
                        f"{stale[0].total_buckets} buckets but the table now has {self.total_buckets}; "
                        "rescale it with an overwrite of that partition first")
                self._restored[key] = [e.file for e in entries]
        return self._restored

    # ------------------------------------------------------------------ commit
    def _full_compaction_due(self) -> bool:
        n = self.core.get("full-compaction.delta-commits")
        if not n:
            return False
        sm = self.table.snapshot_manager
        sid = sm.latest_id()
        appends = 0
        while sid is not None and appends < n - 1:
            try:
                snap = sm.snapshot(sid)
            except Exception:
                break
            if snap.commit_kind == "COMPACT":
                break
            if snap.commit_kind == "APPEND":
                appends += 1
            sid -= 1
        return appends >= n - 1

    def compact(self, full: bool, partition_filter=None) -> None:
        """Compact every bucket (or those of matching partitions) now."""
        self.flush()
        writers = []
        for (part, bucket) in self.restored():
            if partition_filter is not None:
                values = self.table.partition_codec.to_dict(part)
                if not partition_filter.may_match({k: (v, v, int(v is None)) for k, v in values.items()}, 1):
                    continue
            writers.append(self.writer(part, bucket))
        thread_map(lambda w: w.compact_until_done(full), writers, desc="compacting buckets", unit="bucket")

    def prepare_commit(self) -> list[CommitMessage]:
        self.flush()
        full = self._full_compaction_due()
        index_changes = self.assigner.index_changes() if self.assigner is not None else {}
        out = []
        keys = list(self.writers)
        messages = thread_map(lambda key: self.writers[key].prepare_commit(full), keys)  # compactions, in parallel
        for key, msg in zip(keys, messages):
            msg.index_changes = index_changes.pop(key, [])
            if msg.all_written() or msg.compact_before or msg.index_changes:
                out.append(msg)
        for (part, bucket), changes in index_changes.items():
            out.append(CommitMessage(part, bucket, self.total_buckets, index_changes=changes))
        return out

    def abort(self) -> None:
        self.buffer = []
        paths = [p for w in self.writers.values() for p in w.written_paths()]
        if self.assigner is not None:
            paths += self.assigner.written_paths()
        paths += [join(self.table.path, "index", w.dv_entry.index_file.file_name) for w in self.writers.values()
                  if w.dv_entry is not None and w.dv_entry.index_file.file_name.startswith(
                      w.index_namer.prefix + w.index_namer.uuid)]
        self.table.file_io.delete_quietly(paths)
        self.writers = {}

