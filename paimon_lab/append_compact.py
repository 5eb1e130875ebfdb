"""Compaction of append tables: rewrite a bucket's small files as fewer, larger ones.

Files are taken in sequence order, so a fixed-bucket (append queue) table keeps its row order.
A bucket is compacted when it has at least ``compaction.min.file-num`` files smaller than the
target file size (at most ``compaction.max.file-num`` per round), or on a full compaction.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .format import RollingFileWriter
from .fs import join
from .manifest import FILE_SOURCE_COMPACT, DataFileMeta, FileNamer
from .scan import DataSplit
from .stats import collect_stats
from .write import CommitMessage

if TYPE_CHECKING:
    from .table import Table


def pick_files(files: list[DataFileMeta], target: int, min_num: int, max_num: int,
               full: bool) -> list[DataFileMeta]:
    """The files one compaction round rewrites (empty: nothing worth doing)."""
    ordered = sorted(files, key=lambda f: (f.min_sequence_number, f.file_name))
    if full:
        return ordered if len(ordered) > 1 or any(f.delete_row_count for f in ordered) else []
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
    def __init__(self, table: "Table"):
        self.table = table
        core = table.schema.core
        self.target = core.target_file_size
        self.min_num = core.get("compaction.min.file-num")
        self.max_num = core.get("compaction.max.file-num")
        self.namer = FileNamer(core.get("data-file.prefix"), "." + core.file_format)

    def compact(self, partition: bytes, bucket: int, total_buckets: int, files: list[DataFileMeta],
                full: bool) -> CommitMessage | None:
        """Rewrite the picked files of one bucket; the message holds compact before/after."""
        from .read import TableRead

        picked = pick_files(files, self.target, self.min_num, self.max_num, full)
        if not picked:
            return None
        t = self.table
        core = t.schema.core
        rows = TableRead(t).read([DataSplit(partition, bucket, picked, 0)])
        directory = t.bucket_path(partition, bucket)
        writer = RollingFileWriter(t.file_io, core.file_format, rows.schema, self.target,
                                   lambda: join(directory, self.namer.next()), core.get("file.compression"),
                                   core.get("file.compression.zstd-level"))
        writer.write(rows)
        seq = min(f.min_sequence_number for f in picked)
        after = []
        for path, size, part in writer.close():
            n = part.num_rows
            first = picked[0]
            after.append(DataFileMeta(
                file_name=path.rsplit("/", 1)[-1], file_size=size, row_count=n,
                min_key=first.min_key, max_key=first.max_key, key_stats=first.key_stats,
                value_stats=collect_stats(part, t.schema.fields, core),
                min_sequence_number=seq, max_sequence_number=seq + n - 1, schema_id=t.schema.id,
                level=0, creation_time_millis=int(time.time() * 1000), delete_row_count=0, file_source=FILE_SOURCE_COMPACT))
            seq += n
        return CommitMessage(partition, bucket, total_buckets, compact_before=picked, compact_after=after)

