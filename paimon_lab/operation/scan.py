"""Scan planning: from a snapshot to the data files a read needs, pruned by statistics.

Pruning happens at three levels, cheapest first: manifests by their partition statistics,
manifest entries by their exact partition values, data files by their column statistics.
The filter is still applied to rows by the reader; pruning only skips what cannot match.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from paimon_lab.core.manifest import ADD, DataFileMeta, ManifestEntry, ManifestFileMeta, merge_entries
from paimon_lab.core.options import check_readable
from paimon_lab.core.predicate import And, Leaf, Or, Predicate
from paimon_lab.core.schema import TableSchema, field_default_values
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.core.stats import decode_stats
from paimon_lab.fileindex import INDEX_FILE_SUFFIX, FileIndexReader
from paimon_lab.io.file_io import join
from paimon_lab.core.bucket_function import bucket_ids
from paimon_lab.errors import OptionError, SnapshotNotExistError

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


@dataclass
class DataSplit:
    """Files of one partition and bucket to be read together."""

    partition: bytes
    bucket: int
    files: list[DataFileMeta]
    snapshot_id: int
    #: the snapshot planned (it may be a tag's, whose snapshot file expired); None: read by id
    snapshot: Snapshot | None = field(default=None, repr=False, compare=False)

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)


class FileStoreScan:
    def __init__(self, store: "FileStore"):
        self.store = store

    def manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        mio = self.store.manifest_io
        return mio.read_manifest_list(snapshot.base_manifest_list) + \
            mio.read_manifest_list(snapshot.delta_manifest_list)

    def _partition_stats_match(self, meta: ManifestFileMeta, pred: Predicate | None) -> bool:
        if pred is None:
            return True
        fields = self.store.schema.partition_fields
        stats = decode_stats(meta.partition_stats, fields)
        return pred.may_match(stats, meta.num_added_files + meta.num_deleted_files)

    def read_entries(self, snapshot: Snapshot, partition_filter: Predicate | None = None,
                     bucket: int | None = None) -> list[ManifestEntry]:
        """Live ADD entries of a snapshot, restricted to matching partitions (and one bucket)."""
        cache = self.store.manifest_cache
        load = self.store.manifest_io.read_manifest
        codec = self.store.partition_codec
        names = [f.name for f in codec.fields]
        entries: list[ManifestEntry] = []
        for meta in self.manifests(snapshot):
            if bucket is not None and meta.min_bucket is not None and not (
                    meta.min_bucket <= bucket <= meta.max_bucket):
                continue
            if not self._partition_stats_match(meta, partition_filter):
                continue
            entries.extend(cache.get(meta.file_name, load))
        live = [e for e in merge_entries(entries) if e.kind == ADD]
        if bucket is not None:
            live = [e for e in live if e.bucket == bucket]
        if partition_filter is not None and names:
            keep: dict[bytes, bool] = {}
            out = []
            for e in live:
                ok = keep.get(e.partition)
                if ok is None:
                    values = codec.from_bytes(e.partition)
                    stats = {n: (v, v, 1 if v is None else 0) for n, v in zip(names, values)}
                    ok = keep[e.partition] = partition_filter.may_match(stats, 1)
                if ok:
                    out.append(e)
            live = out
        return live

    def live_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return self.read_entries(snapshot)

    def files_by_bucket(self, snapshot: Snapshot | None) -> dict[tuple[bytes, int], list[ManifestEntry]]:
        """Live entries of a snapshot grouped by (partition, bucket): what a writer restores."""
        out: dict[tuple[bytes, int], list[ManifestEntry]] = {}
        if snapshot is not None:
            for e in self.read_entries(snapshot):
                out.setdefault((e.partition, e.bucket), []).append(e)
        return out

    def file_may_match(self, file: DataFileMeta, pred: Predicate, bucket_dir: str | None = None) -> bool:
        """False if the file's value stats or its file index prove no row matches ``pred``. The
        index embedded in the manifest is always consulted, a separate ``.index`` file only with
        ``bucket_dir`` (append tables check theirs when a file is read); neither with
        'file-index.read.enabled' = false."""
        fields = self.store.stats_fields(file)
        if fields and not pred.may_match(decode_stats(file.value_stats, fields), file.row_count):
            return False
        schema = self.store.schema
        if file.schema_id != schema.id or not schema.core.get("file-index.read.enabled"):
            return True
        if file.embedded_index:
            return FileIndexReader(file.embedded_index, list(schema.fields)).may_match(pred)
        index = [x for x in file.extra_files if x.endswith(INDEX_FILE_SUFFIX)]
        if index and bucket_dir is not None:
            data = self.store.file_io.read_bytes(join(bucket_dir, index[0]))
            return FileIndexReader(data, list(schema.fields)).may_match(pred)
        return True

    def bucket_selector(self, predicate: Predicate | None):
        """For a fixed-bucket table and a filter that pins every bucket-key column to a few values
        (``k = v``, ``k IN (...)``, combined with AND and OR), a function from an entry's total bucket
        count to the buckets that can hold matching rows (None: any bucket). Else None."""
        schema = self.store.schema
        if predicate is None or schema.core.bucket <= 0:
            return None
        keys = schema.bucket_keys
        values = _pinned_values(predicate, set(keys))
        if not keys or any(k not in values for k in keys):
            return None
        fields = schema.fields_of(keys)
        if any(f.type.root not in _HASHABLE for f in fields):
            return None
        combos = 1
        for k in keys:
            combos *= len(values[k])
        if combos > 1_000_000:
            return None

        function = schema.core.get("bucket-function.type")
        columns = []
        try:
            if combos > 0:
                grids = np.meshgrid(*[np.arange(len(values[k])) for k in keys], indexing="ij")
                columns = []
                for k, f, grid in zip(keys, fields, grids):
                    column = pa.array(sorted(values[k]), f.type.to_arrow())
                    columns.append(column.take(pa.array(grid.reshape(-1))))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            return None
        cache: dict[int, set[int]] = {}

        def select(total_buckets: int) -> set[int] | None:
            if total_buckets is None or total_buckets <= 0:
                return None
            got = cache.get(total_buckets)
            if got is None:
                got = cache[total_buckets] = set(bucket_ids(columns, [f.type for f in fields], total_buckets,
                                                            function).tolist()) if columns else set()
            return got

        return select

    def plan(self, snapshot: Snapshot, predicate: Predicate | None = None) -> list[DataSplit]:
        """Splits of a snapshot: live files grouped by partition and bucket, pruned by ``predicate``."""
        schema = self.store.schema
        part_names = {f.name for f in schema.partition_fields}
        part_pred = predicate.restrict(part_names) if predicate is not None else None
        entries = self.read_entries(snapshot, part_pred)
        if predicate is not None and schema.primary_keys and not schema.core.get("deletion-vectors.enabled"):
            # Versions of a row live in several files; only key columns may skip a file. (With
            # deletion vectors a read takes each key from one file, so any column may, as in Java.)
            predicate = predicate.restrict(set(schema.primary_keys))
        select_buckets = self.bucket_selector(predicate)
        groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        for e in entries:
            if select_buckets is not None:
                buckets = select_buckets(e.total_buckets)
                if buckets is not None and e.bucket not in buckets:
                    continue
            bucket_dir = (self.store.bucket_path(e.partition, e.bucket)
                          if schema.primary_keys and e.file.extra_files else None)
            if predicate is not None and not self.file_may_match(e.file, predicate, bucket_dir):
                continue
            groups.setdefault((e.partition, e.bucket), []).append(e.file)
        splits = []
        for (part, bucket), files in groups.items():
            files.sort(key=lambda f: (f.min_sequence_number, f.file_name))
            splits.append(DataSplit(part, bucket, files, snapshot.id, snapshot))
        splits.sort(key=lambda s: (s.partition, s.bucket))
        return splits


# Bucket-key types whose hash a filter literal reproduces exactly (no -0.0/NaN, padding or time zones).
_HASHABLE = {"TINYINT", "SMALLINT", "INT", "BIGINT", "VARCHAR", "DATE"}


def _pinned_values(pred: Predicate, names: set[str]) -> dict[str, set]:
    """Columns of ``names`` that every matching row has one of finitely many values in: from
    ``=`` and ``IN`` leaves, intersected across AND, united across OR (other shapes say nothing)."""
    if isinstance(pred, Leaf) and pred.column in names:
        if pred.op == "=" and pred.literals and pred.literals[0] is not None:
            return {pred.column: {pred.literals[0]}}
        if pred.op == "in":
            return {pred.column: {v for v in pred.literals if v is not None}}
        return {}
    if isinstance(pred, And):
        out: dict[str, set] = {}
        for child in pred.children:
            for k, v in _pinned_values(child, names).items():
                out[k] = out[k] & v if k in out else set(v)
        return out
    if isinstance(pred, Or):  # a column every branch pins: the union of the branches' values
        branches = [_pinned_values(child, names) for child in pred.children]
        common = set.intersection(*(set(b) for b in branches)) if branches else set()
        return {k: set().union(*(b[k] for b in branches)) for k in common}
    return {}


def pushdown_predicate(schema: TableSchema, predicate: Predicate | None) -> Predicate | None:
    """The part of a filter that may prune files and rows: not the columns with a default value
    (files hold NULL where a read shows the default; Java drops them from the pushed filter too)."""
    defaults = field_default_values(schema)
    if predicate is None or not defaults:
        return predicate
    return predicate.restrict(set(schema.field_names) - set(defaults))


def plan_splits(store: "FileStore", snap: Snapshot, pred: Predicate | None, read_optimized: bool = False) -> list[DataSplit]:
    """The splits a read of ``snap`` touches; ``read_optimized``: only the top level of a
    primary-key table (Paimon's ``$ro``), which needs no merging."""
    check_readable(store.schema.options)
    splits = FileStoreScan(store).plan(snap, pushdown_predicate(store.schema, pred))
    if read_optimized and store.schema.primary_keys:
        top = store.num_levels - 1
        splits = [DataSplit(s.partition, s.bucket, [f for f in s.files if f.level == top], s.snapshot_id, s.snapshot)
                  for s in splits]
        splits = [s for s in splits if s.files]
    return splits


@dataclass(frozen=True)
class ScanTarget:
    """What a batch read of a table reads when the caller names no snapshot: set by the table's own
    scan options (Java applies ``scan.*`` and ``incremental-between`` table options to every read)."""
    snapshot_id: int | None = None
    tag: str | None = None
    timestamp_millis: int | None = None
    incremental: tuple[int, int] | None = None


def table_scan_target(store: FileStore) -> ScanTarget:
    """The :class:`ScanTarget` of the table's options (all None: the latest snapshot)."""
    core = store.schema.core
    mode = core.get("scan.mode")
    between = core.get("incremental-between")
    if between is not None:
        parts = [p.strip() for p in between.split(",")]
        if len(parts) != 2 or not all(parts):
            raise OptionError("'incremental-between' takes 'start,end' (snapshot ids or tag names)")
        ids = [int(p) if p.isdigit() else store.tag_manager.get(p).snapshot.id for p in parts]
        return ScanTarget(incremental=(ids[0], ids[1]))
    if mode == "incremental":
        raise OptionError("scan.mode 'incremental' needs 'incremental-between'")
    target = ScanTarget(core.get("scan.snapshot-id"), core.get("scan.tag-name"), core.get("scan.timestamp-millis"))
    version = core.get("scan.version")
    if version is not None:  # Java: a tag of that name first, else a snapshot id
        if store.tag_manager.exists(version) or not version.strip().isdigit():
            target = ScanTarget(tag=version)
        else:
            target = ScanTarget(snapshot_id=int(version))
    if mode == "compacted-full":
        compacted = [s.id for s in store.snapshot_manager.snapshots() if s.commit_kind == "COMPACT"]
        if not compacted:
            raise SnapshotNotExistError("scan.mode 'compacted-full': the table has no COMPACT snapshot")
        return ScanTarget(snapshot_id=compacted[-1])
    if mode in ("from-snapshot", "from-snapshot-full") and target.snapshot_id is None and target.tag is None:
        raise OptionError(f"scan.mode '{mode}' needs 'scan.snapshot-id' or 'scan.tag-name'")
    if mode == "from-timestamp" and target.timestamp_millis is None:
        raise OptionError("scan.mode 'from-timestamp' needs 'scan.timestamp-millis'")
    return target
