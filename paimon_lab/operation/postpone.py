"""Postpone-bucket tables (``'bucket' = -2``, Paimon 1.1+).

A write puts primary-key rows unsorted and unmerged, in arrival order, into the partition's
``bucket-postpone`` directory (manifest bucket -2, total buckets -2, Avro files without stats, as
Java's ``PostponeBucketFileStoreWrite``); batch reads skip them. :func:`compact_postponed` replays
each partition's postponed files oldest first (by creation time) through a fixed-bucket writer with
the partition's bucket count (the total buckets its real-bucket files record, else
'postpone.default-bucket-num', else an estimate from the postponed rows or bytes), so later rows get
higher sequence numbers and win; it commits the moved rows and the removal of the postponed files
as one COMPACT snapshot, after which reads see them."""

from __future__ import annotations

import random
import uuid
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.core.file_format import avro_schema
from paimon_lab.core.key_value import VALUE_KIND
from paimon_lab.core.manifest import DataFileMeta, FileNamer, ManifestEntry
from paimon_lab.core.options import CoreOptions
from paimon_lab.core.predicate import Predicate
from paimon_lab.core.schema import POSTPONE_BUCKET
from paimon_lab.errors import OptionError, PaimonLabError
from paimon_lab.io.file_io import join
from paimon_lab.mergetree.compact_rewriter import BucketFiles
from paimon_lab.operation.commit import FileStoreCommit
from paimon_lab.operation.kv_write import KeyValueFileStoreWrite
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.operation.write_input import group_indices
from paimon_lab.store.commit_message import CommitMessage

if TYPE_CHECKING:
    from paimon_lab.core.snapshot import Snapshot
    from paimon_lab.store.file_store import FileStore


class PostponeBucketWrite(KeyValueFileStoreWrite):
    """Writes of a postpone-bucket table: each flush appends, per partition, the rows as they came
    to ``bucket-postpone`` files; nothing is merged, restored or compacted."""

    def __init__(self, store: FileStore, commit_user: str, ignore_previous_files: bool = False,
                 file_uuid: str | None = None):
        super().__init__(store, commit_user, ignore_previous_files, file_uuid=file_uuid,
                         total_buckets=POSTPONE_BUCKET)
        raw = dict(self.core.raw)
        try:  # Java writes postponed rows as Avro without stats, unless Avro cannot hold the row type
            avro_schema(list(self.layout.file_fields))
            raw.update({"file.format": "avro", "metadata.stats-mode": "none"})
        except (PaimonLabError, KeyError, TypeError, ValueError):
            pass
        self.file_options = CoreOptions(raw, primary_keys=True)
        # Java's per-writer prefix: files of one writer replay together, in their order
        prefix = f"{self.core.get('data-file.prefix')}-u-{commit_user}-s-{random.randrange(2**31 - 1)}-w-"
        self.postpone_namer = FileNamer(prefix, "." + self.file_options.file_format)
        if file_uuid:
            self.postpone_namer.uuid = file_uuid
        self.namers: dict[bytes, FileNamer] = {}
        self.spillable = False   # a full buffer is written out as it came, as Java's postpone writer does
        self.postponed: dict[bytes, list[DataFileMeta]] = {}
        self.sequence = 0

    def flush(self) -> None:
        if not self.buffer:
            return
        rows, kinds = self._take_buffer()
        codec, io = self.store.partition_codec, self.store.file_io
        for key, idx in group_indices(rows, list(self.schema.partition_keys)):
            part_rows = rows if idx is None else rows.take(idx)
            part_kinds = kinds if idx is None else kinds[idx.to_numpy()]
            pbytes = codec.to_bytes(key)
            kv = self.layout.to_kv(part_rows, part_kinds, self.sequence)
            self.sequence += part_rows.num_rows
            directory = self.store.bucket_path(pbytes, POSTPONE_BUCKET)
            namer = self.namers.get(pbytes)
            if namer is None:
                namer = self.namers[pbytes] = self.postpone_namer.for_bucket(pbytes, POSTPONE_BUCKET)
            metas = self.layout.write_sorted(io, kv, self.file_options, 0, lambda d=directory, n=namer: join(d, n.next()))
            self.postponed.setdefault(pbytes, []).extend(metas)

    def compact(self, full: bool, partition_filter=None) -> None:
        raise PaimonLabError("A postpone-bucket table is compacted by compact_postponed")

    def prepare_commit(self) -> list[CommitMessage]:
        self.flush()
        base = self.base_snapshot()
        out = [CommitMessage(part, POSTPONE_BUCKET, POSTPONE_BUCKET, files,
                             base_snapshot=base.id if base is not None else 0)
               for part, files in self.postponed.items() if files]
        self.postponed = {}
        return out

    def abort(self) -> None:
        self.buffer = []
        self.store.file_io.delete_quietly([join(self.store.bucket_path(p, POSTPONE_BUCKET), f.file_name)
                                           for p, files in self.postponed.items() for f in files])
        self.postponed = {}


