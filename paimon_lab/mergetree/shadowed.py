"""Sorted runs a merge can skip unread: every key they hold is in a newer run.

With the deduplicate engine, a key's newest version wins. A run whose key set is exactly that of
a newer run (the same keys upserted again, e.g. a periodic full reload through upserts) loses
every row, so neither its keys nor its values need decoding. Equal key sets are proven without
decoding: the key columns' Parquet column chunks of the two files are byte for byte the same
(same physical type, codec and value count), which decodes to the same values. Files whose row
counts or key ranges differ are never compared, and chunk bytes are read only once the chunks'
sizes agree, block by block.

When the runs roll into files at different row counts (larger tables: files roll by size), no two
files hold equal chunks. :func:`covered_runs` then proves it from decoded keys: a file whose every
key is found in files that are all newer than it loses every row. Only the key column is decoded,
nothing is sorted, and values are never read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from paimon_lab.core.manifest import DataFileMeta

_BLOCK = 1 << 20  # bytes compared at a time
_PROBE = 256      # keys of a file checked before all of them


@dataclass(frozen=True)
class KeyChunks:
    """Where the key columns' column chunks of one Parquet file are, and how to read them."""

    layout: tuple[tuple[str, str, int, int], ...]  # per chunk: physical type, codec, values, bytes
    offsets: tuple[int, ...]
    source: object                                 # the file's open pyarrow NativeFile

    def same_bytes(self, other: KeyChunks) -> bool:
        """Whether every chunk holds the same bytes as ``other``'s (same layout assumed)."""
        for (*_, size), a, b in zip(self.layout, self.offsets, other.offsets):
            for at in range(0, size, _BLOCK):
                n = min(_BLOCK, size - at)
                if self.source.read_at(n, a + at) != other.source.read_at(n, b + at):
                    return False
        return True


def key_chunks(parquet, leaf: dict[str, int], source, columns: Sequence[str]) -> KeyChunks | None:
    """The column chunks of ``columns`` (physical names) of an open ``pyarrow.parquet.ParquetFile``
    (``leaf``: its leaf column index by path) read from ``source`` (its ``NativeFile``), every row
    group in order; None when a column is missing."""
    md = parquet.metadata
    if any(c not in leaf for c in columns):
        return None
    layout, offsets = [], []
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in columns:
            col = rg.column(leaf[c])
            start = col.dictionary_page_offset if col.has_dictionary_page and col.dictionary_page_offset else \
                col.data_page_offset
            layout.append((col.physical_type, col.compression, col.num_values, col.total_compressed_size))
            offsets.append(start)
    return KeyChunks(tuple(layout), tuple(offsets), source)


def shadowed_runs(files: Sequence[DataFileMeta], chunks: Callable[[int], KeyChunks | None]) -> set[int]:
    """Indices of ``files`` (Parquet sorted runs of one bucket, merge order, oldest first) whose
    every key a later file holds with a higher sequence number: their rows never win a
    deduplicating merge (no ``sequence.field``, deletes not ignored). ``chunks(i)`` gives file
    ``i``'s key-column chunks (:func:`key_chunks`)."""
    gone: set[int] = set()
    cache: dict[int, KeyChunks | None] = {}

    def of(i: int) -> KeyChunks | None:
        if i not in cache:
            cache[i] = chunks(i)
        return cache[i]

    groups: dict[tuple, list[int]] = {}     # only files alike in these can hold the same keys
    for i, f in enumerate(files):
        if f.format == "parquet" and f.row_count:
            groups.setdefault((f.schema_id, f.row_count, f.min_key, f.max_key), []).append(i)
    for alike in groups.values():
        for n, i in enumerate(alike[:-1]):
            for j in reversed(alike[n + 1:]):
                if files[i].max_sequence_number >= files[j].min_sequence_number:
                    continue
                mine, theirs = of(i), of(j)
                if mine is not None and theirs is not None and mine.layout == theirs.layout and \
                        mine.same_bytes(theirs):
                    gone.add(i)
                    break
    return gone


def covered_runs(readers: Sequence, key_columns: Sequence[str], key_types: Sequence) -> set[int]:
    """Indices of ``readers`` (``KVFileReader`` of one bucket's files, merge order) whose every key
    is held by files whose sequence numbers are all higher: their rows never win a deduplicating
    merge (no ``sequence.field``, deletes not ignored). The files' key (the primary key without
    the partition keys) must be one integer, date or timestamp column, else nothing is dropped.
    Files whose key ranges (file metadata) are apart are never compared; one file's keys are
    decoded only when enough newer rows overlap it."""
    if len(readers) < 2 or len(key_columns) != 1:
        return set()
    files = [r.meta for r in readers]
    try:
        ranges = [f.key_range(key_types) for f in files]
    except Exception:  # noqa: BLE001 - undecodable key ranges: nothing is proven
        return set()
    cache: dict[int, np.ndarray | None] = {}

    def keys(i: int) -> np.ndarray | None:
        if i not in cache:
            column = readers[i].read(list(key_columns)).column(0)
            t = column.type
            exact = pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
            cache[i] = column.to_numpy() if exact and column.null_count == 0 else None
        return cache[i]

    gone: set[int] = set()
    for i, f in enumerate(files):
        newer = [j for j, g in enumerate(files)
                 if g.min_sequence_number > f.max_sequence_number and _overlap(ranges[i], ranges[j])]
        if not newer or sum(files[j].row_count for j in newer) < f.row_count:
            continue
        mine = keys(i)
        if mine is None:
            continue
        newer.sort(key=lambda j: -files[j].min_sequence_number)                # newest first
        # A few evenly spread keys first: a partial update of older keys fails here, cheaply.
        if len(mine) > _PROBE and not _covered(mine[np.linspace(0, len(mine) - 1, _PROBE).astype(np.int64)],
                                               newer, keys):
            continue
        if _covered(mine, newer, keys):
            gone.add(i)
    return gone


def _covered(mine: np.ndarray, newer: list[int], keys: Callable[[int], np.ndarray | None]) -> bool:
    """Whether every key of ``mine`` is in a file of ``newer`` (``keys(j)``: file j's keys)."""
    found = np.zeros(len(mine), dtype=bool)
    for j in newer:
        theirs = keys(j)
        if theirs is not None and len(theirs) and len(mine):
            _mark(mine, theirs, found)
            if found.all():
                break
    return bool(found.all())


def _overlap(a: tuple, b: tuple) -> bool:
    try:
        return not (a[1] < b[0] or b[1] < a[0])
    except TypeError:   # not comparable (e.g. a key added later is None): assume they overlap
        return True


def _mark(mine: np.ndarray, theirs: np.ndarray, found: np.ndarray) -> None:
    """Set ``found`` where a key of ``mine`` (sorted) is in ``theirs`` (sorted). Every hit is an
    equality test, so unsorted input can only miss keys, never invent one."""
    a = int(np.searchsorted(mine, theirs[0], side="left"))
    b = int(np.searchsorted(mine, theirs[-1], side="right"))
    if a >= b:
        return
    part = mine[a:b]
    c = int(np.searchsorted(theirs, part[0], side="left"))
    d = int(np.searchsorted(theirs, part[-1], side="right"))
    sub = theirs[c:d]
    if len(sub) == len(part) and np.array_equal(sub, part):    # the same keys, split elsewhere
        found[a:b] = True
    elif len(sub):
        at = np.minimum(np.searchsorted(sub, part), len(sub) - 1)
        found[a:b] |= sub[at] == part


__all__ = ["KeyChunks", "covered_runs", "key_chunks", "shadowed_runs"]
