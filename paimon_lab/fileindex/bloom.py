"""Bloom-filter file index (Java ``fileindex.bloomfilter.BloomFilterFileIndex`` over
``utils.BloomFilter64``, hashes from ``fileindex.bloomfilter.FastHash``).

Payload: ``numHashFunctions`` (4-byte big-endian int) followed by the bit set bytes; bit ``i``
is ``byte[i >> 3] & (1 << (i & 7))``. Sizing (``BloomFilter64(items, fpp)``)::

    nb       = (int) (-items * ln(fpp) / (ln 2)^2)
    numBits  = nb + (8 - nb % 8)                         # always rounds up, by 8 if aligned
    numHash  = max(1, Math.round(numBits / items * ln 2))

Options ``file-index.bloom-filter.<col>.items`` (default 1_000_000) and ``.fpp`` (default 0.1).
A 64-bit hash ``h`` sets, for ``i = 1..numHash``: ``c = (int) h + i * (int) (h >>> 32)``
(32-bit wrap), ``c = ~c if c < 0``, bit ``c % numBits``.

Hashes per type: CHAR/VARCHAR (UTF-8 bytes) and BINARY/VARBINARY use xxHash64 with seed 0
(``LongHashFunction.xx()``); TINYINT/SMALLINT/INT/BIGINT/DATE/TIME use Thomas Wang's 64-bit
integer hash of the value widened to long; FLOAT/DOUBLE hash ``floatToIntBits`` /
``doubleToLongBits``; TIMESTAMP/TIMESTAMP_LTZ hash epoch millis (precision <= 3) or epoch
micros. BOOLEAN and DECIMAL are not supported (Java throws). Nulls are not added.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.fileindex.index_file import ColumnKeys, binary_views, equal_keys, key_kind, literal_key

_U64 = np.uint64
P1 = _U64(0x9E3779B185EBCA87)
P2 = _U64(0xC2B2AE3D27D4EB4F)
P3 = _U64(0x165667B19E3779F9)
P4 = _U64(0x85EBCA77C2B2AE63)
P5 = _U64(0x27D4EB2F165667C5)

_MASK64 = (1 << 64) - 1

DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1

SUPPORTED_KINDS = ("int", "float", "double", "string", "binary")


def supports(dtype: T.DataType) -> bool:
    return key_kind(dtype) in SUPPORTED_KINDS


# --------------------------------------------------------------------------- hashes

def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U64(r)) | (x >> _U64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    acc = acc + lane * P2
    return _rotl(acc, 31) * P1


def _gather(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    idx = pos[:, None] + np.arange(width, dtype=np.int64)
    raw = np.ascontiguousarray(data[idx])
    return raw.view("<u8" if width == 8 else "<u4").ravel().astype(np.uint64)


def xxh64_binary(arr: pa.Array) -> np.ndarray:
    """xxHash64 (seed 0) of every value of a binary/string array (nulls hash as empty), as
    uint64. Vectorized over values; loops only over 32-byte stripes of the longest value."""
    if len(arr) == 0:
        return np.zeros(0, dtype=np.uint64)
    return _xxh64(*binary_views(arr, 40))


def xxh64_bytes(value: bytes) -> int:
    data = np.concatenate([np.frombuffer(value, dtype=np.uint8), np.zeros(40, dtype=np.uint8)])
    return int(_xxh64(data, np.zeros(1, np.int64), np.array([len(value)], np.int64))[0])


def _xxh64(data: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    n = len(start)
    h = np.empty(n, dtype=np.uint64)
    stripes = length // 32
    big = np.nonzero(stripes > 0)[0]
    if len(big):
        v1 = np.full(len(big), (int(P1) + int(P2)) & _MASK64, dtype=np.uint64)  # seed 0
        v2 = np.full(len(big), P2, dtype=np.uint64)
        v3 = np.zeros(len(big), dtype=np.uint64)
        v4 = np.full(len(big), (-int(P1)) & _MASK64, dtype=np.uint64)
        bstart = start[big]
        bstripes = stripes[big]
        for s in range(int(bstripes.max())):
            act = np.nonzero(bstripes > s)[0]
            p = bstart[act] + 32 * s
            v1[act] = _round(v1[act], _gather(data, p, 8))
            v2[act] = _round(v2[act], _gather(data, p + 8, 8))
            v3[act] = _round(v3[act], _gather(data, p + 16, 8))
            v4[act] = _round(v4[act], _gather(data, p + 24, 8))
        acc = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        for v in (v1, v2, v3, v4):
            acc = acc ^ _round(np.zeros_like(v), v)
            acc = acc * P1 + P4
        h[big] = acc
    small = stripes == 0
    h[small] = P5
    h = h + length.astype(np.uint64)
    pos = start + stripes * 32
    rem = length - stripes * 32
    for j in range(3):
        act = np.nonzero(rem >= 8 * (j + 1))[0]
        if len(act):
            k1 = _round(np.zeros(len(act), np.uint64), _gather(data, pos[act] + 8 * j, 8))
            x = h[act] ^ k1
            h[act] = _rotl(x, 27) * P1 + P4
    pos = pos + (rem // 8) * 8
    rem = rem % 8
    act = np.nonzero(rem >= 4)[0]
    if len(act):
        x = h[act] ^ (_gather(data, pos[act], 4) * P1)
        h[act] = _rotl(x, 23) * P2 + P3
        pos[act] += 4
        rem[act] -= 4
    for j in range(3):
        act = np.nonzero(rem > j)[0]
        if len(act):
            x = h[act] ^ (data[pos[act] + j].astype(np.uint64) * P5)
            h[act] = _rotl(x, 11) * P1
    h = h ^ (h >> _U64(33))
    h = h * P2
    h = h ^ (h >> _U64(29))
    h = h * P3
    h = h ^ (h >> _U64(32))
    return h


def wang_long_hash(keys: np.ndarray) -> np.ndarray:
    """``FastHash.getLongHash``: Thomas Wang's 64-bit integer hash (Java long arithmetic:
    ``>>`` is arithmetic), on int64 input; returns uint64 bit patterns."""
    k = np.asarray(keys, dtype=np.int64).view(np.uint64)

    def sar(x: np.ndarray, r: int) -> np.ndarray:
        return (x.view(np.int64) >> np.int64(r)).view(np.uint64)

    k = (~k) + (k << _U64(21))
    k = k ^ sar(k, 24)
    k = (k + (k << _U64(3))) + (k << _U64(8))
    k = k ^ sar(k, 14)
    k = (k + (k << _U64(2))) + (k << _U64(4))
    k = k ^ sar(k, 28)
    k = k + (k << _U64(31))
    return k


def _distinct(a: np.ndarray) -> np.ndarray:
    a = np.sort(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))] if len(a) else a


def hash_keys(keys: ColumnKeys) -> np.ndarray:
    """FastHash of every distinct non-null value, as uint64."""
    if keys.kind in ("string", "binary"):
        arr = keys.array if keys.valid.all() else keys.array.filter(pa.array(keys.valid))
        return _distinct(xxh64_binary(arr))
    if keys.kind in ("int", "float", "double"):
        vals = keys.ints if keys.valid.all() else keys.ints[keys.valid]
        return wang_long_hash(_distinct(vals))
    raise ValueError(f"bloom filter does not support {keys.kind}")


def literal_hashes(lit: Any, dtype: T.DataType) -> list[int]:
    """FastHash values a literal may take in the column (empty: no stored value can equal it)."""
    kind = key_kind(dtype)
    key = literal_key(lit, dtype)
    if kind in ("string", "binary"):
        return [xxh64_bytes(key)]
    ints = equal_keys(key, kind)
    if not ints:
        return []
    return [int(h) for h in wang_long_hash(np.array(ints, dtype=np.int64))]


# --------------------------------------------------------------------------- filter

def filter_size(items: int, fpp: float) -> tuple[int, int]:
    """(numBits, numHashFunctions) of ``BloomFilter64(items, fpp)``."""
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    num_bits = nb + (8 - nb % 8)
    num_hash = max(1, int(math.floor(num_bits / items * math.log(2) + 0.5)))
    return num_bits, num_hash


def _positions(hashes: np.ndarray, num_hash: int, num_bits: int) -> np.ndarray:
    h = np.asarray(hashes, dtype=np.uint64)
    h1 = (h & _U64(0xFFFFFFFF)).astype(np.int64)
    h2 = (h >> _U64(32)).astype(np.int64)
    h1 = np.where(h1 >= 1 << 31, h1 - (1 << 32), h1)
    h2 = np.where(h2 >= 1 << 31, h2 - (1 << 32), h2)
    i = np.arange(1, num_hash + 1, dtype=np.int64)
    c = h1[:, None] + i[None, :] * h2[:, None]
    c = ((c + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)  # Java int overflow
    c = np.where(c < 0, ~c, c)
    return c % num_bits


def build(keys: ColumnKeys, options: Mapping[str, str]) -> bytes:
    items = int(str(options.get("items", DEFAULT_ITEMS)).strip())
    fpp = float(str(options.get("fpp", DEFAULT_FPP)).strip())
    num_bits, num_hash = filter_size(items, fpp)
    hashes = hash_keys(keys)
    bits = np.zeros(num_bits, dtype=bool)
    if len(hashes):
        bits[_positions(hashes, num_hash, num_bits).ravel()] = True
    return struct.pack(">i", num_hash) + np.packbits(bits, bitorder="little").tobytes()


class BloomReader:
    def __init__(self, payload: bytes, dtype: T.DataType):
        if len(payload) < 5:
            raise ValueError("bloom filter payload too short")
        (self.num_hash,) = struct.unpack_from(">i", payload, 0)
        self.bits = np.frombuffer(payload, dtype=np.uint8, offset=4)
        self.num_bits = len(self.bits) * 8
        self.dtype = dtype

    def test_hash(self, h: int) -> bool:
        pos = _positions(np.array([h], dtype=np.uint64), self.num_hash, self.num_bits)[0]
        return bool(np.all(self.bits[pos >> 3] & (1 << (pos & 7)).astype(np.uint8)))

    def may_contain(self, lit: Any) -> bool:
        """False only if no non-null value equals ``lit``; raises Unknown if undecidable."""
        return any(self.test_hash(h) for h in literal_hashes(lit, self.dtype))
