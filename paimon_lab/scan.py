"""Scan planning: from a snapshot to the data files a read needs, pruned by statistics.

Pruning happens at three levels, cheapest first: manifests by their partition statistics,
manifest entries by their exact partition values, data files by their column statistics.
The filter is still applied to rows by the reader; pruning only skips what cannot match.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .manifest import ADD, DataFileMeta, ManifestEntry, ManifestFileMeta, merge_entries
from .predicate import Predicate
from .snapshot import Snapshot
from .stats import decode_stats

if TYPE_CHECKING:
    from .table import Table


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


class ManifestCache:
    """Manifests never change once written, so their decoded entries can be kept."""

    def __init__(self, capacity: int = 4096):
        self.capacity = capacity
        self.items: OrderedDict[str, list[ManifestEntry]] = OrderedDict()

    def get(self, name: str, load) -> list[ManifestEntry]:
        got = self.items.get(name)
        if got is None:
            got = load(name)
            self.items[name] = got
            if len(self.items) > self.capacity:
                self.items.popitem(last=False)
        else:
            self.items.move_to_end(name)
        return got


class FileStoreScan:
    def __init__(self, table: "Table"):
        self.table = table

    def manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        mio = self.table.manifest_io
        return mio.read_manifest_list(snapshot.base_manifest_list) + \
            mio.read_manifest_list(snapshot.delta_manifest_list)

    def _partition_stats_match(self, meta: ManifestFileMeta, pred: Predicate | None) -> bool:
        if pred is None:
            return True
        fields = self.table.schema.partition_fields
        stats = decode_stats(meta.partition_stats, fields)
        return pred.may_match(stats, meta.num_added_files + meta.num_deleted_files)

    def read_entries(self, snapshot: Snapshot, partition_filter: Predicate | None = None,
                     bucket: int | None = None) -> list[ManifestEntry]:
        """Live ADD entries of a snapshot, restricted to matching partitions (and one bucket)."""
        cache = self.table.manifest_cache
        load = self.table.manifest_io.read_manifest
        codec = self.table.partition_codec
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
        fields = self.table.stats_fields(file)
        if fields and not pred.may_match(decode_stats(file.value_stats, fields), file.row_count):
            return False
        if file.embedded_index and file.schema_id == self.table.schema.id:
            from .fileindex import FileIndexReader

            return FileIndexReader(file.embedded_index, list(self.table.schema.fields)).may_match(pred)
        return True

    def plan(self, snapshot: Snapshot, predicate: Predicate | None = None) -> list[DataSplit]:
        """Splits of a snapshot: live files grouped by partition and bucket, pruned by ``predicate``."""
        schema = self.table.schema
        part_names = {f.name for f in schema.partition_fields}
        part_pred = predicate.restrict(part_names) if predicate is not None else None
        entries = self.read_entries(snapshot, part_pred)
        if predicate is not None and schema.primary_keys:
            # Versions of a row live in several files; only key columns may skip a file.
            predicate = predicate.restrict(set(schema.primary_keys))
        groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        for e in entries:
            if predicate is not None and not self.file_may_match(e.file, predicate):
                continue
            groups.setdefault((e.partition, e.bucket), []).append(e.file)
        splits = []
        for (part, bucket), files in groups.items():
            files.sort(key=lambda f: (f.min_sequence_number, f.file_name))
            splits.append(DataSplit(part, bucket, files, snapshot.id, snapshot))
        splits.sort(key=lambda s: (s.partition, s.bucket))
        return splits
