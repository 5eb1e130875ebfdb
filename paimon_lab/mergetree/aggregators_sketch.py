"""Field aggregators over serialized sketches and bitmaps in VARBINARY columns: ``hll_sketch``,
``theta_sketch`` (Apache DataSketches), ``rbm32`` (a portable 32-bit Roaring bitmap) and ``rbm64``
(RoaringBitmap's Java ``Roaring64Bitmap`` serialization, see ``core/roaring64.py``).

Each value is the serialized object; a group's values are unioned in row order into the bytes
Java Paimon would store (``HllSketchUtil.union``: HLL_4 compact; ``ThetaSketch.union``: a
compact ordered theta sketch of the default 4096 nominal entries; ``RoaringBitmap32``: run-
optimized portable format; ``RoaringBitmap64``: run-optimized ``Roaring64Bitmap``, laid out as
built in ascending order, which Java's own union bytes can differ from in layout, never in set).
None accepts retractions, as in Java. A group with one non-null value keeps it as it is; only
groups with several go through the library, one union per value.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
from datasketches import (
    compact_theta_sketch,
    hll_sketch,
    hll_union,
    tgt_hll_type,
    theta_union,
)
from pyroaring import BitMap

from paimon_lab.core.roaring64 import deserialize_roaring64, serialize_roaring64
from paimon_lab.errors import DataValidationError
from paimon_lab.mergetree.aggregators import FieldAggregator
from paimon_lab.mergetree.key_groups import take_or_null, valid_mask

__all__ = ["FieldHllSketchAgg", "FieldRoaringBitmap32Agg", "FieldRoaringBitmap64Agg", "FieldThetaSketchAgg"]


class _UnionAggregator(FieldAggregator):
    types = frozenset({"VARBINARY"})

    def _aggregate(self, values, gids, n, retract):
        valid = valid_mask(values)
        vg = gids[valid]
        pos = np.flatnonzero(valid)
        counts = np.bincount(vg, minlength=n)
        first = np.full(n, -1, dtype=np.int64)
        if len(pos):
            starts = np.flatnonzero(np.r_[True, vg[1:] != vg[:-1]])
            first[vg[starts]] = pos[starts]
        out = take_or_null(values, first)
        several = np.flatnonzero(counts > 1)
        if len(several) == 0:
            return out
        rows = np.isin(vg, several)
        py, rg = values.take(pa.array(pos[rows])).to_pylist(), vg[rows]
        merged: list[bytes] = []
        acc, current = None, None
        try:
            for j, value in enumerate(py):
                if rg[j] != current:
                    if current is not None:
                        merged.append(acc)
                    acc, current = value, rg[j]
                else:
                    acc = self.union(acc, value)
            merged.append(acc)
        except (RuntimeError, ValueError, IndexError, DataValidationError) as e:
            raise DataValidationError(f"Column '{self.column}' ({self.name}): a value is not a valid "
                                      f"serialized {self.what}: {e}") from None
        take = first.copy()
        take[several] = len(values) + np.arange(len(several))
        return take_or_null(pa.concat_arrays([values, pa.array(merged, values.type)]), take)

    what = ""

    @staticmethod
    def union(acc: bytes, value: bytes) -> bytes:
        raise NotImplementedError


class FieldHllSketchAgg(_UnionAggregator):
    """Union of HyperLogLog sketches (Java: ``FieldHllSketchAgg`` / ``HllSketchUtil.union``)."""

    name, what = "hll_sketch", "HLL sketch"

    @staticmethod
    def union(acc, value):
        incoming = hll_sketch.deserialize(value)
        u = hll_union(incoming.lg_config_k)
        u.update(incoming)
        u.update(hll_sketch.deserialize(acc))
        return u.get_result(tgt_hll_type.HLL_4).serialize_compact()


def _theta(data: bytes):
    """A serialized compact theta sketch (what Java's ``CompactSketch.toByteArray`` writes and
    the union stores); an update sketch's own image is refused as not valid."""
    return compact_theta_sketch.deserialize(data)


class FieldThetaSketchAgg(_UnionAggregator):
    """Union of theta sketches (Java: ``FieldThetaSketchAgg`` / ``ThetaSketch.union``)."""

    name, what = "theta_sketch", "theta sketch"

    @staticmethod
    def union(acc, value):
        u = theta_union(12)
        u.update(_theta(acc))
        u.update(_theta(value))
        return _java_theta_bytes(u.get_result(True).serialize())


_P_ONE = struct.pack("<f", 1.0)


def _java_theta_bytes(data: bytes) -> bytes:
    """The C++ library leaves the sampling-probability float of a compact sketch's preamble
    (bytes 12-15, present from two preamble longs) at 0; Java writes 1.0 there. Readers of a
    compact sketch ignore it: patched only so the stored bytes are Java's own."""
    if len(data) >= 16 and data[0] & 0x3F >= 2 and data[12:16] == b"\0\0\0\0":
        return data[:12] + _P_ONE + data[16:]
    return data


class FieldRoaringBitmap32Agg(_UnionAggregator):
    """Union of 32-bit Roaring bitmaps (Java: ``FieldRoaringBitmap32Agg``)."""

    name, what = "rbm32", "32-bit Roaring bitmap"

    @staticmethod
    def union(acc, value):
        bm = BitMap.deserialize(acc) | BitMap.deserialize(value)
        bm.run_optimize()
        return bm.serialize()


class FieldRoaringBitmap64Agg(_UnionAggregator):
    """Union of 64-bit Roaring bitmaps (Java: ``FieldRoaringBitmap64Agg``), each stored in the
    Java ``Roaring64Bitmap`` serialization."""

    name, what = "rbm64", "64-bit Roaring bitmap (Java Roaring64Bitmap)"

    @staticmethod
    def union(acc, value):
        return serialize_roaring64(np.concatenate([deserialize_roaring64(acc), deserialize_roaring64(value)]))
