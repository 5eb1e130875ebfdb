"""Writes in which any number of Spark tasks write the same bucket, committed as one snapshot.

``df.write.format("paimon")`` hands each Spark task whatever rows its DataFrame partition holds:
the Python data source API cannot ask Spark to shuffle by bucket first (Java's connector can). So
every task may write every bucket, and this module makes that give the result one writer would:

* **Sequence numbers.** The driver pins the table's latest snapshot when it plans the write
  (``writer()``); every task restores each bucket from that snapshot and numbers its rows from
  ``bucket's max sequence number + 1 + partitionId * 2**32``, increasing with the row position in
  its partition. Ranges of different tasks never overlap, and a task's range lies above those of
  lower partition ids: merging the level-0 files by sequence number is exactly a single writer
  reading the DataFrame partition by partition, row by row (the last row of a key wins for
  deduplicate, the first for first-row, partial-update and aggregation apply rows in that
  order). A task writing more than 2**32 rows into one bucket fails. A bucket's sequence numbers
  grow by up to (highest partition id + 1) * 2**32 per write: int64 lasts for two million
  writes of a thousand-partition DataFrame.
* **Write-only tasks.** Tasks write level-0 files (and ``input`` changelog) and never compact:
  two tasks compacting one bucket's old files would replace them twice. The commit, on the
  driver, commits all tasks' files as one APPEND snapshot and then does what the writers would
  have done at commit, in a COMPACT snapshot: the universal compaction the buckets call for,
  level 0 lifted on tables whose reads skip it (deletion vectors, first-row, lookup changelog),
  full compaction when ``full-compaction.delta-commits`` is due; fixed-bucket append tables get
  their small-file compaction. ``write-only`` tables get none.
* **Dynamic buckets** (``bucket = -1``). Keys already in the pinned HASH index keep their bucket.
  A new key's bucket is a function of its hash and the pinned index alone, so every task puts it
  in the same bucket: the buckets with room (fewer than ``dynamic-bucket.target-row-num`` keys)
  share the new keys by hash; when none has room, ``dynamic-bucket.initial-buckets`` (default 1)
  new buckets open. A big write can therefore fill a bucket past the target (paimon_lab's own
  writer and ``write_table`` open buckets by count). Tasks return the hashes they added; the
  commit writes one merged HASH index file per bucket.
* **Cross-partition updates** (dynamic bucket, primary key without all partition keys) need every
  key seen by one writer: batch tasks stage their rows (``datasource._stage_task``) and the
  commit writes them through one ``TableWriter`` in task order; a streaming commit in which more
  than one task wrote such a table is refused with a pointer to :func:`paimon_lab.spark.write_table`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from paimon_lab.operation.dynamic_bucket import DynamicBucketAssigner, PartitionIndex
from paimon_lab.store.file_store import live_index_entries
from paimon_lab.errors import OptionError, PaimonLabError, SchemaError
from paimon_lab.io.file_io import join
from paimon_lab.core.hash_index import read_hash_index, write_hash_index
from paimon_lab.core.index_manifest import HASH_INDEX, IndexFileMeta, IndexManifestEntry, index_file_path
from paimon_lab.core.manifest import FileNamer
from paimon_lab.core.schema import is_postpone
from paimon_lab.operation.kv_write import KeyValueFileStoreWrite
from paimon_lab.operation.append_write import AppendWriter
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.utils.parallel import thread_map
from paimon_lab.operation.append_compact import AppendCompactor

if TYPE_CHECKING:
    from paimon_lab.core.snapshot import Snapshot
    from paimon_lab.store.file_store import FileStore

SEQUENCE_STRIDE = 1 << 32  # sequence numbers one task may use in one bucket


def task_index() -> int:
    """The Spark partition id of the running task (0 outside Spark)."""
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover
        return 0
    ctx = TaskContext.get()
    return int(ctx.partitionId()) if ctx is not None else 0


def _restore(store: "FileStore", snapshot: "Snapshot | None", dynamic: bool, total_buckets: int) -> dict:
    out = {}
    for key, entries in FileStoreScan(store).files_by_bucket(snapshot).items() if snapshot is not None else ():
        stale = [e for e in entries if e.total_buckets != total_buckets and not dynamic]
        if stale:
            raise SchemaError(
                f"Partition {store.partition_codec.to_dict(key[0])} was written with {stale[0].total_buckets} "
                f"buckets but the table now has {total_buckets}; rescale it with an overwrite of that partition first")
        out[key] = [e.file for e in entries]
    return out


def _mix(hashes: np.ndarray) -> np.ndarray:
    """A 32-bit finalizer (murmur3 fmix32) so that new-bucket choice is independent of bucket_of."""
    h = hashes.astype(np.int64).astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


class SharedPartitionIndex(PartitionIndex):
    """A partition's pinned HASH index; new keys are placed by hash alone (see module doc)."""

    def __init__(self, store: "FileStore", partition: bytes, entries: list, target_rows: int, new_buckets: int,
                 seed: tuple[np.ndarray, np.ndarray] | None = None, base_counts: dict[int, int] | None = None):
        super().__init__(store, partition, entries, target_rows, seed, base_counts)
        counts = self.counts()
        room = sorted(b for b, c in counts.items() if c < target_rows)
        if not room:
            start = max(counts, default=-1) + 1
            room = list(range(start, start + max(1, new_buckets)))
        self.open = np.asarray(room, np.int32)
        self.new_hashes: list[np.ndarray] = []

    def assign(self, key_hashes: np.ndarray) -> np.ndarray:
        key_hashes = key_hashes.astype(np.int32, copy=False)
        buckets = self._lookup(key_hashes)
        miss = buckets < 0
        if miss.any():
            new = key_hashes[miss]
            buckets[miss] = self.open[(_mix(new) % np.uint32(len(self.open))).astype(np.int64)]
            self.new_hashes.append(new)
        return buckets

    def added_by_bucket(self) -> dict[int, np.ndarray]:
        if not self.new_hashes:
            return {}
        new = np.unique(np.concatenate(self.new_hashes))
        where = self.open[(_mix(new) % np.uint32(len(self.open))).astype(np.int64)]
        return {int(b): new[where == b] for b in np.unique(where)}


