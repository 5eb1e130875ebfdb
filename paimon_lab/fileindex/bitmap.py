"""Bitmap file index (Java ``fileindex.bitmap.BitmapFileIndex`` with ``BitmapFileIndexMeta``
(V1) and ``BitmapFileIndexMetaV2`` (V2, Java's default)), plus the Java-faithful
``RoaringBitmap32`` serialization every bitmap-based index uses.

Both versions start with ``version`` (1 byte), ``row count`` (int), ``non-null value bitmap
number`` (int), ``has null value`` (1 byte) and, if it has nulls, ``null value offset`` (int);
V2 then adds ``null bitmap length`` (int). A value whose bitmap holds a single row is not
written to the body: its offset is ``-1 - row``. Other offsets are relative to the body start.
Bitmaps are written to the body in Java ``HashMap`` iteration order of the distinct values
(null bitmap first, if it has more than one row).

V1 head: ``(value, offset)`` per distinct value, in that same HashMap order.

V2 head: ``bitmap index block number`` (int), per block ``(first value, block offset)``,
``bitmap blocks offset`` (int: total size of the index blocks), then the index blocks, each
``entry number`` (int) and ``(value, offset, length)`` per entry with values in ascending order
(``length`` is -1 for single-row values); blocks close before exceeding
``file-index.bitmap.<col>.index-block-size`` (default 16kb). The body follows the blocks.

Values: TINYINT 1 byte, SMALLINT 2, INT/DATE/TIME 4, BIGINT and TIMESTAMP (millis for precision
<= 3, else micros) 8, FLOAT/DOUBLE their IEEE bits (4/8), BOOLEAN 1 byte, CHAR/VARCHAR an int
length then UTF-8 bytes. BINARY and DECIMAL are not supported (Java throws).
"""

from __future__ import annotations

import bisect
import struct
from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyroaring

from paimon_lab.core import types as T
from paimon_lab.core.options import parse_memory
from paimon_lab.fileindex.index_file import (ColumnKeys, binary_views, equal_keys, int_width, java_hashmap_order,
                                         key_kind, literal_key)

VERSION_1 = 1
VERSION_2 = 2
SUPPORTED_KINDS = ("int", "float", "double", "bool", "string")


def supports(dtype: T.DataType) -> bool:
    return key_kind(dtype) in SUPPORTED_KINDS


# --------------------------------------------------------------------------- roaring

SERIAL_COOKIE = 12347
SERIAL_COOKIE_NO_RUNCONTAINER = 12346
NO_OFFSET_THRESHOLD = 4


