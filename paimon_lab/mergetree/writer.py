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

from .. import binary_row
from ..errors import DataValidationError
from ..fs import join
from ..manifest import DataFileMeta, FileNamer
from ..write import CommitMessage, group_rows, to_arrow_table
from .compact import BucketFiles, CompactRewriter, concat_kv, diff_changelog, drop_retracts, merge_sorted
from .kv import ROW_KIND_COLUMN, KeyValueLayout, parse_row_kinds
from .levels import Levels, UniversalCompaction, force_level0_unit
from .merge_function import merge_function_for

if TYPE_CHECKING:
    from ..table import Table

_BUCKET = "__bucket__"
_KIND = "__kind__"


class MergeTreeWriter:
    """Writes one partition and bucket of a primary-key table."""

    def __init__(self, store: "KeyValueFileStoreWrite", partition: bytes, bucket: int,
                 restored: list[DataFileMeta]):
        self.store = store
        t = store.table
        self.partition, self.bucket = partition, bucket
        self.layout = store.layout
        self.files = BucketFiles(t, self.layout, partition, bucket)
        self.levels = Levels.of(restored, store.num_levels)
        self.next_sequence = max((f.max_sequence_number for f in restored), default=-1) + 1
        self.new_files: list[DataFileMeta] = []
        self.changelog_files: list[DataFileMeta] = []
        self.compact_before: list[DataFileMeta] = []
        self.compact_after: list[DataFileMeta] = []
        self.compact_changelog: list[DataFileMeta] = []
        self.rewriter = CompactRewriter(self.files, store.merge_fn, self._next_data_path)

    def _next_data_path(self) -> str:
        return join(self.files.directory, self.store.data_namer.next())

    def _next_changelog_path(self) -> str:
        return join(self.files.directory, self.store.changelog_namer.next())

    # ------------------------------------------------------------------ flush
    def flush(self, rows: pa.Table, kinds: np.ndarray) -> None:
        layout, store = self.layout, self.store
        kv = layout.sort(layout.to_kv(rows, kinds, self.next_sequence))
        self.next_sequence += rows.num_rows
        if store.changelog_producer == "input":
            self.changelog_files += self._write_changelog(kv)
        merged = merge_sorted(layout, store.merge_fn, kv)
        if merged.num_rows == 0:
            return
        for _, meta in layout.write_sorted(store.table.file_io, merged, store.core, 0, self._next_data_path):
            self.new_files.append(meta)
            self.levels.add(meta)
        if not store.write_only and not store.compact_at_commit:
            self.compact(full=False)

    def _write_changelog(self, kv: pa.Table) -> list[DataFileMeta]:
        if kv.num_rows == 0:
            return []
        s = self.store
        return [m for _, m in self.layout.write_sorted(s.table.file_io, kv, s.core, 0, self._next_changelog_path)]

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

    def _compact_unit(self, files: list[DataFileMeta], output_level: int) -> None:
        store = self.store
        drop_delete = output_level != 0 and output_level >= self.levels.non_empty_highest_level()
        before_top = None
        if store.changelog_producer == "full-compaction" and output_level == self.levels.max_level:
            top_files = self.levels.levels.get(self.levels.max_level, [])
            before_top = drop_retracts(self.files.read(top_files))
        merged, written = self.rewriter.rewrite(files, output_level, drop_delete)
        if before_top is not None:
            self.compact_changelog += self._write_changelog(
                diff_changelog(self.layout, before_top, drop_retracts(merged), store.row_deduplicate))
        self.levels.update(files, written)
        self.compact_before += files
        self.compact_after += written

    def _lookup_changelog(self) -> None:
        """Changelog of this commit's new level-0 rows against the merged older state (lookup producer)."""
        new_names = {f.file_name for f in self.new_files}
        new = [f for f in self.levels.level0 if f.file_name in new_names]
        if not new:
            return
        old = [f for f in self.levels.all_files() if f.file_name not in new_names]
        new_kv = self.files.read(new)
        old_kv = self.files.read(old) if old else self.layout.arrow_schema.empty_table()
        keys = self.layout.key_columns
        if old_kv.num_rows:
            affected = new_kv.select(keys).group_by(keys).aggregate([])
            old_kv = old_kv.join(affected, keys=keys, join_type="left semi")
        before = drop_retracts(merge_sorted(self.layout, self.store.merge_fn, old_kv))
        after = drop_retracts(merge_sorted(self.layout, self.store.merge_fn, concat_kv([old_kv, new_kv], self.layout.arrow_schema)))
        self.compact_changelog += self._write_changelog(
            diff_changelog(self.layout, before, after, self.store.row_deduplicate))

    # ------------------------------------------------------------------ commit
    def prepare_commit(self, full_compaction: bool) -> CommitMessage:
        store = self.store
        if not store.write_only:
            if store.changelog_producer == "lookup":
                self._lookup_changelog()
            if full_compaction:
                self.compact(full=True)
            elif store.compact_at_commit:
                unit = force_level0_unit(self.levels)
                if unit is not None:
                    self._compact_unit(unit.files, unit.output_level)
        msg = CommitMessage(self.partition, self.bucket, store.total_buckets, list(self.new_files))
        msg.changelog_files = list(self.changelog_files)
        before, after = self._net_compaction()
        msg.compact_before, msg.compact_after = before, after
        msg.compact_changelog = list(self.compact_changelog)
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

    def __init__(self, table: "Table", commit_user: str):
        self.table = table
        self.schema = table.schema
        self.core = core = self.schema.core
        self.commit_user = commit_user
        self.layout = KeyValueLayout(self.schema)
        self.merge_fn = merge_function_for(self.schema)
        self.total_buckets = core.bucket
        if self.total_buckets <= 0:
            from ..errors import PaimonLabError
            raise PaimonLabError("Dynamic-bucket primary-key tables ('bucket' = '-1') are not supported yet; "
                                 "set a fixed 'bucket'")
        self.bucket_key_types = [f.type for f in self.schema.fields_of(self.schema.bucket_keys)]
        self.changelog_producer = core.get("changelog-producer")
        self.row_deduplicate = core.get("changelog-producer.row-deduplicate")
        self.write_only = core.get("write-only")
        self.dv_enabled = core.get("deletion-vectors.enabled")
        self.compact_at_commit = self.changelog_producer == "lookup" or self.dv_enabled
        trigger = core.get("num-sorted-run.compaction-trigger")
        self.num_levels = core.get("num-levels") or trigger + 1
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
        rows = to_arrow_table(table, self.schema)
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
        rows = rows.append_column(_KIND, pa.array(kinds, pa.int8()))
        hashes = binary_row.hash_codes([rows.column(k) for k in self.schema.bucket_keys], self.bucket_key_types)
        rows = rows.append_column(_BUCKET, pa.array(binary_row.bucket_of(hashes, self.total_buckets), pa.int32()))
        for key, part in group_rows(rows, list(self.schema.partition_keys) + [_BUCKET]):
            partition, bucket = key[:-1], key[-1]
            kinds_part = part.column(_KIND).to_numpy()
            self.writer(self.table.partition_codec.to_bytes(partition), bucket).flush(
                part.drop_columns([_KIND, _BUCKET]), kinds_part)

    def writer(self, partition: bytes, bucket: int) -> MergeTreeWriter:
        key = (partition, bucket)
        w = self.writers.get(key)
        if w is None:
            w = self.writers[key] = MergeTreeWriter(self, partition, bucket, self.restored().get(key, []))
        return w

    def restored(self) -> dict[tuple[bytes, int], list[DataFileMeta]]:
        if self._restored is None:
            self._restored = {}
            latest = self.table.snapshot_manager.latest()
            if latest is not None:
                for e in self.table.store_scan().live_entries(latest):
                    self._restored.setdefault((e.partition, e.bucket), []).append(e.file)
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
        for (part, bucket) in list(self.restored()):
            if partition_filter is not None:
                values = self.table.partition_codec.to_dict(part)
                if not partition_filter.may_match({k: (v, v, int(v is None)) for k, v in values.items()}, 1):
                    continue
            w = self.writer(part, bucket)
            if full:
                w.compact(full=True)
            else:
                while w.compact(full=False):
                    pass

    def prepare_commit(self) -> list[CommitMessage]:
        self.flush()
        full = self._full_compaction_due()
        out = []
        for w in self.writers.values():
            msg = w.prepare_commit(full)
            if msg.all_written() or msg.compact_before:
                out.append(msg)
        return out

    def abort(self) -> None:
        self.buffer = []
        paths = [p for w in self.writers.values() for p in w.written_paths()]
        self.table.file_io.delete_quietly(paths)
        self.writers = {}