class SharedBucketAssigner(DynamicBucketAssigner):
    def __init__(self, store: "FileStore", snapshot: "Snapshot | None"):
        super().__init__(store)
        self.snapshot = snapshot
        self.new_buckets = store.schema.core.get("dynamic-bucket.initial-buckets") or 1

    def index_for(self, partition: bytes) -> PartitionIndex:
        idx = self.partitions.get(partition)
        if idx is None:
            if self._entries is None:
                self._entries = {}
                entries = live_index_entries(self.store, HASH_INDEX, self.snapshot) if self.snapshot else []
                for e in entries:
                    self._entries.setdefault(e.partition, []).append(e)
            seed = None if self.seeds is None else self.seeds.get(partition, (np.zeros(0, np.int32),) * 2)
            counts = None
            if self.base_counts is not None:
                seed, counts = (np.zeros(0, np.int32),) * 2, self.base_counts.get(partition, {})
            idx = self.partitions[partition] = SharedPartitionIndex(
                self.store, partition, self._entries.get(partition, []), self.target, self.new_buckets, seed, counts)
        return idx

    def index_changes(self) -> dict:
        return {}  # the commit merges every task's additions (merge_hash_index)

    def added(self) -> dict[tuple[bytes, int], np.ndarray]:
        return {(p, b): h for p, idx in self.partitions.items() for b, h in idx.added_by_bucket().items()}


class SharedKeyValueWrite(KeyValueFileStoreWrite):
    """A primary-key writer for one task of a shared write: pinned snapshot, its own sequence
    range per bucket, no compaction."""

    def __init__(self, store: "FileStore", commit_user: str, snapshot: "Snapshot | None", task: int, *,
                 overwrite: bool = False, file_uuid: str | None = None):
        super().__init__(store, commit_user, overwrite, file_uuid=file_uuid)
        self.snapshot, self.task = snapshot, task
        self.write_only = True
        self.compact_at_commit = False
        if self.dynamic:
            self.assigner = SharedBucketAssigner(store, snapshot)
        self._limits: dict[tuple[bytes, int], int] = {}

    def _full_compaction_due(self) -> bool:
        return False

    def deletion_vectors(self, partition: bytes, bucket: int) -> tuple:
        return None, {}  # only compactions (the commit's) touch vectors

    def base_snapshot(self) -> "Snapshot | None":
        return self.snapshot  # the job's pinned snapshot: the base its commit is rebased from

    def restored(self) -> dict:
        if self._restored is None:
            snap = None if self.ignore_previous_files else self.snapshot
            self._restored = _restore(self.store, snap, self.dynamic, self.total_buckets)
        return self._restored

    def writer(self, partition: bytes, bucket: int):
        key = (partition, bucket)
        fresh = key not in self.writers
        w = super().writer(partition, bucket)
        if fresh:
            w.next_sequence += self.task * SEQUENCE_STRIDE
            self._limits[key] = w.next_sequence + SEQUENCE_STRIDE
        return w

    def prepare_commit(self) -> list[CommitMessage]:
        messages = super().prepare_commit()
        for key, w in self.writers.items():
            if w.next_sequence > self._limits[key]:
                raise PaimonLabError(f"One Spark task wrote more than {SEQUENCE_STRIDE} rows into bucket {key[1]}; "
                                     "repartition the DataFrame into more partitions")
        return messages

    def added_hashes(self) -> dict[tuple[bytes, int], np.ndarray]:
        if self.cross_partition:
            return {}   # routed by the key index: no HASH index, as Java
        return self.assigner.added() if isinstance(self.assigner, SharedBucketAssigner) else {}