class _RealBucketWrite(KeyValueFileStoreWrite):
    """A fixed-bucket writer for one partition of a postpone-bucket table, over its real buckets."""

    def __init__(self, store: FileStore, commit_user: str, total_buckets: int, partition: bytes,
                 base: Snapshot):
        super().__init__(store, commit_user, total_buckets=total_buckets)
        self._partition = partition
        self._base = (base,)

    def restored(self) -> dict[tuple[bytes, int], list[DataFileMeta]]:
        if self._restored is None:
            entries = FileStoreScan(self.store).files_by_bucket(self.base_snapshot())
            self._restored = {key: [e.file for e in es] for key, es in entries.items()
                              if key[0] == self._partition and key[1] >= 0}
        return self._restored


def new_partition_buckets(store: FileStore, postponed: list[ManifestEntry]) -> int:
    """The bucket count of a partition without real buckets yet: 'postpone.default-bucket-num', else
    the postponed rows over 'postpone.target-row-num-per-bucket', else their bytes over
    'postpone.target-size-per-bucket' (rounded up, at least 1), as Java's PostponeUtils."""
    core = store.schema.core
    default = core.get("postpone.default-bucket-num")
    if default is not None:
        if default <= 0:
            raise OptionError(f"'postpone.default-bucket-num' must be greater than 0, got {default}")
        return default
    target_rows = core.get("postpone.target-row-num-per-bucket")
    if target_rows is not None:
        key, target, value = "postpone.target-row-num-per-bucket", target_rows, sum(e.file.row_count for e in postponed)
    else:
        key, target = "postpone.target-size-per-bucket", core.get("postpone.target-size-per-bucket")
        value = sum(e.file.file_size for e in postponed)
    if target <= 0:
        raise OptionError(f"Option '{key}' must be greater than 0.")
    return 1 if value <= 0 else (value - 1) // target + 1


def _as_compaction(msg: CommitMessage, io, directory: str) -> CommitMessage:
    """Java's PostponeBucketCommittableRewriter: the writer's new files become compaction output
    (the whole move is one COMPACT snapshot); a new file a compaction already consumed cancels out
    and is deleted."""
    after = msg.new_files + msg.compact_after
    before = list(msg.compact_before)
    cancelled = {(f.file_name, f.level) for f in after} & {(f.file_name, f.level) for f in before}
    after = [f for f in after if (f.file_name, f.level) not in cancelled]
    before = [f for f in before if (f.file_name, f.level) not in cancelled]
    kept = {f.file_name for f in after}
    io.delete_quietly([join(directory, name) for name, _ in cancelled if name not in kept])
    out = CommitMessage(msg.partition, msg.bucket, msg.total_buckets, compact_before=before, compact_after=after,
                        compact_changelog=msg.changelog_files + msg.compact_changelog,
                        compact_index_changes=msg.index_changes + msg.compact_index_changes)
    out.base_snapshot = msg.base_snapshot
    return out


def compact_postponed(store: FileStore, full: bool = False, partition_filter: Predicate | None = None) -> int | None:
    """Move the postponed rows of every partition (or the matching ones) into real buckets and
    compact the buckets they land in and those with level-0 files (``full``: every bucket, into
    its top level); the COMPACT snapshot id, or None if there was nothing to do."""
    latest = store.snapshot_manager.latest()
    if latest is None:
        return None
    postponed: dict[bytes, list[ManifestEntry]] = {}
    known: dict[bytes, int] = {}
    level0: set[bytes] = set()
    for e in FileStoreScan(store).read_entries(latest, partition_filter):
        if e.bucket == POSTPONE_BUCKET:
            postponed.setdefault(e.partition, []).append(e)
            continue
        if known.setdefault(e.partition, e.total_buckets) != e.total_buckets:
            raise PaimonLabError(f"Partition {store.partition_codec.to_dict(e.partition)} has files with "
                                 f"{known[e.partition]} and with {e.total_buckets} total buckets")
        if e.file.level == 0 or full:
            level0.add(e.partition)
    commit_user = str(uuid.uuid4())
    layout = store.kv_layout
    messages: list[CommitMessage] = []
    try:
        for part in sorted(set(postponed) | level0):
            entries = postponed.get(part, [])
            write = _RealBucketWrite(store, commit_user, known.get(part) or new_partition_buckets(store, entries),
                                     part, latest)
            if entries:
                files = BucketFiles(store, layout, part, POSTPONE_BUCKET)
                ordered = sorted(entries, key=lambda e: e.file.creation_time_millis or 0)  # stable: commit order
                kv = pa.concat_tables([files.read_file(e.file) for e in ordered])
                write.buffer.append((layout.values(kv), kv.column(VALUE_KIND).to_numpy()))
                write.flush()
            write.compact(full)
            if full:
                for key, w in write.writers.items():
                    if key not in write.restored():
                        w.compact_until_done(True)
            for msg in write.prepare_commit():
                moved = _as_compaction(msg, store.file_io, store.bucket_path(msg.partition, msg.bucket))
                if moved.compacted:
                    messages.append(moved)
            if entries:
                messages.append(CommitMessage(part, POSTPONE_BUCKET, POSTPONE_BUCKET,
                                              compact_before=[e.file for e in entries]))
        if not messages:
            return None
        _, compact_id = FileStoreCommit(store, commit_user).commit(messages)
    except BaseException:
        store.discard(messages)
        raise
    return compact_id
