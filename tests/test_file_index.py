"""Data-file indexes (paimon_lab.fileindex): the container, bloom filter, bitmap (V1/V2), bsi.

Expected bytes for small cases are written out here from Java's layouts
(``FileIndexFormat``, ``BloomFilterFileIndex``/``BloomFilter64``/``FastHash``,
``BitmapFileIndex``/``BitmapFileIndexMeta(V2)``, ``BitSliceIndexBitmapFileIndex``/
``BitSliceIndexRoaringBitmap``), independently of the code under test. When a JDK and the
RoaringBitmap jar are available, Java itself checks the RoaringBitmap bytes, HashMap iteration
order, ``writeUTF`` and the bloom sizing. pypaimon 2.1.0 has no data-file index reader or writer,
so it serves as a peer only for the pieces it shares (RoaringBitmap32 bytes, Java murmur hash).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import random
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_lab.core import types as T
from paimon_lab.errors import OptionError, UnsupportedTypeError
from paimon_lab.fileindex import (BITMAP, BLOOM_FILTER, BSI, FileIndexReader, build_file_index,
                                  embed_in_manifest, file_index_columns, index_file_name,
                                  index_in_manifest_threshold, read_file_index,
                                  read_file_index_head, rows_matching, validate_file_index,
                                  write_file_index)
from paimon_lab.fileindex import bitmap as fbitmap
from paimon_lab.fileindex import bloom as fbloom
from paimon_lab.fileindex.index_file import (java_hashmap_order, java_string_hash, java_utf,
                                         read_java_utf)
from paimon_lab.core.predicate import And, Leaf, Not, Or, col, parse_filter

MAGIC = struct.pack(">q", 1493475289347502)
_EXAMPLES = int(os.environ.get("FILE_INDEX_EXAMPLES", "120"))
M64 = (1 << 64) - 1


def F(name, type_str, i=0, **kw):
    return T.DataField(i, name, T.atomic(type_str, **kw))


# ------------------------------------------------------------------ the spec, written out

def spec_roaring(values) -> bytes:
    """RoaringBitmap portable bytes after ``runOptimize()`` (see test_index_formats)."""
    values = sorted(set(int(v) for v in values))
    groups: dict[int, list[int]] = {}
    for v in values:
        groups.setdefault(v >> 16, []).append(v & 0xFFFF)
    conts = []
    for key in sorted(groups):
        low = groups[key]
        runs = []
        for v in low:
            if runs and runs[-1][1] == v - 1:
                runs[-1][1] = v
            else:
                runs.append([v, v])
        card = len(low)
        base = 8192 if card > 4096 else 2 * card
        if base > 2 + 4 * len(runs):
            body = struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", s, e - s) for s, e in runs)
            conts.append((key, card, True, body))
        elif card > 4096:
            words = [0] * 1024
            for v in low:
                words[v >> 6] |= 1 << (v & 63)
            conts.append((key, card, False, struct.pack("<1024Q", *words)))
        else:
            conts.append((key, card, False, struct.pack(f"<{card}H", *low)))
    n = len(conts)
    has_run = any(c[2] for c in conts)
    out = bytearray()
    if has_run:
        out += struct.pack("<I", 12347 | ((n - 1) << 16))
        flags = bytearray((n + 7) // 8)
        for i, c in enumerate(conts):
            if c[2]:
                flags[i // 8] |= 1 << (i % 8)
        out += flags
    else:
        out += struct.pack("<II", 12346, n)
    for key, card, _, _ in conts:
        out += struct.pack("<HH", key, card - 1)
    if not has_run or n >= 4:
        off = len(out) + 4 * n
        for c in conts:
            out += struct.pack("<I", off)
            off += len(c[3])
    for c in conts:
        out += c[3]
    return bytes(out)


def spec_wang(key: int) -> int:
    """FastHash.getLongHash with Java long semantics, in plain Python ints."""
    def s64(x):
        x &= M64
        return x - (1 << 64) if x >> 63 else x
    key = s64(key)
    key = s64((~key) + (key << 21))
    key = s64(key ^ (key >> 24))
    key = s64((key + (key << 3)) + (key << 8))
    key = s64(key ^ (key >> 14))
    key = s64((key + (key << 2)) + (key << 4))
    key = s64(key ^ (key >> 28))
    key = s64(key + (key << 31))
    return key


def spec_bloom_bits(hashes, num_bits, k) -> bytes:
    bits = bytearray(num_bits // 8)
    for h in hashes:
        h &= M64
        h1 = h & 0xFFFFFFFF
        h2 = h >> 32
        for i in range(1, k + 1):
            c = (h1 + i * h2) & 0xFFFFFFFF
            if c >> 31:
                c = (~c) & 0xFFFFFFFF
            pos = c % num_bits
            bits[pos >> 3] |= 1 << (pos & 7)
    return bytes(bits)


def spec_container(entries) -> bytes:
    """entries: [(column, [(type, payload)])] in order."""
    def utf(s):
        b = s.encode()
        return struct.pack(">H", len(b)) + b
    names = b"".join(utf(c) + b"".join(utf(t) for t, _ in idx) for c, idx in entries)
    n_items = sum(len(idx) for _, idx in entries)
    head_len = 8 + 4 + 4 + 4 + 8 * n_items + 4 * len(entries) + 4 + len(names)
    head = MAGIC + struct.pack(">iii", 1, head_len, len(entries))
    body = b""
    for c, idx in entries:
        head += utf(c) + struct.pack(">i", len(idx))
        for t, p in idx:
            head += utf(t) + struct.pack(">ii", head_len + len(body), len(p))
            body += p
    head += struct.pack(">i", 0)
    assert len(head) == head_len
    return head + body


# ------------------------------------------------------------------ container

def test_container_exact_bytes_and_round_trip():
    payload = b"\x00\x00\x00\x01\xff"
    data = write_file_index({"c": {"bloom-filter": payload}})
    assert data == spec_container([("c", [("bloom-filter", payload)])])
    # 8 magic + 4 version + 4 head length + 4 columns + (2+1) + 4 + (2+12) + 4 + 4 + 4 redundant
    assert struct.unpack_from(">i", data, 12)[0] == 53
    assert read_file_index_head(data) == {"c": {"bloom-filter": (53, 5)}}
    assert read_file_index(data) == {"c": {"bloom-filter": payload}}

    two = write_file_index({"a": {"bitmap": b"xy", "bsi": b"z"}, "é€": {"bloom-filter": b"q"}})
    assert two == spec_container([("a", [("bitmap", b"xy"), ("bsi", b"z")]), ("é€", [("bloom-filter", b"q")])])
    assert read_file_index(two) == {"a": {"bitmap": b"xy", "bsi": b"z"}, "é€": {"bloom-filter": b"q"}}


def test_container_empty_index_flag_and_bad_magic():
    data = write_file_index({"m[k]": {"bitmap": None}, "x": {"bsi": b"\x01"}})
    head = read_file_index_head(data)
    assert head["m[k]"]["bitmap"] == (-1, 0)
    assert read_file_index(data)["m[k]"]["bitmap"] is None
    with pytest.raises(ValueError):
        read_file_index_head(b"\x00" * 32)


def test_modified_utf8():
    assert java_utf("abc") == b"\x00\x03abc"
    assert java_utf("a\x00b") == b"\x00\x04a\xc0\x80b"  # NUL is two bytes in modified UTF-8
    assert java_utf("\U0001F600") == b"\x00\x06\xed\xa0\xbd\xed\xb8\x80"  # surrogate pair
    for s in ["", "a\x00b", "€uro", "\U0001F600x", "日本語"]:
        assert read_java_utf(java_utf(s), 0) == (s, len(java_utf(s)))
    assert java_string_hash("id") == 105 * 31 + 100
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # UTF-16 code units


def test_column_and_type_order_follow_java_hashmaps():
    # String.hashCode: "s"=115 (bucket 3), "d"=100 (4), "id"=3355 (11), "ts"=3711 (15)
    fields = [F("id", "INT"), F("s", "STRING"), F("ts", "BIGINT"), F("d", "INT")]
    t = pa.table({"id": pa.array([1], pa.int32()), "s": ["a"], "ts": pa.array([1], pa.int64()),
                  "d": pa.array([1], pa.int32())})
    opts = {"file-index.bitmap.columns": "ts,id,d,s", "file-index.bsi.columns": "id",
            "file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.items": "10"}
    head = read_file_index_head(build_file_index(t, opts, fields))
    assert list(head) == ["s", "d", "id", "ts"]
    order = java_hashmap_order([java_string_hash(x) for x in ["bitmap", "bsi", "bloom-filter"]])
    assert list(head["id"]) == [["bitmap", "bsi", "bloom-filter"][i] for i in order]


# ------------------------------------------------------------------ bloom filter

def test_xxh64_known_vectors_and_zstd_checksums():
    try:
        from compression import zstd  # Python 3.14
    except ImportError:
        from backports import zstd  # what fastavro[zstandard] brings before 3.14
    assert fbloom.xxh64_bytes(b"") == 0xEF46DB3751D8E999
    assert fbloom.xxh64_bytes(b"abc") == 0x44BC2CF5AD770999
    rnd = random.Random(5)
    values = [bytes(rnd.getrandbits(8) for _ in range(rnd.choice([0, 1, 3, 4, 7, 8, 31, 32, 33, 64, 100, 257])))
              for _ in range(300)]
    hashes = fbloom.xxh64_binary(pa.array(values, pa.binary()))
    for v, h in zip(values, hashes):
        frame = zstd.compress(v, options={zstd.CompressionParameter.checksum_flag: 1})
        # a zstd frame's content checksum is the low 32 bits of XXH64(content, seed 0)
        assert int.from_bytes(frame[-4:], "little") == int(h) & 0xFFFFFFFF
        assert fbloom.xxh64_bytes(v) == int(h)


def test_wang_hash_matches_java_long_arithmetic():
    keys = [0, 1, -1, 42, 2**31 - 1, -2**31, 2**63 - 1, -2**63, 123456789012345]
    got = fbloom.wang_long_hash(np.array(keys, dtype=np.int64))
    assert [int(x) for x in got] == [spec_wang(k) & M64 for k in keys]


def test_bloom_sizing_like_bloomfilter64():
    assert fbloom.filter_size(1_000_000, 0.1) == (4792536, 3)
    assert fbloom.filter_size(1, 0.5) == (8, 6)       # nb = 1 -> 1 + 7
    assert fbloom.filter_size(100, 0.01) == (960, 7)  # nb = 958 -> 958 + 2


def test_bloom_exact_bytes_int():
    t = pa.table({"x": pa.array([1, None, 1, 7], pa.int32())})
    opts = {"file-index.bloom-filter.columns": "x", "file-index.bloom-filter.x.items": "100",
            "file-index.bloom-filter.x.fpp": "0.01"}
    data = build_file_index(t, opts, [F("x", "INT")])
    payload = read_file_index(data)["x"][BLOOM_FILTER]
    expected = struct.pack(">i", 7) + spec_bloom_bits([spec_wang(1), spec_wang(7)], 960, 7)
    assert payload == expected


def test_bloom_exact_bytes_string_and_timestamp():
    t = pa.table({"s": ["abc", "", None], "ts": pa.array([1_700_000_000_123_456, None, -1], pa.timestamp("us"))})
    opts = {"file-index.bloom-filter.columns": "s,ts", "file-index.bloom-filter.s.items": "1",
            "file-index.bloom-filter.s.fpp": "0.5", "file-index.bloom-filter.ts.items": "100"}
    fields = [F("s", "STRING"), F("ts", "TIMESTAMP", precision=3)]
    got = read_file_index(build_file_index(t, opts, fields))
    assert got["s"][BLOOM_FILTER] == struct.pack(">i", 6) + spec_bloom_bits(
        [0x44BC2CF5AD770999, 0xEF46DB3751D8E999], 8, 6)
    nbits, k = fbloom.filter_size(100, 0.1)
    # TIMESTAMP(3) hashes epoch millis (floor): 1_700_000_000_123 and -1 us -> -1 ms
    assert got["ts"][BLOOM_FILTER] == struct.pack(">i", k) + spec_bloom_bits(
        [spec_wang(1_700_000_000_123), spec_wang(-1)], nbits, k)


def test_bloom_float_uses_float_bits():
    t = pa.table({"f": pa.array([1.5, float("nan")], pa.float32())})
    opts = {"file-index.bloom-filter.columns": "f", "file-index.bloom-filter.f.items": "10"}
    payload = read_file_index(build_file_index(t, opts, [F("f", "FLOAT")]))["f"][BLOOM_FILTER]
    nbits, k = fbloom.filter_size(10, 0.1)
    bits15 = struct.unpack(">i", struct.pack(">f", 1.5))[0]
    assert payload == struct.pack(">i", k) + spec_bloom_bits([spec_wang(bits15), spec_wang(0x7FC00000)], nbits, k)


def test_bloom_rejects_boolean_and_decimal():
    for f in (F("b", "BOOLEAN"), F("b", "DECIMAL", precision=10, scale=2)):
        with pytest.raises(UnsupportedTypeError):
            validate_file_index({"file-index.bloom-filter.columns": "b"}, [f])


def test_bloom_pruning():
    t = pa.table({"s": [f"v{i}" for i in range(1000)], "n": pa.array(range(1000), pa.int64())})
    opts = {"file-index.bloom-filter.columns": "s,n", "file-index.bloom-filter.s.items": "1000",
            "file-index.bloom-filter.n.items": "1000", "file-index.bloom-filter.s.fpp": "0.01",
            "file-index.bloom-filter.n.fpp": "0.01"}
    fields = [F("s", "STRING"), F("n", "BIGINT")]
    r = FileIndexReader(build_file_index(t, opts, fields), fields)
    assert all(r.may_match(col("s") == f"v{i}") for i in range(1000))
    assert all(r.may_match(col("n") == i) for i in range(1000))
    misses = sum(not r.may_match(col("s") == f"w{i}") for i in range(1000))
    assert misses > 950  # fpp 0.01
    assert sum(not r.may_match(col("n") == i) for i in range(2000, 3000)) > 950
    assert not r.may_match(col("n") == 2.5)  # no integer equals 2.5
    assert r.may_match(col("s") > "zz")  # bloom says nothing about ranges
    assert r.may_match(col("s").isin(["w1", "v5"]))
    assert r.rows_matching(col("s") == "v5", 1000) is None


# ------------------------------------------------------------------ bitmap

def _bitmap_example(version):
    t = pa.table({"x": pa.array([5, 5, 7, None], pa.int32())})
    opts = {"file-index.bitmap.columns": "x", "file-index.bitmap.x.version": str(version)}
    return read_file_index(build_file_index(t, opts, [F("x", "INT")]))["x"][BITMAP]


def test_bitmap_v1_exact_bytes():
    body = spec_roaring([0, 1])
    assert len(body) == 20
    expected = (struct.pack(">bii?", 1, 4, 2, True) + struct.pack(">i", -1 - 3)
                + struct.pack(">ii", 5, 0) + struct.pack(">ii", 7, -1 - 2) + body)
    assert _bitmap_example(1) == expected
    assert _bitmap_example(1) == build_default_version()  # what Java 0.9/1.0 can read


def test_bitmap_v2_exact_bytes():
    body = spec_roaring([0, 1])
    null_len = len(spec_roaring([3]))
    assert null_len == 18
    block = struct.pack(">i", 2) + struct.pack(">iii", 5, 0, len(body)) + struct.pack(">iii", 7, -3, -1)
    expected = (struct.pack(">bii?", 2, 4, 2, True) + struct.pack(">ii", -4, null_len)
                + struct.pack(">i", 1) + struct.pack(">ii", 5, 0) + struct.pack(">i", len(block))
                + block + body)
    assert _bitmap_example(2) == expected


def build_default_version():
    t = pa.table({"x": pa.array([5, 5, 7, None], pa.int32())})
    return read_file_index(build_file_index(t, {"file-index.bitmap.columns": "x"}, [F("x", "INT")]))["x"][BITMAP]


def test_bitmap_strings_multi_null_and_hashmap_body_order(pypaimon):
    # values "b" rows {0,2}, "a" rows {1,3}; nulls {4,5} (multi-row null bitmap goes first)
    t = pa.table({"s": ["b", "a", "b", "a", None, None]})
    opts = {"file-index.bitmap.columns": "s", "file-index.bitmap.s.version": "1"}
    payload = read_file_index(build_file_index(t, opts, [F("s", "STRING")]))["s"][BITMAP]
    null_b, a_b, b_b = spec_roaring([4, 5]), spec_roaring([1, 3]), spec_roaring([0, 2])
    # BinaryString.hashCode is Murmur3 (seed 42) over the UTF-8 bytes; check the body order
    order = java_hashmap_order(pypaimon.run(_py_murmur, [b"b", b"a"]))
    keys = [b"b", b"a"]
    bitmaps = {b"a": a_b, b"b": b_b}
    head = struct.pack(">bii?", 1, 6, 2, True) + struct.pack(">i", 0)
    off = len(null_b)
    body = null_b
    for i in order:
        k = keys[i]
        head += struct.pack(">i", len(k)) + k + struct.pack(">i", off)
        off += len(bitmaps[k])
        body += bitmaps[k]
    assert payload == head + body


def test_bitmap_v2_multiple_blocks_round_trip():
    n = 3000
    rnd = random.Random(1)
    vals = [f"key-{rnd.randrange(800):04d}" if rnd.random() > 0.05 else None for _ in range(n)]
    t = pa.table({"s": vals})
    fields = [F("s", "STRING")]
    for version in ("1", "2"):
        opts = {"file-index.bitmap.columns": "s", "file-index.bitmap.s.version": version,
                "file-index.bitmap.s.index-block-size": "256b"}
        data = build_file_index(t, opts, fields)
        payload = read_file_index(data)[ "s"][BITMAP]
        if version == "2":
            assert struct.unpack_from(">i", payload, 18)[0] > 10  # many index blocks
        r = FileIndexReader(data, fields)
        for probe in ["key-0000", "key-0400", "key-0799", "key-0800", "a", "zzz"]:
            exp = np.array([v == probe for v in vals])
            got = r.rows_matching(col("s") == probe, n)
            assert (got == exp).all()
            assert r.may_match(col("s") == probe) == exp.any()
        assert (r.rows_matching(col("s").is_null(), n) == np.array([v is None for v in vals])).all()


def test_bitmap_single_null_and_all_null():
    fields = [F("x", "BIGINT")]
    for vals in ([None], [None, None, None], [1, None], []):
        t = pa.table({"x": pa.array(vals, pa.int64())})
        for version in ("1", "2"):
            data = build_file_index(t, {"file-index.bitmap.columns": "x",
                                        "file-index.bitmap.x.version": version}, fields)
            r = FileIndexReader(data, fields)
            n = len(vals)
            assert (r.rows_matching(col("x").is_null(), n) == np.array([v is None for v in vals], bool)).all()
            assert r.may_match(col("x") == 1) == (1 in vals)
            assert r.may_match(col("x").is_not_null()) == any(v is not None for v in vals)


def test_bitmap_types_rejected():
    for f in (F("b", "BYTES"), F("b", "DECIMAL", precision=5, scale=1)):
        with pytest.raises(UnsupportedTypeError):
            validate_file_index({"file-index.bitmap.columns": "b"}, [f])


def test_bitmap_float_zero_and_nan():
    vals = [0.0, -0.0, float("nan"), 1.5, None]
    t = pa.table({"d": vals})
    fields = [F("d", "DOUBLE")]
    data = build_file_index(t, {"file-index.bitmap.columns": "d"}, fields)
    r = FileIndexReader(data, fields)
    assert list(r.rows_matching(col("d") == 0.0, 5)) == [True, True, False, False, False]
    assert list(r.rows_matching(col("d") != 0.0, 5)) == [False, False, True, True, False]
    assert r.rows_matching(col("d") == float("nan"), 5) is None  # undecidable: kept
    assert r.may_match(col("d").isin([0.0]))
    assert r.rows_matching(Leaf("not_in", "d", (0.0,)), 5) is None
    assert list(r.rows_matching(col("d") > 1.0, 5)) == [False, False, False, True, False]


# ------------------------------------------------------------------ bsi

def test_bsi_exact_bytes():
    t = pa.table({"x": pa.array([3, -2, None, 0], pa.int32())})
    payload = read_file_index(build_file_index(t, {"file-index.bsi.columns": "x"}, [F("x", "INT")]))["x"][BSI]
    pos = (struct.pack(">bqq", 1, 0, 3) + spec_roaring([0, 3]) + struct.pack(">i", 2)
           + spec_roaring([0]) + spec_roaring([0]))
    neg = (struct.pack(">bqq", 1, 0, 2) + spec_roaring([1]) + struct.pack(">i", 2)
           + spec_roaring([]) + spec_roaring([1]))
    assert payload == struct.pack(">bi?", 1, 4, True) + pos + struct.pack(">?", True) + neg


def test_bsi_only_nulls_and_only_negative():
    t = pa.table({"x": pa.array([None, None], pa.int64())})
    payload = read_file_index(build_file_index(t, {"file-index.bsi.columns": "x"}, [F("x", "BIGINT")]))["x"][BSI]
    assert payload == struct.pack(">bi??", 1, 2, False, False)
    t = pa.table({"x": pa.array([-5, -1], pa.int64())})
    data = build_file_index(t, {"file-index.bsi.columns": "x"}, [F("x", "BIGINT")])
    r = FileIndexReader(data, [F("x", "BIGINT")])
    assert list(r.rows_matching(col("x") < -2, 2)) == [True, False]
    assert list(r.rows_matching(col("x") >= -1, 2)) == [False, True]
    assert not r.may_match(col("x") > 0)


def test_bsi_decimal_and_ranges():
    D = decimal.Decimal
    vals = [D("1.25"), D("-3.50"), None, D("0.00"), D("99999999.99")]
    t = pa.table({"m": pa.array(vals, pa.decimal128(10, 2))})
    fields = [F("m", "DECIMAL", precision=10, scale=2)]
    r = FileIndexReader(build_file_index(t, {"file-index.bsi.columns": "m"}, fields), fields)
    assert list(r.rows_matching(col("m") == D("1.25"), 5)) == [True, False, False, False, False]
    assert not r.may_match(col("m") == D("1.251"))
    assert list(r.rows_matching(col("m") < D("1.251"), 5)) == [True, True, False, True, False]
    assert list(r.rows_matching(col("m") > 0, 5)) == [True, False, False, False, True]
    assert list(r.rows_matching(col("m") != D("0"), 5)) == [True, True, False, False, True]


def test_bsi_rejects_strings_and_floats():
    for f in (F("b", "STRING"), F("b", "DOUBLE"), F("b", "BOOLEAN")):
        with pytest.raises(UnsupportedTypeError):
            validate_file_index({"file-index.bsi.columns": "b"}, [f])


# ------------------------------------------------------------------ options and naming

def test_options_parsing_and_errors():
    opts = {"file-index.bloom-filter.columns": "a, b", "file-index.bloom-filter.a.fpp": "0.01",
            "file-index.bitmap.columns": "b", "file-index.in-manifest-threshold": "1 kb",
            "file-index.read.enabled": "true", "bucket": "1"}
    assert file_index_columns(opts) == {"bloom-filter": {"a": {"fpp": "0.01"}, "b": {}}, "bitmap": {"b": {}}}
    assert index_in_manifest_threshold(opts) == 1024
    assert index_in_manifest_threshold({}) == 500
    assert embed_in_manifest(b"x" * 500, {}) and not embed_in_manifest(b"x" * 501, {})
    with pytest.raises(OptionError):
        file_index_columns({"file-index.bloom-filter.columns": "a", "file-index.bloom-filter.zz.fpp": "0.1"})
    with pytest.raises(OptionError):
        file_index_columns({"file-index.bloom-filter.columns": "a,,b"})
    with pytest.raises(OptionError):
        build_file_index(pa.table({"a": [1]}), {"file-index.bitmap.columns": "nope"}, [F("a", "INT")])
    assert build_file_index(pa.table({"a": [1]}), {"bucket": "2"}, [F("a", "INT")]) is None
    assert index_file_name("data-0b1c-0.parquet") == "data-0b1c-0.parquet.index"


def test_unsupported_index_type_is_skipped():
    t = pa.table({"a": pa.array([1, 2], pa.int32())})
    with pytest.warns(UserWarning):
        assert build_file_index(t, {"file-index.range-bitmap.columns": "a"}, [F("a", "INT")]) is None
    with pytest.warns(UserWarning):
        data = build_file_index(t, {"file-index.range-bitmap.columns": "a",
                                    "file-index.bsi.columns": "a"}, [F("a", "INT")])
    assert list(read_file_index_head(data)["a"]) == ["bsi"]
    # an index written by Java that we cannot read is ignored (rows may match)
    foreign = write_file_index({"a": {"range-bitmap": b"\x01\x02"}})
    assert FileIndexReader(foreign, [F("a", "INT")]).may_match(col("a") == 3)


def test_module_level_rows_matching():
    t = pa.table({"a": pa.array([1, 2, None, 2], pa.int32())})
    fields = [F("a", "INT")]
    data = build_file_index(t, {"file-index.bitmap.columns": "a"}, fields)
    assert list(rows_matching(data, col("a") == 2, 4, fields)) == [False, True, False, True]
    assert list(rows_matching(FileIndexReader(data, fields), col("a") != 2, 4)) == [True, False, False, False]
    assert rows_matching(data, col("a").startswith("x"), 4, fields) is None
    with pytest.raises(ValueError):
        rows_matching(data, col("a") == 2, 4)


def test_reader_ignores_unknown_columns_and_ops():
    t = pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["x", "y"]})
    fields = [F("a", "INT"), F("b", "STRING")]
    r = FileIndexReader(build_file_index(t, {"file-index.bitmap.columns": "a"}, fields), fields)
    assert r.may_match(col("b") == "nope")
    assert not r.may_match(col("a") == 3)
    assert r.may_match(Or((col("a") == 3, col("b") == "q")))
    assert not r.may_match(And((col("a") == 3, col("b") == "q")))
    assert r.may_match(Not(col("b") == "q"))
    assert not r.may_match(Not(col("a").is_not_null()))
    assert r.may_match(parse_filter("a = 1 AND b = 'zzz'"))


# ------------------------------------------------------------------ pypaimon as a peer

# The _py_* functions run in the pypaimon worker (tests/oracles): their source is sent there.

def _py_murmur(values: list[bytes]) -> list[int]:
    """pypaimon's Murmur3 (seed 42) of each value, as Java's BinaryString.hashCode."""
    from pypaimon.globalindex.btree.bloom_filter import murmur_hash_bytes

    return [murmur_hash_bytes(v) for v in values]


def _py_roaring(ours: list[bytes], values: list[list[int]]) -> tuple[list[list[int]], list[bytes]]:
    """pypaimon's RoaringBitmap: what it reads from each of ``ours``; what it writes for each of
    ``values`` (added one value at a time)."""
    from pypaimon.utils.roaring_bitmap import RoaringBitmap

    read = [RoaringBitmap.deserialize(data).to_list() for data in ours]
    written = []
    for vals in values:
        theirs = RoaringBitmap()
        for v in vals:
            theirs.add(v)
        written.append(theirs.serialize())
    return read, written


def _py_data_file_meta_fields() -> dict:
    from pypaimon.manifest.schema.data_file_meta import DATA_FILE_META_SCHEMA

    return {f["name"]: f["type"] for f in DATA_FILE_META_SCHEMA["fields"]}


def test_pypaimon_reads_and_writes_the_same_roaring_bitmaps(pypaimon):
    rnd = random.Random(2)
    cases = [sorted(set(rnd.randrange(200_000) for _ in range(rnd.randrange(1, 3000)))) for _ in range(50)]
    ours = [fbitmap.serialize_roaring(vals) for vals in cases]
    read, written = pypaimon.run(_py_roaring, ours, cases)
    for vals, theirs_read, data in zip(cases, read, written, strict=True):
        assert theirs_read == vals
        assert list(fbitmap.deserialize_roaring(data, 0)) == vals
        assert fbitmap.roaring_size(data + b"junk", 0) == len(data)


def test_binary_string_hash_matches_pypaimon_murmur(pypaimon):
    rnd = random.Random(3)
    vals = [bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 40))) for _ in range(300)]
    got = fbitmap._murmur_java(pa.array(vals, pa.binary()))
    assert [int(x) & 0xFFFFFFFF for x in got] == [h & 0xFFFFFFFF for h in pypaimon.run(_py_murmur, vals)]


def test_pypaimon_manifest_schema_carries_index_fields(pypaimon):
    fields = pypaimon.run(_py_data_file_meta_fields)
    assert fields["_EMBEDDED_FILE_INDEX"] == ["null", "bytes"]
    assert "_EXTRA_FILES" in fields


# ------------------------------------------------------------------ Java as the oracle
# Bloom-filter and bitmap bytes (Roaring containers, Java HashMap order, string hashing, filter
# sizing) are checked against the real Java Paimon in tests/java/test_java_file_index.py.


# ------------------------------------------------------------------ properties

def _ts_ms(x: dt.datetime) -> dt.datetime:
    return x.replace(microsecond=x.microsecond // 1000 * 1000)


_DT = dict(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1))
TYPES = {
    "TINYINT": (dict(root="TINYINT"), pa.int8(), st.integers(-128, 127)),
    "SMALLINT": (dict(root="SMALLINT"), pa.int16(), st.integers(-2**15, 2**15 - 1)),
    "INT": (dict(root="INT"), pa.int32(), st.integers(-2**31, 2**31 - 1)),
    "BIGINT": (dict(root="BIGINT"), pa.int64(), st.integers(-2**63 + 1, 2**63 - 1)),
    "FLOAT": (dict(root="FLOAT"), pa.float32(), st.floats(width=32)),
    "DOUBLE": (dict(root="DOUBLE"), pa.float64(), st.floats()),
    "BOOLEAN": (dict(root="BOOLEAN"), pa.bool_(), st.booleans()),
    "DATE": (dict(root="DATE"), pa.date32(), st.dates()),
    "TIME": (dict(root="TIME"), pa.time32("ms"), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    "TS3": (dict(root="TIMESTAMP", precision=3), pa.timestamp("ms"), st.datetimes(**_DT).map(_ts_ms)),
    "TS6": (dict(root="TIMESTAMP", precision=6), pa.timestamp("us"), st.datetimes(**_DT)),
    "LTZ": (dict(root="TIMESTAMP_LTZ", precision=6), pa.timestamp("us", tz="UTC"),
            st.datetimes(**_DT).map(lambda x: x.replace(tzinfo=dt.timezone.utc))),
    "STRING": (dict(root="STRING"), pa.string(), st.text(max_size=12)),
    "BYTES": (dict(root="BYTES"), pa.binary(), st.binary(max_size=12)),
    "DECIMAL": (dict(root="DECIMAL", precision=12, scale=3), pa.decimal128(12, 3),
                st.decimals(min_value=-10**8, max_value=10**8, places=3, allow_nan=False, allow_infinity=False)),
}
SUPPORT = {
    BLOOM_FILTER: ["TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "TIME", "TS3", "TS6", "LTZ", "STRING", "BYTES"],
    BITMAP: ["TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "BOOLEAN", "DATE", "TIME", "TS3", "TS6", "LTZ", "STRING"],
    BSI: ["TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME", "TS3", "TS6", "LTZ", "DECIMAL"],
}


def _dtype(name):
    spec = dict(TYPES[name][0])
    root = spec.pop("root")
    return T.atomic(root, **spec)


@st.composite
def column_case(draw, type_names):
    name = draw(st.sampled_from(type_names))
    _, arrow_t, values = TYPES[name]
    pool = draw(st.lists(values, min_size=1, max_size=8))
    n = draw(st.integers(0, 40))
    rows = [draw(st.one_of(st.none(), st.sampled_from(pool))) if draw(st.booleans()) else draw(st.sampled_from(pool))
            for _ in range(n)]
    extra = draw(st.lists(values, max_size=3))
    return name, pa.array(rows, arrow_t), pool, extra


def _truth(arr, pred):
    t = pa.table({"c": arr, "__row": pa.array(range(len(arr)), pa.int64())})
    mask = np.zeros(len(arr), dtype=bool)
    mask[t.filter(pred.to_expression()).column("__row").to_numpy()] = True
    return mask


def _leaves(draw, pool, extra, kind_ops):
    lits = pool + extra
    op = draw(st.sampled_from(kind_ops))
    if op in ("is_null", "is_not_null"):
        return Leaf(op, "c")
    if op in ("in", "not_in"):
        return Leaf(op, "c", tuple(draw(st.lists(st.sampled_from(lits), min_size=1, max_size=3))))
    return Leaf(op, "c", (draw(st.sampled_from(lits)),))


def _index_options(index_type, name):
    opts = {f"file-index.{index_type}.columns": "c"}
    if index_type == BLOOM_FILTER:
        opts["file-index.bloom-filter.c.items"] = "50"
    return opts


@settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), index_type=st.sampled_from([BLOOM_FILTER, BITMAP, BSI]))
def test_no_false_negatives(data, index_type):
    name, arr, pool, extra = data.draw(column_case(SUPPORT[index_type]))
    fields = [T.DataField(0, "c", _dtype(name))]
    payload = build_file_index(pa.table({"c": arr}), _index_options(index_type, name), fields)
    r = FileIndexReader(payload, fields)
    for v in arr.to_pylist():
        if v is not None:
            assert r.may_match(Leaf("=", "c", (v,)))
            assert r.may_match(Leaf("in", "c", (v,) + tuple(extra)))
    ops = ["=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null", "is_not_null"]
    if name == "STRING":
        ops.append("starts_with")
    for _ in range(6):
        leaf = _leaves(data.draw, pool, extra, ops)
        if leaf.op == "starts_with":
            leaf = Leaf("starts_with", "c", (leaf.literals[0][:2],))
        pred = data.draw(st.sampled_from([leaf, Not(leaf), Or((leaf, Leaf("=", "c", (pool[0],)))),
                                          And((leaf, Leaf("is_not_null", "c")))]))
        truth = _truth(arr, pred)
        if truth.any():
            assert r.may_match(pred), pred
        sup = r.rows_matching(pred, len(arr), exact=False)
        if sup is not None:
            assert not (truth & ~sup).any(), pred
        exact = r.rows_matching(pred, len(arr))
        if exact is not None:
            assert (exact == truth).all(), pred


@settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), index_type=st.sampled_from([BITMAP, BSI]))
def test_bitmap_and_bsi_are_exact(data, index_type):
    name, arr, pool, extra = data.draw(column_case(SUPPORT[index_type]))
    fields = [T.DataField(0, "c", _dtype(name))]
    version = data.draw(st.sampled_from(["1", "2"]))
    opts = _index_options(index_type, name)
    if index_type == BITMAP:
        opts["file-index.bitmap.c.version"] = version
        opts["file-index.bitmap.c.index-block-size"] = data.draw(st.sampled_from(["64b", "16kb"]))
    payload = build_file_index(pa.table({"c": arr}), opts, fields)
    r = FileIndexReader(payload, fields)
    ops = ["=", "!=", "in", "not_in", "is_null", "is_not_null"]
    if index_type == BSI or name != "BOOLEAN":
        ops += ["<", "<=", ">", ">="]
    for _ in range(8):
        leaf = _leaves(data.draw, pool, extra, ops)
        truth = _truth(arr, leaf)
        got = r.rows_matching(leaf, len(arr))
        floaty = name in ("FLOAT", "DOUBLE")
        if got is None:
            # only float literals that are NaN or (for in/not_in) zero are undecidable
            assert floaty and any(isinstance(x, float) and (math.isnan(x) or x == 0) for x in leaf.literals), leaf
            assert r.may_match(leaf) or not truth.any()
            continue
        assert (got == truth).all(), (leaf, got, truth)
        assert r.may_match(leaf) == bool(truth.any())


@settings(max_examples=60, deadline=None)
@given(vals=st.lists(st.one_of(st.none(), st.integers(-2**62, 2**62)), max_size=60),
       q=st.one_of(st.integers(-2**62, 2**62), st.floats(-1e6, 1e6, allow_nan=False),
                   st.decimals(-10**6, 10**6, places=2, allow_nan=False, allow_infinity=False)))
def test_bsi_ranges_with_fractional_literals(vals, q):
    arr = pa.array(vals, pa.int64())
    fields = [F("c", "BIGINT")]
    r = FileIndexReader(build_file_index(pa.table({"c": arr}), {"file-index.bsi.columns": "c"}, fields), fields)
    for op in ("=", "!=", "<", "<=", ">", ">="):
        leaf = Leaf(op, "c", (q,))
        try:
            truth = _truth(arr, leaf)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            continue
        got = r.rows_matching(leaf, len(vals))
        if got is not None:
            assert (got == truth).all(), leaf
        elif truth.any():
            assert r.may_match(leaf)


@st.composite
def predicate_tree(draw, columns, depth=0):
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        name = draw(st.sampled_from(sorted(columns)))
        pool = columns[name]
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null", "is_not_null"]))
        if op in ("is_null", "is_not_null"):
            return Leaf(op, name)
        if op in ("in", "not_in"):
            return Leaf(op, name, tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))))
        return Leaf(op, name, (draw(st.sampled_from(pool)),))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    if kind == "not":
        return Not(draw(predicate_tree(columns, depth + 1)))
    kids = tuple(draw(st.lists(predicate_tree(columns, depth + 1), min_size=2, max_size=3)))
    return And(kids) if kind == "and" else Or(kids)


@settings(max_examples=max(_EXAMPLES // 3, 20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_predicate_trees_over_several_indexes(data):
    n = data.draw(st.integers(0, 30))
    ints = data.draw(st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=n, max_size=n))
    strs = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "ab", "é"])), min_size=n, max_size=n))
    bigs = data.draw(st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=n, max_size=n))
    t = pa.table({"i": pa.array(ints, pa.int32()), "s": pa.array(strs, pa.string()),
                  "b": pa.array(bigs, pa.int64()), "__row": pa.array(range(n), pa.int64())})
    fields = [F("i", "INT"), F("s", "STRING"), F("b", "BIGINT")]
    opts = {"file-index.bitmap.columns": "i", "file-index.bloom-filter.columns": "s,i",
            "file-index.bloom-filter.s.items": "20", "file-index.bloom-filter.i.items": "20",
            "file-index.bsi.columns": "b",
            "file-index.bitmap.i.version": data.draw(st.sampled_from(["1", "2"]))}
    r = FileIndexReader(build_file_index(t, opts, fields), fields)
    columns = {"i": list(range(-6, 7)), "s": ["a", "b", "ab", "é", "zz"], "b": list(range(-60, 60, 7))}
    for _ in range(5):
        pred = data.draw(predicate_tree(columns))
        truth = np.zeros(n, dtype=bool)
        truth[t.filter(pred.to_expression()).column("__row").to_numpy()] = True
        if truth.any():
            assert r.may_match(pred), pred
        sup = r.rows_matching(pred, n, exact=False)
        if sup is not None:
            assert not (truth & ~sup).any(), pred
        exact = r.rows_matching(pred, n)
        if exact is not None:
            assert (exact == truth).all(), pred


# ------------------------------------------------------------------ scale

def test_vectorized_build_on_large_input():
    """Indexes over 300k rows are right (their speed is bench/'s business, not a unit test's)."""
    n = 300_000
    rnd = np.random.default_rng(0)
    ids = rnd.integers(0, 10_000, n)
    t = pa.table({"id": pa.array(ids, pa.int64()),
                  "s": pa.array([f"s{i}" for i in rnd.integers(0, 50, n)]),
                  "ts": pa.array(rnd.integers(0, 2**40, n), pa.timestamp("us"))})
    fields = [F("id", "BIGINT"), F("s", "STRING"), F("ts", "TIMESTAMP", precision=6)]
    opts = {"file-index.bloom-filter.columns": "id,s", "file-index.bloom-filter.id.items": "10000",
            "file-index.bloom-filter.s.items": "100", "file-index.bitmap.columns": "s,id",
            "file-index.bsi.columns": "ts"}
    data = build_file_index(t, opts, fields)
    r = FileIndexReader(data, fields)
    assert (r.rows_matching(col("s") == "s7", n) == (t.column("s").to_numpy(zero_copy_only=False) == "s7")).all()
    assert (r.rows_matching(col("id") == int(ids[5]), n) == (ids == ids[5])).all()
    assert not r.may_match(col("id") == 10_001)


def test_file_indexes_skip_files_in_the_table(tmp_path):
    """Embedded and separate file indexes written with the data let reads skip files."""
    import pyarrow as pa
    from paimon_lab import Catalog

    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("tag", pa.string())])
    t = cat.create_table("db.fi", schema, options={
        "file-index.bloom-filter.columns": "tag", "file-index.bloom-filter.tag.items": "100",
        "file-index.bitmap.columns": "id", "file-index.in-manifest-threshold": "1 b"})
    for i in range(4):
        t.write(pa.table({"id": [i * 10 + k for k in range(10)], "tag": [f"t{i}-{k}" for k in range(10)]}))
    files = [f for s in t.plan() for f in s.files]
    assert all(f.extra_files and f.extra_files[0].endswith(".index") for f in files)
    assert t.to_arrow(filter="tag = 't2-3'")["id"].to_pylist() == [23]
    t2 = cat.create_table("db.fe", schema, options={"file-index.bitmap.columns": "tag",
                                                     "file-index.in-manifest-threshold": "1 mb"})
    for i in range(3):
        t2.write(pa.table({"id": [i, i, i], "tag": ["a", f"m{i}", "z"]}))
    # every file's min/max is [a, z]: only the embedded bitmap can rule files out
    assert all(f.embedded_index for s in t2.plan() for f in s.files)
    assert sum(len(s.files) for s in t2.plan(filter="tag = 'm1'")) == 1
    assert sum(len(s.files) for s in t2.plan(filter="tag = 'a'")) == 3
    assert t2.to_arrow(filter="tag IN ('m0', 'm2')")["id"].to_pylist() in ([0, 2], [2, 0])
