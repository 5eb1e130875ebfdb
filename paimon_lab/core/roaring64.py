"""RoaringBitmap's ``Roaring64Bitmap`` serialization (what Java Paimon's ``rbm64`` stores).

Not the portable 64-bit Roaring format: Java's ``Roaring64Bitmap`` keeps the high 48 bits of each
value as the key of an adaptive radix tree (ART) whose leaves point into a two-level array of
16-bit Roaring containers, and ``serialize(DataOutput)`` writes that memory layout:

- one byte: 0 for an empty bitmap (nothing follows), else 1;
- the ART: the key count (int64 LE), then its nodes depth first, each a header (type: 0 Node4,
  1 Node16, 2 Node48, 3 Node256, 4 leaf; child count uint16 LE; prefix length; prefix bytes)
  and a body: Node4 / Node16 the sorted child key bytes in 4 / 2x8 bytes, each word byte-reversed;
  Node48 a 256-byte child position table (0xFF: none), each 8-byte word byte-reversed; Node256 a
  256-bit mask (four int64 LE); a leaf its 6 key bytes (big-endian) and container index (int64 LE,
  first level << 32 | slot). Children follow their branch in key order;
- the containers: the first-level count (int32 LE), then per array a marker byte (0xFE), its
  length (int32 LE) and per slot 0 (empty) or 1, the type (0 run, 1 bitmap, 2 array), the
  cardinality (int32 LE) and the container's words (uint16 / uint64 LE, runs as start and
  length - 1); then the container count (int64 LE) and the last first-level and slot indexes used
  (int32 LE each).

Reading accepts any tree and container layout. Writing produces the bytes Java produces for a
fresh bitmap built in ascending order and run-optimized (the keys in one array, its capacity
grown as ``Containers.addContainer`` grows it); Java's bytes for a union it computed itself
depend on the order its nodes and containers were created, the set is the same.
"""

from __future__ import annotations

import struct

import numpy as np

from paimon_lab.errors import DataValidationError

__all__ = ["deserialize_roaring64", "serialize_roaring64"]

