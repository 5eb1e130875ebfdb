"""The dynamic-bucket ``HASH`` index file: the key hashes stored in one bucket.

Tables with ``bucket = -1`` (dynamic bucket mode) remember which bucket each primary key went
to by keeping, per partition and bucket, one index file with the hash codes of the bucket's
keys. Java (``HashIndexFile`` via ``IntFileUtils.writeInts``) writes them as plain 4-byte
big-endian ints back to back: no header, no count, no checksum, in the writer's (hash-set)
order. The index manifest entry has ``index_type = "HASH"``, ``row_count`` = number of ints,
``dv_ranges = None``; a new file for a bucket replaces the previous one.
"""

from __future__ import annotations

import numpy as np

from paimon_lab.errors import CorruptFileError

__all__ = ["HASH_INDEX", "hash_index_bytes", "read_hash_index", "write_hash_index"]

HASH_INDEX = "HASH"
_BE_INT32 = np.dtype(">i4")


def write_hash_index(hashes: np.ndarray) -> bytes:
    """Bytes of a HASH index file holding ``hashes`` (int32 values, written in the given order).

    Values must fit a Java ``int``: signed ``[-2^31, 2^31)``; unsigned 32-bit values (e.g. a
    hash computed as ``uint32``) are reinterpreted as the same 32 bits. Callers pass a set (no
    duplicates), as Java's writers do; ``row_count`` of the index file is ``len(hashes)``.
    """
    arr = np.asarray(hashes)
    if arr.size == 0:
        return b""
    if arr.dtype == np.int32 or arr.dtype == np.uint32:
        return hash_index_bytes(arr.view(np.int32)).tobytes()
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"Hash index values must be integers, got {arr.dtype}")
    arr = arr.ravel()
    if arr.dtype.kind == "u" and int(arr.max()) >= 2**32 or arr.dtype.kind == "i" and (
            int(arr.min()) < -(2**31) or int(arr.max()) >= 2**32):
        raise ValueError("Hash index values must be 32-bit ints")
    # int64 -> uint32 keeps the low 32 bits: the two's-complement bits of a Java int
    return arr.astype(np.int64).astype(np.uint32).astype(">u4").tobytes()


def hash_index_bytes(hashes: np.ndarray) -> memoryview:
    """The bytes of a HASH index file holding the int32 ``hashes`` (in the given order), made in
    one byte-swapping pass; a view, not a copy, so a big index is not copied again to be written."""
    if hashes.dtype != np.int32:
        raise ValueError(f"Hash index values must be int32, got {hashes.dtype}")
    return memoryview(hashes.ravel().astype(_BE_INT32).view(np.uint8))


def read_hash_index(data: bytes) -> np.ndarray:
    """The int32 hashes of a HASH index file, in file order."""
    if len(data) % 4:
        raise CorruptFileError(f"HASH index file has {len(data)} bytes, not a multiple of 4")
    return np.frombuffer(data, dtype=_BE_INT32).astype(np.int32)
