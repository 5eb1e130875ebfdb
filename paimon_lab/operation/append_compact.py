"""Compaction of append tables: rewrite a bucket's small files as fewer, larger ones.

Files are taken in sequence order, so a fixed-bucket (append queue) table keeps its row order.
A bucket is compacted when it has at least ``compaction.min.file-num`` files smaller than the
target file size (at most ``compaction.max.file-num`` per round), or on a full compaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paimon_lab.core.file_format import RollingFileWriter
from paimon_lab.io.file_io import join
from paimon_lab.core.manifest import FILE_SOURCE_COMPACT, DataFileMeta, FileNamer, creation_time_now
from paimon_lab.operation.scan import DataSplit
from paimon_lab.core.stats import collect_stats
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.operation.split_read import TableRead
from paimon_lab.store.file_store import dv_index_entries
from paimon_lab.core.deletion_vector import write_dv_index
from paimon_lab.core.index_manifest import IndexFileMeta, IndexManifestEntry

if TYPE_CHECKING:
    from paimon_lab.core.snapshot import Snapshot
    from paimon_lab.store.file_store import FileStore


def pick_files(files: list[DataFileMeta], target: int, min_num: int, max_num: int,
               full: bool, with_deletions: frozenset[str] = frozenset()) -> list[DataFileMeta]:
    """The files one compaction round rewrites (empty: nothing worth doing). ``with_deletions``:
    names of files that have a deletion vector (a full compaction purges their deleted rows)."""
    ordered = sorted(files, key=lambda f: (f.min_sequence_number, f.file_name))
    if full:
        purge = any(f.delete_row_count or f.file_name in with_deletions for f in ordered)
        return ordered if len(ordered) > 1 or purge else []
    # The longest leading run of small files (big files break runs: their neighbours stay in order).
    run: list[DataFileMeta] = []
    for f in ordered:
        if f.file_size < target:
            run.append(f)
            if len(run) >= max_num:
                break
        elif len(run) >= min_num:
            break
        else:
            run = []
    return run if len(run) >= min_num else []


class AppendCompactor:
    def __init__(self, store: "FileStore"):
        self.store = store
        core = store.schema.core
        self.target = core.target_file_size
        self.min_num = core.get("compaction.min.file-num")
        self.max_num = core.get("compaction.max.file-num")
        self.namer = FileNamer(core.get("data-file.prefix"), "." + core.file_format)

    def compact(self, partition: bytes, bucket: int, total_buckets: int, files: list[DataFileMeta],
                full: bool, snapshot: "Snapshot | None" = None) -> CommitMessage | None:
        """Rewrite the picked files of one bucket; the message holds compact before/after.

        ``snapshot``: the snapshot ``files`` come from; with deletion vectors, its vectors hide
        deleted rows from the rewrite and the vectors of the rewritten files are dropped."""

        t = self.store
        core = t.schema.core
        vectors: dict = {}
        if snapshot is not None and core.get("deletion-vectors.enabled"):
            vectors = t.deletion_vectors_at(snapshot).get((partition, bucket), (None, {}))[1]
        picked = pick_files(files, self.target, self.min_num, self.max_num, full, frozenset(vectors))
        if not picked:
            return None
        rows = TableRead(t).read([DataSplit(partition, bucket, picked, snapshot.id if snapshot else 0, snapshot)])
        directory = t.bucket_path(partition, bucket)
        writer = RollingFileWriter.for_table(t.file_io, core, rows.schema, self.target,
                                             lambda: join(directory, self.namer.next()), fields=t.schema.fields)
        indexer, done = t.file_indexer, []
        try:
            writer.write(rows)
            done = writer.close()
            indexes = [indexer(path, part) if indexer is not None else (None, ()) for path, _, part in done]
        except BaseException:
            t.file_io.delete_quietly(writer.abort() + [p for p, _, _ in done] + (indexer.written if indexer else []))
            raise
        seq = min(f.min_sequence_number for f in picked)
        after = []
        for (path, size, part), (embedded, extra) in zip(done, indexes):
            n = part.num_rows
            first = picked[0]
            after.append(DataFileMeta(
                file_name=path.rsplit("/", 1)[-1], file_size=size, row_count=n,
                min_key=first.min_key, max_key=first.max_key, key_stats=first.key_stats,
                value_stats=collect_stats(part, t.schema.fields, core),
                min_sequence_number=seq, max_sequence_number=seq + n - 1, schema_id=t.schema.id,
                level=0, creation_time_millis=creation_time_now(), delete_row_count=0, file_source=FILE_SOURCE_COMPACT,
                extra_files=extra, embedded_index=embedded))
            seq += n
        msg = CommitMessage(partition, bucket, total_buckets, compact_before=picked, compact_after=after)
        if any(f.file_name in vectors for f in picked):
            msg.compact_index_changes = self._drop_vectors(partition, bucket, snapshot, vectors, picked)
        return msg

    def _drop_vectors(self, partition: bytes, bucket: int, snapshot: "Snapshot", vectors: dict,
                      rewritten: list[DataFileMeta]) -> list:
        """Index changes that replace the bucket's deletion-vector index by one without the
        vectors of the rewritten files (their rows were dropped or carried over)."""

        t = self.store
        gone = {f.file_name for f in rewritten}
        changes = [IndexManifestEntry(1, partition, bucket, e.index_file)
                   for e in dv_index_entries(t, snapshot, partition, bucket)]
        live = {n: dv for n, dv in vectors.items() if n not in gone and not dv.is_empty()}
        if live:
            data, metas = write_dv_index(live)
            name = FileNamer("index-").next()
            t.file_io.write_bytes(join(t.path, "index", name), data)
            changes.append(IndexManifestEntry(0, partition, bucket, IndexFileMeta.for_deletion_vectors(name, len(data), metas)))
        return changes

