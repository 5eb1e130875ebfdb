"""The write path: validate incoming data, split it by partition and bucket, write data files.

Writers produce :class:`CommitMessage` objects (new files per partition and bucket); nothing
is visible until :mod:`paimon_lab.operation.commit` turns them into a snapshot. All row work is done
with Arrow kernels: grouping uses ``Table.group_by``, bucketing the vectorized BinaryRow hash.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core import binary_row
from paimon_lab.errors import DataValidationError
from paimon_lab.core.file_format import RollingFileWriter
from paimon_lab.io.file_io import join
from paimon_lab.core.manifest import EMPTY_STATS, FILE_SOURCE_APPEND, DataFileMeta, FileNamer, creation_time_now
from paimon_lab.core.options import TYPE_LENGTH_ENFORCER
from paimon_lab.utils.parallel import thread_map
from paimon_lab.core.stats import collect_stats
from paimon_lab.core.types import MAX_LENGTH

if TYPE_CHECKING:
    from paimon_lab.core.schema import TableSchema
    from paimon_lab.table import Table


@dataclass
class CommitMessage:
    """What a writer produced for one partition and bucket, waiting to be committed: new data
    files and their changelog (an APPEND snapshot), and the files a compaction replaced (before)
    and wrote (after) with the changelog it produced (a COMPACT snapshot)."""

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: list[DataFileMeta] = field(default_factory=list)
    changelog_files: list[DataFileMeta] = field(default_factory=list)
    compact_before: list[DataFileMeta] = field(default_factory=list)
    compact_after: list[DataFileMeta] = field(default_factory=list)
    compact_changelog: list[DataFileMeta] = field(default_factory=list)
    index_changes: list = field(default_factory=list)  # IndexManifestEntry of the APPEND snapshot
    compact_index_changes: list = field(default_factory=list)  # ... of the COMPACT snapshot

    @property
    def compacted(self) -> bool:
        """Whether the message carries anything for a COMPACT snapshot."""
        return bool(self.compact_before or self.compact_after or self.compact_changelog or self.compact_index_changes)

    def all_written(self) -> list[DataFileMeta]:
        return self.new_files + self.changelog_files + self.compact_after + self.compact_changelog


def to_arrow_table(data: Any, schema: "TableSchema") -> pa.Table:
    """Turn user data into an Arrow table of exactly the table's schema, or say what is wrong."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif not isinstance(data, pa.Table):
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover
            pd = None
        if pd is not None and isinstance(data, pd.DataFrame):
            data = pa.Table.from_pandas(data, preserve_index=False)
        elif isinstance(data, (list, dict)):
            data = pa.Table.from_pylist(data) if isinstance(data, list) else pa.table(data)
        else:
            raise DataValidationError(
                f"Cannot write {type(data).__name__}; pass a pyarrow Table/RecordBatch or a pandas DataFrame")
    target = schema.arrow_schema()
    given = set(data.column_names)
    missing = [n for n in target.names if n not in given]
    extra = [n for n in data.column_names if n not in target.names]
    if extra:
        raise DataValidationError(f"Data has columns that are not in the table: {extra}; table columns are "
                                  f"{target.names}")
    if missing:
        raise DataValidationError(f"Data is missing columns {missing}")
    columns = []
    length_mode = length_enforcer_override.get() or schema.core.get(TYPE_LENGTH_ENFORCER)
    for f in target:
        column = data.column(f.name)
        if column.type != f.type:
            try:
                column = column.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise DataValidationError(
                    f"Column '{f.name}' has type {column.type}, which cannot be stored as "
                    f"{schema.field(f.name).type}: {e}") from None
        if not f.nullable and column.null_count:
            raise DataValidationError(f"Column '{f.name}' is NOT NULL but has {column.null_count} null value(s)")
        columns.append(enforce_length(column, schema.field(f.name), length_mode))
    return pa.Table.from_arrays(columns, schema=target)


