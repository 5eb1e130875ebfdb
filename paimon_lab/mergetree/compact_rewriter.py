"""Compaction of one bucket: merge the files of a compaction unit into the output level.

The rewriter reads the unit's files as KV rows, sorts them by key and merge order, applies the
merge function and writes the result at the output level. Deletes are kept unless the output
is the highest level that holds data (nothing older could be shadowed by them).
Changelog producers hook in here: they compare each key before and after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.file_format import read_file
from paimon_lab.io.file_io import join
from paimon_lab.core.manifest import FILE_SOURCE_COMPACT, DataFileMeta
from paimon_lab.core.key_value import (INSERT, SEQUENCE_NUMBER, UPDATE_AFTER, VALUE_KIND, KeyValueLayout,
                                     is_retract)
from paimon_lab.core.key_value import DELETE, UPDATE_BEFORE
from paimon_lab.mergetree.key_groups import group_starts
from paimon_lab.utils.arrow import semi_join, sort_indices_nulls_first, values_equal

if TYPE_CHECKING:
    from paimon_lab.mergetree.record_expire import RecordExpire
    from paimon_lab.store.file_store import FileStore


def drop_retracts(kv: pa.Table) -> pa.Table:
    mask = is_retract(kv.column(VALUE_KIND))
    return kv.filter(pc.invert(mask)) if pc.any(mask).as_py() else kv


def concat_kv(parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
    parts = [p if p.schema.equals(schema) else p.cast(schema) for p in parts if p.num_rows]
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def folds_upper_levels(core) -> bool:
    """Whether a table's lookup compaction writes each key's merged value into the level it lifts
    level 0 to, so a key's newest row above level 0 already holds everything older (Java wraps
    such tables' merge function in ``LookupMergeFunction``, for compactions and reads alike):
    ``changelog-producer`` = lookup or ``force-lookup``, without deletion vectors (which mark
    older rows deleted instead), any merge engine but first-row (whose lookup keeps first rows only)."""
    return (core.get("changelog-producer") == "lookup" or core.get("force-lookup")) \
        and not core.get("deletion-vectors.enabled") and core.get("merge-engine") != "first-row"


def newest_upper(keys: list[str], parts: list[tuple[int, pa.Table]]) -> list[tuple[int, pa.Table]]:
    """The rows a lookup-folded merge sees (``parts``: (level, KV rows), order kept): every row at
    level 0 (or below: the write buffer), and above it only the rows of the lowest level that
    holds the key, since that row already folded in the older levels' ones."""
    upper = sorted({level for level, t in parts if level > 0 and t.num_rows})
    if len(upper) < 2:
        return parts
    below: dict[int, pa.Table] = {}     # the keys held by the upper levels below each one
    held: list[pa.Table] = []
    for level in upper:
        if held:
            below[level] = pa.concat_tables(held)
        held += [t.select(keys) for lv, t in parts if lv == level and t.num_rows]
    return [(level, semi_join(t, below[level], keys, anti=True) if level in below and t.num_rows else t)
            for level, t in parts]


def latest_upper(keys: list[str], parts: list[tuple[int, pa.Table]]) -> list[tuple[int, pa.Table]]:
    """Java's ``LookupMergeFunction`` on files whose levels say nothing of their rows' age
    (changelog files take the level of the compaction that wrote them): every row at level 0, and
    above it only each key's latest row (the highest sequence number)."""
    upper = [t for level, t in parts if level > 0 and t.num_rows]
    if len(upper) < 2:
        return parts
    rows = pa.concat_tables(upper)
    order = sort_indices_nulls_first(rows, list(keys) + [SEQUENCE_NUMBER])
    ordered = rows.take(order)
    last = np.ones(ordered.num_rows, dtype=bool)
    last[:-1] = group_starts(ordered, keys)[1:]
    return [(level, t) for level, t in parts if level <= 0] + [(1, ordered.filter(pa.array(last)))]


def _in_range(column: str, key_range: tuple) -> pc.Expression | None:
    """``low <= column < high`` for ``key_range`` = (low, high), either end None (open)."""
    low, high = key_range
    expr = None
    for bound in ([pc.field(column) >= low] if low is not None else []) + \
            ([pc.field(column) < high] if high is not None else []):
        expr = bound if expr is None else expr & bound
    return expr


