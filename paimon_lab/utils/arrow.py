"""Small shims over pyarrow API changes between the oldest pyarrow paimon-lab supports and today's."""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc

# pyarrow 25 moved null placement into each sort key and deprecated SortOptions(null_placement=...).
_PER_KEY_NULLS = int(pa.__version__.split(".")[0]) >= 25


def sort_indices_nulls_first(data: "pa.Table | pa.RecordBatch", columns: Sequence[str]) -> pa.Array:
    """Indices that sort ``data`` ascending by ``columns``, nulls first in every column."""
    if _PER_KEY_NULLS:
        return pc.sort_indices(data, sort_keys=[(c, "ascending", "at_start") for c in columns])
    return pc.sort_indices(data, sort_keys=[(c, "ascending") for c in columns], null_placement="at_start")


def semi_join(table: pa.Table, other: pa.Table, keys: Sequence[str], *, anti: bool = False) -> pa.Table:
    """Rows of ``table`` (in their order) whose ``keys`` appear in ``other`` (``anti``: do not).

    Arrow's hash join cannot carry list, map or struct columns, so only the keys and row positions
    go through it and the rows are then taken from ``table``."""
    import numpy as np

    pos = "__semi_join_pos__"
    left = table.select(list(keys)).append_column(pos, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    hit = left.join(other.select(list(keys)), keys=list(keys), join_type="left anti" if anti else "left semi")
    return table.take(pa.array(np.sort(hit.column(pos).to_numpy())))
