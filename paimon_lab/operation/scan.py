"""Scan planning: from a snapshot to the data files a read needs, pruned by statistics.

Pruning happens at three levels, cheapest first: manifests by their partition statistics,
manifest entries by their exact partition values, data files by their column statistics.
The filter is still applied to rows by the reader; pruning only skips what cannot match.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from itertools import groupby
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core import binary_row
from paimon_lab.core.bucket_function import bucket_ids
from paimon_lab.core.manifest import DELETE, DataFileMeta, ManifestColumns, ManifestEntry, ManifestFileMeta
from paimon_lab.core.options import check_readable
from paimon_lab.core.predicate import And, Leaf, Or, Predicate
from paimon_lab.core.schema import POSTPONE_BUCKET, TableSchema, check_bucket_mode, field_default_values, is_postpone
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.core.stats import decode_stats
from paimon_lab.fileindex import INDEX_FILE_SUFFIX, FileIndexReader
from paimon_lab.io.file_io import join
from paimon_lab.errors import OptionError, SnapshotNotExistError
from paimon_lab.utils import html as H
from paimon_lab.utils.clock import local_wall_millis

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


class LiveEntries:
    """Entries of several manifests as one Arrow table (``table``, with the columns of
    :class:`ManifestColumns`); :meth:`entries` builds the objects of the rows left."""

    def __init__(self, parts: list[ManifestColumns], table: pa.Table):
        self.parts = parts
        self.table = table  # plus _M (which part) and _ROW (row in it)

    @staticmethod
    def of(parts: list[ManifestColumns]) -> LiveEntries:
        """The live ADDs of ``parts``: a DELETE cancels the ADD of the same file, in any order
        (Paimon never re-adds a deleted file), as :func:`merge_entries` folds objects."""
        if not parts:
            parts = [ManifestColumns.from_records([])]
        tables = [p.table.append_column("_M", pa.array(np.full(p.num_rows, i, np.int32)))
                  .append_column("_ROW", pa.array(np.arange(p.num_rows, dtype=np.int32)))
                  for i, p in enumerate(parts)]
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        is_delete = table.column("_KIND").to_numpy() == DELETE
        if not is_delete.any():
            return LiveEntries(parts, table)
        names = table.column("_FILE._FILE_NAME")
        keep = ~is_delete
        # only an ADD whose file name some DELETE names can be cancelled: compare identifiers there
        maybe = keep & pc.is_in(names, names.filter(pa.array(is_delete))).to_numpy(zero_copy_only=False)
        if maybe.any():
            deleted = set(_identifiers(table, np.flatnonzero(is_delete)))
            candidates = np.flatnonzero(maybe)
            keep[[i for i, key in zip(candidates, _identifiers(table, candidates)) if key in deleted]] = False
        return LiveEntries(parts, table.filter(pa.array(keep)))

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def filter(self, mask) -> LiveEntries:
        return LiveEntries(self.parts, self.table.filter(mask))

    def sorted(self, keys: list[tuple[str, str]]) -> LiveEntries:
        """The rows ordered by ``keys``, with only the key columns and the row references (a take
        of the stats and lists would cost more than the sort)."""
        table = self.table.select(list(dict.fromkeys([k for k, _ in keys] + ["_M", "_ROW"])))
        if self.num_rows < 2:
            return LiveEntries(self.parts, table)
        return LiveEntries(self.parts, table.take(pc.sort_indices(table, sort_keys=keys)))

    def entries(self) -> list[ManifestEntry]:
        """The objects of the rows, in row order (built once per manifest row and kept)."""
        return self._gather(ManifestColumns.entries)

    def files(self) -> list[DataFileMeta]:
        """The data files of the rows, in row order (built once per manifest row and kept)."""
        return self._gather(ManifestColumns.files)

    def _gather(self, build) -> list:
        if not self.num_rows:
            return []
        which = self.table.column("_M").to_numpy()
        rows = self.table.column("_ROW").to_numpy()
        if (which == which[0]).all():
            return build(self.parts[int(which[0])], rows)
        out: list = [None] * len(rows)
        for m in np.unique(which):
            at = np.flatnonzero(which == m)
            for i, e in zip(at, build(self.parts[int(m)], rows[at])):
                out[i] = e
        return out


_IDENTITY = ("_PARTITION", "_BUCKET", "_FILE._LEVEL", "_FILE._FILE_NAME", "_FILE._EXTRA_FILES",
             "_FILE._EMBEDDED_FILE_INDEX", "_FILE._EXTERNAL_PATH")


def _identifiers(table: pa.Table, rows: np.ndarray) -> list[tuple]:
    """:attr:`ManifestEntry.identifier` of the entries at ``rows``, from the columns (no objects)."""
    picked = table.select(list(_IDENTITY)).take(pa.array(rows, pa.int64()))
    columns = [picked.column(n).to_pylist() for n in _IDENTITY]
    columns[4] = [tuple(v) if v is not None else () for v in columns[4]]
    return list(zip(*columns))


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
        check_bucket_mode(store.schema)
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

    def live_columns(self, snapshot: Snapshot, partition_filter: Predicate | None = None,
                     bucket: int | None = None) -> LiveEntries:
        """Live ADD entries of a snapshot as Arrow columns, restricted to matching partitions (and
        one bucket); no entry objects are built."""
        mio = self.store.manifest_io
        parts: list[ManifestColumns] = []
        for meta in self.manifests(snapshot):
            if bucket is not None and meta.min_bucket is not None and not (
                    meta.min_bucket <= bucket <= meta.max_bucket):
                continue
            if not self._partition_stats_match(meta, partition_filter):
                continue
            parts.append(mio.read_manifest_columns(meta.file_name))
        live = LiveEntries.of(parts)
        if bucket is not None:
            live = live.filter(pc.equal(live.table.column("_BUCKET"), bucket))
        names = [f.name for f in self.store.schema.partition_fields]
        if partition_filter is not None and names and live.num_rows:
            codec = self.store.partition_codec
            keep = []
            for part in pc.unique(live.table.column("_PARTITION")).to_pylist():
                values = codec.from_bytes(part)
                stats = {n: (v, v, 1 if v is None else 0) for n, v in zip(names, values)}
                if partition_filter.may_match(stats, 1):
                    keep.append(part)
            live = live.filter(pc.is_in(live.table.column("_PARTITION"), pa.array(keep, pa.binary())))
        return live

    def read_entries(self, snapshot: Snapshot, partition_filter: Predicate | None = None,
                     bucket: int | None = None) -> list[ManifestEntry]:
        """Live ADD entries of a snapshot, restricted to matching partitions (and one bucket)."""
        return self.live_columns(snapshot, partition_filter, bucket).entries()

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
        if predicate is None or (schema.core.bucket <= 0 and not is_postpone(schema)):
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
        live = created_since(self.store, real_buckets(self.store, self.live_columns(snapshot, part_pred)))
        if predicate is not None and schema.primary_keys and not schema.core.get("deletion-vectors.enabled"):
            # Versions of a row live in several files; only key columns may skip a file. (With
            # deletion vectors a read takes each key from one file, so any column may, as in Java.)
            predicate = predicate.restrict(set(schema.primary_keys))
        select_buckets = self.bucket_selector(predicate)
        if select_buckets is not None and live.num_rows:
            col = live.table.column("_TOTAL_BUCKETS")
            mask = None
            for total in pc.unique(col).to_pylist():
                buckets = select_buckets(total)
                hit = pc.equal(col, total)
                if buckets is not None:
                    hit = pc.and_(hit, pc.is_in(live.table.column("_BUCKET"), pa.array(sorted(buckets), pa.int32())))
                mask = hit if mask is None else pc.or_(mask, hit)
            live = live.filter(mask)
        if predicate is not None and live.num_rows:
            keep = stats_prefilter(self.store, live.table, predicate)
            if keep is not None and not keep.all():
                live = live.filter(pa.array(keep))
        live = live.sorted([("_PARTITION", "ascending"), ("_BUCKET", "ascending"),
                            ("_FILE._MIN_SEQUENCE_NUMBER", "ascending"), ("_FILE._FILE_NAME", "ascending")])
        splits = []
        keys = zip(live.table.column("_PARTITION").to_pylist(), live.table.column("_BUCKET").to_pylist())
        for (part, bucket), group in groupby(zip(keys, live.files()), key=lambda kf: kf[0]):
            files = [f for _, f in group]
            if predicate is not None:
                bucket_dir = self.store.bucket_path(part, bucket) if schema.primary_keys else None
                files = [f for f in files if self.file_may_match(
                    f, predicate, bucket_dir if f.extra_files else None)]
            if files:
                splits.append(DataSplit(part, bucket, files, snapshot.id, snapshot))
        return splits


def real_buckets(store: FileStore, live: LiveEntries) -> LiveEntries:
    """``live`` without a postpone-bucket table's postponed files: batch reads see rows only once
    a compaction has moved them into real buckets (Java's ``onlyReadRealBuckets``)."""
    if not is_postpone(store.schema) or not live.num_rows:
        return live
    return live.filter(pc.not_equal(live.table.column("_BUCKET"), POSTPONE_BUCKET))


_NUMERIC_STATS = {"TINYINT": "<i1", "SMALLINT": "<i2", "INT": "<i4", "BIGINT": "<i8", "FLOAT": "<f4", "DOUBLE": "<f8"}


def stats_slot(column: pa.ChunkedArray, pos: int, arity: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Field ``pos`` of every stats row (BinaryRow bytes) of ``column``, decoded in bulk:
    (values, known); unknown where the row is missing or too short or the field is null."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset:arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    # serialized stats: the row's arity (4 bytes, big-endian), then the BinaryRow
    starts, lengths = offsets[:-1] + 4, offsets[1:] - offsets[:-1] - 4
    at = binary_row.null_bits_width(arity) + 8 * pos
    known = lengths >= at + 8
    if arr.null_count:
        known &= arr.is_valid().to_numpy(zero_copy_only=False)
    bit = pos + binary_row.HEADER_BITS
    safe = np.where(known, starts, 0)
    if not known.any():
        return np.zeros(n, dtype=dtype), known
    prefix = data[(np.where(known, safe - 4, 0))[:, None] + np.arange(4)]
    known &= np.ascontiguousarray(prefix).view(">i4").reshape(n) == arity
    known &= (data[safe + bit // 8] >> (bit % 8) & 1) == 0
    raw = data[(np.where(known, safe + at, 0))[:, None] + np.arange(np.dtype(dtype).itemsize)]
    return np.ascontiguousarray(raw).view(dtype).reshape(n), known


def stats_prefilter(store: FileStore, table: pa.Table, predicate: Predicate) -> np.ndarray | None:
    """Which entries may hold rows matching ``predicate``, from their value statistics decoded in
    bulk: comparisons and IN on numeric columns, combined with AND / OR (True wherever unsure:
    other shapes and types, other schemas, files with stats of some columns only). The exact
    per-file check still runs on what is left. None: nothing to prune with."""
    schema = store.schema
    eligible = (table.column("_FILE._SCHEMA_ID").to_numpy() == schema.id) & \
        table.column("_FILE._VALUE_STATS_COLS").is_null().to_numpy(zero_copy_only=False)
    if not eligible.any():
        return None
    fields = list(schema.fields)
    slots: dict[str, tuple] = {}

    def bounds(name: str):
        if name not in slots:
            pos = next((i for i, f in enumerate(fields) if f.name == name), None)
            dtype = _NUMERIC_STATS.get(fields[pos].type.root) if pos is not None else None
            if dtype is None:
                slots[name] = None
            else:
                lo, lo_known = stats_slot(table.column("_FILE._VALUE_STATS._MIN_VALUES"), pos, len(fields), dtype)
                hi, hi_known = stats_slot(table.column("_FILE._VALUE_STATS._MAX_VALUES"), pos, len(fields), dtype)
                known = eligible & lo_known & hi_known
                if dtype.startswith("<f"):
                    known &= ~(np.isnan(lo) | np.isnan(hi))
                slots[name] = (lo, hi, known)
        return slots[name]

    def number(v) -> bool:
        return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and \
            not (isinstance(v, (float, np.floating)) and math.isnan(v))

    def may(pred: Predicate) -> np.ndarray | None:
        if isinstance(pred, And):
            masks = [m for m in (may(c) for c in pred.children) if m is not None]
            return np.logical_and.reduce(masks) if masks else None
        if isinstance(pred, Or):
            masks = [may(c) for c in pred.children]
            return None if any(m is None for m in masks) or not masks else np.logical_or.reduce(masks)
        if not isinstance(pred, Leaf) or pred.op not in ("=", "<", "<=", ">", ">=", "in"):
            return None
        got = bounds(pred.column)
        values = [v for v in pred.literals if v is not None]
        if got is None or not values or not all(number(v) for v in values):
            return None
        lo, hi, known = got
        v = values[0]
        try:
            hit = _compare(pred.op, lo, hi, v, values)
        except (OverflowError, TypeError):  # a literal outside the column type's range: no pruning
            return None
        return hit | ~known

    return may(predicate)


def _compare(op: str, lo: np.ndarray, hi: np.ndarray, v, values: list) -> np.ndarray:
    """Whether [lo, hi] may hold a value satisfying ``op`` against the literal(s)."""
    with np.errstate(invalid="ignore", over="ignore"):
        if op == "=":
            return (lo <= v) & (v <= hi)
        if op == "<":
            return lo < v
        if op == "<=":
            return lo <= v
        if op == ">":
            return hi > v
        if op == ">=":
            return hi >= v
        hit = np.zeros(len(lo), dtype=bool)
        for x in values:
            hit |= (lo <= x) & (x <= hi)
        return hit


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
    #: 'incremental-between': two snapshot ids, or two tag names (read as their diff)
    incremental: tuple[int, int] | tuple[str, str] | None = None


def incremental_bounds(store: FileStore, text: str) -> tuple[int, int] | tuple[str, str]:
    """The two ends of 'incremental-between' = 'start,end', as Java reads them: two snapshot ids,
    or two tag names (which must exist)."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2 or not all(parts):
        raise OptionError("'incremental-between' takes 'start,end' (snapshot ids or tag names)")
    start, end = parts
    if start.isdigit() and end.isdigit():
        return int(start), int(end)
    if start.isdigit() or end.isdigit():
        raise OptionError(f"'incremental-between' = '{start},{end}' takes two snapshot ids or two tag names")
    for name in (start, end):
        store.tag_manager.get(name)  # TagNotExistError names a missing one
    return start, end


def timestamp_range(store: FileStore, text: str) -> tuple[int, int]:
    """The snapshot range of 'incremental-between-timestamp' = 'start,end' (epoch millis), as Java's
    IncrementalTimeStampStartingScanner: the last snapshot at or before each time; a start before
    the earliest snapshot starts before it; a range outside the snapshots' times reads nothing."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2 or not all(p.lstrip("-").isdigit() for p in parts):
        raise OptionError(f"'incremental-between-timestamp' takes 'start,end' as epoch milliseconds, got '{text}'")
    start_ms, end_ms = int(parts[0]), int(parts[1])
    sm = store.snapshot_manager
    earliest_id, latest_id = sm.earliest_id(), sm.latest_id()
    if earliest_id is None or latest_id is None:
        return (0, 0)
    earliest, latest = sm.snapshot(earliest_id), sm.snapshot(latest_id)
    if start_ms > latest.time_millis or end_ms < earliest.time_millis:
        return (latest.id, latest.id)
    start = sm.earlier_or_equal_time(start_ms)
    start_id = earliest.id - 1 if start is None or earliest.time_millis > start_ms else start.id
    end = sm.earlier_or_equal_time(end_ms)
    return (start_id, latest.id if end is None else end.id)


def machine_zone_millis(text: str) -> int:
    """Epoch millis of 'scan.timestamp' (``yyyy-MM-dd[ HH:mm:ss[.SSS]]``), read in the machine's
    zone as Java reads it in the JVM's."""
    try:
        value = dt.datetime.fromisoformat(str(text).strip().replace("T", " "))
    except ValueError:
        raise OptionError(f"Cannot read 'scan.timestamp' '{text}' (use 'yyyy-MM-dd HH:mm:ss[.SSS]')") from None
    return int((value if value.tzinfo else value.astimezone()).timestamp() * 1000)


def created_since(store: FileStore, live: "LiveEntries") -> "LiveEntries":
    """A read's live files with 'scan.file-creation-time-millis' set: those created at or after it
    (Java's FileCreationTimeStartingScanner; a file records its writer's wall clock, and Java reads
    that in the JVM's zone). Commits and compactions see every file."""
    millis = store.schema.core.get("scan.file-creation-time-millis")
    if millis is None or not live.num_rows:
        return live
    created = live.table.column("_FILE._CREATION_TIME")
    since = pa.scalar(local_wall_millis(millis), pa.int64()).cast(created.type)
    return live.filter(pc.fill_null(pc.greater_equal(created, since), False))


def watermark_snapshot(store: FileStore, watermark: int) -> int:
    """'scan.watermark' of a batch read, as Java's: the earliest snapshot whose watermark is at or
    after ``watermark`` (snapshots without one skipped)."""
    for snap in store.snapshot_manager.snapshots():
        if snap.watermark is not None and snap.watermark != _NO_WATERMARK and snap.watermark >= watermark:
            return snap.id
    raise SnapshotNotExistError(f"There is no snapshot whose watermark is at or after {watermark} ('scan.watermark')")


_NO_WATERMARK = -(2 ** 63)   # Java's Long.MIN_VALUE: a commit without a watermark


def scan_target(store: FileStore, snapshot_id: int | None = None, tag: str | None = None,
                timestamp_millis: int | None = None) -> ScanTarget:
    """What a read that asks for ``snapshot_id``, ``tag`` or ``timestamp_millis`` reads: that
    point, or, when it names none, the table's own scan options (:func:`table_scan_target`)."""
    if snapshot_id is None and tag is None and timestamp_millis is None:
        return table_scan_target(store)
    return ScanTarget(snapshot_id, tag, timestamp_millis)


def table_scan_target(store: FileStore) -> ScanTarget:
    """The :class:`ScanTarget` of the table's options (all None: the latest snapshot)."""
    core = store.schema.core
    mode = core.get("scan.mode")
    between = core.get("incremental-between")
    if between is not None:
        return ScanTarget(incremental=incremental_bounds(store, between))
    if core.get("incremental-between-timestamp") is not None:
        return ScanTarget(incremental=timestamp_range(store, core.get("incremental-between-timestamp")))
    if mode == "incremental":
        raise OptionError("scan.mode 'incremental' needs 'incremental-between'")
    millis = core.get("scan.timestamp-millis")
    if millis is None and core.get("scan.timestamp") is not None:
        millis = machine_zone_millis(core.get("scan.timestamp"))
    target = ScanTarget(core.get("scan.snapshot-id"), core.get("scan.tag-name"), millis)
    if core.get("scan.watermark") is not None:
        target = ScanTarget(snapshot_id=watermark_snapshot(store, core.get("scan.watermark")))
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
        raise OptionError("scan.mode 'from-timestamp' needs 'scan.timestamp-millis' or 'scan.timestamp'")
    return target
