"""Small shims over pyarrow API changes between the oldest pyarrow paimon-lab supports and today's."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# pyarrow 25 moved null placement into each sort key and deprecated SortOptions(null_placement=...).
_PER_KEY_NULLS = int(pa.__version__.split(".")[0]) >= 25


def sort_indices_nulls_first(data: "pa.Table | pa.RecordBatch", columns: Sequence[str]) -> pa.Array:
    """Indices that sort ``data`` ascending by ``columns``, nulls first in every column."""
    if _PER_KEY_NULLS:
        return pc.sort_indices(data, sort_keys=[(c, "ascending", "at_start") for c in columns])
    return pc.sort_indices(data, sort_keys=[(c, "ascending") for c in columns], null_placement="at_start")


def take_ascending(table: pa.Table, indices: pa.Array | None) -> pa.Table:
    """``table.take(indices)`` for ascending ``indices`` (None: every row), taken chunk by chunk:
    a take over a table of many chunks resolves every index's chunk, several times the cost of
    the copy itself."""
    if indices is None:
        return table
    batches = table.to_batches()
    if len(batches) <= 1:
        return table.take(indices)
    idx = indices.to_numpy(zero_copy_only=False)
    if len(idx) > 1 and (idx[1:] < idx[:-1]).any():
        return table.take(indices)
    bounds = np.cumsum([0] + [b.num_rows for b in batches])
    cuts = np.searchsorted(idx, bounds)
    taken = [b.take(pa.array(idx[cuts[i]:cuts[i + 1]] - bounds[i]))
             for i, b in enumerate(batches) if cuts[i + 1] > cuts[i]]
    return pa.Table.from_batches(taken, schema=table.schema)


def semi_join(table: pa.Table, other: pa.Table, keys: Sequence[str], *, anti: bool = False) -> pa.Table:
    """Rows of ``table`` (in their order) whose ``keys`` appear in ``other`` (``anti``: do not).

    Arrow's hash join cannot carry list, map or struct columns, so only the keys and row positions
    go through it and the rows are then taken from ``table``."""
    pos = "__semi_join_pos__"
    left = table.select(list(keys)).append_column(pos, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    hit = left.join(other.select(list(keys)), keys=list(keys), join_type="left anti" if anti else "left semi")
    return table.take(pa.array(np.sort(hit.column(pos).to_numpy())))


def _bools(values: "pa.Array") -> np.ndarray:
    return np.asarray(values.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def values_equal(x: "pa.Array | pa.ChunkedArray", y: "pa.Array | pa.ChunkedArray") -> np.ndarray:
    """Row-wise equality of two equally long arrays of one type, nested types too (Arrow has no
    ``equal`` kernel for lists, maps and structs): NULL equals NULL and NaN equals NaN, as Java's
    comparison of the stored bytes has it; a map's entries compare in order."""
    x = x.combine_chunks() if isinstance(x, pa.ChunkedArray) else x
    y = y.combine_chunks() if isinstance(y, pa.ChunkedArray) else y
    x_null, y_null = _bools(x.is_null()), _bools(y.is_null())
    t = x.type
    if pa.types.is_map(t):      # as a list of key/value structs (a map's .keys ignore slicing)
        entries = pa.list_(pa.field("entries", pa.struct([t.key_field, t.item_field]), nullable=False))
        x, y, t = x.cast(entries), y.cast(entries), entries
    if pa.types.is_struct(t):
        eq = np.ones(len(x), dtype=bool)
        for i in range(t.num_fields):
            eq &= values_equal(x.field(i), y.field(i))
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        x_len = pc.list_value_length(x).fill_null(0).to_numpy(zero_copy_only=False)
        y_len = pc.list_value_length(y).fill_null(0).to_numpy(zero_copy_only=False)
        eq = x_len == y_len
        rows = np.flatnonzero(eq & ~x_null & ~y_null & (x_len > 0))
        if len(rows):
            xs, ys = pc.list_flatten(x.take(pa.array(rows))), pc.list_flatten(y.take(pa.array(rows)))
            starts = np.concatenate([[0], np.cumsum(x_len[rows])[:-1]])
            eq[rows] = np.logical_and.reduceat(values_equal(xs, ys), starts)
    else:
        eq = _bools(pc.equal(x, y))
        if pa.types.is_floating(t):
            eq |= _bools(pc.is_nan(x)) & _bools(pc.is_nan(y))
    return (eq & ~x_null & ~y_null) | (x_null & y_null)

