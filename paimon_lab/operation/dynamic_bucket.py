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

from typing import TYPE_CHECKING, Callable

import numpy as np

from paimon_lab.errors import CorruptFileError
from paimon_lab.io.file_io import join
from paimon_lab.core.hash_index import read_hash_index, write_hash_index
from paimon_lab.core.index_manifest import (HASH_INDEX, IndexFileMeta, IndexManifestEntry, index_file_path)
from paimon_lab.core.manifest import FileNamer
from paimon_lab.store.file_store import live_index_entries

if TYPE_CHECKING:
    from paimon_lab.core.snapshot import Snapshot
    from paimon_lab.store.file_store import FileStore

ADD, DELETE = 0, 1


def _unique_sorted(values: np.ndarray) -> np.ndarray:
    if len(values) == 0:
        return values
    s = np.sort(values)
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


class PartitionIndex:
    """Key hash -> bucket of one partition, with the index files it came from."""

    def __init__(self, store: "FileStore", partition: bytes, entries: list[IndexManifestEntry], target_rows: int,
                 seed: tuple[np.ndarray, np.ndarray] | None = None):
        self.store, self.partition, self.target = store, partition, target_rows
        self.files: dict[int, IndexManifestEntry] = {e.bucket: e for e in entries}
        hashes, buckets = [], []
        if seed is not None:  # (key hashes, buckets) known from elsewhere: the files are not read
            hashes, buckets = [np.asarray(seed[0], np.int32)], [np.asarray(seed[1], np.int32)]
        for bucket, e in self.files.items() if seed is None else ():
            path = index_file_path(store.path, e.index_file)
            try:
                h = read_hash_index(store.file_io.read_bytes(path))
            except FileNotFoundError:
                raise CorruptFileError(f"Hash index file {path} is missing") from None
            hashes.append(h)
            buckets.append(np.full(len(h), bucket, dtype=np.int32))
        self.hashes = np.concatenate(hashes) if hashes else np.zeros(0, np.int32)
        self.buckets = np.concatenate(buckets) if buckets else np.zeros(0, np.int32)
        self._sort()
        self.added: dict[int, list[np.ndarray]] = {}

    def _sort(self) -> None:
        order = np.argsort(self.hashes, kind="stable")
        self.hashes, self.buckets = self.hashes[order], self.buckets[order]

    def counts(self) -> dict[int, int]:
        n = np.bincount(self.buckets) if len(self.buckets) else np.zeros(0, np.int64)
        out = {int(b): int(c) for b, c in enumerate(n) if c}
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
            self.hashes = np.concatenate([self.hashes, new])
            self.buckets = np.concatenate([self.buckets, new_buckets])
            self._sort()
            known = self._lookup(key_hashes)
        return known

    def _lookup(self, key_hashes: np.ndarray) -> np.ndarray:
        if len(self.hashes) == 0:
            return np.full(len(key_hashes), -1, dtype=np.int32)
        pos = np.searchsorted(self.hashes, key_hashes)
        pos_c = np.minimum(pos, len(self.hashes) - 1)
        found = self.hashes[pos_c] == key_hashes
        return np.where(found, self.buckets[pos_c], -1).astype(np.int32)

    def index_changes(self, namer: FileNamer) -> list[IndexManifestEntry]:
        """Write a new HASH file for every bucket that gained keys; DELETE the old ones."""
        out = []
        for bucket in sorted(self.added):
            hashes = self.hashes[self.buckets == bucket]
            data = write_hash_index(hashes)
            name = namer.next()
            self.store.file_io.write_bytes(join(self.store.path, "index", name), data)
            old = self.files.get(bucket)
            if old is not None:
                out.append(IndexManifestEntry(DELETE, self.partition, bucket, old.index_file))
            entry = IndexManifestEntry(ADD, self.partition, bucket, IndexFileMeta.for_hash(name, len(data), len(hashes)))
            out.append(entry)
            self.files[bucket] = entry
        self.added = {}
        return out


class DynamicBucketAssigner:
    """Assigns buckets across partitions and collects the HASH index changes to commit."""

    def __init__(self, store: "FileStore", base: "Callable[[], Snapshot | None] | None" = None):
        self.store = store
        self.base = base  # the snapshot whose hash indexes assign (default: the latest)
        self.target = store.schema.core.get("dynamic-bucket.target-row-num")
        self.partitions: dict[bytes, PartitionIndex] = {}
        # cross-partition-update tables: each partition's (key hashes, buckets) read from its data
        # (None: from the HASH index files)
        self.seeds: dict[bytes, tuple[np.ndarray, np.ndarray]] | None = None
        self._entries: dict[bytes, list[IndexManifestEntry]] | None = None
        self.namer = FileNamer("index-")

    def index_for(self, partition: bytes) -> PartitionIndex:
        idx = self.partitions.get(partition)
        if idx is None:
            if self._entries is None:
                self._entries = {}
                snapshot = self.base() if self.base is not None else self.store.snapshot_manager.latest()
                for e in live_index_entries(self.store, HASH_INDEX, snapshot) if snapshot is not None else []:
                    self._entries.setdefault(e.partition, []).append(e)
            seed = None if self.seeds is None else self.seeds.get(partition, (np.zeros(0, np.int32),) * 2)
            idx = self.partitions[partition] = PartitionIndex(
                self.store, partition, self._entries.get(partition, []), self.target, seed)
        return idx

    def index_changes(self) -> dict[tuple[bytes, int], list[IndexManifestEntry]]:
        out: dict[tuple[bytes, int], list[IndexManifestEntry]] = {}
        for idx in self.partitions.values():
            for e in idx.index_changes(self.namer):
                out.setdefault((e.partition, e.bucket), []).append(e)
        return out

    def written_paths(self) -> list[str]:
        return [join(self.store.path, "index", e.index_file.file_name)
                for idx in self.partitions.values() for e in idx.files.values()
                if e.index_file.file_name.startswith(self.namer.prefix + self.namer.uuid)]
