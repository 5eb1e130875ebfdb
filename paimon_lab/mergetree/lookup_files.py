"""Local lookup state: each data file's rows sorted by key, kept on local disk.

A lookup-changelog, deletion-vector or first-row commit must find, for the few keys it writes,
their older versions in the bucket's upper levels. Reading those levels' data files whole makes
a 100-row commit cost the size of the bucket. As Java's local lookup files, each data file is
instead decoded once into an uncompressed Arrow IPC file of its key-value rows sorted by key
(with each row's position in the data file), stored in a local cache directory under the data
file's name. Data files are immutable, so the copy stays valid; it is memory-mapped, so a lookup
touches only the pages its binary search and its hits fall on.

The directory is ``$PAIMON_LAB_LOOKUP_CACHE_DIR``, else ``lookup`` in paimon-lab's cache directory
(:mod:`paimon_lab.io.disk_cache`: ``$PAIMON_LAB_CACHE_DIR``, default ``~/.cache/paimon-lab``; with
caches off, a directory of the process's own), one subdirectory per table path and schema. ``lookup.cache-max-disk-size`` bounds it (least
recently used files are evicted first), ``lookup.cache-file-retention`` drops files unused for
longer, ``lookup.cache-max-memory-size`` bounds the open files this process keeps. A cached file
is trusted only if it names the data file's size and row count; anything else (stale, truncated,
corrupt) is deleted and rebuilt from the data file.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.manifest import DataFileMeta
from paimon_lab.io.disk_cache import evict, touch, working_directory
from paimon_lab.utils.arrow import semi_join

if TYPE_CHECKING:
    from paimon_lab.mergetree.compact_rewriter import BucketFiles

POSITION = "__lookup_pos__"
_VERSION = b"1"
_META_VERSION = b"paimon_lab.version"


def cache_root() -> str:
    """Where lookup files live: ``$PAIMON_LAB_LOOKUP_CACHE_DIR``, else ``lookup`` in paimon-lab's
    cache directory (see the module docstring)."""
    return os.environ.get("PAIMON_LAB_LOOKUP_CACHE_DIR") or working_directory("lookup")


class _OpenFiles:
    """This process's open (memory-mapped) lookup files, least recently used evicted beyond a byte bound."""

    def __init__(self):
        self.lock = threading.Lock()
        self.files: OrderedDict[str, tuple[pa.Table, int]] = OrderedDict()
        self.bytes = 0

    def get(self, path: str) -> pa.Table | None:
        with self.lock:
            hit = self.files.get(path)
            if hit is None:
                return None
            self.files.move_to_end(path)
            return hit[0]

    def put(self, path: str, table: pa.Table, size: int, limit: int) -> None:
        with self.lock:
            old = self.files.pop(path, None)
            if old is not None:
                self.bytes -= old[1]
            self.files[path] = (table, size)
            self.bytes += size
            while self.bytes > limit and len(self.files) > 1:
                _, (_, dropped) = self.files.popitem(last=False)
                self.bytes -= dropped

    def forget(self, path: str) -> None:
        with self.lock:
            old = self.files.pop(path, None)
            if old is not None:
                self.bytes -= old[1]


OPEN_FILES = _OpenFiles()
_SWEEP_LOCK = threading.Lock()
_SWEEP = {"at": float("-inf"), "bytes": 0}   # this process's last sweep, and bytes stored since


def table_cache_directory(store) -> str:
    """The local cache directory of a table (by its path and current schema)."""
    tag = hashlib.sha1(f"{store.path}\0{store.schema.id}".encode()).hexdigest()[:20]
    return os.path.join(cache_root(), tag)


