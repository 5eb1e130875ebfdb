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
