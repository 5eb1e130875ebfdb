"""The primary-key table write: buffer user rows with their row kinds, split them by partition and
bucket on flush, and hand each bucket to its :class:`~paimon_lab.mergetree.writer.MergeTreeWriter`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core import binary_row
from paimon_lab.core.bucket_function import bucket_ids
from paimon_lab.operation.dynamic_bucket import DynamicBucketAssigner
from paimon_lab.operation.key_index import KeyIndex
from paimon_lab.store.file_store import load_deletion_vectors
from paimon_lab.errors import DataValidationError, SchemaError
from paimon_lab.io.file_io import join
from paimon_lab.core.manifest import DataFileMeta, FileNamer
from paimon_lab.utils.parallel import thread_map
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.operation.write_input import group_indices, group_rows, to_arrow_table
from paimon_lab.core.key_value import ROW_KIND_COLUMN, VALUE_KIND, KeyValueLayout, parse_row_kinds
from paimon_lab.mergetree.record_expire import RecordExpire
from paimon_lab.mergetree.compact_rewriter import BucketFiles
from paimon_lab.utils.arrow import semi_join, take_ascending
from paimon_lab.mergetree.compact_strategy import UniversalCompaction
from paimon_lab.mergetree.merge_engine import merge_function_for
from paimon_lab.mergetree.lookup_files import LookupFiles
from paimon_lab.mergetree.spill import SpillDirectory, spill_write_options

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore

from paimon_lab.store.file_store import needs_lookup
from paimon_lab.mergetree.writer import MergeTreeWriter, _null_safe_equal, _retract_mask
from paimon_lab.operation.scan import FileStoreScan, plan_splits
from paimon_lab.operation.split_read import TableRead
from paimon_lab.core.snapshot import Snapshot

_BUCKET = "__bucket__"
_KIND = "__kind__"
_HASH = "__hash__"
_POS = "__pos__"
_KNOWN = "__known_bucket__"
_FROM_BUCKET = "__from_bucket__"



class KeyValueFileStoreWrite:
    """Writes a primary-key table: buffering, bucketing, and one MergeTreeWriter per bucket."""

    def __init__(self, store: "FileStore", commit_user: str, ignore_previous_files: bool = False,
                 file_uuid: str | None = None, total_buckets: int | None = None):
        self.store = store
        self.ignore_previous_files = ignore_previous_files
        self.schema = store.schema
        self.core = core = self.schema.core
        self.commit_user = commit_user
        self.layout = KeyValueLayout(self.schema)
        self.merge_fn = merge_function_for(self.schema)
        # ``total_buckets``: a postpone-bucket table's (-2), or the real bucket count of one of its partitions
        self.total_buckets = core.bucket if total_buckets is None else total_buckets
        self.dynamic = self.total_buckets == -1
        self._base: tuple[Snapshot | None] | None = None
        self.assigner = DynamicBucketAssigner(store, self.base_snapshot) if self.dynamic else None
        self.cross_partition = self.dynamic and any(
            k not in self.schema.primary_keys for k in self.schema.partition_keys)
        self._key_locations: KeyIndex | None = None
        self.bucket_key_types = [f.type for f in self.schema.fields_of(
            self.layout.key_names if self.dynamic else self.schema.bucket_keys)]
        self.changelog_producer = core.get("changelog-producer")
        self.row_deduplicate = core.get("changelog-producer.row-deduplicate")
        self.write_only = core.get("write-only")
        self.dv_enabled = core.get("deletion-vectors.enabled")
        # Java's "needLookup": level 0 is lifted at every commit and batch reads skip it.
        self.compact_at_commit = needs_lookup(core)
        # the local sorted copies of data files that level-0 lifts look keys up in
        self.lookup_files = LookupFiles(store, self.layout) if self.compact_at_commit else None
        self.record_expire = RecordExpire.of(core, self.layout.value_fields)
        # 'commit.force-compact': the commit waits for the compaction, as if 'lookup-wait' were true
        self.lookup_wait = core.get("lookup-wait" if "lookup-wait" in core.raw else "changelog-producer.lookup-wait") \
            or core.get("commit.force-compact")
        trigger = core.get("num-sorted-run.compaction-trigger")
        self.num_levels = store.num_levels
        self.strategy = UniversalCompaction(core.get("compaction.max-size-amplification-percent"),
                                            core.get("compaction.size-ratio"), trigger)
        # Java's writer drops -U/-D rows under 'ignore-delete' or its engine-named fallback keys
        self.ignore_delete = self.merge_fn.ignore_delete
        self.data_namer = FileNamer(core.get("data-file.prefix"), "." + core.file_format)
        self.changelog_namer = FileNamer(core.get("changelog-file.prefix"), "." + core.file_format)
        self.buffer: list[tuple[pa.Table, np.ndarray]] = []
        self.buffered_bytes = 0
        self.buffer_limit = core.get("write-buffer-size")
        # Java's 'write-buffer-spillable': a full buffer becomes sorted runs on local disk, merged
        # into one level-0 run per bucket at the flush (commit), instead of level-0 files now.
        self.spillable = core.get("write-buffer-spillable")
        self.spill_max_disk = core.get("write-buffer-spill.max-disk-size")
        self.spill_directory = SpillDirectory(spill_write_options(
            core.get("spill-compression"), core.get("spill-compression.zstd-level")),
            copies=dict(zip(self.layout.key_columns, self.layout.key_names)))   # key columns copy values
        self.writers: dict[tuple[bytes, int], MergeTreeWriter] = {}
        self._restored: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
        self._dvs: dict | None = None
        self.index_namer = FileNamer("index-")
        if file_uuid:
            for namer in (self.data_namer, self.changelog_namer, self.index_namer):
                namer.uuid = file_uuid

    # ------------------------------------------------------------------ input
    def write(self, data: Any, row_kinds=None) -> None:
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        kinds_col = None
        if isinstance(data, pa.Table) and ROW_KIND_COLUMN in data.column_names:
            kinds_col = data.column(ROW_KIND_COLUMN)
            data = data.drop_columns([ROW_KIND_COLUMN])
        elif not isinstance(data, pa.Table):
            try:
                import pandas as pd
                if isinstance(data, pd.DataFrame) and ROW_KIND_COLUMN in data.columns:
                    kinds_col = pa.array(data[ROW_KIND_COLUMN].tolist())
                    data = data.drop(columns=[ROW_KIND_COLUMN])
            except ImportError:  # pragma: no cover
                pass
        if kinds_col is not None and row_kinds is not None:
            raise DataValidationError(f"Give row kinds either as row_kinds or as a '{ROW_KIND_COLUMN}' column")
        rows = self.merge_fn.prepare_input(to_arrow_table(data, self.schema))
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
            self._buffer_full()

    def _buffer_full(self) -> None:
        """Spill the buffer as sorted runs, or (not spillable, or the spills past
        'write-buffer-spill.max-disk-size') flush everything as level-0 files."""
        if not self.spillable:
            self.flush()
            return
        jobs = self._route()
        thread_map(lambda job: job[0].spill(*self._bucket_rows(job)), jobs,
                   desc=f"spilling {sum(len(idx) for _, _, idx in jobs)} rows", unit="bucket")
        if self.spill_max_disk is not None and self.spill_directory.spilled_bytes > self.spill_max_disk:
            self.flush()

    def _take_buffer(self) -> tuple[pa.Table, np.ndarray]:
        """The buffered rows and their row kinds as one table, emptying the buffer."""
        rows = pa.concat_tables([r for r, _ in self.buffer]) if len(self.buffer) > 1 else self.buffer[0][0]
        kinds = np.concatenate([k for _, k in self.buffer])
        self.buffer, self.buffered_bytes = [], 0
        return rows, kinds

    def flush(self) -> None:
        jobs = self._route() if self.buffer else []
        routed = {id(w) for w, _, _ in jobs}
        spilled = [w for w in self.writers.values() if w.spilled and id(w) not in routed]
        if not jobs and not spilled:
            return
        jobs += [(w, None, None) for w in spilled]
        rows = sum(len(idx) for _, _, idx in jobs if idx is not None)
        # Buckets are independent (each writer has its own levels, files and deletion vectors;
        # writers are created in _route, on this thread): they flush and compact in parallel.
        thread_map(self._write_bucket, jobs, desc=f"flushing {rows} rows", unit="bucket")
        self.spill_directory.clear()
        thread_map(MergeTreeWriter.compact_after_flush, [w for w, _, _ in jobs])

    def _route(self) -> list[tuple[MergeTreeWriter, pa.Table, pa.Array]]:
        """Empty the buffer into (writer, rows, the row indices of its bucket) jobs."""
        rows, kinds = self._take_buffer()
        known = None
        if self.cross_partition:
            rows, kinds, known = self._route_cross_partition(rows, kinds)
        rows = rows.append_column(_KIND, pa.array(kinds, pa.int8()))
        key_names = self.layout.key_names if self.dynamic else self.schema.bucket_keys
        function = self.schema.core.get("bucket-function.type")
        hashes = binary_row.hash_codes([rows.column(k) for k in key_names], self.bucket_key_types) \
            if self.dynamic or function == "default" else None
        codec = self.store.partition_codec
        jobs: list[tuple[MergeTreeWriter, pa.Table, pa.Array]] = []   # (writer, rows, its row indices)
        if self.dynamic:
            rows = rows.append_column(_HASH, pa.array(hashes, pa.int32()))
            if known is not None:
                rows = rows.append_column(_KNOWN, pa.array(known, pa.int32()))
                self._seed_assigner()
            assigned = []
            for partition, part in group_rows(rows, list(self.schema.partition_keys)):
                pbytes = codec.to_bytes(partition)
                index = self.assigner.index_for(pbytes)
                if known is None:
                    buckets = index.assign(part.column(_HASH).to_numpy())
                else:
                    # a key already in this partition stays in the bucket its rows are in
                    buckets = part.column(_KNOWN).to_numpy().copy()
                    new = buckets < 0
                    if new.any():
                        buckets[new] = index.assign(part.column(_HASH).to_numpy()[new])
                    part = part.drop_columns([_KNOWN])
                part = part.drop_columns([_HASH]).append_column(_BUCKET, pa.array(buckets, pa.int32()))
                assigned.append(part)
                jobs += [(self.writer(pbytes, bucket), part, idx) for (bucket,), idx in group_indices(part, [_BUCKET])]
            if known is not None and assigned:
                located = pa.concat_tables(assigned)
                self._remember_locations(located.filter(pc.invert(_retract_mask(located.column(_KIND)))))
        else:
            buckets = bucket_ids([rows.column(k) for k in key_names], self.bucket_key_types, self.total_buckets,
                                 function)
            rows = rows.append_column(_BUCKET, pa.array(buckets, pa.int32()))
            jobs = [(self.writer(codec.to_bytes(key[:-1]), key[-1]), rows, idx)
                    for key, idx in group_indices(rows, list(self.schema.partition_keys) + [_BUCKET])]
        return jobs

    @staticmethod
    def _bucket_rows(job: tuple[MergeTreeWriter, pa.Table, pa.Array]) -> tuple[pa.Table, np.ndarray]:
        _, rows, indices = job
        part = take_ascending(rows, indices)   # a full buffer is many chunks
        return part.drop_columns([_KIND, _BUCKET]), part.column(_KIND).to_numpy()

    @classmethod
    def _write_bucket(cls, job: tuple[MergeTreeWriter, pa.Table | None, pa.Array | None]) -> None:
        writer, rows, _ = job
        writer.write_level0(*(cls._bucket_rows(job) if rows is not None else (None, None)))

    # ------------------------------------------------------------------ cross-partition update
    def _key_index(self) -> KeyIndex:
        """Where existing keys live (the local key index as of the base snapshot, plus this
        write's own flushes)."""
        if self._key_locations is None:
            self._key_locations = KeyIndex(self.store, self.layout, self._bootstrap_locations).load(
                self.base_snapshot())
        return self._key_locations

    def _bootstrap_locations(self, base: Snapshot) -> pa.Table:
        """Where each existing key lives: its primary key, partition columns and bucket (the
        bucket of the split its row was read from, as Java's IndexBootstrap: Java writes no HASH
        index for these tables) in snapshot ``base``, read from the data."""
        pk = list(self.schema.primary_keys)
        cols = pk + [k for k in self.schema.partition_keys if k not in pk]
        reader = TableRead(self.store, cols)
        splits = plan_splits(self.store, base, None)
        parts = thread_map(lambda s: reader.read([s]), splits)
        parts = [p.append_column(_FROM_BUCKET, pa.array(np.full(p.num_rows, s.bucket, np.int32)))
                 for s, p in zip(splits, parts)]
        empty = reader.output_schema.empty_table().append_column(_FROM_BUCKET, pa.array([], pa.int32()))
        located = pa.concat_tables([empty] + parts)
        if self.store.batch_scan_skips_level0:
            # The batch read above leaves level 0 out, where the last commit's rows may still
            # be ('lookup-wait' = false): their keys live there, wherever else they were.
            level0 = self._level0_locations(splits, cols, empty.schema)
            if level0.num_rows:
                located = pa.concat_tables([semi_join(located, level0, pk, anti=True), level0])
        return located

    def _level0_locations(self, splits, cols: list[str], schema: pa.Schema) -> pa.Table:
        """Keys whose newest level-0 row (per bucket) is not a retraction, with their bucket; one
        location per key."""
        layout = self.layout
        out = [schema.empty_table()]
        for s in splits:
            files = [f for f in s.files if f.level == 0]
            if not files:
                continue
            kv = layout.sort(BucketFiles(self.store, layout, s.partition, s.bucket).read(files))
            if not kv.num_rows:
                continue
            pos = kv.select(layout.key_columns).append_column(_POS, pa.array(np.arange(kv.num_rows)))
            newest = kv.take(pos.group_by(layout.key_columns, use_threads=False)
                             .aggregate([(_POS, "max")]).column(f"{_POS}_max"))
            newest = newest.filter(pc.invert(_retract_mask(newest.column(VALUE_KIND))))
            rows = layout.values(newest).select(cols)
            out.append(rows.append_column(_FROM_BUCKET, pa.array(np.full(rows.num_rows, s.bucket, np.int32)))
                       .cast(schema))
        level0 = pa.concat_tables(out)
        if level0.num_rows > 1:
            pos = level0.select(list(self.schema.primary_keys)).append_column(_POS, pa.array(np.arange(level0.num_rows)))
            level0 = level0.take(pos.group_by(list(self.schema.primary_keys), use_threads=False)
                                 .aggregate([(_POS, "max")]).column(f"{_POS}_max"))
        return level0

    def _seed_assigner(self) -> None:
        """Give every partition's bucket assigner the keys the table's data holds (their hashes and
        buckets), so new keys fill the buckets by their true counts."""
        if self.assigner.base_counts is not None:
            return
        counts: dict[bytes, dict[int, int]] = {}
        table = self._key_index().counts()
        if table.num_rows:
            for partition, part in group_rows(table, list(self.schema.partition_keys)):
                counts[self.store.partition_codec.to_bytes(partition)] = dict(
                    zip(part.column(_FROM_BUCKET).to_pylist(), part.column("n").to_pylist()))
        self.assigner.base_counts = counts

    def _route_cross_partition(self, rows: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """Seed 003's cross-partition update: deduplicate moves a key (a -D in its old partition),
        aggregation and partial-update update it in its old partition, first-row keeps the first.
        Also returns each row's bucket where its key already lives in the row's partition (-1:
        a new key there)."""
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
        old = self._key_index().locate(rows.select(pk))
        old = old.rename_columns(pk + [f"__from_{p}" for p in parts] + [_FROM_BUCKET])
        # Only keys and positions go through Arrow's join (it carries no nested columns); every row
        # meets exactly one settled and at most one old location, so sorted by position they line up.
        located = (rows.select(pk + [_POS]).join(settled, keys=pk).join(old, keys=pk, join_type="left outer")
                   .sort_by(_POS))
        joined = rows
        for name in located.column_names[len(pk) + 1:]:
            joined = joined.append_column(name, located.column(name))
        exists = pc.fill_null(pc.is_valid(joined.column(f"__from_{parts[0]}")), False)
        from_bucket = joined.column(_FROM_BUCKET)
        stays = exists
        for p in parts:
            stays = pc.and_(stays, pc.fill_null(_null_safe_equal(joined.column(f"__from_{p}"),
                                                                 joined.column(f"__to_{p}")), False))
        if engine in ("aggregation", "partial-update"):
            # Update in place: the key's old partition wins over the row's.
            for p in parts:
                target = pc.if_else(exists, joined.column(f"__from_{p}"), joined.column(f"__to_{p}"))
                joined = joined.set_column(joined.schema.get_field_index(p), p,
                                           target.cast(rows.schema.field(p).type))
            kept = joined.append_column(_KNOWN, pc.if_else(exists, from_bucket, -1))
        else:
            keep = None
            for p in parts:
                same = _null_safe_equal(joined.column(p), joined.column(f"__to_{p}"))
                keep = same if keep is None else pc.and_(keep, same)
            if engine == "first-row":
                keep = pc.and_(keep, pc.invert(exists))
            kept = joined.append_column(_KNOWN, pc.if_else(stays, from_bucket, -1)).filter(keep)
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
            out.insert(0, deletes.append_column(_KNOWN, deletes.column(_FROM_BUCKET)))
        schema = rows.schema.append(pa.field(_KNOWN, pa.int32()))
        result = pa.concat_tables([t.select(schema.names).cast(schema) for t in out])
        new_kinds = result.column(_KIND).to_numpy()
        known = result.column(_KNOWN).to_numpy()
        return result.drop_columns([_POS, _KIND, _KNOWN]), new_kinds, known

    def _remember_locations(self, rows: pa.Table) -> None:
        index = self._key_index()
        names = index.pk + index.parts
        index.remember(rows.select(names).append_column(_FROM_BUCKET, rows.column(_BUCKET)))

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
            self._dvs = load_deletion_vectors(self.store)
        return self._dvs.get((partition, bucket), (None, {}))

    def base_snapshot(self) -> Snapshot | None:
        """The snapshot this write builds on (pinned at first use): where its buckets' files,
        sequence numbers, key locations and bucket assignments come from."""
        if self._base is None:
            self._base = (self.store.snapshot_manager.latest(),)
        return self._base[0]

    def restored(self) -> dict[tuple[bytes, int], list[DataFileMeta]]:
        if self._restored is None:
            latest = None if self.ignore_previous_files else self.base_snapshot()
            self._restored = {}
            for key, entries in FileStoreScan(self.store).files_by_bucket(latest).items():
                stale = [e for e in entries if e.total_buckets != self.total_buckets and not self.dynamic]
                if stale:
                    raise SchemaError(
                        f"Partition {self.store.partition_codec.to_dict(key[0])} was written with "
                        f"{stale[0].total_buckets} buckets but the table now has {self.total_buckets}; "
                        "rescale it with an overwrite of that partition first")
                self._restored[key] = [e.file for e in entries]
        return self._restored

    # ------------------------------------------------------------------ commit
    def _full_compaction_due(self) -> bool:
        n = self.core.get("full-compaction.delta-commits")
        if not n:
            return False
        sm = self.store.snapshot_manager
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
                values = self.store.partition_codec.to_dict(part)
                if not partition_filter.may_match({k: (v, v, int(v is None)) for k, v in values.items()}, 1):
                    continue
            writers.append(self.writer(part, bucket))
        thread_map(lambda w: w.compact_until_done(full), writers, desc="compacting buckets", unit="bucket")

    def prepare_commit(self) -> list[CommitMessage]:
        self.flush()
        full = self._full_compaction_due()
        # Java writes no HASH index for cross-partition tables (its key index routes them)
        index_changes = self.assigner.index_changes() if self.assigner is not None and not self.cross_partition else {}
        out = []
        keys = list(self.writers)
        messages = thread_map(lambda key: self.writers[key].prepare_commit(full), keys)  # compactions, in parallel
        for key, msg in zip(keys, messages):
            msg.index_changes = index_changes.pop(key, [])
            if msg.all_written() or msg.compact_before or msg.index_changes:
                out.append(msg)
        for (part, bucket), changes in index_changes.items():
            out.append(CommitMessage(part, bucket, self.total_buckets, index_changes=changes))
        base = self.base_snapshot()
        for m in out:
            m.base_snapshot = base.id if base is not None else 0
        return out

    def abort(self) -> None:
        self.buffer = []
        self.spill_directory.clear()
        for w in self.writers.values():
            w.spilled = []
        paths = [p for w in self.writers.values() for p in w.written_paths()]
        if self.assigner is not None:
            paths += self.assigner.written_paths()
        paths += [join(self.store.path, "index", w.dv_entry.index_file.file_name) for w in self.writers.values()
                  if w.dv_entry is not None and w.dv_entry.index_file.file_name.startswith(
                      w.index_namer.prefix + w.index_namer.uuid)]
        self.store.file_io.delete_quietly(paths)
        self.writers = {}

