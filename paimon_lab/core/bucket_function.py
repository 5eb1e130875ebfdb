"""Bucket functions ('bucket-function.type'): which fixed bucket a row's bucket key goes to.

``default``: Paimon's ``abs(BinaryRow.hashCode() % n)``. ``mod``: ``floorMod(key, n)`` of a single
INT or BIGINT key. ``hive``: Hive's bucketing hash (``31 * h + hash(field)`` over the key fields,
each field hashed as Hive does), masked to non-negative, modulo ``n``. All vectorized over Arrow
columns; nulls hash to 0 as in Java.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core import binary_row
from paimon_lab.core.types import DataType
from paimon_lab.errors import OptionError

FUNCTIONS = ("default", "mod", "hive")
_MOD_TYPES = ("INT", "BIGINT")
_HIVE_INT_TYPES = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "DATE", "TIME")
_HIVE_TYPES = _HIVE_INT_TYPES + ("BIGINT", "FLOAT", "DOUBLE", "CHAR", "VARCHAR", "BINARY", "VARBINARY")


def check_bucket_function(function: str, key_names: Sequence[str], key_types: Sequence[DataType]) -> None:
    """Refuse a bucket key the function cannot hash (as Java does when it creates the function)."""
    if function == "mod" and (len(key_types) != 1 or key_types[0].root not in _MOD_TYPES):
        raise OptionError(f"'bucket-function.type' = 'mod' needs a single INT or BIGINT bucket key, "
                          f"not {list(key_names)}")
    if function == "hive":
        bad = [n for n, t in zip(key_names, key_types) if t.root not in _HIVE_TYPES]
        if bad:
            raise OptionError(f"'bucket-function.type' = 'hive' cannot hash bucket key columns {bad} "
                              f"(supported: {', '.join(_HIVE_TYPES)})")


def bucket_ids(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType], num_buckets: int,
               function: str = "default") -> np.ndarray:
    """The bucket of every row (int32) for ``num_buckets`` fixed buckets."""
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    if function == "default":
        return binary_row.bucket_of(binary_row.hash_codes(columns, types), num_buckets)
    if function == "mod":
        values = _int64(columns[0])
        return np.mod(values, num_buckets).astype(np.int32)
    if function == "hive":
        h = np.zeros(len(columns[0]) if columns else 0, np.int64)
        for column, dtype in zip(columns, types):
            h = _wrap32(31 * h + _hive_hash(column, dtype))
        return ((h & 0x7FFFFFFF) % num_buckets).astype(np.int32)
    raise OptionError(f"Unknown bucket function '{function}'; use one of {', '.join(FUNCTIONS)}")


def _combine(column) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _int64(column) -> np.ndarray:
    column = _combine(column)
    if pa.types.is_boolean(column.type):
        column = pc.cast(column, pa.int8())
    elif pa.types.is_date32(column.type) or pa.types.is_time32(column.type):
        column = column.view(pa.int32())
    return pc.fill_null(pc.cast(column, pa.int64()), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def _wrap32(values: np.ndarray) -> np.ndarray:
    """Java int overflow: the low 32 bits, signed."""
    return values.astype(np.int64).astype(np.uint64).astype(np.uint32).astype(np.int32).astype(np.int64)


def _hive_hash(column, dtype: DataType) -> np.ndarray:
    column = _combine(column)
    nulls = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else None
    root = dtype.root
    if root in _HIVE_INT_TYPES:
        out = _int64(column)
    elif root == "BIGINT":
        v = _int64(column).astype(np.uint64)
        out = _wrap32((v ^ (v >> np.uint64(32))).astype(np.int64))
    elif root == "FLOAT":
        f = pc.fill_null(column, 0.0).to_numpy(zero_copy_only=False).astype(np.float32)
        f = np.where(f == 0.0, np.float32(0.0), f)  # -0.0 hashes as 0
        out = f.view(np.int32).astype(np.int64)
    elif root == "DOUBLE":
        d = pc.fill_null(column, 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
        d = np.where(d == 0.0, 0.0, d)
        v = d.view(np.uint64)
        out = _wrap32((v ^ (v >> np.uint64(32))).astype(np.int64))
    else:  # strings and binaries: Hive's 31-polynomial over the signed bytes (UTF-8 for strings)
        out = _bytes_hash(column)
    if nulls is not None:
        out = np.where(nulls, 0, out)
    return out


def _bytes_hash(column: pa.Array) -> np.ndarray:
    binary = column.cast(pa.large_binary()) if not pa.types.is_large_binary(column.type) else column
    binary = pc.fill_null(binary, b"")
    buffers = binary.buffers()
    offsets = np.frombuffer(buffers[1], np.int64, len(binary) + 1, binary.offset * 8)
    data = np.frombuffer(buffers[2], np.int8, offsets[-1] - offsets[0], offsets[0]) \
        if offsets[-1] > offsets[0] else np.zeros(0, np.int8)
    offsets = offsets - offsets[0]
    n = len(offsets) - 1
    if len(data) == 0:
        return np.zeros(n, np.int64)
    lengths = np.diff(offsets)
    row = np.repeat(np.arange(n), lengths)
    exponent = offsets[1:][row] - 1 - np.arange(len(data))
    # 31^i mod 2^64 for every byte position (uint64 products wrap, and 2^32 divides 2^64)
    powers = np.concatenate([np.ones(1, np.uint64), np.cumprod(np.full(int(lengths.max()) - 1, 31, np.uint64))])
    terms = data.astype(np.int64).astype(np.uint64) * powers[exponent]
    sums = np.zeros(n, np.uint64)
    np.add.at(sums, row, terms)
    return _wrap32(sums.astype(np.int64))
