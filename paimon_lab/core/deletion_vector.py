"""Deletion vectors: which rows of a data file are deleted, and the index file that stores them.

A deletion vector (DV) is a set of row positions in one data file, kept in a Roaring bitmap.
Readers drop those rows; primary-key tables in deletion-vector mode and append tables with
``DELETE`` write them instead of rewriting data files.

Bytes of one vector (``DeletionVector.serializeToBytes`` in Java)
-----------------------------------------------------------------
32-bit vector (``BitmapDeletionVector``, the default; positions ``0 .. 2^31-1``)::

    int32 BE   size   = 4 + len(bitmap)          (covers magic + bitmap)
    int32 BE   magic  = 1581511376
    bytes      bitmap = RoaringBitmap portable format (little-endian inside), run-optimized
    int32 BE   crc    = CRC32 of magic + bitmap  (the ``size`` bytes after the size field)

64-bit vector (``Bitmap64DeletionVector``, option ``deletion-vectors.bitmap64``)::

    int32 BE   size   = 4 + len(bitmap)
    int32 LE   magic  = 1681511377               (note: little-endian, unlike the 32-bit one)
    int64 LE   number of 32-bit bitmaps, then per bitmap ``uint32 LE key`` (high 32 bits of the
               positions, ascending, Java writes every key from 0 to the largest, empty ones
               included) followed by a 32-bit portable bitmap of the low 32 bits
    int32 BE   crc    = CRC32 of magic + bitmap

Deletion-vector index file (``DeletionVectorsIndexFile`` / ``DeletionFileWriter``)::

    byte       version = 1
    vector*    the vectors above, back to back

Each vector's place is recorded in the index manifest as a :class:`DeletionVectorMeta`
(``f0`` data file name, ``f1`` offset of the vector's size field, ``f2`` length, and
``_CARDINALITY``). The length is what Java's ``serializeTo`` returns: for a 32-bit vector the
``size`` field (magic + bitmap, *not* the 8 bytes of size and CRC); for a 64-bit vector the whole
blob (size field + magic + bitmap + CRC). ``DeletionVector.read`` checks exactly that.
"""

from __future__ import annotations

import array
import struct
import zlib
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np
from pyroaring import BitMap, BitMap64

from paimon_lab.errors import CorruptFileError

__all__ = [
    "DELETION_VECTORS_INDEX",
    "DV_INDEX_VERSION",
    "MAGIC_NUMBER",
    "MAGIC_NUMBER_64",
    "MAX_POSITION_32",
    "MAX_POSITION_64",
    "DeletionVector",
    "DeletionVectorMeta",
    "read_deletion_vector",
    "read_dv_index",
    "write_dv_index",
]

DELETION_VECTORS_INDEX = "DELETION_VECTORS"
DV_INDEX_VERSION = 1
MAGIC_NUMBER = 1581511376
MAGIC_NUMBER_64 = 1681511377
MAX_POSITION_32 = 2**31 - 1  # RoaringBitmap32.MAX_VALUE (Integer.MAX_VALUE)
# OptimizedRoaringBitmap64.MAX_VALUE: key Integer.MAX_VALUE - 1, low bits Integer.MIN_VALUE
MAX_POSITION_64 = ((2**31 - 2) << 32) | 0x80000000
_INT32_MAX = 2**31 - 1
_BE_INT = struct.Struct(">i")
_BE_UINT = struct.Struct(">I")
_LE_UINT = struct.Struct("<I")
_MAGIC_BE = _BE_UINT.pack(MAGIC_NUMBER)
_MAGIC64_LE = _LE_UINT.pack(MAGIC_NUMBER_64)
_EMPTY_BITMAP = BitMap().serialize()  # cookie 12346 + zero containers, as Java writes it


@dataclass(frozen=True)
class DeletionVectorMeta:
    """Where one data file's vector sits in a deletion-vector index file."""

    data_file_name: str
    offset: int
    length: int
    cardinality: int | None = None


