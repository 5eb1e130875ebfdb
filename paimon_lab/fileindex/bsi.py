"""Bit-sliced index (Java ``fileindex.bsi.BitSliceIndexBitmapFileIndex`` over
``utils.BitSliceIndexRoaringBitmap``).

Payload (big-endian)::

    version 1 byte = 1 | row count int | has positive 1 byte | [positive BSI]
                       | has negative 1 byte | [negative BSI]
    BSI: version 1 byte = 1 | min long | max long | existence bitmap (RoaringBitmap32)
         | slice count int | slice bitmaps, bit 0 first

Non-negative values go to the positive BSI, negative ones to the negative BSI as their absolute
value. Java's writer always passes ``min = 0`` (its min collectors start at 0), so values are
stored as-is, ``max`` is the largest absolute value and the slice count is ``max.bit_length()``.
Indexed values: TINYINT..BIGINT, DATE (days), TIME (millis), TIMESTAMP (millis for precision
<= 3, else micros) and DECIMAL (unscaled long). Long.MIN_VALUE cannot be stored.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from paimon_lab.core import types as T
from paimon_lab.fileindex.bitmap import bitmap_to_array, deserialize_roaring, roaring_size, serialize_roaring
from paimon_lab.fileindex.index_file import ColumnKeys, key_kind

VERSION_1 = 1
SUPPORTED_KINDS = ("int", "decimal")
_LONG_MIN = -(1 << 63)


def supports(dtype: T.DataType) -> bool:
    return key_kind(dtype) in SUPPORTED_KINDS


def _serialize_side(rows: np.ndarray, values: np.ndarray) -> bytes:
    vmax = int(values.max()) if len(values) else 0
    out = bytearray(struct.pack(">bqq", VERSION_1, 0, vmax))
    out += serialize_roaring(rows)
    n_slices = vmax.bit_length()
    out += struct.pack(">i", n_slices)
    u = values.astype(np.uint64)
    for i in range(n_slices):
        out += serialize_roaring(rows[((u >> np.uint64(i)) & np.uint64(1)).astype(bool)])
    return bytes(out)


def build(keys: ColumnKeys) -> bytes:
    vals = keys.ints
    valid = keys.valid
    if np.any(valid & (vals == _LONG_MIN)):
        raise ValueError("bsi index cannot store Long.MIN_VALUE")
    rows = np.arange(keys.n, dtype=np.int64)
    pos = valid & (vals >= 0)
    neg = valid & (vals < 0)
    out = bytearray(struct.pack(">bi", VERSION_1, keys.n))
    out += struct.pack(">?", bool(pos.any()))
    if pos.any():
        out += _serialize_side(rows[pos], vals[pos])
    out += struct.pack(">?", bool(neg.any()))
    if neg.any():
        out += _serialize_side(rows[neg], -vals[neg])
    return bytes(out)


class _Side:
    __slots__ = ("min", "max", "rows", "values", "_end")

    def __init__(self, buf: bytes, pos: int):
        version = buf[pos]
        if version > VERSION_1:
            raise ValueError(f"unsupported bsi version {version}")
        self.min, self.max = struct.unpack_from(">qq", buf, pos + 1)
        pos += 17
        size = roaring_size(buf, pos)
        ebm = deserialize_roaring(buf, pos, size)
        pos += size
        (n_slices,) = struct.unpack_from(">i", buf, pos)
        pos += 4
        self.rows = bitmap_to_array(ebm)
        values = np.zeros(len(self.rows), dtype=np.uint64)
        for i in range(n_slices):
            size = roaring_size(buf, pos)
            slice_rows = bitmap_to_array(deserialize_roaring(buf, pos, size))
            pos += size
            if len(slice_rows):
                idx = np.searchsorted(self.rows, slice_rows)
                values[idx] |= np.uint64(1) << np.uint64(i)
        self.values = values.view(np.int64) + np.int64(self.min)
        self._end = pos

    @property
    def end(self) -> int:
        return self._end


class BsiReader:
    """Decodes a BSI payload into per-row values (``values[valid]``)."""

    def __init__(self, payload: bytes, dtype: T.DataType):
        self.dtype = dtype
        self.kind = key_kind(dtype)
        buf = payload
        if buf[0] > VERSION_1:
            raise ValueError(f"unsupported bsi index version {buf[0]}")
        (self.row_count,) = struct.unpack_from(">i", buf, 1)
        pos = 5
        n = self.row_count
        self.valid = np.zeros(n, dtype=bool)
        self.values = np.zeros(n, dtype=np.int64)
        for sign in (1, -1):
            has = buf[pos]
            pos += 1
            if has:
                side = _Side(buf, pos)
                pos = side.end
                self.valid[side.rows] = True
                self.values[side.rows] = side.values * sign
        self.lo = int(self.values[self.valid].min()) if self.valid.any() else None
        self.hi = int(self.values[self.valid].max()) if self.valid.any() else None

    def select(self, op: str, k: int) -> np.ndarray:
        """Mask of non-null rows whose value ``op`` the integer ``k``."""
        v = self.values
        if op == "=":
            m = v == k
        elif op == "<":
            m = v < k
        elif op == "<=":
            m = v <= k
        elif op == ">":
            m = v > k
        elif op == ">=":
            m = v >= k
        else:
            raise ValueError(op)
        return m & self.valid

    def describe(self) -> dict[str, Any]:
        return {"rows": self.row_count, "non_null": int(self.valid.sum()), "min": self.lo, "max": self.hi}