class LocalCache:
    """Arrow files derived from a table's immutable files, kept on local disk and memory-mapped.

    An entry is trusted only if its stamp (e.g. the source file's size and row count) matches
    what the caller expects; anything else (stale, truncated, corrupt) is deleted and rebuilt.
    The table's ``lookup.cache-*`` options bound it."""

    def __init__(self, store):
        core = store.schema.core
        self.max_disk = core.get("lookup.cache-max-disk-size")
        self.retention = core.get("lookup.cache-file-retention")
        self.max_memory = core.get("lookup.cache-max-memory-size")
        self.directory = table_cache_directory(store)
        self.builds = 0   # entries built (rather than found) by this object: tests count them

    def get(self, name: str, stamp: dict, build: Callable[[], pa.Table],
            check: Callable[[pa.Table], bool] = lambda t: True) -> pa.Table:
        """The cached table ``name`` carrying ``stamp`` and passing ``check``, else ``build()``
        stored under it."""
        path, meta = self._entry(name, stamp)
        table = OPEN_FILES.get(path)
        if table is not None and _stamped(table.schema, meta) and check(table):
            return table
        table = self._open(path, meta, check)
        if table is None:
            table = build().replace_schema_metadata(meta)
            self.builds += 1
            table = self._store(path, table, meta)
        OPEN_FILES.put(path, table, _resident(table), self.max_memory)
        return table

    def keep(self, name: str, stamp: dict, table: pa.Table) -> pa.Table:
        """Hold ``table`` as entry ``name`` carrying ``stamp`` in this process's memory only: what a
        writer just derived itself (a process that finds it missing builds and stores it then)."""
        path, meta = self._entry(name, stamp)
        table = table.replace_schema_metadata(meta)
        OPEN_FILES.put(path, table, _resident(table), self.max_memory)
        return table

    def forget(self, name: str) -> None:
        """Let this process's memory go of entry ``name`` (its file on disk stays)."""
        OPEN_FILES.forget(os.path.join(self.directory, name + ".arrow"))

    def _entry(self, name: str, stamp: dict) -> tuple[str, dict]:
        meta = {_META_VERSION: _VERSION, **{k.encode(): str(v).encode() for k, v in stamp.items()}}
        return os.path.join(self.directory, name + ".arrow"), meta

    @staticmethod
    def _open(path: str, meta: dict, check: Callable[[pa.Table], bool] = lambda t: True) -> pa.Table | None:
        if not os.path.exists(path):
            return None
        try:
            table = pa.ipc.open_file(pa.memory_map(path, "r")).read_all()
            if not _stamped(table.schema, meta) or not check(table):
                raise ValueError("stale local cache file")
            table.validate()
            touch(path)
            return table
        except (OSError, ValueError, pa.ArrowException):
            OPEN_FILES.forget(path)
            try:
                os.remove(path)
            except OSError:
                pass
            return None

    def _store(self, path: str, table: pa.Table, meta: dict) -> pa.Table:
        try:
            os.makedirs(self.directory, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table, max_chunksize=max(1, table.num_rows))
            os.replace(tmp, path)
            self._maybe_evict(os.path.getsize(path))
            return self._open(path, meta) or table
        except OSError:   # a read-only or full cache disk: the lookup still works, from memory
            return table

    def _maybe_evict(self, added: int) -> None:
        """Sweep the cache directory when this process's estimate of it passes the disk bound, or
        once a minute (at most once per retention) for the retention: a sweep stats every file."""
        with _SWEEP_LOCK:
            _SWEEP["bytes"] += added
            now = time.monotonic()
            period = min(60.0, self.retention / 1000) if self.retention is not None else None
            due = (self.max_disk is not None and _SWEEP["bytes"] > self.max_disk) or \
                (period is not None and now - _SWEEP["at"] >= period)
            if not due:
                return
            _SWEEP["at"] = now
            _SWEEP["bytes"] = self._evict()

    def _evict(self) -> int:
        """Drop cache files unused for longer than the retention, then the least recently used
        ones until every table's files fit the disk bound."""
        try:
            paths = [e.path for sub in os.scandir(cache_root()) if sub.is_dir()
                     for e in os.scandir(sub.path) if e.name.endswith(".arrow")]
        except OSError:
            return 0
        return evict(paths, self.max_disk, self.retention, forget=OPEN_FILES.forget)


def _resident(table: pa.Table) -> int:
    """What an open cache table holds in memory: all of it if read into memory; if memory-mapped
    (its buffers point into the file), the first column, which every binary search walks (the
    other pages are touched only for the few rows a lookup hits)."""
    try:
        mapped = all(b is None or not b.is_mutable for c in table.columns[:1] for ch in c.chunks for b in ch.buffers())
    except (pa.ArrowException, AttributeError):
        mapped = False
    return table.column(0).nbytes if mapped and table.num_columns else table.nbytes


def _stamped(schema: pa.Schema, meta: dict) -> bool:
    have = schema.metadata or {}
    return all(have.get(k) == v for k, v in meta.items())