class BucketFiles:
    """Reads the KV files of one partition and bucket of a table."""

    def __init__(self, store: "FileStore", layout: KeyValueLayout, partition: bytes, bucket: int,
                 expire: "RecordExpire | None" = None):
        self.store, self.layout = store, layout
        self.expire = expire   # a compaction's reads: expired records left out
        self.partition, self.bucket = partition, bucket
        self.directory = store.bucket_path(partition, bucket)
        self.folded = folds_upper_levels(store.schema.core)

    def path(self, f: DataFileMeta) -> str:
        return f.external_path or join(self.directory, f.file_name)

    def read(self, files: list[DataFileMeta], dvs: dict | None = None, key_range: tuple | None = None,
             looked_up: list[tuple[int, pa.Table]] = ()) -> pa.Table:
        """KV rows of ``files`` in order; rows marked in deletion vectors ``dvs`` are left out.
        ``key_range`` = (low, high) keeps rows whose first key column is in [low, high) (None: open).
        ``looked_up``: (level, KV rows) found in other files, read as if those files were listed.
        In a lookup-folded table (:func:`folds_upper_levels`) a key's rows above level 0 are only
        those of its lowest level there (:func:`newest_upper`)."""
        parts = [(f.level, self.read_file(f, dvs, key_range)) for f in files]
        if self.expire is not None:
            parts = [(level, self.expire.apply(t)) for level, t in parts]
        parts += [(level, self._in_range(t, key_range)) for level, t in looked_up]
        if self.folded:
            parts = newest_upper(self.layout.key_columns, parts)
        return concat_kv([t for _, t in parts], self.layout.arrow_schema)

    def _in_range(self, kv: pa.Table, key_range: tuple | None) -> pa.Table:
        expr = None if key_range is None or kv.num_rows == 0 else _in_range(self.layout.key_columns[0], key_range)
        return kv if expr is None else kv.filter(expr)

    def read_file(self, f: DataFileMeta, dvs: dict | None = None, key_range: tuple | None = None) -> pa.Table:
        t = self.store
        schema = t.schema_for(f.schema_id)
        expr = None if key_range is None else _in_range(self.layout.first_key_file_column(schema), key_range)
        kv = self.layout.read(t.file_io, self.path(f), f, schema, expr)
        dv = dvs.get(f.file_name) if dvs else None
        if dv is not None and not dv.is_empty():
            kv = kv.filter(pa.array(dv.mask(kv.num_rows)))
        return kv


def merge_order(files: list[DataFileMeta]) -> list[DataFileMeta]:
    """Files oldest first, in one fixed order every merge uses (reads and compactions alike).

    Within a key, rows merge by sequence number and, on equal numbers, by this file order: equal
    numbers only arise when writers raced on one bucket, and then a read and a later compaction
    must still pick the same row."""
    return sorted(files, key=lambda f: (f.max_sequence_number, -f.level, f.min_sequence_number, f.file_name))


def merge_sorted(layout: KeyValueLayout, merge_fn, kv: pa.Table, merge_lone: bool = False) -> pa.Table:
    """Sort KV rows into merge order and merge them to one row per key (``merge_lone``: see
    ``MergeFunction.merge``)."""
    if kv.num_rows == 0:
        return kv
    return merge_fn.merge(layout.sort(kv), layout.key_columns, merge_lone)


def diff_changelog(layout: KeyValueLayout, before: pa.Table, after: pa.Table, row_deduplicate: bool) -> pa.Table:
    """The changelog that turns ``before`` into ``after`` (both one live row per key, no retracts).

    Keys only in ``after`` give +I; only in ``before`` give -D; in both give -U (old) and +U
    (new), skipped when ``row_deduplicate`` and the values are equal.
    """
    keys = layout.key_columns
    values = layout.value_names
    b = before.append_column("__pos_b", pa.array(np.arange(before.num_rows, dtype=np.int64)))
    a = after.append_column("__pos_a", pa.array(np.arange(after.num_rows, dtype=np.int64)))
    joined = a.select(keys + ["__pos_a"]).join(b.select(keys + ["__pos_b"]), keys=keys, join_type="full outer")
    pos_a, pos_b = joined.column("__pos_a"), joined.column("__pos_b")
    only_a = pc.and_(pc.is_valid(pos_a), pc.is_null(pos_b))
    only_b = pc.and_(pc.is_null(pos_a), pc.is_valid(pos_b))
    both = pc.and_(pc.is_valid(pos_a), pc.is_valid(pos_b))
    both_a = pc.filter(pos_a, both)
    both_b = pc.filter(pos_b, both)
    if row_deduplicate and len(both_a):
        same = np.ones(len(both_a), dtype=bool)
        for c in values:
            same &= values_equal(after.column(c).take(both_a), before.column(c).take(both_b))
        keep = pa.array(~same)
        both_a, both_b = pc.filter(both_a, keep), pc.filter(both_b, keep)

    def with_kind(t: pa.Table, positions, kind: int) -> pa.Table:
        rows = t.take(positions)
        idx = rows.schema.get_field_index(VALUE_KIND)
        return rows.set_column(idx, VALUE_KIND, pa.array([kind] * rows.num_rows, pa.int8()))

    parts = [
        with_kind(before, pc.filter(pos_b, only_b), DELETE),
        with_kind(before, both_b, UPDATE_BEFORE),
        with_kind(after, both_a, UPDATE_AFTER),
        with_kind(after, pc.filter(pos_a, only_a), INSERT),
    ]
    # Interleave -U/+U per key by sorting on key then kind order (-D, -U, +U, +I as emitted).
    out = concat_kv([p.select(layout.arrow_schema.names) for p in parts], layout.arrow_schema)
    if out.num_rows == 0:
        return out
    order = pc.sort_indices(out.append_column("__k", pc.if_else(pc.equal(out.column(VALUE_KIND), UPDATE_BEFORE), 0, 1)),
                            sort_keys=[(k, "ascending") for k in keys] + [("__k", "ascending")])
    return out.take(order)


