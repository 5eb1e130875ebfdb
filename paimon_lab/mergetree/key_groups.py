"""Key groups of a sorted KV table and the vectorized per-group reductions built on them.

Rows are split into key groups by comparing adjacent keys; each column is then reduced per
group with numpy (``reduceat``, ``bincount``) or Arrow's hash aggregations. Python loops run
only over columns, never over rows. Shared by the merge engines and the field aggregators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["group_starts", "KeyGroups", "as_array", "to_bool", "valid_mask", "segment_reduce",
           "take_or_null", "hash_aggregate"]


def group_starts(kv: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """Boolean mask of the rows that start a new key in ``kv`` (sorted by ``keys``).

    Adjacent rows are compared column by column; nulls equal nulls and NaN equals NaN.
    """
    n = kv.num_rows
    starts = np.zeros(n, dtype=bool)
    if n == 0:
        return starts
    starts[0] = True
    if n == 1:
        return starts
    changed = np.zeros(n - 1, dtype=bool)
    for name in keys:
        col = as_array(kv.column(name))
        prev, cur = col.slice(0, n - 1), col.slice(1)
        differ = to_bool(pc.not_equal(prev, cur))  # null (either side null) -> False
        if col.null_count:
            differ |= to_bool(prev.is_null()) != to_bool(cur.is_null())
        if pa.types.is_floating(col.type):
            differ &= ~(to_bool(pc.is_nan(prev)) & to_bool(pc.is_nan(cur)))
        changed |= differ
    starts[1:] = changed
    return starts


@dataclass(frozen=True)
class KeyGroups:
    """The key groups of a sorted KV table: a group id per row and each group's first row."""

    ids: np.ndarray     # int64 group id of every row, non-decreasing from 0
    starts: np.ndarray  # int64 index of each group's first row

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def lasts(self) -> np.ndarray:
        """Index of each group's last row."""
        return np.append(self.starts[1:] - 1, len(self.ids) - 1).astype(np.int64)

    @staticmethod
    def of(kv: pa.Table, keys: Sequence[str]) -> "KeyGroups":
        mask = group_starts(kv, keys)
        return KeyGroups(np.cumsum(mask, dtype=np.int64) - 1, np.flatnonzero(mask).astype(np.int64))


# ====================================================================== vector helpers

def as_array(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def to_bool(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean Arrow array as numpy, nulls as False."""
    arr = as_array(arr)
    if arr.null_count:
        arr = pc.fill_null(arr, False)
    return arr.to_numpy(zero_copy_only=False).astype(bool, copy=False)


def valid_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return to_bool(arr.is_valid())


def segment_reduce(ufunc: np.ufunc, values: np.ndarray, gids: np.ndarray, n: int, fill) -> np.ndarray:
    """``ufunc``-reduce ``values`` per group (``gids`` sorted); ``fill`` for groups without rows."""
    out = np.full(n, fill, dtype=values.dtype)
    if len(values):
        starts = np.flatnonzero(np.r_[True, gids[1:] != gids[:-1]])
        out[gids[starts]] = ufunc.reduceat(values, starts)
    return out


def take_or_null(col: pa.Array | pa.ChunkedArray, idx: np.ndarray):
    """Take rows by index; index -1 gives null."""
    missing = idx < 0
    if missing.any():
        return col.take(pa.array(idx, type=pa.int64(), mask=missing))
    return col.take(pa.array(idx, type=pa.int64()))


def hash_aggregate(values: pa.Array, gids: np.ndarray, n: int, func: str,
                   options: pc.FunctionOptions | None = None) -> pa.Array:
    """Arrow's ``hash_<func>`` per group, as an array of length ``n`` (null for empty groups)."""
    if len(values) == 0:
        return pa.nulls(n, values.type)
    table = pa.table({"g": pa.array(gids, pa.int64()), "v": values})
    res = table.group_by("g", use_threads=False).aggregate([("v", func, options)])
    pos = np.full(n, -1, dtype=np.int64)
    pos[res.column("g").to_numpy()] = np.arange(res.num_rows)
    return take_or_null(as_array(res.column(f"v_{func}")), pos)

