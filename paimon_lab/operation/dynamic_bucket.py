"""Bucket assignment of primary-key tables in dynamic bucket mode ('bucket' = '-1').

Each partition keeps, per bucket, a HASH index file listing the 32-bit hashes of the keys the
bucket holds. A key already indexed stays in its bucket; a new key goes to the first bucket
with room (fewer than ``dynamic-bucket.target-row-num`` keys), and new buckets open when all are
full. Everything is numpy over hash arrays: sorted lookups, no per-row Python.

Cross-partition-update tables (primary key without all partition keys) are seeded from the data
instead: Java routes them through a key index of its own (RocksDB, bootstrapped from the data
files) and writes no HASH index for them, so the writer reads each key's partition and bucket.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pyarrow as pa

from paimon_lab.core.hash_index import hash_index_bytes, read_hash_index
from paimon_lab.core.index_manifest import (
    HASH_INDEX,
    IndexFileMeta,
    IndexManifestEntry,
    index_file_path,
)
from paimon_lab.core.manifest import FileNamer
from paimon_lab.errors import CorruptFileError
from paimon_lab.io.file_io import join
from paimon_lab.mergetree.lookup_files import LocalCache
from paimon_lab.store.file_store import live_index_entries
from paimon_lab.utils.parallel import thread_map

if TYPE_CHECKING:
    from paimon_lab.core.snapshot import Snapshot
    from paimon_lab.store.file_store import FileStore

ADD, DELETE = 0, 1
_MAX_RUNS = 8   # sorted runs of a bucket's hashes kept apart before they are merged into one
_PARALLEL_HASHES = 1 << 20   # HASH files of a commit written on threads from this many hashes (4 MiB)


def _unique_sorted(values: np.ndarray) -> np.ndarray:
    if len(values) == 0:
        return values
    s = np.sort(values)
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


class PartitionIndex:
    """Key hash -> bucket of one partition, with the index files it came from.

    Each bucket's hashes are kept as a few sorted runs, as read once from its HASH file into the
    local cache (memory-mapped, keyed by the immutable file's name), so assigning a few keys costs
    binary searches rather than reading and sorting the partition's whole index. A commit adds
    its new keys as one more run instead of rewriting the sorted copy; past ``_MAX_RUNS`` runs
    they are merged into one."""

    def __init__(self, store: FileStore, partition: bytes, entries: list[IndexManifestEntry], target_rows: int,
                 seed: tuple[np.ndarray, np.ndarray] | None = None, base_counts: dict[int, int] | None = None):
        self.store, self.partition, self.target = store, partition, target_rows
        self.files: dict[int, IndexManifestEntry] = {e.bucket: e for e in entries}
        self.sorted: dict[int, list[np.ndarray]] = {}   # each bucket's hashes: sorted, disjoint runs
        self.seeded = seed is not None
        if seed is not None:  # (key hashes, buckets) known from elsewhere: the files are not read
            hashes, buckets = np.asarray(seed[0], np.int32), np.asarray(seed[1], np.int32)
            for b in np.unique(buckets):
                self.sorted[int(b)] = [np.sort(hashes[buckets == b])]
        # keys known to live in a bucket whose hashes are not at hand (a cross-partition table's key index)
        self.base_counts = dict(base_counts or {})
        self.added: dict[int, list[np.ndarray]] = {}
        self._loaded = self.seeded

    def _load(self) -> None:
        if self._loaded:
            return
        cache = LocalCache(self.store)
        for bucket, e in sorted(self.files.items()):
            meta = e.index_file

            def build(meta=meta) -> pa.Table:
                path = index_file_path(self.store.path, meta)
                try:
                    h = read_hash_index(self.store.file_io.read_bytes(path))
                except FileNotFoundError:
                    raise CorruptFileError(f"Hash index file {path} is missing") from None
                # ours are sorted runs (a sorted file and the tails appended to it), Java's are in
                # its hash set's order: a stable sort (timsort) merges runs in a pass or two
                return pa.table({"hash": h if _is_sorted(h) else np.sort(h, kind="stable")})

            table = cache.get(_cache_name(meta), _stamp(meta), build, _check(meta))
            self.sorted[bucket] = [c.to_numpy() for c in table.column(0).chunks if len(c)]   # each chunk a run
        self._loaded = True

    def counts(self) -> dict[int, int]:
        self._load()
        out = dict(self.base_counts)
        for b, parts in [*self.sorted.items(), *self.added.items()]:
            out[b] = out.get(b, 0) + sum(len(p) for p in parts)
        for b in self.files:
            out.setdefault(b, 0)
        return out

    def assign(self, key_hashes: np.ndarray) -> np.ndarray:
        """Buckets for the given key hashes, opening buckets for new keys as needed."""
        key_hashes = key_hashes.astype(np.int32, copy=False)
        known = self._lookup(key_hashes)
        new = _unique_sorted(key_hashes[known < 0])
        if len(new):
            counts = self.counts()
            slots: list[np.ndarray] = []
            need = len(new)
            for b in sorted(counts):
                room = self.target - counts[b]
                if room > 0 and need > 0:
                    take = min(room, need)
                    slots.append(np.full(take, b, dtype=np.int32))
                    need -= take
            next_bucket = max(counts, default=-1) + 1
            while need > 0:
                take = min(self.target, need)
                slots.append(np.full(take, next_bucket, dtype=np.int32))
                need -= take
                next_bucket += 1
            new_buckets = np.concatenate(slots)
            for b in np.flatnonzero(np.bincount(new_buckets)):
                self.added.setdefault(int(b), []).append(new[new_buckets == b])
            known = self._lookup(key_hashes)
        return known

    def _lookup(self, key_hashes: np.ndarray) -> np.ndarray:
        """Each hash's bucket (the lowest bucket holding it), -1 where no bucket does."""
        self._load()
        out = np.full(len(key_hashes), -1, dtype=np.int32)
        groups = list(self.sorted.items()) + list(self.added.items())
        for bucket, parts in sorted(groups, key=lambda g: g[0], reverse=True):
            for h in parts:
                if len(h) == 0:
                    continue
                pos = np.minimum(np.searchsorted(h, key_hashes), len(h) - 1)
                out[h[pos] == key_hashes] = bucket
        return out

    def new_files(self, namer: FileNamer) -> list[NewHashFile]:
        """The new HASH file of every bucket that gained keys."""
        self._load()
        out = []
        for bucket in sorted(self.added):
            added = np.sort(np.concatenate(self.added[bucket]))
            runs = [*self.sorted.get(bucket, []), added]
            if len(runs) > _MAX_RUNS:
                runs = [np.sort(np.concatenate(runs), kind="stable")]   # timsort merges the runs
            old = None if self.seeded else self.files.get(bucket)   # seeded: hashes not from the file
            out.append(NewHashFile(bucket, namer.next(), runs, added,
                                   None if old is None else index_file_path(self.store.path, old.index_file),
                                   0 if old is None else old.index_file.file_size))
        return out

    def index_changes(self, written: list[NewHashFile]) -> list[IndexManifestEntry]:
        """The index changes once the ``new_files`` are written: ADD each, DELETE the file it replaces."""
        cache = LocalCache(self.store)
        out = []
        for bucket, name, runs, _, _, _ in written:
            rows = sum(len(r) for r in runs)
            old = self.files.get(bucket)
            if old is not None:
                out.append(IndexManifestEntry(DELETE, self.partition, bucket, old.index_file))
                cache.forget(_cache_name(old.index_file))   # superseded: not needed again here
            entry = IndexManifestEntry(ADD, self.partition, bucket, IndexFileMeta.for_hash(name, 4 * rows, rows))
            # the next writer of this process finds the runs in memory, not read back from disk
            cache.keep(_cache_name(entry.index_file), _stamp(entry.index_file),
                       pa.Table.from_arrays([pa.chunked_array(runs, pa.int32())], names=["hash"]))
            out.append(entry)
            self.files[bucket] = entry
            self.sorted[bucket] = runs
        self.added = {}
        return out


class NewHashFile(NamedTuple):
    """A bucket's next HASH file: all its hashes (sorted, disjoint ``runs``), the ``added`` ones
    among them, and the file it replaces (None: the bucket's first) with that file's size."""
    bucket: int
    name: str
    runs: list[np.ndarray]
    added: np.ndarray
    old_path: str | None
    old_size: int


def _is_sorted(h: np.ndarray) -> bool:
    return bool(np.all(h[1:] > h[:-1]))


def _cache_name(meta: IndexFileMeta) -> str:
    """The local cache entry holding the hashes of HASH index file ``meta`` (sorted runs)."""
    return "hash-" + meta.file_name


def _stamp(meta: IndexFileMeta) -> dict:
    return {"file_size": meta.file_size, "row_count": meta.row_count}


def _check(meta: IndexFileMeta) -> Callable[[pa.Table], bool]:
    return lambda t: t.num_rows == meta.row_count and t.schema.types == [pa.int32()]


class DynamicBucketAssigner:
    """Assigns buckets across partitions and collects the HASH index changes to commit."""

    def __init__(self, store: FileStore, base: Callable[[], Snapshot | None] | None = None):
        self.store = store
        self.base = base  # the snapshot whose hash indexes assign (default: the latest)
        self.target = store.schema.core.get("dynamic-bucket.target-row-num")
        self.partitions: dict[bytes, PartitionIndex] = {}
        # cross-partition-update tables: each partition's (key hashes, buckets) read from its data
        # (None: from the HASH index files)
        self.seeds: dict[bytes, tuple[np.ndarray, np.ndarray]] | None = None
        # cross-partition-update tables routed by their key index: keys per bucket of each partition
        self.base_counts: dict[bytes, dict[int, int]] | None = None
        self._entries: dict[bytes, list[IndexManifestEntry]] | None = None
        self.namer = FileNamer("index-")
        self._written: list[str] = []   # index files being written, not yet handed over to a commit

    def index_for(self, partition: bytes) -> PartitionIndex:
        idx = self.partitions.get(partition)
        if idx is None:
            if self._entries is None:
                self._entries = {}
                snapshot = self.base() if self.base is not None else self.store.snapshot_manager.latest()
                for e in live_index_entries(self.store, HASH_INDEX, snapshot) if snapshot is not None else []:
                    self._entries.setdefault(e.partition, []).append(e)
            seed = None if self.seeds is None else self.seeds.get(partition, (np.zeros(0, np.int32),) * 2)
            counts = None
            if self.base_counts is not None:
                seed, counts = (np.zeros(0, np.int32),) * 2, self.base_counts.get(partition, {})
            idx = self.partitions[partition] = PartitionIndex(
                self.store, partition, self._entries.get(partition, []), self.target, seed, counts)
        return idx

    def index_changes(self) -> dict[tuple[bytes, int], list[IndexManifestEntry]]:
        """Write a new HASH file for every bucket that gained keys; the changes to commit by bucket."""
        planned = {p: idx.new_files(self.namer) for p, idx in self.partitions.items()}
        written = [f for files in planned.values() for f in files]
        self._written = [f.name for f in written]
        file_io = self.store.file_io

        def write(f: NewHashFile) -> None:
            path = join(self.store.path, "index", f.name)
            # Java's format has no order: the old file's bytes (copied by the kernel), then the
            # new keys' hashes; where that cannot be had, every run
            if f.old_path is None or file_io.copy_append(path, f.old_path, hash_index_bytes(f.added)) != f.old_size:
                file_io.write_bytes(path, hash_index_bytes(np.concatenate(f.runs)))

        # megabytes of files are written in parallel; below that, starting threads costs more
        if sum(len(r) for f in written for r in f.runs) >= _PARALLEL_HASHES:
            thread_map(write, written)
        else:
            for file in written:
                write(file)
        out: dict[tuple[bytes, int], list[IndexManifestEntry]] = {}
        for p, files in planned.items():
            for e in self.partitions[p].index_changes(files):
                out.setdefault((e.partition, e.bucket), []).append(e)
        self._written = []   # handed over: the commit's messages name them now
        return out

    def written_paths(self) -> list[str]:
        return [join(self.store.path, "index", name) for name in self._written]
