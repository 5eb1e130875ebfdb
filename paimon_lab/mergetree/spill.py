"""Sorted runs of a bucket's write buffer spilled to local disk, and their streamed merge.

Java's ``write-buffer-spillable`` (default true): a full write buffer is sorted and spilled to
local disk instead of becoming a level-0 data file; at the flush (the commit, or when the spills
exceed ``write-buffer-spill.max-disk-size``) every spilled run of the bucket is merged into one
level-0 sorted run. A run here is the bucket's part of one full buffer, sorted in merge order and
merged to one row per key, kept as an Arrow IPC file (compressed as ``spill-compression`` says).

The merge streams: it holds one batch per run (plus what a key range straddles), emits the rows
below the smallest "last key read" of the runs that still have batches (every version of those
keys has then been read), merges that slice and hands it on. So its memory is bounded by the
runs' batch size, not by the bucket's size.

A slice needs no full re-sort when the merge order is the key alone (no sequence fields): each
run's part is sorted and runs are numbered oldest first, so a stable sort of the concatenated parts
by key puts every key's versions in sequence order; on one integer-like key column numpy's stable
sort (a timsort, which finds the presorted runs) does it in about one pass per run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.key_value import SEQUENCE_NUMBER, KeyValueLayout
from paimon_lab.errors import OptionError
from paimon_lab.mergetree.key_groups import as_array
from paimon_lab.mergetree.merge_engine.base import MergeFunction
from paimon_lab.mergetree.merge_engine.deduplicate import DeduplicateMergeFunction

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

    def __init__(self, options: pa.ipc.IpcWriteOptions, copies: dict[str, str] | None = None):
        self.options = options
        # columns that may repeat another one (a key column and its value column): a copy equal
        # to its source is left out of a run's file and restored from the source when read
        self.copies = copies or {}
        self.path: str | None = None
        self.spilled_bytes = 0
        self._count = 0
        self._lock = threading.Lock()   # buckets spill on several threads

    def write(self, kv: pa.Table) -> SpilledRun:
        restore = {c: src for c, src in self.copies.items()
                   if c in kv.column_names and kv.column(c).equals(kv.column(src))}
        schema, kv = kv.schema, kv.drop_columns(list(restore)) if restore else kv
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
        return SpilledRun(path, kv.num_rows, size, schema, restore)

    def clear(self) -> None:
        if self.path is not None:
            self._cleanup()
        self.path, self.spilled_bytes = None, 0


class SpilledRun:
    """One spilled sorted run: a file of KV rows in merge order, one row per key (``schema``'s
    columns but the ``restore`` copies, which are rebuilt from their source columns)."""

    def __init__(self, path: str, rows: int, size: int, schema: pa.Schema | None = None,
                 restore: dict[str, str] | None = None):
        self.path, self.rows, self.size = path, rows, size
        self.schema, self.restore = schema, restore or {}

    def batches(self) -> Iterator[pa.Table]:
        with pa.OSFile(self.path, "rb") as source:
            for batch in pa.ipc.open_stream(source):
                if self.restore:
                    batch = pa.RecordBatch.from_arrays(
                        [batch.column(self.restore.get(name, name)) for name in self.schema.names],
                        schema=self.schema)
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


def merge_slice(layout: KeyValueLayout, fn: MergeFunction, parts: list[pa.Table]) -> pa.Table:
    """The parts of one slice (one per run, oldest run first; each sorted in merge order) merged
    by ``fn`` to one row per key, in key order."""
    kv = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    ordered = _run_order(layout, parts)
    if ordered is None:
        return fn.merge(layout.sort(kv), layout.key_columns)
    order, key = ordered
    kv = kv.combine_chunks()  # a take over many chunks resolves each index's chunk
    if type(fn) is DeduplicateMergeFunction and not fn.ignore_delete and not fn.remove_on_delete:
        # the last version of each key wins whole, kind and sequence number included
        lasts = np.flatnonzero(np.append(key[1:] != key[:-1], True))
        return kv.take(pa.array(order[lasts]))
    return fn.merge(kv.take(pa.array(order)), layout.key_columns)


def _order_key(layout: KeyValueLayout, parts: list[pa.Table]) -> np.ndarray | None:
    """The slice's key as one numpy column, when the merge order is that key alone (then sequence
    numbers) and numpy orders it as Arrow does: one integer, date or timestamp column without
    nulls. None otherwise."""
    if layout.sequence_fields or len(layout.key_columns) != 1:
        return None
    name = layout.key_columns[0]
    t = parts[0].schema.field(name).type
    if pa.types.is_date32(t):
        view = pa.int32()
    elif pa.types.is_date64(t) or pa.types.is_timestamp(t):
        view = pa.int64()
    elif pa.types.is_integer(t):
        view = t
    else:
        return None
    columns = [as_array(p.column(name)) for p in parts]
    if any(c.null_count for c in columns):
        return None
    return np.concatenate([c.view(view).to_numpy() for c in columns])


def _run_order(layout: KeyValueLayout, parts: list[pa.Table]) -> tuple[np.ndarray, np.ndarray] | None:
    """Row indices of the concatenated ``parts`` in merge order (key, then sequence number) and
    the keys in that order; None when only the general sort gives them."""
    key = _order_key(layout, parts)
    if key is None:
        return None
    order = np.argsort(key, kind="stable")
    key = key[order]
    if len(parts) > 1:  # the runs' order is their sequence order: check it rather than trust it
        seq = np.concatenate([as_array(p.column(SEQUENCE_NUMBER)).to_numpy() for p in parts])[order]
        ties = key[1:] == key[:-1]
        if ties.any() and not (seq[1:][ties] > seq[:-1][ties]).all():
            return None
    return order, key


def merge_runs(layout: KeyValueLayout, merge: Callable[[list[pa.Table]], pa.Table],
               runs: list[Iterator[pa.Table]], emit: Callable[[pa.Table], None]) -> None:
    """Merge sorted runs (oldest first; each in merge order, one row per key) into ``emit``, in
    key order, slice by slice. ``merge`` merges a slice, given as its runs' parts (oldest run
    first), to one row per key (see :func:`merge_slice`); every version of a key is in the same
    slice."""
    keys = layout.key_columns
    if not streamable(layout):
        whole = [pa.concat_tables(list(r)) for r in runs]
        whole = [t for t in whole if t.num_rows]
        if whole:
            emit(merge(whole))
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
            emit(merge([pending[i] for i in have]))
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
            emit(merge(parts))
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
