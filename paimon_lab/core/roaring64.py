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

Checked against RoaringBitmap 1.0.x, the version shaded into Paimon 0.9 and 1.0. Reading
accepts any tree and container layout. Writing produces the bytes Java produces for a
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


def _truncated(pos: int, need: int, size: int) -> DataValidationError:
    return DataValidationError(f"serialized Roaring64Bitmap is truncated at byte {pos} "
                               f"(needs {need} more of {size})")


def _gather(buf: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """Little-endian unsigned integers of ``width`` bytes at byte offsets ``at``."""
    out = np.zeros(len(at), dtype=np.uint64)
    for b in range(width):
        out |= buf[at + b].astype(np.uint64) << np.uint64(8 * b)
    return out


def _ranges(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For consecutive ranges of ``counts`` items: each item's range number and place in it."""
    counts = np.asarray(counts, dtype=np.int64)
    which = np.repeat(np.arange(len(counts)), counts)
    return which, np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)


def _read_art(data: bytes, buf: np.ndarray, pos: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The leaves' 48-bit keys and container indexes in key order, and the position after."""
    size = len(data)
    if pos + 8 > size:
        raise _truncated(pos, 8, size)
    (key_count,) = struct.unpack_from("<q", data, pos)
    pos += 8
    blocks, counts = [], []
    pending = 1
    while pending:
        if pos + 4 > size:
            raise _truncated(pos, 4, size)
        kind, count, plen = struct.unpack_from("<BHb", data, pos)
        if kind == _LEAF:
            blocks.append(pos)
            counts.append(1)
            pos += 18
            pending -= 1
            continue
        if kind not in _BODY or plen < 0:
            raise DataValidationError(f"serialized Roaring64Bitmap has a bad ART node header "
                                      f"(type {kind}, prefix length {plen}) at byte {pos}")
        pos += 4 + plen + _BODY[kind]
        pending += count - 1
        # children that are all leaves (type byte 4 every 18 bytes) are taken at once
        if count and pos + 18 * count <= size and (buf[pos:pos + 18 * count:18] == _LEAF).all():
            blocks.append(pos)
            counts.append(count)
            pos += 18 * count
            pending -= count
    if pos > size:
        raise _truncated(pos, 0, size)
    block, leaf = _ranges(counts)
    offsets = np.array(blocks, dtype=np.int64)[block] + 18 * leaf
    if len(offsets) != key_count:
        raise DataValidationError(f"serialized Roaring64Bitmap says {key_count} keys, its ART has "
                                  f"{len(offsets)} leaves")
    keys = np.zeros(len(offsets), dtype=np.uint64)
    for b in range(6):
        keys = (keys << np.uint64(8)) | buf[offsets + 4 + b].astype(np.uint64)
    idxs = _gather(buf, offsets + 10, 8).view(np.int64)
    return keys, idxs, pos


def _read_containers(data: bytes, pos: int):
    """Per stored container: its index, type, cardinality and payload offset; the end position."""
    size = len(data)
    if pos + 4 > size:
        raise _truncated(pos, 4, size)
    (levels,) = struct.unpack_from("<i", data, pos)
    pos += 4
    if levels < 0 or levels > size - pos:
        raise DataValidationError(f"serialized Roaring64Bitmap has a bad container level count {levels}")
    recs: list[tuple[int, int, int, int]] = []
    for first in range(levels):
        if pos + 5 > size:
            raise _truncated(pos, 5, size)
        (slots,) = struct.unpack_from("<i", data, pos + 1)
        pos += 5
        if slots < 0 or slots > size - pos:
            raise _truncated(pos, max(slots, 0), size)
        for slot in range(slots):
            if pos >= size:
                raise _truncated(pos, 1, size)
            mark = data[pos]
            if mark == 0:
                pos += 1
                continue
            if mark != 1:
                raise DataValidationError(f"serialized Roaring64Bitmap has a bad container marker {mark}")
            if pos + 8 > size:
                raise _truncated(pos, 8, size)
            kind, card = struct.unpack_from("<Bi", data, pos + 1)
            pos += 6
            if kind == _ARRAY:
                length = 2 * card
            elif kind == _BITMAP:
                length = _BITMAP_BYTES
            elif kind == _RUN:
                length = 2 + 4 * struct.unpack_from("<H", data, pos)[0]
            else:
                raise DataValidationError(f"serialized Roaring64Bitmap has an unknown container type {kind}")
            if card < 0 or pos + length > size:
                raise _truncated(pos, length, size)
            recs.append((first << 32 | slot, kind, card, pos))
            pos += length
    if pos + 16 > size:
        raise _truncated(pos, 16, size)
    return np.array(recs, dtype=np.int64).reshape(-1, 4), pos + 16


def deserialize_roaring64(data: bytes) -> np.ndarray:
    """The sorted uint64 values of a serialized Java ``Roaring64Bitmap``.

    Raises DataValidationError when ``data`` is not one.
    """
    data = bytes(data)
    if not data:
        raise _truncated(0, 1, 0)
    if data[0] == 0:
        if len(data) != 1:
            raise DataValidationError(f"serialized Roaring64Bitmap has {len(data) - 1} bytes after its end")
        return np.empty(0, dtype=np.uint64)
    if data[0] != 1:
        raise DataValidationError(f"serialized Roaring64Bitmap starts with {data[0]}, not 0 or 1")
    buf = np.frombuffer(data, dtype=np.uint8)
    keys, idxs, pos = _read_art(data, buf, 1)
    recs, pos = _read_containers(data, pos)
    if pos != len(data):
        raise DataValidationError(f"serialized Roaring64Bitmap has {len(data) - pos} bytes after its end")
    order = np.argsort(recs[:, 0], kind="stable")
    found = np.searchsorted(recs[order, 0], idxs)
    found = np.minimum(found, max(len(recs) - 1, 0))
    if len(recs) == 0 or not np.array_equal(recs[order[found], 0], idxs):
        raise DataValidationError("serialized Roaring64Bitmap has a key whose container is missing")
    rec = recs[order[found]]  # one row per key, in key order
    kind, card, at = rec[:, 1], rec[:, 2], rec[:, 3]
    parts = []
    arrays = np.flatnonzero(kind == _ARRAY)
    g, j = _ranges(card[arrays])
    parts.append((keys[arrays][g] << np.uint64(16)) | _gather(buf, at[arrays][g] + 2 * j, 2))
    runs = np.flatnonzero(kind == _RUN)
    r, j = _ranges(_gather(buf, at[runs], 2).astype(np.int64))
    pair = at[runs][r] + 2 + 4 * j
    start, length = _gather(buf, pair, 2), _gather(buf, pair + 2, 2).astype(np.int64) + 1
    v, j = _ranges(length)
    parts.append((keys[runs][r][v] << np.uint64(16)) | (start[v] + j.astype(np.uint64)))
    for k in np.flatnonzero(kind == _BITMAP).tolist():
        bits = np.unpackbits(buf[at[k]:at[k] + _BITMAP_BYTES], bitorder="little")
        parts.append((keys[k] << np.uint64(16)) | np.flatnonzero(bits).astype(np.uint64))
    return np.sort(np.concatenate(parts))


def _art_node(out: list, kb: np.ndarray, leaves: bytes, lo: int, hi: int, depth: int) -> None:
    """Append the node holding sorted key rows ``lo:hi`` (all equal before ``depth``)."""
    if hi - lo == 1:
        out.append(leaves[18 * lo:18 * hi])
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
    if count == hi - lo:  # all children are leaves
        out.append(leaves[18 * lo:18 * hi])
        return
    bounds = np.r_[starts, hi - lo] + lo
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        _art_node(out, kb, leaves, a, b, at + 1)


def _capacity(n: int) -> int:
    """The length ``Containers.addContainer`` has grown its array to after ``n`` additions."""
    cap = 1
    while cap < n:
        cap = max(cap + (cap >> 1), cap + 1)
    return cap


def _containers(high: np.ndarray, low: np.ndarray, starts: np.ndarray) -> bytes:
    """The run-optimized containers of sorted values grouped at ``starts``, as little-endian
    16-bit words: a header (1, type; cardinality) and the payload per container."""
    n, total = len(starts), len(low)
    cards = np.diff(np.r_[starts, total])
    run_start = np.r_[True, (np.diff(low) != 1) | (high[1:] != high[:-1])]
    run_starts = np.flatnonzero(run_start)
    nruns = np.add.reduceat(run_start.astype(np.int64), starts)
    plain = np.where(cards <= _ARRAY_MAX, 2 * cards, _BITMAP_BYTES)
    kinds = np.where(2 + 4 * nruns < plain, _RUN, np.where(cards <= _ARRAY_MAX, _ARRAY, _BITMAP))
    words = 3 + np.where(kinds == _ARRAY, cards, np.where(kinds == _RUN, 1 + 2 * nruns, _BITMAP_BYTES // 2))
    at = np.cumsum(words) - words
    stream = np.zeros(int(words.sum()), dtype="<u2")
    stream[at] = 1 | (kinds << 8)
    stream[at + 1] = cards & 0xFFFF
    stream[at + 2] = cards >> 16
    group, within = np.repeat(np.arange(n), cards), np.arange(total) - np.repeat(starts, cards)
    array = kinds[group] == _ARRAY
    stream[at[group[array]] + 3 + within[array]] = low[array]
    runs = np.flatnonzero(kinds == _RUN)
    stream[at[runs] + 3] = nruns[runs]
    run_group = group[run_starts]
    kept = kinds[run_group] == _RUN
    first_run = np.cumsum(nruns) - nruns
    k = np.arange(len(run_starts))[kept] - first_run[run_group[kept]]
    place = at[run_group[kept]] + 4 + 2 * k
    lengths = np.diff(np.r_[run_starts, total])[kept]
    stream[place] = low[run_starts[kept]]
    stream[place + 1] = lengths - 1
    for g in np.flatnonzero(kinds == _BITMAP).tolist():
        bits = np.zeros(65536, np.uint8)
        bits[low[starts[g]:starts[g] + cards[g]]] = 1
        stream[at[g] + 3:at[g] + 3 + _BITMAP_BYTES // 2] = np.packbits(bits, bitorder="little").view("<u2")
    return stream.tobytes()


def serialize_roaring64(values) -> bytes:
    """Java ``Roaring64Bitmap`` bytes of the set of uint64 ``values`` (run-optimized, as Java
    Paimon's ``RoaringBitmap64.serialize`` writes them)."""
    v = np.sort(np.asarray(values, dtype=np.uint64).ravel())
    v = v[np.r_[True, v[1:] != v[:-1]]] if len(v) else v
    if len(v) == 0:
        return b"\x00"
    high = v >> np.uint64(16)
    low = (v & np.uint64(0xFFFF)).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, high[1:] != high[:-1]])
    keys = high[starts]
    n = len(keys)
    kb = ((keys[:, None] >> np.arange(40, -8, -8, dtype=np.uint64)) & np.uint64(0xFF)).astype(np.uint8)
    leaves = np.zeros((n, 18), dtype=np.uint8)
    leaves[:, 0] = _LEAF
    leaves[:, 4:10] = kb
    leaves[:, 10:] = np.arange(n, dtype="<i8").view(np.uint8).reshape(n, 8)
    out = [b"\x01", struct.pack("<q", n)]
    _art_node(out, kb, leaves.tobytes(), 0, n, 0)
    cap = _capacity(n)
    out.append(struct.pack("<iBi", 1, _NOT_TRIMMED, cap))
    out.append(_containers(high, low, starts))
    out.append(b"\x00" * (cap - n))
    out.append(struct.pack("<qii", n, 0, n - 1))
    return b"".join(out)