def _as_positions(positions, limit: int) -> np.ndarray:
    """Sorted non-negative positions as uint64, checked against ``limit``."""
    arr = np.asarray(positions)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.size == 0:
        return np.empty(0, dtype=np.uint64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        if arr.dtype == object or np.issubdtype(arr.dtype, np.floating):
            as_int = arr.astype(np.int64)
            if not np.array_equal(as_int, arr):
                raise ValueError("Deletion vector positions must be integers")
            arr = as_int
        else:
            raise ValueError(f"Deletion vector positions must be integers, got {arr.dtype}")
    arr = arr.ravel()
    if np.issubdtype(arr.dtype, np.signedinteger) and int(arr.min()) < 0:
        raise ValueError(f"Deletion vector positions must be >= 0, got {int(arr.min())}")
    if int(arr.max()) > limit:
        raise ValueError(f"Deletion vector position {int(arr.max())} exceeds the maximum {limit} "
                         f"of this vector (use bitmap64=True for larger files)")
    # np.sort, not np.unique: the latter is orders of magnitude slower on large arrays in
    # numpy 2.x; duplicates are harmless to the bitmap and sorted input takes its fast path.
    return np.sort(arr.astype(np.uint64))


def _bitmap32_of(sorted_u32: np.ndarray) -> BitMap:
    """A fresh BitMap holding sorted values, built with array/bitset containers only."""
    return BitMap(array.array("I", np.ascontiguousarray(sorted_u32, dtype=np.uint32).tobytes()),
                  optimize=False)


def _portable32(sorted_u32: np.ndarray) -> bytes:
    """Portable bytes of a 32-bit bitmap as Java writes them after ``runOptimize()``.

    Java containers built by ``add`` are arrays (<= 4096 values) or bitsets, and ``runOptimize``
    turns one into a run container only if that is strictly smaller (arrays: 2*card > 2+4*runs;
    bitsets: 8192 > 2+4*runs). A fresh CRoaring bitmap from sorted values has the same
    containers and CRoaring's ``run_optimize`` applies the same rules, so the bytes do not depend
    on how this vector was built (pyroaring's own constructor run-optimizes; unions may not).
    """
    bm = _bitmap32_of(sorted_u32)
    bm.run_optimize()
    return bm.serialize()


class DeletionVector:
    """Deleted row positions of one data file.

    ``bitmap64=False`` (default) is Java's ``BitmapDeletionVector``: a 32-bit Roaring bitmap,
    positions up to 2^31-1, which every Paimon reader (Java, pypaimon) understands. ``True`` is
    ``Bitmap64DeletionVector`` (positions up to ~2^63), written for new vectors of tables with
    ``deletion-vectors.bitmap64 = true`` (Java 1.2+ and paimon-lab); pypaimon 2.1 cannot read it. :meth:`deserialize` accepts
    both and remembers which one it read.
    """

    __slots__ = ("_bitmap", "bitmap64")

    def __init__(self, positions=None, *, bitmap64: bool = False):
        self.bitmap64 = bool(bitmap64)
        self._bitmap = BitMap64() if self.bitmap64 else BitMap()
        if positions is not None:
            self.delete(positions)

    @property
    def max_position(self) -> int:
        return MAX_POSITION_64 if self.bitmap64 else MAX_POSITION_32

    # ------------------------------------------------------------------ updates
    def delete(self, positions) -> None:
        """Mark rows deleted: one position or an array of them (vectorized)."""
        pos = _as_positions(positions, self.max_position)
        if pos.size:
            if self.bitmap64:
                self._bitmap.update(array.array("Q", pos.tobytes()))
            else:
                self._bitmap.update(array.array("I", pos.astype(np.uint32).tobytes()))

    def checked_delete(self, position: int) -> bool:
        """Delete one position; True if it was not deleted before."""
        position = int(position)
        if not 0 <= position <= self.max_position:
            raise ValueError(f"Deletion vector position {position} is out of range")
        if position in self._bitmap:
            return False
        self._bitmap.add(position)
        return True

    def merge(self, other: "DeletionVector") -> None:
        """Add all positions of ``other`` (Java requires both to be the same kind)."""
        if other.bitmap64 != self.bitmap64:
            raise ValueError("Only deletion vectors of the same kind (32-bit or 64-bit) can be merged")
        self._bitmap |= other._bitmap

    def copy(self) -> "DeletionVector":
        dv = DeletionVector(bitmap64=self.bitmap64)
        dv._bitmap = self._bitmap.copy()
        return dv

    # ------------------------------------------------------------------ queries
    def is_deleted(self, position: int) -> bool:
        position = int(position)
        return 0 <= position <= self.max_position and position in self._bitmap

    def contains(self, positions) -> np.ndarray:
        """Vectorized :meth:`is_deleted`: a bool array, True where the position is deleted."""
        pos = np.asarray(positions, dtype=np.int64)
        deleted = self.to_numpy()
        if deleted.size == 0 or pos.size == 0:
            return np.zeros(pos.shape, dtype=bool)
        idx = np.searchsorted(deleted, pos)
        idx[idx == deleted.size] = 0
        return deleted[idx] == pos

    @property
    def cardinality(self) -> int:
        """Number of deleted positions."""
        return len(self._bitmap)

    def __len__(self) -> int:
        return len(self._bitmap)

    def is_empty(self) -> bool:
        return len(self._bitmap) == 0

    def to_numpy(self) -> np.ndarray:
        """Deleted positions, sorted ascending, as int64."""
        arr = self._bitmap.to_array()
        dtype = np.uint64 if self.bitmap64 else np.uint32
        return np.frombuffer(arr, dtype=dtype).astype(np.int64) if len(arr) else np.empty(0, np.int64)

    def mask(self, num_rows: int) -> np.ndarray:
        """Keep-mask of a file with ``num_rows`` rows: True for rows that are not deleted."""
        keep = np.ones(int(num_rows), dtype=bool)
        deleted = self.to_numpy()
        if deleted.size:
            keep[deleted[: np.searchsorted(deleted, num_rows)]] = False
        return keep

    def __eq__(self, other) -> bool:
        if not isinstance(other, DeletionVector):
            return NotImplemented
        return self.bitmap64 == other.bitmap64 and self._bitmap == other._bitmap

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        kind = "64" if self.bitmap64 else "32"
        head = self.to_numpy()[:8].tolist()
        more = ", ..." if len(self) > 8 else ""
        return f"DeletionVector{kind}({head}{more}, cardinality={len(self)})"

    # ------------------------------------------------------------------ bytes
    def serialize(self) -> bytes:
        """The vector's bytes exactly as Java's ``DeletionVector.serializeToBytes`` writes them."""
        if self.bitmap64:
            body = _MAGIC64_LE + self._bitmap64_bytes()
        else:
            body = _MAGIC_BE + _portable32(self.to_numpy().astype(np.uint32))
        if len(body) > _INT32_MAX - 8:
            raise ValueError("Deletion vector is too large to serialize (> 2 GB)")
        return _BE_UINT.pack(len(body)) + body + _BE_UINT.pack(zlib.crc32(body) & 0xFFFFFFFF)

    def serialized_length(self) -> int:
        """What the index manifest records as this vector's ``length`` (see the module doc)."""
        n = len(self.serialize())
        return n if self.bitmap64 else n - 8

    def _bitmap64_bytes(self) -> bytes:
        pos = self.to_numpy().astype(np.uint64)
        if pos.size == 0:
            return struct.pack("<q", 0)
        keys = (pos >> np.uint64(32)).astype(np.int64)
        low = (pos & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        n_keys = int(keys[-1]) + 1  # Java keeps a dense array of bitmaps, keys 0 .. max
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])  # keys are sorted
        present, ends = keys[starts], np.append(starts[1:], pos.size)
        parts = [struct.pack("<q", n_keys)]
        chunk = {int(k): (int(s), int(e)) for k, s, e in zip(present, starts, ends)}
        for key in range(n_keys):
            parts.append(_LE_UINT.pack(key))
            if key in chunk:
                s, e = chunk[key]
                parts.append(_portable32(low[s:e]))
            else:
                parts.append(_EMPTY_BITMAP)
        return b"".join(parts)

    @classmethod
    def deserialize(cls, data: bytes) -> "DeletionVector":
        """Inverse of :meth:`serialize`; reads 32-bit and 64-bit vectors, checks size and CRC."""
        dv, end = _read_at(memoryview(data), 0, None)
        if end != len(data):
            raise CorruptFileError(f"Deletion vector has {len(data) - end} trailing bytes")
        return dv


