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