class CompactRewriter:
    """Merges compaction units of one bucket and writes the results.

    Memory stays bounded: a unit of more than ``max_rows`` rows is merged in slices of the key
    space (split points sampled from the first key column; every version of a key falls in the
    same slice), each read with a key-range filter that skips Parquet row groups.
    """

    def __init__(self, files: BucketFiles, merge_fn, next_path: Callable[[], str], max_rows: int):
        self.files = files
        self.layout = files.layout
        self.merge_fn = merge_fn
        self.next_path = next_path
        self.max_rows = max(1, max_rows)

    def rewrite(self, input_files: list[DataFileMeta], output_level: int, drop_delete: bool,
                dvs: dict | None = None, need_merged: bool = False,
                merge_lone: bool = False,
                looked_up: list[tuple[int, pa.Table]] = ()) -> tuple[pa.Table | None, list[DataFileMeta]]:
        """Merge ``input_files`` (minus rows deleted in ``dvs``) into new files at ``output_level``.
        Returns (merged KV rows, or None when merged in slices and not ``need_merged``; new files).
        ``merge_lone``: a key's lone row is merged too (Java's lookup compaction); ``looked_up``:
        (level, KV rows) of keys found in files outside the unit, merged in (a lookup fold)."""
        total = sum(f.row_count for f in input_files)
        has_dv = bool(dvs) and any(f.file_name in dvs for f in input_files)
        if total <= self.max_rows or need_merged or has_dv:
            merged = merge_sorted(self.layout, self.merge_fn, self.files.read(input_files, dvs, None, looked_up),
                                  merge_lone)
            if drop_delete:
                merged = drop_retracts(merged)
            return merged, self.write(merged, output_level)
        t = self.files.store
        writer = self.layout.writer(t.file_io, t.schema.core, output_level, self.next_path, FILE_SOURCE_COMPACT,
                                    indexer=t.file_indexer)
        try:
            for key_range in self._key_ranges(input_files, -(-total // self.max_rows)):
                merged = merge_sorted(self.layout, self.merge_fn,
                                      self.files.read(input_files, None, key_range, looked_up), merge_lone)
                writer.write(drop_retracts(merged) if drop_delete else merged)
            return None, writer.close()
        except BaseException:
            t.file_io.delete_quietly(writer.abort())
            raise

    def _key_ranges(self, files: list[DataFileMeta], slices: int) -> list[tuple]:
        """[low, high) ranges of the first key column that split the rows into about ``slices`` parts."""
        t = self.files.store
        samples = []
        step = max(1, sum(f.row_count for f in files) // (slices * 64))
        for f in files:
            schema = t.schema_for(f.schema_id)
            name = self.layout.first_key_file_column(schema)
            column = read_file(t.file_io, self.files.path(f), f.format, [name], [], None).column(0)
            samples.append(column.take(pa.array(range(0, len(column), step))).combine_chunks())
        keys = pa.concat_arrays(samples).sort() if samples else pa.array([])
        if len(keys) < 2:
            return [(None, None)]
        picks = sorted({keys[int(len(keys) * i / slices)].as_py() for i in range(1, slices)} - {keys[0].as_py()})
        bounds = [None] + picks + [None]
        return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]

    def write(self, merged: pa.Table, output_level: int) -> list[DataFileMeta]:
        if merged.num_rows == 0:
            return []
        t = self.files.store
        return self.layout.write_sorted(t.file_io, merged, t.schema.core, output_level, self.next_path,
                                        FILE_SOURCE_COMPACT, indexer=t.file_indexer)


__all__ = ["BucketFiles", "CompactRewriter", "diff_changelog", "drop_retracts", "merge_sorted", "SEQUENCE_NUMBER"]