def _read_at(buf: memoryview, offset: int, length: int | None) -> tuple["DeletionVector", int]:
    """Read the vector whose size field is at ``offset``; return it and the offset after it."""
    if offset < 0 or offset + 8 > len(buf):
        raise CorruptFileError(f"Deletion vector at offset {offset} is out of the file's bounds")
    size = _BE_INT.unpack_from(buf, offset)[0]
    magic_be = _BE_UINT.unpack_from(buf, offset + 4)[0]
    magic_le = _LE_UINT.unpack_from(buf, offset + 4)[0]
    if magic_be == MAGIC_NUMBER:
        bitmap64 = False
        if length is not None and size != length:
            raise CorruptFileError(f"Deletion vector size mismatch: actual {size}, expected {length}")
    elif magic_le == MAGIC_NUMBER_64:
        bitmap64 = True
        if length is not None and size != length - 8:
            raise CorruptFileError(f"Deletion vector size mismatch: actual {size}, expected {length - 8}")
    else:
        raise CorruptFileError(f"Invalid deletion vector magic number {magic_be} at offset {offset} "
                               f"(expected {MAGIC_NUMBER} or little-endian {MAGIC_NUMBER_64})")
    end = offset + 4 + size + 4
    if size < 4 or end > len(buf):
        raise CorruptFileError(f"Deletion vector at offset {offset} is truncated (size {size})")
    body = buf[offset + 4: offset + 4 + size]
    crc = _BE_UINT.unpack_from(buf, offset + 4 + size)[0]
    if zlib.crc32(body) & 0xFFFFFFFF != crc:
        raise CorruptFileError(f"Deletion vector at offset {offset} fails its CRC32 check")
    dv = DeletionVector(bitmap64=bitmap64)
    try:
        if bitmap64:
            dv._bitmap = BitMap64.deserialize(bytes(body[4:]))
        else:
            dv._bitmap = BitMap.deserialize(bytes(body[4:]))
    except Exception as e:  # pyroaring raises ValueError on malformed bitmaps
        raise CorruptFileError(f"Deletion vector at offset {offset} holds a malformed bitmap: {e}") from None
    if not bitmap64 and len(dv._bitmap) and dv._bitmap.max() > MAX_POSITION_32:
        raise CorruptFileError(f"32-bit deletion vector at offset {offset} holds a position > 2^31-1")
    return dv, end