# A SQL session's SET of the enforcer, over the table option while its statement runs.
length_enforcer_override: ContextVar[str | None] = ContextVar("length_enforcer_override", default=None)

_LENGTHED = {"CHAR": True, "VARCHAR": False, "BINARY": True, "VARBINARY": False}   # root -> fixed length


def enforce_length(column: pa.ChunkedArray, field, mode: str = "error") -> pa.ChunkedArray:
    """Hold a CHAR(n)/VARCHAR(n)/BINARY(n)/VARBINARY(n) column to its length: characters for
    strings, bytes for binaries. ``mode`` 'error' refuses longer values (as Spark SQL does),
    'trim_pad' cuts them to n and pads CHAR/BINARY to n (Flink's TRIM_PAD), 'ignore' keeps them."""
    dtype = field.type
    fixed = _LENGTHED.get(dtype.root)
    length = getattr(dtype, "length", None)
    if fixed is None or length is None or length >= MAX_LENGTH or mode == "ignore" or not len(column):
        return column
    text = dtype.root in ("CHAR", "VARCHAR")
    sizes = pc.utf8_length(column) if text else pc.binary_length(column)
    longest = pc.max(sizes).as_py()
    if mode == "error":
        if longest is not None and longest > length:
            over = pc.sum(pc.greater(sizes, length)).as_py()
            unit = "characters" if text else "bytes"
            raise DataValidationError(
                f"Column '{field.name}' is {dtype}: {over} value(s) are longer than {length} {unit} (the longest has "
                f"{longest}); shorten them, or set '{TYPE_LENGTH_ENFORCER}' = 'trim_pad' to cut them to size")
        return column
    if text:
        column = pc.utf8_slice_codeunits(column, 0, length)
        return pc.utf8_rpad(column, length, " ") if fixed else column
    column = pc.binary_slice(column, 0, length)
    if fixed:
        short = pc.less(pc.binary_length(column), length)
        padded = pc.binary_join_element_wise(column, pa.scalar(b"\x00" * length, pa.binary()), b"")
        column = pc.if_else(short, pc.binary_slice(padded, 0, length), column)
    return column.cast(field.type.to_arrow())


def group_rows(table: pa.Table, keys: Sequence[str]) -> list[tuple[tuple, pa.Table]]:
    """Split a table into (key values, rows) groups, preserving the rows' order inside each group."""
    if not keys:
        return [((), table)]
    return [(key, table.take(indices)) for key, indices in group_indices(table, keys)]


