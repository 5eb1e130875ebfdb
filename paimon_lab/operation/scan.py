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
from paimon_lab.core.predicate import And, Leaf, Or, Predicate
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.core.stats import decode_stats
from paimon_lab.fileindex import FileIndexReader
from paimon_lab.core import binary_row
from paimon_lab.utils import html as H

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


class ScanPlan(list):
    """The :class:`DataSplit` s a read touches (a list), with the snapshot planned and the filter;
    notebooks show it as one row per split with the partition decoded."""

    def __init__(self, splits=(), store: FileStore | None = None, snapshot_id: int | None = None,
                 predicate: Predicate | None = None):
        super().__init__(splits)
        self.snapshot_id = snapshot_id
        self.predicate = predicate
        self._codec = store.partition_codec if store is not None else None

    @property
    def files(self) -> int:
        return sum(len(s.files) for s in self)

    @property
    def row_count(self) -> int:
        return sum(s.row_count for s in self)

    def partition_text(self, split: DataSplit) -> str:
        """``dt=2024-05-01/hh=08`` for a split's partition (empty when unpartitioned)."""
        if self._codec is None or not self._codec.fields:
            return ""
        return self._codec.path(self._codec.from_bytes(split.partition))

    def __repr__(self) -> str:
        where = f", filter={self.predicate}" if self.predicate is not None else ""
        return (f"ScanPlan(snapshot_id={self.snapshot_id}, {len(self)} splits, {self.files} files, "
                f"{self.row_count} rows{where})")

    def _repr_html_(self) -> str:
        if self.snapshot_id is None:
            return H.title("Scan plan", "the table has no snapshot: nothing to read")
        size = sum(f.file_size for s in self for f in s.files)
        note = (f"snapshot {self.snapshot_id} · {len(self)} splits · {self.files} files · {self.row_count:,} rows · "
                f"{H.fmt_bytes(size)}")
        rows = [(self.partition_text(s), s.bucket, len(s.files), s.row_count,
                 H.fmt_bytes(sum(f.file_size for f in s.files)),
                 ", ".join(str(v) for v in sorted({f.level for f in s.files}))) for s in self]
        filt = H.pairs([("filter", self.predicate)]) if self.predicate is not None else ""
        return H.box(H.title("Scan plan", note), filt,
                     H.table(["partition", "bucket", "files", "rows", "size", "levels"], rows,
                             empty="no files match"))


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

    def file_may_match(self, file: DataFileMeta, pred: Predicate) -> bool:
        fields = self.store.stats_fields(file)
        if fields and not pred.may_match(decode_stats(file.value_stats, fields), file.row_count):
            return False
        if file.embedded_index and file.schema_id == self.store.schema.id:

            return FileIndexReader(file.embedded_index, list(self.store.schema.fields)).may_match(pred)
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

        try:
            if combos == 0:
                hashes = np.zeros(0, dtype=np.int32)
            else:
                grids = np.meshgrid(*[np.arange(len(values[k])) for k in keys], indexing="ij")
                columns = []
                for k, f, grid in zip(keys, fields, grids):
                    column = pa.array(sorted(values[k]), f.type.to_arrow())
                    columns.append(column.take(pa.array(grid.reshape(-1))))
                hashes = binary_row.hash_codes(columns, [f.type for f in fields])
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            return None
        cache: dict[int, set[int]] = {}

        def select(total_buckets: int) -> set[int] | None:
            if total_buckets is None or total_buckets <= 0:
                return None
            got = cache.get(total_buckets)
            if got is None:
                got = cache[total_buckets] = set(binary_row.bucket_of(hashes, total_buckets).tolist())
            return got

        return select

    def plan(self, snapshot: Snapshot, predicate: Predicate | None = None) -> list[DataSplit]:
        """Splits of a snapshot: live files grouped by partition and bucket, pruned by ``predicate``."""
        schema = self.store.schema
        part_names = {f.name for f in schema.partition_fields}
        part_pred = predicate.restrict(part_names) if predicate is not None else None
        entries = self.read_entries(snapshot, part_pred)
        if predicate is not None and schema.primary_keys:
            # Versions of a row live in several files; only key columns may skip a file.
            predicate = predicate.restrict(set(schema.primary_keys))
        select_buckets = self.bucket_selector(predicate)
        groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        for e in entries:
            if select_buckets is not None:
                buckets = select_buckets(e.total_buckets)
                if buckets is not None and e.bucket not in buckets:
                    continue
            if predicate is not None and not self.file_may_match(e.file, predicate):
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


def plan_splits(store: "FileStore", snap: Snapshot, pred: Predicate | None, read_optimized: bool = False) -> list[DataSplit]:
    """The splits a read of ``snap`` touches; ``read_optimized``: only the top level of a
    primary-key table (Paimon's ``$ro``), which needs no merging."""
    splits = FileStoreScan(store).plan(snap, pred)
    if read_optimized and store.schema.primary_keys:
        top = store.num_levels - 1
        splits = [DataSplit(s.partition, s.bucket, [f for f in s.files if f.level == top], s.snapshot_id, s.snapshot)
                  for s in splits]
        splits = [s for s in splits if s.files]
    return splits