def read_deletion_vector(data: bytes, offset: int, length: int | None = None) -> DeletionVector:
    """Read one vector from index-file bytes, as Java's ``DeletionVector.read`` does for a
    ``DeletionFile(path, offset, length, cardinality)``; ``length`` (if given) is checked."""
    return _read_at(memoryview(data), offset, length)[0]


def write_dv_index(vectors: Mapping[str, DeletionVector]) -> tuple[bytes, dict[str, DeletionVectorMeta]]:
    """Bytes of a deletion-vector index file holding ``vectors`` (data file name -> vector), in
    the mapping's order, and each vector's :class:`DeletionVectorMeta` for the index manifest.

    The index manifest entry for the file has ``row_count = len(vectors)`` and
    ``file_size = len(bytes)`` (see :meth:`IndexFileMeta.for_deletion_vectors`).
    """
    parts = [bytes([DV_INDEX_VERSION])]
    metas: dict[str, DeletionVectorMeta] = {}
    pos = 1
    for name, dv in vectors.items():
        blob = dv.serialize()
        length = len(blob) if dv.bitmap64 else len(blob) - 8
        if pos > _INT32_MAX:
            raise ValueError("Deletion-vector index file exceeds 2 GB; Java records offsets as int")
        metas[name] = DeletionVectorMeta(name, pos, length, dv.cardinality)
        parts.append(blob)
        pos += len(blob)
    return b"".join(parts), metas


def read_dv_index(data: bytes, metas: Mapping[str, DeletionVectorMeta] | Iterable[DeletionVectorMeta]
                  ) -> dict[str, DeletionVector]:
    """Read the vectors that ``metas`` point to from a deletion-vector index file's bytes."""
    if not data:
        raise CorruptFileError("Deletion-vector index file is empty")
    if data[0] != DV_INDEX_VERSION:
        raise CorruptFileError(f"Deletion-vector index file version {data[0]} is not {DV_INDEX_VERSION}")
    items = metas.values() if isinstance(metas, Mapping) else metas
    buf = memoryview(data)
    out: dict[str, DeletionVector] = {}
    for meta in items:
        dv = _read_at(buf, meta.offset, meta.length)[0]
        if meta.cardinality is not None and meta.cardinality != dv.cardinality:
            raise CorruptFileError(f"Deletion vector of {meta.data_file_name} has {dv.cardinality} "
                                   f"positions, the index manifest says {meta.cardinality}")
        out[meta.data_file_name] = dv
    return out