def group_indices(table: pa.Table, keys: Sequence[str]) -> list[tuple[tuple, pa.Array | None]]:
    """(key values, ascending row indices) of each group of rows with equal ``keys`` values (a
    writer takes each group's rows where it writes them, e.g. on its own thread); without keys,
    one group whose indices are None: every row."""
    if not keys:
        return [((), None)]
    idx_name = "__row_index__"
    indexed = table.select(list(keys)).append_column(idx_name, pa.array(np.arange(table.num_rows)))
    grouped = indexed.group_by(list(keys), use_threads=False).aggregate([(idx_name, "list")])
    key_columns = [grouped.column(k).to_pylist() for k in keys]
    index_lists = grouped.column(f"{idx_name}_list")
    return [(tuple(c[i] for c in key_columns), index_lists[i].values) for i in range(grouped.num_rows)]


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

    def __init__(self, table: "Table", commit_user: str, ignore_previous_files: bool = False,
                 file_uuid: str | None = None):
        self.table = table
        self.ignore_previous_files = ignore_previous_files
        self.schema = table.schema
        self.core = self.schema.core
        self.commit_user = commit_user
        self.num_buckets = self.core.bucket
        self.partition_codec = table.partition_codec
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
            latest = None if self.ignore_previous_files else self.table.snapshot_manager.latest()
            self._restored_snapshot = latest
            self._restored = {k: [e.file for e in v]
                              for k, v in self.table.store_scan().files_by_bucket(latest).items()}
        return self._restored

    def write(self, data: Any) -> None:
        table = to_arrow_table(data, self.schema)
        if table.num_rows == 0:
            return
        self.buffer.append(table)
        self.buffered_bytes += table.nbytes
        if self.buffered_bytes >= self.buffer_limit:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        table = pa.concat_tables(self.buffer) if len(self.buffer) > 1 else self.buffer[0]
        self.buffer, self.buffered_bytes = [], 0
        keys = list(self.schema.partition_keys)
        if self.num_buckets > 0:
            hashes = binary_row.hash_codes([table.column(k) for k in self.schema.bucket_keys], self.bucket_key_types)
            buckets = binary_row.bucket_of(hashes, self.num_buckets)
            table = table.append_column("__bucket__", pa.array(buckets, pa.int32()))
            keys.append("__bucket__")
        jobs = []   # (partition bytes, bucket, row indices)
        for key, indices in group_indices(table, keys):
            partition, bucket = (key[:-1], key[-1]) if self.num_buckets > 0 else (key, 0)
            part_bytes = self.partition_codec.to_bytes(partition)
            jobs.append((part_bytes, bucket, indices))
            if (part_bytes, bucket) not in self._namers:
                self._namers[(part_bytes, bucket)] = self.namer.for_bucket(part_bytes, bucket)
        rows = table.drop_columns(["__bucket__"]) if self.num_buckets > 0 else table
        # Buckets are written in parallel; their files are registered in order afterwards (or,
        # when one bucket fails, deleted, so that abort() has nothing it does not know of).
        written: list[list[tuple] | None] = [None] * len(jobs)

        def write(i: int) -> None:
            written[i] = self._write_bucket(rows, *jobs[i])

        try:
            thread_map(write, range(len(jobs)), desc=f"writing {table.num_rows} rows", unit="bucket")
        except BaseException:
            for (part_bytes, bucket, _), files in zip(jobs, written):
                directory = self.table.bucket_path(part_bytes, bucket)
                self.table.file_io.delete_quietly([join(directory, name) for f in files or ()
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

    def _write_bucket(self, table: pa.Table, part_bytes: bytes, bucket: int,
                      indices: pa.Array | None) -> list["_Written"]:
        """Write the rows ``indices`` (None: all) of ``table`` into one bucket. Runs on a worker
        thread: it touches no shared state but its bucket's namer."""
        rows = table if indices is None else table.take(indices)
        directory = self.table.bucket_path(part_bytes, bucket)
        namer = self._namers[(part_bytes, bucket)]
        writer = RollingFileWriter.for_table(self.table.file_io, self.core, rows.schema,
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
            self.table.file_io.delete_quietly(writer.abort() + [p for p, _, _ in done] +
                                              [join(directory, x) for f in out for x in f.extra])
            raise
        return out

    def _file_index(self, data_path: str, rows: pa.Table) -> tuple[bytes | None, tuple[str, ...]]:
        """The file index of a data file: embedded in the manifest when small, else ``<file>.index``."""
        from paimon_lab.fileindex import build_file_index, embed_in_manifest, index_file_name

        data = build_file_index(rows, self.schema.options, list(self.schema.fields))
        if data is None:
            return None, ()
        if embed_in_manifest(data, self.schema.options):
            return data, ()
        name = index_file_name(data_path.rsplit("/", 1)[-1])
        self.table.file_io.write_bytes(join(data_path.rsplit("/", 1)[0], name), data)
        return None, (name,)

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
            from paimon_lab.operation.append_compact import AppendCompactor

            compactor = AppendCompactor(self.table)
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
            directory = self.table.bucket_path(part, bucket)
            paths += [join(directory, name) for f in msg.new_files for name in (f.file_name, *f.extra_files)]
        self.table.file_io.delete_quietly(paths)
        self.messages = {}