class LookupFiles:
    """The lookup files of one table (one per data file), built on first use and shared by every
    writer of the table on this machine."""

    def __init__(self, store, layout):
        self.layout = layout
        self.cache = LocalCache(store)
        self.keys = layout.key_columns
        self.key_types = layout.key_types

    @property
    def builds(self) -> int:
        return self.cache.builds

    def sorted_rows(self, files: BucketFiles, f: DataFileMeta) -> pa.Table:
        """The key-value rows of data file ``f`` sorted by key, with their positions in the file
        (column ``POSITION``); deletion vectors not applied."""
        def build() -> pa.Table:
            kv = files.read_file(f)
            kv = kv.append_column(POSITION, pa.array(np.arange(kv.num_rows, dtype=np.int64)))
            order = pc.sort_indices(kv, sort_keys=[(k, "ascending") for k in self.keys] + [(POSITION, "ascending")])
            return kv.take(order).combine_chunks()

        return self._get(f, build)

    def _get(self, f: DataFileMeta, build: Callable[[], pa.Table]) -> pa.Table:
        expected = self.layout.arrow_schema.append(pa.field(POSITION, pa.int64()))
        return self.cache.get(f.file_name, {"file_size": f.file_size, "row_count": f.row_count}, build,
                              lambda t: t.num_rows == f.row_count and t.schema.remove_metadata().equals(expected))

    def prime(self, f: DataFileMeta, rows: pa.Table) -> None:
        """Store the lookup file of a data file just written from ``rows`` (its rows in file
        order, sorted by key), as reading it back would build it."""
        def build() -> pa.Table:
            kv = rows.select(self.layout.arrow_schema.names).cast(self.layout.arrow_schema)
            return kv.append_column(POSITION, pa.array(np.arange(kv.num_rows, dtype=np.int64))).combine_chunks()

        self._get(f, build)

    # ------------------------------------------------------------------ lookups
    def _may_hold(self, f: DataFileMeta, low: tuple, high: tuple) -> bool:
        try:
            lo, hi = f.key_range(self.key_types)
            return not (hi < low or high < lo)
        except Exception:  # noqa: BLE001 - undecodable or incomparable key stats: look inside
            return True

    def lookup(self, files: BucketFiles, candidates: list[DataFileMeta], keys: pa.Table,
               dvs: dict | None = None) -> list[tuple[DataFileMeta, pa.Table]]:
        """For each file of ``candidates`` holding any of ``keys`` (distinct key rows): its rows of
        those keys, in key order, with their positions in the file (``POSITION``); rows deleted
        in ``dvs`` are left out. Files whose key range misses every key are not opened."""
        if keys.num_rows == 0 or not candidates:
            return []
        keys = keys.select(self.keys)
        ordered = keys.sort_by([(k, "ascending") for k in self.keys])
        try:
            low = tuple(ordered.slice(0, 1).to_pylist()[0].values())
            high = tuple(ordered.slice(ordered.num_rows - 1, 1).to_pylist()[0].values())
        except Exception:  # noqa: BLE001
            low = high = None
        firsts = pc.unique(keys.column(0)).sort()
        out = []
        for f in candidates:
            if low is not None and not self._may_hold(f, low, high):
                continue
            rows = find_sorted(self.sorted_rows(files, f), firsts, keys, self.keys)
            dv = dvs.get(f.file_name) if dvs else None
            if dv is not None and rows.num_rows and not dv.is_empty():
                rows = rows.filter(pa.array(~dv.contains(rows.column(POSITION).to_numpy())))
            if rows.num_rows:
                out.append((f, rows))
        return out

def find_sorted(table: pa.Table, firsts: pa.Array, keys: pa.Table, key_names: list[str]) -> pa.Table:
    """Rows of ``table`` (sorted by ``key_names``, the first of them its first column) whose key
    is in ``keys``: binary search on the first key column for each of ``firsts`` (the distinct
    first-column values of ``keys``), then an exact match on the whole key."""
    column = table.column(0)
    if column.num_chunks != 1:
        column = column.combine_chunks()
    else:
        column = column.chunk(0)
    kind = column.type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        values = column.to_numpy(zero_copy_only=False)
        wanted = firsts.to_numpy(zero_copy_only=False)
        starts = np.searchsorted(values, wanted, "left")
        ends = np.searchsorted(values, wanted, "right")
    else:
        seq = _Values(column)
        wanted = firsts.to_pylist()
        starts = np.array([bisect.bisect_left(seq, v) for v in wanted], dtype=np.int64)
        ends = np.array([bisect.bisect_right(seq, v, lo=int(s)) for v, s in zip(wanted, starts)], dtype=np.int64)
    hit = ends > starts
    if not hit.any():
        return table.schema.empty_table()
    starts, ends = starts[hit], ends[hit]
    lengths = ends - starts
    idx = np.repeat(starts - np.cumsum(np.concatenate(([0], lengths[:-1]))), lengths) + np.arange(lengths.sum())
    rows = table.take(pa.array(idx))
    return rows if len(key_names) == 1 else semi_join(rows, keys, key_names)


class _Values:
    """An Arrow array as a sequence of Python values, read one at a time (for :mod:`bisect`)."""

    def __init__(self, array: pa.Array):
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i: int):
        return self.array[i].as_py()
