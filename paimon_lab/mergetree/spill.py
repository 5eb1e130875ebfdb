"""Sorted runs of a bucket's write buffer spilled to local disk, and their streamed merge.

Java's ``write-buffer-spillable`` (default true): a full write buffer is sorted and spilled to
local disk instead of becoming a level-0 data file; at the flush (the commit, or when the spills
exceed ``write-buffer-spill.max-disk-size``) every spilled run of the bucket is merged into one
level-0 sorted run. A run here is the bucket's part of one full buffer, sorted in merge order and
merged to one row per key, kept as an Arrow IPC file (compressed as ``spill-compression`` says).

The merge streams: it holds one batch per run (plus what a key range straddles), emits the rows
below the smallest "last key read" of the runs that still have batches (every version of those
keys has then been read), sorts and merges that slice and hands it on. So its memory is bounded
by the runs' batch size, not by the bucket's size.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.key_value import KeyValueLayout
from paimon_lab.errors import OptionError

#: rows per batch of a spill file (the merge reads one batch per run at a time)
SPILL_BATCH_ROWS = 65_536
_CODECS = {"zstd": "zstd", "lz4": "lz4", "none": None}


def spill_write_options(compression: str | None, zstd_level: int | None) -> pa.ipc.IpcWriteOptions:
    """IPC options of spill files for Java's ``spill-compression`` (zstd, lz4 or none)."""
    name = (compression or "none").lower()
    if name not in _CODECS:
        raise OptionError(f"'spill-compression' = '{compression}' is not supported: use zstd, lz4 or none")
    codec = _CODECS[name]
    if codec == "zstd":
        return pa.ipc.IpcWriteOptions(compression=pa.Codec("zstd", zstd_level or 1))
    return pa.ipc.IpcWriteOptions(compression=codec)


class SpillDirectory:
    """A local temporary directory of spill files, made on first use and removed by :meth:`clear`."""

    def __init__(self, options: pa.ipc.IpcWriteOptions):
        self.options = options
        self.path: str | None = None
        self.spilled_bytes = 0
        self._count = 0
        self._lock = threading.Lock()   # buckets spill on several threads

    def write(self, kv: pa.Table) -> SpilledRun:
        with self._lock:
            if self.path is None:
                self.path = tempfile.mkdtemp(prefix="paimon-lab-spill-")
                # a writer dropped without commit or abort leaves nothing behind either
                self._cleanup = weakref.finalize(self, shutil.rmtree, self.path, True)
            self._count += 1
            path = os.path.join(self.path, f"run-{self._count}.arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, kv.schema, options=self.options) as w:
            w.write_table(kv, max_chunksize=SPILL_BATCH_ROWS)
        size = os.path.getsize(path)
        with self._lock:
            self.spilled_bytes += size
        return SpilledRun(path, kv.num_rows, size)

    def clear(self) -> None:
        if self.path is not None:
            self._cleanup()
        self.path, self.spilled_bytes = None, 0


class SpilledRun:
    """One spilled sorted run: a file of KV rows in merge order, one row per key."""

    def __init__(self, path: str, rows: int, size: int):
        self.path, self.rows, self.size = path, rows, size

    def batches(self) -> Iterator[pa.Table]:
        with pa.OSFile(self.path, "rb") as source:
            for batch in pa.ipc.open_stream(source):
                yield pa.Table.from_batches([batch])

    def delete(self) -> None:
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass


def table_batches(kv: pa.Table) -> Iterator[pa.Table]:
    """An in-memory sorted run as the batches the merge reads."""
    for start in range(0, kv.num_rows, SPILL_BATCH_ROWS):
        yield kv.slice(start, SPILL_BATCH_ROWS)


def streamable(layout: KeyValueLayout) -> bool:
    """Whether the merge can cut runs by key comparisons that agree with the sort order (floating
    point keys cannot: NaN sorts last but compares false); otherwise runs are merged whole."""
    return all(not (pa.types.is_floating(f.type.to_arrow())) for f in layout.key_fields)


def merge_runs(layout: KeyValueLayout, merge: Callable[[pa.Table], pa.Table], runs: list[Iterator[pa.Table]],
               emit: Callable[[pa.Table], None]) -> None:
    """Merge sorted runs (oldest first; each in merge order, one row per key) into ``emit``, in
    key order, slice by slice. ``merge`` sorts a slice into merge order and merges it to one row
    per key; every version of a key is in the same slice."""
    keys = layout.key_columns
    if not streamable(layout):
        whole = [pa.concat_tables(list(r)) for r in runs]
        whole = [t for t in whole if t.num_rows]
        if whole:
            emit(merge(pa.concat_tables(whole)))
        return
    pending: list[pa.Table | None] = [None] * len(runs)
    live = [True] * len(runs)

    def load(i: int) -> None:
        nxt = next(runs[i], None)
        if nxt is None:
            live[i] = False
        elif pending[i] is None or pending[i].num_rows == 0:
            pending[i] = nxt
        else:
            pending[i] = pa.concat_tables([pending[i], nxt])

    while True:
        for i in range(len(runs)):
            while live[i] and (pending[i] is None or pending[i].num_rows == 0):
                load(i)
        have = [i for i in range(len(runs)) if pending[i] is not None and pending[i].num_rows]
        if not have:
            return
        open_runs = [i for i in have if live[i]]
        if not open_runs:  # every run read to its end: the rest is one slice
            emit(merge(pa.concat_tables([pending[i] for i in have])))
            return
        lasts = {i: tuple(pending[i].column(k)[-1].as_py() for k in keys) for i in open_runs}
        bound = min(lasts.values())
        parts = []
        for i in have:
            n = _count_below(pending[i], keys, bound)
            if n:
                parts.append(pending[i].slice(0, n))
                pending[i] = pending[i].slice(n)
        if parts:
            emit(merge(pa.concat_tables(parts)))
        else:  # the bound's own key may continue in its runs' next batches
            for i in open_runs:
                if lasts[i] == bound:
                    load(i)


def _count_below(kv: pa.Table, keys: list[str], bound: tuple) -> int:
    """How many leading rows of ``kv`` (sorted by ``keys``) have a key below ``bound``."""
    less = None
    for name, value in reversed(list(zip(keys, bound))):
        column = kv.column(name)
        scalar = pa.scalar(value, column.type)
        below = pc.less(column, scalar)
        less = below if less is None else pc.or_(below, pc.and_(pc.equal(column, scalar), less))
    return int(pc.sum(less).as_py() or 0)
