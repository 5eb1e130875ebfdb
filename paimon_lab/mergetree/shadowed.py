"""Sorted runs a merge can skip unread: every key they hold is in a newer run.

With the deduplicate engine, a key's newest version wins. A run whose key set is exactly that of
a newer run (the same keys upserted again, e.g. a periodic full reload through upserts) loses
every row, so neither its keys nor its values need decoding. Equal key sets are proven without
decoding: the key columns' Parquet column chunks of the two files are byte for byte the same
(same physical type, codec and value count), which decodes to the same values. Files whose row
counts or key ranges differ are never compared, and chunk bytes are read only once the chunks'
sizes agree, block by block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from paimon_lab.core.manifest import DataFileMeta

_BLOCK = 1 << 20  # bytes compared at a time


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


__all__ = ["KeyChunks", "key_chunks", "shadowed_runs"]
