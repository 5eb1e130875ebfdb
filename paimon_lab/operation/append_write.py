"""The write path: validate incoming data, split it by partition and bucket, write data files.

Writers produce :class:`CommitMessage` objects (new files per partition and bucket); nothing
is visible until :mod:`paimon_lab.operation.commit` turns them into a snapshot. All row work is done
with Arrow kernels: grouping uses ``Table.group_by``, bucketing the vectorized BinaryRow hash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa

from paimon_lab.core import binary_row
from paimon_lab.core.bucket_function import bucket_ids
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.operation.write_input import group_indices, to_arrow_table
from paimon_lab.core.file_format import RollingFileWriter
from paimon_lab.io.file_io import join
from paimon_lab.core.manifest import EMPTY_STATS, FILE_SOURCE_APPEND, DataFileMeta, FileNamer, creation_time_now
from paimon_lab.utils.parallel import thread_map
from paimon_lab.core.stats import collect_stats
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.operation.append_compact import AppendCompactor

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


class _Written(NamedTuple):
    """A data file an append writer wrote, not yet registered in a commit message."""

    name: str
    size: int
    rows: int
    stats: Any
    embedded: bytes | None
    extra: tuple[str, ...]


class AppendWriter:
    """Writes an append (no primary key) table: bucket-unaware (-1) or fixed buckets."""

    def __init__(self, store: "FileStore", commit_user: str, ignore_previous_files: bool = False,
                 file_uuid: str | None = None):
        self.store = store
        self.ignore_previous_files = ignore_previous_files
        self.schema = store.schema
        self.core = self.schema.core
        self.commit_user = commit_user
        self.num_buckets = self.core.bucket
        self.partition_codec = store.partition_codec
        self.bucket_key_types = [f.type for f in self.schema.fields_of(self.schema.bucket_keys)]
        self.buffer: list[pa.Table] = []
        self.buffered_bytes = 0
        self.buffer_limit = self.core.get("write-buffer-size")
        self.namer = FileNamer(self.core.get("data-file.prefix"), "." + self.core.file_format)
        if file_uuid:
            self.namer.uuid = file_uuid
        self._namers: dict[tuple[bytes, int], FileNamer] = {}   # one per bucket, as Java's path factories
        self.messages: dict[tuple[bytes, int], CommitMessage] = {}
        self._next_seq: dict[tuple[bytes, int], int] = {}
        self._restored: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
        self._restored_snapshot = None

    def restored(self) -> dict[tuple[bytes, int], list[DataFileMeta]]:
        """Live files per (partition, bucket) of the latest snapshot."""
        if self._restored is None:
            latest = None if self.ignore_previous_files else self.store.snapshot_manager.latest()
            self._restored_snapshot = latest
            self._restored = {k: [e.file for e in v]
                              for k, v in FileStoreScan(self.store).files_by_bucket(latest).items()}
        return self._restored

    def write(self, data: Any) -> None:
        batch = to_arrow_table(data, self.schema)
        if batch.num_rows == 0:
            return
        self.buffer.append(batch)
        self.buffered_bytes += batch.nbytes
        if self.buffered_bytes >= self.buffer_limit:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        batch = pa.concat_tables(self.buffer) if len(self.buffer) > 1 else self.buffer[0]
        self.buffer, self.buffered_bytes = [], 0
        keys = list(self.schema.partition_keys)
        if self.num_buckets > 0:
            buckets = bucket_ids([batch.column(k) for k in self.schema.bucket_keys], self.bucket_key_types,
                                 self.num_buckets, self.schema.core.get("bucket-function.type"))
            batch = batch.append_column("__bucket__", pa.array(buckets, pa.int32()))
            keys.append("__bucket__")
        jobs = []   # (partition bytes, bucket, row indices)
        for key, indices in group_indices(batch, keys):
            partition, bucket = (key[:-1], key[-1]) if self.num_buckets > 0 else (key, 0)
            part_bytes = self.partition_codec.to_bytes(partition)
            jobs.append((part_bytes, bucket, indices))
            if (part_bytes, bucket) not in self._namers:
                self._namers[(part_bytes, bucket)] = self.namer.for_bucket(part_bytes, bucket)
        rows = batch.drop_columns(["__bucket__"]) if self.num_buckets > 0 else batch
        # Buckets are written in parallel; their files are registered in order afterwards (or,
        # when one bucket fails, deleted, so that abort() has nothing it does not know of).
        written: list[list[tuple] | None] = [None] * len(jobs)

        def write(i: int) -> None:
            written[i] = self._write_bucket(rows, *jobs[i])

        try:
            thread_map(write, range(len(jobs)), desc=f"writing {batch.num_rows} rows", unit="bucket")
        except BaseException:
            for (part_bytes, bucket, _), files in zip(jobs, written):
                directory = self.store.bucket_path(part_bytes, bucket)
                self.store.file_io.delete_quietly([join(directory, name) for f in files or ()
                                                   for name in (f.name, *f.extra)])
            raise
        now = creation_time_now()
        for (part_bytes, bucket, _), files in zip(jobs, written):
            key = (part_bytes, bucket)
            msg = self.messages.get(key)
            if msg is None:
                msg = self.messages[key] = CommitMessage(part_bytes, bucket, self.num_buckets)
            seq = self._start_sequence(key)
            for f in files:
                msg.new_files.append(DataFileMeta(
                    file_name=f.name, file_size=f.size, row_count=f.rows,
                    min_key=binary_row.EMPTY, max_key=binary_row.EMPTY, key_stats=EMPTY_STATS,
                    value_stats=f.stats, min_sequence_number=seq, max_sequence_number=seq + f.rows - 1,
                    schema_id=self.schema.id, level=0, extra_files=f.extra, creation_time_millis=now,
                    delete_row_count=0, embedded_index=f.embedded, file_source=FILE_SOURCE_APPEND))
                seq += f.rows
            self._next_seq[key] = seq

    def _write_bucket(self, rows: pa.Table, part_bytes: bytes, bucket: int,
                      indices: pa.Array | None) -> list["_Written"]:
        """Write the rows ``indices`` (None: all) of ``rows`` into one bucket. Runs on a worker
        thread: it touches no shared state but its bucket's namer."""
        rows = rows if indices is None else rows.take(indices)
        directory = self.store.bucket_path(part_bytes, bucket)
        namer = self._namers[(part_bytes, bucket)]
        writer = RollingFileWriter.for_table(self.store.file_io, self.core, rows.schema,
                                             self.core.target_file_size, lambda: join(directory, namer.next()),
                                             fields=self.schema.fields)
        out: list[_Written] = []
        done: list[tuple] = []
        try:
            writer.write(rows)
            done = writer.close()
            for path, size, part in done:
                embedded, extra = self._file_index(path, part)
                out.append(_Written(path.rsplit("/", 1)[-1], size, part.num_rows,
                                    collect_stats(part, self.schema.fields, self.core), embedded, extra))
        except BaseException:
            self.store.file_io.delete_quietly(writer.abort() + [p for p, _, _ in done] +
                                              [join(directory, x) for f in out for x in f.extra])
            raise
        return out

    def _file_index(self, data_path: str, rows: pa.Table) -> tuple[bytes | None, tuple[str, ...]]:
        """The file index of a data file: embedded in the manifest when small, else ``<file>.index``."""
        indexer = self.store.file_indexer
        return (None, ()) if indexer is None else indexer(data_path, rows)

    def _start_sequence(self, key: tuple[bytes, int]) -> int:
        if key in self._next_seq:
            return self._next_seq[key]
        if self.num_buckets <= 0:
            return 0  # bucket-unaware tables do not order files by sequence
        return max((f.max_sequence_number for f in self.restored().get(key, [])), default=-1) + 1

    def prepare_commit(self) -> list[CommitMessage]:
        self.flush()
        out = [m for m in self.messages.values() if m.new_files]
        if self.num_buckets > 0 and not self.core.get("write-only"):
            # Fixed-bucket (queue) tables compact small files as they are written, as Java's
            # bucketed append writer does.

            compactor = AppendCompactor(self.store)
            for m in out:
                files = self.restored().get((m.partition, m.bucket), []) + m.new_files
                done = compactor.compact(m.partition, m.bucket, m.total_buckets, files, full=False,
                                         snapshot=self._restored_snapshot)
                if done is not None:
                    m.compact_before, m.compact_after = done.compact_before, done.compact_after
                    m.compact_index_changes = done.compact_index_changes
        self.messages = {}
        return out

    def abort(self) -> None:
        """Delete every file written so far and not committed."""
        self.buffer = []
        paths = []
        for (part, bucket), msg in self.messages.items():
            directory = self.store.bucket_path(part, bucket)
            paths += [join(directory, name) for f in msg.new_files for name in (f.file_name, *f.extra_files)]
        self.store.file_io.delete_quietly(paths)
        self.messages = {}