_NODE4, _NODE16, _NODE48, _NODE256, _LEAF = range(5)
_BODY = {_NODE4: 4, _NODE16: 16, _NODE48: 256, _NODE256: 32, _LEAF: 14}
_RUN, _BITMAP, _ARRAY = 0, 1, 2
_NOT_TRIMMED = 0xFE
_ARRAY_MAX = 4096
_BITMAP_BYTES = 8192


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = memoryview(data), 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise DataValidationError(f"serialized Roaring64Bitmap is truncated at byte {self.pos} "
                                      f"(needs {n} more of {len(self.data)})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def u16s(self, n: int) -> np.ndarray:
        return np.frombuffer(self.take(2 * n), dtype="<u2")


def _read_art(r: _Reader) -> tuple[np.ndarray, np.ndarray]:
    """The leaves' 48-bit keys and container indexes, in key order."""
    (key_count,) = r.unpack("<q")
    keys, idxs = [], []
    pending = 1
    while pending:
        pending -= 1
        kind, count, plen = r.unpack("<BHb")
        if kind not in _BODY or plen < 0:
            raise DataValidationError(f"serialized Roaring64Bitmap has a bad ART node header "
                                      f"(type {kind}, prefix length {plen}) at byte {r.pos - 4}")
        r.take(plen)
        body = r.take(_BODY[kind])
        if kind == _LEAF:
            keys.append(int.from_bytes(body[:6], "big"))
            idxs.append(int.from_bytes(body[6:], "little", signed=True))
        else:
            pending += count
    if len(keys) != key_count:
        raise DataValidationError(f"serialized Roaring64Bitmap says {key_count} keys, its ART has "
                                  f"{len(keys)} leaves")
    return np.array(keys, dtype=np.uint64), np.array(idxs, dtype=np.int64)


def _container_values(r: _Reader, kind: int, card: int) -> np.ndarray:
    if kind == _ARRAY:
        return r.u16s(card).astype(np.uint64)
    if kind == _BITMAP:
        bits = np.unpackbits(np.frombuffer(r.take(_BITMAP_BYTES), dtype=np.uint8), bitorder="little")
        return np.flatnonzero(bits).astype(np.uint64)
    if kind == _RUN:
        (nruns,) = r.unpack("<H")
        pairs = r.u16s(2 * nruns).astype(np.int64).reshape(-1, 2)
        lengths = pairs[:, 1] + 1
        offsets = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return (np.repeat(pairs[:, 0], lengths) + offsets).astype(np.uint64)
    raise DataValidationError(f"serialized Roaring64Bitmap has an unknown container type {kind}")


def _read_containers(r: _Reader) -> dict[int, np.ndarray]:
    (levels,) = r.unpack("<i")
    out: dict[int, np.ndarray] = {}
    for first in range(max(levels, 0)):
        _trim, size = r.unpack("<bi")
        for slot in range(size):
            (mark,) = r.unpack("<B")
            if mark == 0:
                continue
            if mark != 1:
                raise DataValidationError(f"serialized Roaring64Bitmap has a bad container marker {mark}")
            kind, card = r.unpack("<Bi")
            out[first << 32 | slot] = _container_values(r, kind, card)
    r.unpack("<qii")
    return out


def deserialize_roaring64(data: bytes) -> np.ndarray:
    """The sorted uint64 values of a serialized Java ``Roaring64Bitmap``.

    Raises DataValidationError when ``data`` is not one.
    """
    r = _Reader(bytes(data))
    (tag,) = r.unpack("<B")
    if tag == 0:
        values = np.empty(0, dtype=np.uint64)
    elif tag == 1:
        keys, idxs = _read_art(r)
        containers = _read_containers(r)
        parts = []
        for key, idx in zip(keys.tolist(), idxs.tolist()):
            low = containers.get(idx)
            if low is None:
                raise DataValidationError(f"serialized Roaring64Bitmap's key {key} points at a missing "
                                          f"container {idx}")
            parts.append(np.uint64(key << 16) | low)
        values = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
    else:
        raise DataValidationError(f"serialized Roaring64Bitmap starts with {tag}, not 0 or 1")
    if r.pos != len(r.data):
        raise DataValidationError(f"serialized Roaring64Bitmap has {len(r.data) - r.pos} bytes after its end")
    return values


def _art_node(out: list[bytes], kb: np.ndarray, idx: np.ndarray, lo: int, hi: int, depth: int) -> None:
    """Append the node holding sorted key rows ``lo:hi`` (all equal before ``depth``)."""
    if hi - lo == 1:
        out.append(b"\x04\x00\x00\x00" + kb[lo].tobytes() + struct.pack("<q", int(idx[lo])))
        return
    first, last = kb[lo], kb[hi - 1]
    plen = int(np.argmax(first[depth:] != last[depth:]))
    at = depth + plen
    column = kb[lo:hi, at]
    starts = np.flatnonzero(np.r_[True, column[1:] != column[:-1]])
    child_keys = column[starts]
    count = len(starts)
    if count <= 4:
        kind, body = _NODE4, np.zeros(4, np.uint8)
        body[:count] = child_keys
        body = body[::-1]
    elif count <= 16:
        kind, body = _NODE16, np.zeros(16, np.uint8)
        body[:count] = child_keys
        body = body.reshape(2, 8)[:, ::-1]
    elif count <= 48:
        kind, body = _NODE48, np.full(256, 0xFF, np.uint8)
        body[child_keys] = np.arange(count, dtype=np.uint8)
        body = body.reshape(32, 8)[:, ::-1]
    else:
        kind, bits = _NODE256, np.zeros(256, np.uint8)
        bits[child_keys] = 1
        body = np.packbits(bits, bitorder="little")
    out.append(struct.pack("<BHB", kind, count, plen) + first[depth:at].tobytes()
               + np.ascontiguousarray(body).tobytes())
    bounds = np.r_[starts, hi - lo] + lo
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        _art_node(out, kb, idx, a, b, at + 1)


def _capacity(n: int) -> int:
    """The length ``Containers.addContainer`` has grown its array to after ``n`` additions."""
    cap = 1
    while cap < n:
        cap = max(cap + (cap >> 1), cap + 1)
    return cap


def serialize_roaring64(values) -> bytes:
    """Java ``Roaring64Bitmap`` bytes of the set of uint64 ``values`` (run-optimized, as Java
    Paimon's ``RoaringBitmap64.serialize`` writes them)."""
    v = np.unique(np.asarray(values, dtype=np.uint64))
    if len(v) == 0:
        return b"\x00"
    high = v >> np.uint64(16)
    low = (v & np.uint64(0xFFFF)).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, high[1:] != high[:-1]])
    keys = high[starts]
    n = len(keys)
    kb = ((keys[:, None] >> np.arange(40, -8, -8, dtype=np.uint64)) & np.uint64(0xFF)).astype(np.uint8)
    out = [b"\x01", struct.pack("<q", n)]
    _art_node(out, kb, np.arange(n, dtype=np.int64), 0, n, 0)

    ends = np.r_[starts[1:], len(v)]
    cards = ends - starts
    run_start = np.r_[True, (np.diff(low) != 1) | (high[1:] != high[:-1])]
    run_starts = np.flatnonzero(run_start)
    nruns = np.add.reduceat(run_start.astype(np.int64), starts)
    run_size = 2 + 4 * nruns
    plain_size = np.where(cards <= _ARRAY_MAX, 2 * cards, _BITMAP_BYTES)
    kinds = np.where(run_size < plain_size, _RUN, np.where(cards <= _ARRAY_MAX, _ARRAY, _BITMAP))
    run_lengths = np.diff(np.r_[run_starts, len(v)])
    run_pairs = np.stack([low[run_starts], run_lengths - 1], axis=1).astype("<u2")
    run_of_group = np.searchsorted(run_starts, starts)

    cap = _capacity(n)
    out.append(struct.pack("<iBi", 1, _NOT_TRIMMED, cap))
    for g in range(n):
        kind, card = int(kinds[g]), int(cards[g])
        out.append(struct.pack("<BBi", 1, kind, card))
        a, b = int(starts[g]), int(ends[g])
        if kind == _ARRAY:
            out.append(low[a:b].astype("<u2").tobytes())
        elif kind == _BITMAP:
            bits = np.zeros(65536, np.uint8)
            bits[low[a:b]] = 1
            out.append(np.packbits(bits, bitorder="little").tobytes())
        else:
            r0 = int(run_of_group[g])
            out.append(struct.pack("<H", int(nruns[g])) + run_pairs[r0:r0 + int(nruns[g])].tobytes())
    out.append(b"\x00" * (cap - n))
    out.append(struct.pack("<qii", n, 0, n - 1))
    return b"".join(out)