def serialize_roaring(values: Iterable[int] | np.ndarray) -> bytes:
    """Bytes of ``RoaringBitmap32.serialize()`` for a set of row numbers: Java's portable
    RoaringBitmap format after ``runOptimize()`` (an array container becomes a run container
    only if ``2 * card > 2 + 4 * runs``; a bitmap container only if ``8192 > 2 + 4 * runs``;
    containers hold at most 4096 values as arrays). Written here rather than by pyroaring so
    the bytes follow Java's rules whatever CRoaring version is installed; checked against
    Java's RoaringBitmap 1.3.0 in the tests."""
    v = np.asarray(values, dtype=np.int64)
    if len(v) > 1 and not bool((v[1:] > v[:-1]).all()):
        v = np.sort(v)
        v = v[np.concatenate(([True], v[1:] != v[:-1]))]
    n = len(v)
    if n == 0:
        return struct.pack("<ii", SERIAL_COOKIE_NO_RUNCONTAINER, 0)
    if n <= 4096 and (int(v[0]) >> 16) == (int(v[-1]) >> 16):
        # one array container (the common case: small files, per-value bitmaps)
        lo = v & 0xFFFF
        nruns = 1 if n == 1 else 1 + int(np.count_nonzero((lo[1:] - lo[:-1]) != 1))
        if not 2 * n > 2 + 4 * nruns:
            return (struct.pack("<iiHHi", SERIAL_COOKIE_NO_RUNCONTAINER, 1, int(v[0]) >> 16, n - 1, 16)
                    + lo.astype("<u2").tobytes())
    hi = v >> 16
    lo = (v & 0xFFFF).astype("<u2")
    step = np.empty(n, dtype=bool)  # a new run starts here (within its container)
    step[0] = True
    step[1:] = ((v[1:] - v[:-1]) != 1) | (hi[1:] != hi[:-1])
    firsts = np.concatenate(([0], np.nonzero(hi[1:] != hi[:-1])[0] + 1))
    bounds = np.concatenate((firsts, [n]))
    run_starts = np.nonzero(step)[0]
    run_ends = np.concatenate((run_starts[1:], [n])) - 1
    run_bounds = np.searchsorted(run_starts, bounds)
    keys = hi[firsts].tolist()
    cards = np.diff(bounds).tolist()
    nruns_all = np.diff(run_bounds).tolist()
    kinds, payloads = [], []
    for i, (card, nruns) in enumerate(zip(cards, nruns_all)):
        a, b = int(bounds[i]), int(bounds[i + 1])
        if card <= 4096:
            is_run = card * 2 > 2 + 4 * nruns
        else:
            is_run = 8192 > 2 + 4 * nruns
        if is_run:
            ra, rb = int(run_bounds[i]), int(run_bounds[i + 1])
            starts = lo[run_starts[ra:rb]]
            pairs = np.empty(2 * nruns, dtype="<u2")
            pairs[0::2] = starts
            pairs[1::2] = lo[run_ends[ra:rb]] - starts
            payloads.append(struct.pack("<H", nruns) + pairs.tobytes())
            kinds.append("run")
        elif card <= 4096:
            payloads.append(lo[a:b].tobytes())
            kinds.append("array")
        else:
            bits = np.zeros(65536, dtype=bool)
            bits[lo[a:b]] = True
            payloads.append(np.packbits(bits, bitorder="little").tobytes())
            kinds.append("bitmap")
    size = len(keys)
    has_run = "run" in kinds
    out = bytearray()
    if has_run:
        out += struct.pack("<I", SERIAL_COOKIE | ((size - 1) << 16))
        flags = bytearray((size + 7) // 8)
        for i, k in enumerate(kinds):
            if k == "run":
                flags[i // 8] |= 1 << (i % 8)
        out += flags
        start = 4 + (4 if size < NO_OFFSET_THRESHOLD else 8) * size + len(flags)
    else:
        out += struct.pack("<ii", SERIAL_COOKIE_NO_RUNCONTAINER, size)
        start = 8 + 8 * size
    for k, c in zip(keys, cards):
        out += struct.pack("<HH", k, c - 1)
    if not has_run or size >= NO_OFFSET_THRESHOLD:
        for p in payloads:
            out += struct.pack("<i", start)
            start += len(p)
    for p in payloads:
        out += p
    return bytes(out)


def serialize_roaring_groups(v: np.ndarray, bounds: np.ndarray) -> list[bytes]:
    """``serialize_roaring(v[bounds[i]:bounds[i+1]])`` for every group, each group sorted and
    duplicate-free; vectorized over groups whose containers are all array containers (groups
    needing run or bitset containers go through :func:`serialize_roaring`)."""
    v = np.asarray(v, dtype=np.int64)
    bounds = np.asarray(bounds, dtype=np.int64)
    n_groups = len(bounds) - 1
    n = len(v)
    if n == 0 or n_groups <= 0:
        return [serialize_roaring(v[bounds[i]:bounds[i + 1]]) for i in range(max(n_groups, 0))]
    counts = np.diff(bounds)
    gid = np.repeat(np.arange(n_groups), counts)
    hi = v >> 16
    new_container = np.ones(n, dtype=bool)
    new_container[1:] = (gid[1:] != gid[:-1]) | (hi[1:] != hi[:-1])
    new_run = new_container.copy()
    new_run[1:] |= (v[1:] - v[:-1]) != 1
    c_start = np.nonzero(new_container)[0]
    c_end = np.concatenate((c_start[1:], [n]))
    card = c_end - c_start
    run_start = np.nonzero(new_run)[0]
    nruns = np.diff(np.searchsorted(run_start, np.concatenate((c_start, [n]))))
    plain = (card <= 4096) & ~(2 * card > 2 + 4 * nruns)  # stays an array container
    c_gid = gid[c_start]
    # groups (non-empty) whose containers are all plain arrays
    g_first = np.searchsorted(c_gid, np.arange(n_groups))
    g_last = np.searchsorted(c_gid, np.arange(n_groups), side="right")
    size = g_last - g_first
    bad = np.zeros(n_groups + 1, dtype=np.int64)
    np.add.at(bad, c_gid, (~plain).astype(np.int64))
    lo = (v & 0xFFFF).astype("<u2")
    keycard = np.empty((len(c_start), 2), dtype="<u2")
    keycard[:, 0] = hi[c_start]
    keycard[:, 1] = card - 1
    psize = 2 * card
    excl = np.cumsum(psize) - psize
    offs = (8 + 8 * size[c_gid] + excl - excl[g_first[c_gid]]).astype("<u4")
    out = []
    for g in range(n_groups):
        a, b = int(bounds[g]), int(bounds[g + 1])
        if a == b or bad[g]:
            out.append(serialize_roaring(v[a:b]))
            continue
        f, l = int(g_first[g]), int(g_last[g])
        out.append(struct.pack("<ii", SERIAL_COOKIE_NO_RUNCONTAINER, l - f) + keycard[f:l].tobytes()
                   + offs[f:l].tobytes() + lo[a:b].tobytes())
    return out


def roaring_size(buf: bytes, pos: int) -> int:
    """Length of the serialized RoaringBitmap starting at ``pos`` (parsed from its header)."""
    (cookie,) = struct.unpack_from("<I", buf, pos)
    if cookie & 0xFFFF == SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        nflag = (size + 7) // 8
        flags = buf[pos + 4: pos + 4 + nflag]
        p = pos + 4 + nflag
        has_run = True
    elif cookie == SERIAL_COOKIE_NO_RUNCONTAINER:
        (size,) = struct.unpack_from("<i", buf, pos + 4)
        flags = b""
        p = pos + 8
        has_run = False
    else:
        raise ValueError("not a serialized RoaringBitmap")
    header = np.frombuffer(buf, dtype="<u2", count=2 * size, offset=p)
    cards = header[1::2].astype(np.int64) + 1
    p += 4 * size
    if not has_run or size >= NO_OFFSET_THRESHOLD:
        p += 4 * size
    for i in range(size):
        if has_run and flags[i // 8] >> (i % 8) & 1:
            (nruns,) = struct.unpack_from("<H", buf, p)
            p += 2 + 4 * nruns
        elif cards[i] > 4096:
            p += 8192
        else:
            p += 2 * int(cards[i])
    return p - pos


def deserialize_roaring(buf: bytes, pos: int, length: int | None = None) -> pyroaring.BitMap:
    if length is None or length < 0:
        length = roaring_size(buf, pos)
    return pyroaring.BitMap.deserialize(bytes(buf[pos: pos + length]))


def bitmap_to_array(bm: pyroaring.BitMap) -> np.ndarray:
    return np.frombuffer(bm.to_array(), dtype=np.uint32).astype(np.int64)


# --------------------------------------------------------------------------- Java hashCode

def _murmur_java(arr: pa.Array) -> np.ndarray:
    """``BinaryString.hashCode`` (``MurmurHashUtils.hashBytes``, seed 42: little-endian 4-byte
    words, then each tail byte mixed alone as a signed int, fmix with the length) of every value
    of a binary array, as int64 holding the signed 32-bit result."""
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    data, start, length = binary_views(arr, 8)
    M = 0xFFFFFFFF
    u = np.uint32

    def rotl(x, r):
        return (x << u(r)) | (x >> u(32 - r))

    def mix_k1(k):
        k = k * u(0xCC9E2D51)
        k = rotl(k, 15)
        return k * u(0x1B873593)

    def mix_h1(h, k):
        h = h ^ k
        h = rotl(h, 13)
        return h * u(5) + u(0xE6546B64)

    h = np.full(n, 42, dtype=np.uint32)
    words = length // 4
    for j in range(int(words.max()) if n else 0):
        act = np.nonzero(words > j)[0]
        idx = (start[act] + 4 * j)[:, None] + np.arange(4)
        k = np.ascontiguousarray(data[idx]).view("<u4").ravel()
        h[act] = mix_h1(h[act], mix_k1(k))
    tail = length % 4
    for j in range(3):
        act = np.nonzero(tail > j)[0]
        if len(act):
            b = data[start[act] + words[act] * 4 + j].astype(np.int8).astype(np.int64) & M
            h[act] = mix_h1(h[act], mix_k1(b.astype(np.uint32)))
    h = h ^ (length & M).astype(np.uint32)
    h = h ^ (h >> u(16))
    h = h * u(0x85EBCA6B)
    h = h ^ (h >> u(13))
    h = h * u(0xC2B2AE35)
    h = h ^ (h >> u(16))
    return h.astype(np.int64)


def _java_hash_codes(kind: str, width: int, dictionary: Any) -> np.ndarray:
    """``hashCode()`` of the boxed Java keys (Byte/Short/Integer/Long/Float/Double/Boolean/
    BinaryString) of a bitmap index, for HashMap ordering."""
    if kind == "string":
        return _murmur_java(dictionary)
    vals = np.asarray(dictionary, dtype=np.int64)
    if kind == "bool":
        return np.where(vals != 0, 1231, 1237)
    if (kind == "int" and width == 8) or kind == "double":
        u = vals.view(np.uint64)
        return (u ^ (u >> np.uint64(32))).astype(np.uint32).astype(np.int64)
    return vals  # Byte/Short/Integer value, Float bits


# --------------------------------------------------------------------------- value codec

class _Codec:
    """Reads/writes bitmap values and orders them as Java's V2 comparator does. Keys are
    Python ints (integral types, float bits, bool 0/1) or bytes (strings)."""

    def __init__(self, dtype: T.DataType):
        self.kind = key_kind(dtype)
        if self.kind not in SUPPORTED_KINDS:
            raise ValueError(f"bitmap index does not support {dtype}")
        if self.kind == "int":
            self.fmt = {1: ">b", 2: ">h", 4: ">i", 8: ">q"}[int_width(dtype)]
        elif self.kind == "float":
            self.fmt = ">i"
        elif self.kind == "double":
            self.fmt = ">q"
        elif self.kind == "bool":
            self.fmt = ">?"
        else:
            self.fmt = None
        self.width = struct.calcsize(self.fmt) if self.fmt else None

    def read(self, buf: bytes, pos: int) -> tuple[Any, int]:
        if self.fmt is None:
            (n,) = struct.unpack_from(">i", buf, pos)
            return bytes(buf[pos + 4: pos + 4 + n]), pos + 4 + n
        (v,) = struct.unpack_from(self.fmt, buf, pos)
        return (int(v) if self.kind == "bool" else v), pos + self.width

    def sort_key(self, key: Any) -> Any:
        """Java comparator order: signed ints, unsigned-byte strings, Float/Double.compare
        (-0.0 < 0.0, NaN last), false < true."""
        if self.kind == "float":
            return key ^ 0x7FFFFFFF if key < 0 else key
        if self.kind == "double":
            return key ^ 0x7FFFFFFFFFFFFFFF if key < 0 else key
        return key

    def to_value(self, key: Any) -> Any:
        """The value a key stands for, for range comparisons."""
        if self.kind == "float":
            return struct.unpack(">f", struct.pack(">i", key))[0]
        if self.kind == "double":
            return struct.unpack(">d", struct.pack(">q", key))[0]
        return key


# --------------------------------------------------------------------------- writer

def _group_rows(keys: ColumnKeys):
    """Group the non-null rows by value, by sorting (no hashing).

    Returns ``(dictionary, rows, starts, counts, null_rows)``: the distinct values in order of
    first occurrence (an Arrow array), the row numbers grouped by value (ascending within a
    group), and for dictionary entry ``g`` its rows ``rows[starts[g]: starts[g] + counts[g]]``.
    """
    null_rows = np.nonzero(~keys.valid)[0]
    valid_rows = np.nonzero(keys.valid)[0]
    if keys.kind == "string":
        arr = keys.array if len(null_rows) == 0 else keys.array.take(pa.array(valid_rows))
        perm = np.asarray(pc.sort_indices(arr).to_numpy(), dtype=np.int64)  # stable
        srt = arr.take(pa.array(perm))
        if len(srt) > 1:
            same = pc.equal(srt.slice(1), srt.slice(0, len(srt) - 1))
            change = ~np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)
        else:
            change = np.zeros(0, dtype=bool)
    else:
        vals = keys.ints[valid_rows]
        perm = np.argsort(vals, kind="stable")
        srt = vals[perm]
        change = srt[1:] != srt[:-1]
    m = len(valid_rows)
    group_starts = np.concatenate(([0], np.nonzero(change)[0] + 1)) if m else np.zeros(0, np.int64)
    group_counts = np.diff(np.concatenate((group_starts, [m]))) if m else np.zeros(0, np.int64)
    rows = valid_rows[perm]
    fo = np.argsort(rows[group_starts], kind="stable")  # first-occurrence order
    starts = group_starts[fo]
    counts = group_counts[fo]
    if keys.kind == "string":
        dictionary = srt.take(pa.array(starts))
    else:
        dictionary = pa.array(srt[starts], type=pa.int64())
    return dictionary, rows, starts, counts, null_rows


def _gather_groups(rows: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate(rows[s: s + c] for s, c in zip(starts, counts))``, vectorized."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    excl = np.cumsum(counts) - counts
    return rows[np.repeat(starts - excl, counts) + np.arange(total)]


class _Keys:
    """The distinct values of a column as a vector: ``ints`` (int64: integral keys, float bits,
    bools as 0/1) or ``binary`` (an Arrow large_binary array of UTF-8 strings)."""

    def __init__(self, codec: _Codec, dictionary: pa.Array):
        self.codec = codec
        if codec.fmt is None:
            self.binary = dictionary.cast(pa.large_binary())
            offs = np.frombuffer(self.binary.buffers()[1], dtype=np.int64)[
                self.binary.offset: self.binary.offset + len(self.binary) + 1]
            self.starts = offs[:-1]
            self.lens = np.diff(offs)
            buf = self.binary.buffers()[2]
            self.data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
            self.ints = None
        else:
            self.ints = np.asarray(dictionary.to_numpy(zero_copy_only=False), dtype=np.int64)
            self.binary = None

    def __len__(self) -> int:
        return len(self.ints) if self.ints is not None else len(self.lens)

    def sizes(self) -> np.ndarray:
        """Serialized size of each key."""
        if self.ints is not None:
            return np.full(len(self.ints), self.codec.width, dtype=np.int64)
        return self.lens + 4

    def sort_order(self) -> np.ndarray:
        """Indices in Java comparator order."""
        if self.ints is not None:
            k = self.ints
            if self.codec.kind == "float":
                k = np.where(k < 0, k ^ 0x7FFFFFFF, k)
            elif self.codec.kind == "double":
                k = np.where(k < 0, k ^ 0x7FFFFFFFFFFFFFFF, k)
            return np.argsort(k, kind="stable")
        # Arrow orders binary values by unsigned bytes, shorter prefix first (BinaryString order)
        return np.asarray(pc.sort_indices(self.binary).to_numpy(), dtype=np.int64)

    def pack(self, idx: np.ndarray, tails: list[np.ndarray]) -> tuple[bytes, np.ndarray]:
        """Records ``key, tail ints...`` (big-endian) for keys ``idx`` in that order; returns
        the bytes and each record's start offset."""
        idx = np.asarray(idx, dtype=np.int64)
        m = len(idx)
        ntail = len(tails)
        if self.ints is not None:
            fmt = self.codec.fmt.replace("?", "u1")
            dt = np.dtype([("k", fmt)] + [(f"t{j}", ">i4") for j in range(ntail)])
            rec = np.empty(m, dtype=dt)
            rec["k"] = self.ints[idx]
            for j, t in enumerate(tails):
                rec[f"t{j}"] = t
            size = dt.itemsize
            return rec.tobytes(), np.arange(m, dtype=np.int64) * size
        lens = self.lens[idx]
        rec_size = 4 + lens + 4 * ntail
        starts = np.concatenate(([0], np.cumsum(rec_size)[:-1])) if m else np.zeros(0, np.int64)
        total = int(rec_size.sum()) if m else 0
        out = np.zeros(total, dtype=np.uint8)

        def put_ints(pos: np.ndarray, vals: np.ndarray) -> None:
            b = np.asarray(vals, dtype=">i4").view(np.uint8).reshape(-1, 4)
            out[pos[:, None] + np.arange(4)] = b

        if m:
            put_ints(starts, lens)
            nbytes = int(lens.sum())
            if nbytes:
                rel = np.arange(nbytes) - np.repeat(np.cumsum(lens) - lens, lens)
                out[np.repeat(starts + 4, lens) + rel] = self.data[np.repeat(self.starts[idx], lens) + rel]
            for j, t in enumerate(tails):
                put_ints(starts + 4 + lens + 4 * j, t)
        return out.tobytes(), starts


def build(keys: ColumnKeys, dtype: T.DataType, options: Mapping[str, str]) -> bytes:
    # format 1 by default: Java 0.9/1.0 readers refuse format 2 (newer Java reads both)
    version = int(str(options.get("version", VERSION_1)).strip())
    if version not in (VERSION_1, VERSION_2):
        raise ValueError(f"invalid version: {version}")
    codec = _Codec(dtype)
    row_count = keys.n
    dictionary, rows, starts, counts, null_rows = _group_rows(keys)
    values = _Keys(codec, dictionary)
    n_values = len(values)

    hashes = _java_hash_codes(keys.kind, codec.width or 0,
                              values.binary if values.ints is None else values.ints)
    hash_order = java_hashmap_order(hashes, head_insert=True)  # id2bitmap (computeIfAbsent) order

    null_bytes = serialize_roaring(null_rows)
    has_null = len(null_rows) > 0
    null_offset = -1 - int(null_rows[0]) if len(null_rows) == 1 else 0
    body_start = len(null_bytes) if len(null_rows) > 1 else 0

    counts_h = counts[hash_order]
    multi_h = counts_h > 1
    # multi-row bitmaps are serialized in hash order; single rows become -1 - row
    groups = hash_order[multi_h]
    sel = _gather_groups(rows, starts[groups], counts[groups])
    group_bounds = np.concatenate(([0], np.cumsum(counts[groups])))
    body = serialize_roaring_groups(sel, group_bounds)
    body_sizes = np.array([len(b) for b in body], dtype=np.int64)
    offsets = np.empty(n_values, dtype=np.int64)  # per hash-order position
    offsets[~multi_h] = -1 - rows[starts[hash_order[~multi_h]]]
    offsets[multi_h] = body_start + np.concatenate(([0], np.cumsum(body_sizes)[:-1])) if len(body) else 0
    final_offset = body_start + int(body_sizes.sum())

    out = bytearray(struct.pack(">bii?", version, row_count, n_values, has_null))
    if version == VERSION_1:
        if has_null:
            out += struct.pack(">i", null_offset)
        out += values.pack(hash_order, [offsets])[0]
    else:
        if has_null:
            out += struct.pack(">ii", null_offset, len(null_bytes))
        # lengths as BitmapFileIndexMetaV2 derives them: next multi offset minus this one
        lengths = np.full(n_values, -1, dtype=np.int64)
        mpos = np.nonzero(multi_h)[0]
        if len(mpos):
            lengths[mpos] = np.diff(np.concatenate((offsets[mpos], [final_offset])))
        out += _v2_meta(values, hash_order, offsets, lengths, options)
    if len(null_rows) > 1:
        out += null_bytes
    out += b"".join(body)
    return bytes(out)


def _v2_meta(values: _Keys, hash_order: np.ndarray, offsets: np.ndarray, lengths: np.ndarray,
             options: Mapping[str, str]) -> bytes:
    limit = parse_memory(options.get("index-block-size", "16kb"))
    n = len(values)
    pos_of = np.empty(n, dtype=np.int64)  # dictionary index -> hash-order position
    pos_of[hash_order] = np.arange(n)
    srt = values.sort_order()
    entry_offsets = offsets[pos_of[srt]]
    entry_lengths = lengths[pos_of[srt]]
    entry_sizes = values.sizes()[srt] + 8
    # greedy blocks: a block (4-byte count + entries) closes before exceeding the limit
    block_starts = []
    csum = np.concatenate(([0], np.cumsum(entry_sizes)))
    i = 0
    while i < n:
        if 4 + entry_sizes[i] > limit:
            raise ValueError("index fail")
        j = int(np.searchsorted(csum, csum[i] + limit - 4, side="right")) - 1
        block_starts.append(i)
        i = max(j, i + 1)
    block_ends = block_starts[1:] + [n]
    block_sizes = [4 + int(csum[b] - csum[a]) for a, b in zip(block_starts, block_ends)]
    block_offsets = np.concatenate(([0], np.cumsum(block_sizes)[:-1])) if block_starts else np.zeros(0)
    out = bytearray(struct.pack(">i", len(block_starts)))
    if block_starts:
        firsts = srt[np.array(block_starts, dtype=np.int64)]
        out += values.pack(firsts, [block_offsets])[0]
    out += struct.pack(">i", int(sum(block_sizes)))
    packed, starts = values.pack(srt, [entry_offsets, entry_lengths])
    starts = np.concatenate((starts, [len(packed)]))
    for a, b in zip(block_starts, block_ends):
        out += struct.pack(">i", b - a)
        out += packed[int(starts[a]): int(starts[b])]
    return bytes(out)


# --------------------------------------------------------------------------- reader

class BitmapReader:
    """Reads one bitmap index payload (V1 or V2) lazily."""

    def __init__(self, payload: bytes, dtype: T.DataType):
        payload = bytes(payload)
        self.buf = payload
        self.dtype = dtype
        self.codec = _Codec(dtype)
        self.kind = self.codec.kind
        buf = payload
        self.version = buf[0]
        if self.version not in (VERSION_1, VERSION_2):
            raise ValueError(f"unsupported bitmap index version {self.version}")
        self.row_count, self.n_values, has_null = struct.unpack_from(">ii?", buf, 1)
        self.has_null = bool(has_null)
        pos = 10
        self.null_offset, self.null_length = 0, -1
        if self.has_null:
            (self.null_offset,) = struct.unpack_from(">i", buf, pos)
            pos += 4
            if self.version == VERSION_2:
                (self.null_length,) = struct.unpack_from(">i", buf, pos)
                pos += 4
        self._cache: dict[Any, np.ndarray] = {}
        self._null_rows: np.ndarray | None = None
        if self.version == VERSION_1:
            self._entries = self._read_v1_entries(pos)
        else:
            (n_blocks,) = struct.unpack_from(">i", buf, pos)
            pos += 4
            self._block_keys, self._block_offsets = [], []
            for _ in range(n_blocks):
                key, pos = self.codec.read(buf, pos)
                self._block_keys.append(self.codec.sort_key(key))
                self._block_offsets.append(struct.unpack_from(">i", buf, pos)[0])
                pos += 4
            (blocks_size,) = struct.unpack_from(">i", buf, pos)
            pos += 4
            self._index_start = pos
            self.body_start = pos + blocks_size
            self._blocks: dict[int, dict[Any, tuple[int, int]]] = {}

    def _read_v1_entries(self, pos: int) -> dict[Any, tuple[int, int]]:
        codec, buf, n = self.codec, self.buf, self.n_values
        entries: dict[Any, tuple[int, int]] = {}
        if codec.fmt is not None and n:
            dt = np.dtype([("k", codec.fmt.replace("?", "u1")), ("o", ">i4")])
            rec = np.frombuffer(buf, dtype=dt, count=n, offset=pos)
            ks = rec["k"].astype(np.int64).tolist()
            entries = {k: (o, -1) for k, o in zip(ks, rec["o"].tolist())}
            pos += n * dt.itemsize
        else:
            unpack = struct.Struct(">i").unpack_from
            for _ in range(n):
                (ln,) = unpack(buf, pos)
                end = pos + 4 + ln
                entries[buf[pos + 4: end]] = (unpack(buf, end)[0], -1)
                pos = end + 4
        self.body_start = pos
        return entries

    def _block(self, i: int) -> dict[Any, tuple[int, int]]:
        blk = self._blocks.get(i)
        if blk is None:
            pos = self._index_start + self._block_offsets[i]
            (n,) = struct.unpack_from(">i", self.buf, pos)
            pos += 4
            blk = {}
            for _ in range(n):
                key, pos = self.codec.read(self.buf, pos)
                off, length = struct.unpack_from(">ii", self.buf, pos)
                pos += 8
                blk[key] = (off, length)
            self._blocks[i] = blk
        return blk

    def _find(self, key: Any) -> tuple[int, int] | None:
        if self.version == VERSION_1:
            return self._entries.get(key)
        i = bisect.bisect_right(self._block_keys, self.codec.sort_key(key)) - 1
        if i < 0:
            return None
        return self._block(i).get(key)

    def _rows_at(self, off: int, length: int) -> np.ndarray:
        if off < 0:
            return np.array([-1 - off], dtype=np.int64)
        return bitmap_to_array(deserialize_roaring(self.buf, self.body_start + off, length))

    # ----------------------------------------------------------------- row sets

    def rows_equal_key(self, key: Any) -> np.ndarray:
        """Rows whose stored key is ``key`` (a codec key)."""
        hit = self._cache.get(key)
        if hit is None:
            entry = self._find(key)
            hit = np.zeros(0, dtype=np.int64) if entry is None else self._rows_at(*entry)
            self._cache[key] = hit
        return hit

    def null_rows(self) -> np.ndarray:
        if not self.has_null:
            return np.zeros(0, dtype=np.int64)
        if self._null_rows is None:
            self._null_rows = self._rows_at(self.null_offset, self.null_length)
        return self._null_rows

    def all_entries(self) -> Iterable[tuple[Any, tuple[int, int]]]:
        if self.version == VERSION_1:
            return list(self._entries.items())
        out = []
        for i in range(len(self._block_offsets)):
            out.extend(self._block(i).items())
        return out

    def keys_for_literal(self, lit: Any) -> list:
        """Stored keys equal to a literal (Unknown if undecidable)."""
        key = literal_key(lit, self.dtype)
        if self.kind == "string":
            return [key]
        return equal_keys(key, self.kind)

    def rows_where(self, test) -> np.ndarray:
        """Rows whose value satisfies ``test(value)`` (values as :meth:`_Codec.to_value`)."""
        parts = [self._rows_at(*entry) for key, entry in self.all_entries()
                 if test(self.codec.to_value(key))]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
