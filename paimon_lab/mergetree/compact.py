"""Compaction of one bucket: merge the files of a compaction unit into the output level.

The rewriter reads the unit's files as KV rows, sorts them by key and merge order, applies the
merge function and writes the result at the output level. Deletes are kept unless the output
is the highest level that holds data (nothing older could be shadowed by them).
Changelog producers hook in here: they compare each key before and after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import pyarrow as pa
import pyarrow.compute as pc

from ..fs import join
from ..manifest import FILE_SOURCE_COMPACT, DataFileMeta
from .kv import INSERT, SEQUENCE_NUMBER, UPDATE_AFTER, VALUE_KIND, KeyValueLayout, is_retract

if TYPE_CHECKING:
    from ..table import Table


def drop_retracts(kv: pa.Table) -> pa.Table:
    mask = is_retract(kv.column(VALUE_KIND))
    return kv.filter(pc.invert(mask)) if pc.any(mask).as_py() else kv


def concat_kv(parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
    parts = [p if p.schema.equals(schema) else p.cast(schema) for p in parts if p.num_rows]
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


class BucketFiles:
    """Reads the KV files of one partition and bucket of a table."""

    def __init__(self, table: "Table", layout: KeyValueLayout, partition: bytes, bucket: int):
        self.table, self.layout = table, layout
        self.partition, self.bucket = partition, bucket
        self.directory = table.bucket_path(partition, bucket)

    def path(self, f: DataFileMeta) -> str:
        return f.external_path or join(self.directory, f.file_name)

    def read(self, files: list[DataFileMeta], dvs: dict | None = None) -> pa.Table:
        """KV rows of ``files`` in order; rows marked in deletion vectors ``dvs`` are left out."""
        return concat_kv([self.read_file(f, dvs) for f in files], self.layout.arrow_schema)

    def read_file(self, f: DataFileMeta, dvs: dict | None = None) -> pa.Table:
        t = self.table
        kv = self.layout.read(t.file_io, self.path(f), f, t.schema_for(f.schema_id))
        dv = dvs.get(f.file_name) if dvs else None
        if dv is not None and not dv.is_empty():
            kv = kv.filter(pa.array(dv.mask(kv.num_rows)))
        return kv


def merge_sorted(layout: KeyValueLayout, merge_fn, kv: pa.Table) -> pa.Table:
    """Sort KV rows into merge order and merge them to one row per key."""
    if kv.num_rows == 0:
        return kv
    return merge_fn.merge(layout.sort(kv), layout.key_columns)


def diff_changelog(layout: KeyValueLayout, before: pa.Table, after: pa.Table, row_deduplicate: bool) -> pa.Table:
    """The changelog that turns ``before`` into ``after`` (both one live row per key, no retracts).

    Keys only in ``after`` give +I; only in ``before`` give -D; in both give -U (old) and +U
    (new), skipped when ``row_deduplicate`` and the values are equal.
    """
    keys = layout.key_columns
    values = layout.value_names
    b = before.append_column("__pos_b", pa.array(range(before.num_rows), pa.int64()))
    a = after.append_column("__pos_a", pa.array(range(after.num_rows), pa.int64()))
    joined = a.select(keys + ["__pos_a"]).join(b.select(keys + ["__pos_b"]), keys=keys, join_type="full outer")
    pos_a, pos_b = joined.column("__pos_a"), joined.column("__pos_b")
    only_a = pc.and_(pc.is_valid(pos_a), pc.is_null(pos_b))
    only_b = pc.and_(pc.is_null(pos_a), pc.is_valid(pos_b))
    both = pc.and_(pc.is_valid(pos_a), pc.is_valid(pos_b))
    both_a = pc.filter(pos_a, both)
    both_b = pc.filter(pos_b, both)
    if row_deduplicate and len(both_a):
        same = None
        for c in values:
            eq = pc.fill_null(pc.equal(after.column(c).take(both_a), before.column(c).take(both_b)), False)
            eq = pc.or_(eq, pc.and_(pc.is_null(after.column(c).take(both_a)), pc.is_null(before.column(c).take(both_b))))
            same = eq if same is None else pc.and_(same, eq)
        keep = pc.invert(same)
        both_a, both_b = pc.filter(both_a, keep), pc.filter(both_b, keep)

    def with_kind(t: pa.Table, positions, kind: int) -> pa.Table:
        rows = t.take(positions)
        idx = rows.schema.get_field_index(VALUE_KIND)
        return rows.set_column(idx, VALUE_KIND, pa.array([kind] * rows.num_rows, pa.int8()))

    from .kv import DELETE, UPDATE_BEFORE

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
    """Merges compaction units of one bucket and writes the results."""

    def __init__(self, files: BucketFiles, merge_fn, next_path: Callable[[], str]):
        self.files = files
        self.layout = files.layout
        self.merge_fn = merge_fn
        self.next_path = next_path

    def rewrite(self, input_files: list[DataFileMeta], output_level: int, drop_delete: bool,
                dvs: dict | None = None) -> tuple[pa.Table, list[DataFileMeta]]:
        """Merge ``input_files`` (minus rows deleted in ``dvs``); returns (merged KV rows, new files
        at ``output_level``)."""
        merged = merge_sorted(self.layout, self.merge_fn, self.files.read(input_files, dvs))
        if drop_delete:
            merged = drop_retracts(merged)
        return merged, self.write(merged, output_level)

    def write(self, merged: pa.Table, output_level: int) -> list[DataFileMeta]:
        if merged.num_rows == 0:
            return []
        t = self.files.table
        written = self.layout.write_sorted(t.file_io, merged, t.schema.core, output_level, self.next_path,
                                           FILE_SOURCE_COMPACT)
        return [meta for _, meta in written]


__all__ = ["BucketFiles", "CompactRewriter", "diff_changelog", "drop_retracts", "merge_sorted", "SEQUENCE_NUMBER"]