class SharedAppendWrite(AppendWriter):
    """An append writer for one task of a shared write: pinned snapshot, its own sequence range
    per bucket (fixed-bucket tables), no compaction."""

    def __init__(self, store: "FileStore", commit_user: str, snapshot: "Snapshot | None", task: int, *,
                 overwrite: bool = False, file_uuid: str | None = None):
        super().__init__(store, commit_user, overwrite, file_uuid=file_uuid)
        self.snapshot, self.task = snapshot, task

    def restored(self) -> dict:
        if self._restored is None:
            snap = None if self.ignore_previous_files else self.snapshot
            self._restored_snapshot = snap
            self._restored = {k: [e.file for e in v] for k, v in FileStoreScan(self.store).files_by_bucket(snap).items()} \
                if snap is not None else {}
        return self._restored

    def _start_sequence(self, key: tuple[bytes, int]) -> int:
        fresh = key not in self._next_seq
        seq = super()._start_sequence(key)
        if fresh and self.num_buckets > 0:
            seq += self.task * SEQUENCE_STRIDE
        return seq

    def prepare_commit(self) -> list[CommitMessage]:
        self.flush()
        out = [m for m in self.messages.values() if m.new_files]
        self.messages = {}
        return out

    def added_hashes(self) -> dict:
        return {}


def task_writer(store: "FileStore", commit_user: str, snapshot: "Snapshot | None", task: int, *, overwrite: bool,
                file_uuid: str | None):
    if is_postpone(store.schema):
        raise OptionError(f"{store.identifier}: Spark writes to a postpone-bucket table ('bucket' = -2) are not "
                          "supported; write it with Table.write or SQL INSERT")
    cls = SharedKeyValueWrite if store.schema.primary_keys else SharedAppendWrite
    return cls(store, commit_user, snapshot, task, overwrite=overwrite, file_uuid=file_uuid)


def cross_partition(store: "FileStore") -> bool:
    s = store.schema
    return bool(s.primary_keys) and s.core.bucket <= 0 and any(k not in s.primary_keys for k in s.partition_keys)


def merge_hash_index(store: "FileStore", snapshot: "Snapshot | None",
                     added: list[dict[tuple[bytes, int], np.ndarray]], namer: FileNamer) -> list[CommitMessage]:
    """One new HASH index file per bucket that gained keys in any task: the pinned file's hashes
    plus every task's, replacing the pinned file."""
    wanted: dict[tuple[bytes, int], list[np.ndarray]] = {}
    for task in added:
        for key, hashes in task.items():
            wanted.setdefault(key, []).append(hashes)
    if not wanted:
        return []
    pinned = {(e.partition, e.bucket): e for e in (live_index_entries(store, HASH_INDEX, snapshot) if snapshot else [])}
    out = []
    for (part, bucket), parts in sorted(wanted.items()):
        old = pinned.get((part, bucket))
        if old is not None:
            parts = parts + [read_hash_index(store.file_io.read_bytes(index_file_path(store.path, old.index_file)))]
        hashes = np.unique(np.concatenate(parts).astype(np.int32))
        data = write_hash_index(hashes)
        name = namer.next()
        store.file_io.write_bytes(join(store.path, "index", name), data)
        changes = [] if old is None else [IndexManifestEntry(1, part, bucket, old.index_file)]
        changes.append(IndexManifestEntry(0, part, bucket, IndexFileMeta.for_hash(name, len(data), len(hashes))))
        out.append(CommitMessage(part, bucket, store.schema.core.bucket, index_changes=changes))
    return out


def commit_compaction(store: "FileStore", commit_user: str, touched: set[tuple[bytes, int]]) -> list[CommitMessage]:
    """The compaction the writers of ``touched`` buckets would have done at commit, on the latest
    snapshot (just committed): see the module doc. Returns the messages to commit (COMPACT)."""
    core = store.schema.core
    if core.get("write-only") or not touched:
        return []
    messages: list[CommitMessage] = []
    if store.schema.primary_keys:

        write = KeyValueFileStoreWrite(store, commit_user)
        restored = write.restored()
        keys = sorted(k for k in touched if k in restored)
        full = write._full_compaction_due()
        writers = [write.writer(p, b) for p, b in keys]

        def run(w) -> CommitMessage:
            if not full and not write.compact_at_commit and not write.dv_enabled:
                w.compact(full=False)  # what a flush would have triggered
            return w.prepare_commit(full)

        try:
            done = thread_map(run, writers, desc="compacting written buckets", unit="bucket")
        except BaseException:
            write.abort()
            raise
        messages = [m for m in done if m.compacted]
    elif core.bucket > 0:

        latest = store.snapshot_manager.latest()
        files = FileStoreScan(store).files_by_bucket(latest)
        compactor = AppendCompactor(store)
        for key in sorted(touched):
            entries = files.get(key)
            if not entries:
                continue
            try:
                msg = compactor.compact(key[0], key[1], entries[0].total_buckets, [e.file for e in entries],
                                        full=False, snapshot=latest)
            except BaseException:
                store.discard(messages)
                raise
            if msg is not None:
                messages.append(msg)
    return messages


__all__ = ["SEQUENCE_STRIDE", "task_index", "task_writer", "merge_hash_index", "commit_compaction",
           "cross_partition", "SharedKeyValueWrite", "SharedAppendWrite"]
