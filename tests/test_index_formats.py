"""Index file formats: deletion vectors, DV index files, index manifests, HASH index files.

Expected bytes are built here from the format description (Java ``BitmapDeletionVector``,
``Bitmap64DeletionVector``, ``DeletionFileWriter``, RoaringBitmap's portable format,
``IntFileUtils``), independently of the code under test; pypaimon is used as a second
implementation to read what we write and to write what we read.
"""

from __future__ import annotations

import struct
import zlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_lab.core import binary_row
from paimon_lab.core.deletion_vector import (
    DV_INDEX_VERSION, MAGIC_NUMBER, MAGIC_NUMBER_64, MAX_POSITION_32, DeletionVector, DeletionVectorMeta,
    read_deletion_vector, read_dv_index, write_dv_index)
from paimon_lab.errors import CorruptFileError
from paimon_lab.io.file_io import FileIO
from paimon_lab.core.hash_index import read_hash_index, write_hash_index
from paimon_lab.core.index_manifest import (
    ADD, DELETE, INDEX_MANIFEST_SCHEMA, GlobalIndexMeta, IndexFileMeta, IndexManifestEntry,
    commit_index_changes, index_file_path, merge_index_entries, read_index_manifest, write_index_manifest)
from paimon_lab.core.manifest import FileNamer
from paimon_lab.core.types import parse_type


# ------------------------------------------------------------------ the spec, written out

def spec_roaring(values) -> bytes:
    """RoaringBitmap portable bytes as Java writes them after ``runOptimize()``.

    Containers per high 16 bits; an array (card <= 4096) or bitset becomes a run container iff
    that is strictly smaller: array 2*card > 2+4*runs, bitset 8192 > 2+4*runs. Header: cookie
    12346 + count (no runs) or 12347 | (n-1) << 16 + run bitset (runs); then (key, card-1) u16
    pairs; then u32 offsets unless (runs and n < 4); then the containers. All little-endian.
    """
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
            bits = np.zeros(65536, dtype=np.uint8)
            bits[low] = 1
            conts.append((key, card, False, np.packbits(bits, bitorder="little").tobytes()))
        else:
            conts.append((key, card, False, b"".join(struct.pack("<H", v) for v in low)))
    n = len(conts)
    has_run = any(c[2] for c in conts)
    if has_run:
        out = struct.pack("<I", 12347 | ((n - 1) << 16))
        runbits = bytearray((n + 7) // 8)
        for i, c in enumerate(conts):
            if c[2]:
                runbits[i // 8] |= 1 << (i % 8)
        out += bytes(runbits)
    else:
        out = struct.pack("<II", 12346, n)
    out += b"".join(struct.pack("<HH", k, card - 1) for k, card, _, _ in conts)
    if not has_run or n >= 4:
        pos = len(out) + 4 * n
        for c in conts:
            out += struct.pack("<I", pos)
            pos += len(c[3])
    return out + b"".join(c[3] for c in conts)


def spec_dv32(values) -> bytes:
    body = struct.pack(">i", MAGIC_NUMBER) + spec_roaring(values)
    return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def spec_dv64(values) -> bytes:
    values = sorted(set(int(v) for v in values))
    max_key = values[-1] >> 32 if values else -1
    bitmap = struct.pack("<q", max_key + 1)
    for key in range(max_key + 1):  # dense: every key up to the largest, empty ones too
        bitmap += struct.pack("<i", key) + spec_roaring([v & 0xFFFFFFFF for v in values if v >> 32 == key])
    body = struct.pack("<i", MAGIC_NUMBER_64) + bitmap
    return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))


# ------------------------------------------------------------------ deletion vector bytes

def test_dv_exact_bytes_small():
    dv = DeletionVector(np.array([100, 1, 5, 5]))
    expected = bytes.fromhex(
        "0000001a"                  # size: 4 magic + 22 bitmap
        "5e43f2d0"                  # 1581511376, big-endian
        "3a300000" "01000000"       # cookie 12346, one container
        "0000" "0200"               # key 0, cardinality - 1 = 2
        "10000000"                  # offset of the container: 16
        "0100" "0500" "6400"        # 1, 5, 100
    )
    body = expected[4:]
    expected += struct.pack(">I", zlib.crc32(body))
    assert dv.serialize() == expected == spec_dv32([1, 5, 100])
    assert expected.hex().endswith("aa1f94d1")


@pytest.mark.parametrize("values", [
    [],
    [0],
    list(range(10)) + [100],                              # run container (22 > 2 + 4*2)
    [1, 2, 3],                                            # stays an array (6 > 6 is false)
    [1, 2, 3, 10, 11],                                    # stays an array (10 > 10 is false)
    list(range(0, 10000, 2)),                             # bitset: 5000 values, 5000 runs
    [i * 8 + j for i in range(2047) for j in range(3)],   # bitset -> run (2+4*2047 < 8192)
    [i * 8 + j for i in range(2048) for j in range(3)],   # stays bitset (2+4*2048 >= 8192)
    [1, 70000, 140000, 2**20, 2**20 + 1, 2**20 + 2, 2**20 + 3, 2**31 - 1],  # >= 4 containers with runs
    [5, 70000, 140000],                                   # < 4 containers, no runs
    [5, 6, 7, 8, 70000],                                  # < 4 containers, runs: no offsets
])
def test_dv32_matches_spec(values):
    dv = DeletionVector(np.array(values, dtype=np.int64))
    assert dv.serialize() == spec_dv32(values)
    assert DeletionVector.deserialize(dv.serialize()) == dv


def test_dv32_bytes_do_not_depend_on_history():
    a = DeletionVector(np.arange(0, 50))
    b = DeletionVector()
    for p in range(49, -1, -1):
        b.checked_delete(p)
    c = DeletionVector(np.arange(0, 25))
    c.merge(DeletionVector(np.arange(25, 50)))
    assert a.serialize() == b.serialize() == c.serialize() == spec_dv32(range(50))


@pytest.mark.parametrize("values", [[], [1, 5, 100], [1, 5, 2**33 + 7], [2**32], [3, 2**40 + 1, 2**40 + 2]])
def test_dv64_matches_spec(values):
    dv = DeletionVector(np.array(values, dtype=np.int64), bitmap64=True)
    data = dv.serialize()
    assert data == spec_dv64(values)
    assert data[4:8] == struct.pack("<I", 1681511377)
    back = DeletionVector.deserialize(data)
    assert back.bitmap64 and back == dv
    assert back.to_numpy().tolist() == sorted(values)


def test_dv64_reads_sparse_keys():
    """Java reads 64-bit bitmaps without the empty keys (CRoaring writes them that way)."""
    bitmap = (struct.pack("<q", 1) + struct.pack("<i", 3) + spec_roaring([9]))
    body = struct.pack("<i", MAGIC_NUMBER_64) + bitmap
    data = struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    assert DeletionVector.deserialize(data).to_numpy().tolist() == [(3 << 32) + 9]


def test_dv_api():
    dv = DeletionVector()
    assert dv.is_empty() and dv.cardinality == 0 and dv.to_numpy().dtype == np.int64
    assert dv.mask(3).tolist() == [True, True, True]
    dv.delete(np.array([7, 2, 2, 70000], dtype=np.uint32))
    dv.delete(3)
    assert dv.cardinality == 4 == len(dv)
    assert dv.to_numpy().tolist() == [2, 3, 7, 70000]
    assert dv.is_deleted(7) and not dv.is_deleted(8) and not dv.is_deleted(-1) and not dv.is_deleted(2**40)
    assert dv.contains(np.array([1, 2, 70000, 70001])).tolist() == [False, True, True, False]
    assert dv.mask(8).tolist() == [True, True, False, False, True, True, True, False]
    assert dv.mask(0).tolist() == []
    assert dv.checked_delete(4) and not dv.checked_delete(4)
    with pytest.raises(ValueError):
        dv.delete(-1)
    with pytest.raises(ValueError):
        dv.delete(MAX_POSITION_32 + 1)
    with pytest.raises(ValueError):
        dv.delete(np.array([1.5]))
    with pytest.raises(ValueError):
        dv.merge(DeletionVector(bitmap64=True))
    big = DeletionVector(np.array([MAX_POSITION_32 + 1]), bitmap64=True)
    assert big.is_deleted(2**31) and big.mask(4).all()


def test_dv_mask_large():
    rng = np.random.default_rng(1)
    pos = rng.choice(1_000_000, size=100_000, replace=False)
    dv = DeletionVector(pos)
    mask = dv.mask(1_000_000)
    expected = np.ones(1_000_000, dtype=bool)
    expected[pos] = False
    assert np.array_equal(mask, expected)
    assert np.array_equal(dv.mask(500_000), expected[:500_000])


def test_dv_corruption_is_detected():
    data = bytearray(DeletionVector([1, 5, 100]).serialize())
    bad_crc = bytearray(data)
    bad_crc[-1] ^= 1
    with pytest.raises(CorruptFileError, match="CRC"):
        DeletionVector.deserialize(bytes(bad_crc))
    bad_magic = bytearray(data)
    bad_magic[4] ^= 1
    with pytest.raises(CorruptFileError, match="magic"):
        DeletionVector.deserialize(bytes(bad_magic))
    with pytest.raises(CorruptFileError):
        DeletionVector.deserialize(bytes(data[:-2]))
    with pytest.raises(CorruptFileError):
        DeletionVector.deserialize(bytes(data) + b"\0")


positions32 = st.lists(st.one_of(st.integers(0, 2**16 + 100), st.integers(0, MAX_POSITION_32)), max_size=300)


@settings(max_examples=150, deadline=None)
@given(positions32, st.lists(st.integers(0, 70000), max_size=3000))
def test_dv32_roundtrip_hypothesis(sparse, dense):
    values = sparse + dense
    dv = DeletionVector(np.array(values, dtype=np.int64))
    expected = sorted(set(values))
    assert dv.to_numpy().tolist() == expected
    assert dv.cardinality == len(expected)
    data = dv.serialize()
    assert data == spec_dv32(values)
    back = DeletionVector.deserialize(data)
    assert back == dv and back.to_numpy().tolist() == expected
    n = 70_001
    assert np.flatnonzero(~back.mask(n)).tolist() == [v for v in expected if v < n]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 2**33), st.integers(0, 2**34 + 5)), max_size=200))
def test_dv64_roundtrip_hypothesis(values):
    dv = DeletionVector(np.array(values, dtype=np.int64), bitmap64=True)
    data = dv.serialize()
    assert data == spec_dv64(values)
    back = DeletionVector.deserialize(data)
    assert back.bitmap64 and back.to_numpy().tolist() == sorted(set(values))


# ------------------------------------------------------------------ DV index file

def test_dv_index_layout():
    a = DeletionVector([1, 5, 100])
    b = DeletionVector([], bitmap64=False)
    c = DeletionVector([7, 2**33], bitmap64=True)
    data, metas = write_dv_index({"data-a.parquet": a, "data-b.parquet": b, "data-c.parquet": c})
    sa, sb, sc = spec_dv32([1, 5, 100]), spec_dv32([]), spec_dv64([7, 2**33])
    assert data == bytes([1]) + sa + sb + sc
    assert list(metas) == ["data-a.parquet", "data-b.parquet", "data-c.parquet"]
    # offset points at the size field; length = size field (32-bit) / whole blob (64-bit)
    assert metas["data-a.parquet"] == DeletionVectorMeta("data-a.parquet", 1, len(sa) - 8, 3)
    assert metas["data-b.parquet"] == DeletionVectorMeta("data-b.parquet", 1 + len(sa), len(sb) - 8, 0)
    assert metas["data-c.parquet"] == DeletionVectorMeta("data-c.parquet", 1 + len(sa) + len(sb), len(sc), 2)
    assert metas["data-a.parquet"].length == struct.unpack(">i", sa[:4])[0]
    back = read_dv_index(data, metas)
    assert back == {"data-a.parquet": a, "data-b.parquet": b, "data-c.parquet": c}
    assert read_dv_index(data, list(metas.values())[1:]) == {"data-b.parquet": b, "data-c.parquet": c}
    assert read_deletion_vector(data, 1, len(sa) - 8) == a
    with pytest.raises(CorruptFileError, match="size"):
        read_deletion_vector(data, 1, len(sa))
    with pytest.raises(CorruptFileError, match="version"):
        read_dv_index(b"\x02" + data[1:], metas)
    wrong_card = {"x": DeletionVectorMeta("x", 1, len(sa) - 8, 4)}
    with pytest.raises(CorruptFileError, match="positions"):
        read_dv_index(data, wrong_card)
    assert write_dv_index({}) == (bytes([DV_INDEX_VERSION]), {})


# ------------------------------------------------------------------ HASH index file

def test_hash_index_bytes():
    hashes = np.array([1, -1, 2**31 - 1, -(2**31), 0x01020304], dtype=np.int64)
    data = write_hash_index(hashes)
    assert data == b"".join(struct.pack(">i", int(h)) for h in hashes)
    back = read_hash_index(data)
    assert back.dtype == np.int32 and back.tolist() == hashes.tolist()
    assert write_hash_index(np.array([], dtype=np.int32)) == b""
    assert read_hash_index(b"").tolist() == []
    assert write_hash_index(np.array([0xFFFFFFFF], dtype=np.uint32)) == b"\xff\xff\xff\xff"
    with pytest.raises(ValueError):
        write_hash_index(np.array([2**32]))
    with pytest.raises(ValueError):
        write_hash_index(np.array([0.5]))
    with pytest.raises(CorruptFileError):
        read_hash_index(b"\0\0\0\0\0")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=500))
def test_hash_index_roundtrip_hypothesis(values):
    arr = np.array(values, dtype=np.int32)
    assert read_hash_index(write_hash_index(arr)).tolist() == values


# ------------------------------------------------------------------ index manifest

STRING, INT = parse_type("STRING"), parse_type("INT")


def _part(dt: str, n: int) -> bytes:
    return binary_row.serialize([dt, n], [STRING, INT])


def _dv_entry(name, part=b"", bucket=0, kind=ADD, ranges=(("f1", 1, 30, 3),)):
    metas = [DeletionVectorMeta(*r) for r in ranges]
    return IndexManifestEntry(kind, part or binary_row.EMPTY, bucket,
                              IndexFileMeta.for_deletion_vectors(name, 100, metas))


def _hash_entry(name, part=b"", bucket=0, kind=ADD, rows=10):
    return IndexManifestEntry(kind, part or binary_row.EMPTY, bucket, IndexFileMeta.for_hash(name, rows * 4, rows))


def _py_index_manifest_schema() -> dict:
    """pypaimon's index manifest Avro schema (runs in the pypaimon worker, tests/oracles)."""
    from pypaimon.manifest.index_manifest_file import INDEX_MANIFEST_ENTRY_SCHEMA

    return INDEX_MANIFEST_ENTRY_SCHEMA


def test_index_manifest_schema_is_javas(pypaimon):
    s = INDEX_MANIFEST_SCHEMA
    assert s["name"] == "org.apache.paimon.avro.generated.record"
    fields = {f["name"]: f["type"] for f in s["fields"]}
    assert list(fields) == ["_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_INDEX_TYPE", "_FILE_NAME",
                            "_FILE_SIZE", "_ROW_COUNT", "_DELETIONS_VECTORS_RANGES", "_EXTERNAL_PATH",
                            "_GLOBAL_INDEX"]
    assert [fields[k] for k in ("_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_INDEX_TYPE", "_FILE_NAME",
                                "_FILE_SIZE", "_ROW_COUNT")] == [
        "int", "int", "bytes", "int", "string", "string", "long", "long"]
    dv = fields["_DELETIONS_VECTORS_RANGES"]
    assert dv[0] == "null" and dv[1]["type"] == "array"
    item = dv[1]["items"]
    assert item["name"] == "org.apache.paimon.avro.generated.record__DELETIONS_VECTORS_RANGES"
    assert [(f["name"], f["type"]) for f in item["fields"]] == [
        ("f0", "string"), ("f1", "int"), ("f2", "int"), ("_CARDINALITY", ["null", "long"])]
    assert fields["_EXTERNAL_PATH"] == ["null", "string"]
    gi = fields["_GLOBAL_INDEX"]
    assert gi[0] == "null" and gi[1]["name"] == "org.apache.paimon.avro.generated.record__GLOBAL_INDEX"
    # same field names and Avro types as pypaimon's schema (record names differ; see report)
    PY = pypaimon.run(_py_index_manifest_schema)

    def shape(t):
        if isinstance(t, list):
            return [shape(x) for x in t]
        if isinstance(t, dict):
            if t["type"] == "record":
                return [(f["name"], shape(f["type"])) for f in t["fields"]]
            if t["type"] == "array":
                return ("array", shape(t["items"]))
        return t

    assert shape(PY) == shape(INDEX_MANIFEST_SCHEMA)


def test_index_manifest_roundtrip(tmp_path):
    io = FileIO(str(tmp_path))
    entries = [
        _dv_entry("index-u-0", _part("2024-01-01", 7), 3,
                  ranges=(("data-1.parquet", 1, 26, 3), ("data-2.parquet", 35, 30, None))),
        _dv_entry("index-u-1", ranges=()),
        _hash_entry("index-u-2", _part("x" * 20, -1), 1, kind=DELETE),
        IndexManifestEntry(ADD, binary_row.EMPTY, 0, IndexFileMeta(
            "btree", "index-u-3", 1234, 99, None, "oss://bucket/x/index-u-3",
            GlobalIndexMeta(0, 999, 5, (6, 7), b"\x01\x02", None))),
    ]
    path = str(tmp_path / "manifest" / "index-manifest-u-0")
    for compression in ("zstd", "none", "deflate"):
        size = write_index_manifest(io, path, entries, compression)
        assert size == io.size(path)
        assert read_index_manifest(io, path) == entries
    back = read_index_manifest(io, path)
    assert back[1].index_file.dv_ranges == () and back[2].index_file.dv_ranges is None
    assert back[0].index_file.dv_range_map()["data-2.parquet"].cardinality is None
    assert back[0].index_file.row_count == 2
    assert index_file_path("/t", back[0].index_file) == "/t/index/index-u-0"
    assert index_file_path("/t", back[3].index_file) == "oss://bucket/x/index-u-3"


def test_index_manifest_corrupt(tmp_path):
    io = FileIO(str(tmp_path))
    with pytest.raises(CorruptFileError):
        read_index_manifest(io, str(tmp_path / "nope"))
    (tmp_path / "bad").write_bytes(b"Obj\x01garbage")
    with pytest.raises(CorruptFileError):
        read_index_manifest(io, str(tmp_path / "bad"))


def test_merge_bucketed_replaces_per_bucket():
    p1, p2 = _part("a", 1), _part("b", 2)
    old = [_dv_entry("dv-0", p1, 0), _dv_entry("dv-1", p1, 1), _hash_entry("h-0", p1, 0), _hash_entry("h-1", p2, 0)]
    new = [
        _dv_entry("dv-0", p1, 0, kind=DELETE), _dv_entry("dv-2", p1, 0),  # DELETE + ADD
        _hash_entry("h-2", p1, 0),                                          # ADD alone replaces h-0
        _dv_entry("dv-1", p1, 1, kind=DELETE),                              # bucket loses its DVs
        _dv_entry("dv-3", p2, 5),                                           # new bucket
    ]
    live = merge_index_entries(old, new)
    assert sorted(e.index_file.file_name for e in live) == ["dv-2", "dv-3", "h-1", "h-2"]
    assert all(e.kind == ADD for e in live)
    assert merge_index_entries(old, []) == old
    # ADD then DELETE of the same bucket in one commit: the DELETE is applied first
    live = merge_index_entries([_dv_entry("dv-0")], [_dv_entry("dv-9"), _dv_entry("dv-0", kind=DELETE)])
    assert [e.index_file.file_name for e in live] == ["dv-9"]
    with pytest.raises(ValueError):
        merge_index_entries([_dv_entry("dv-0", kind=DELETE)], [])


def test_merge_bucket_unaware_and_global():
    old = [_dv_entry("dv-0", ranges=(("f1", 1, 10, 1),)), _dv_entry("dv-1", ranges=(("f2", 1, 10, 1),))]
    new = [_dv_entry("dv-0", kind=DELETE, ranges=(("f1", 1, 10, 1),)),
           _dv_entry("dv-2", ranges=(("f1", 1, 12, 2), ("f3", 13, 10, 1)))]
    live = merge_index_entries(old, new, bucket_unaware=True)
    assert [e.index_file.file_name for e in live] == ["dv-1", "dv-2"]
    with pytest.raises(ValueError, match="already"):
        merge_index_entries(old, [_dv_entry("dv-3", ranges=(("f2", 1, 10, 1),))], bucket_unaware=True)
    with pytest.raises(ValueError, match="not exist"):
        merge_index_entries(old, [_dv_entry("dv-7", kind=DELETE)], bucket_unaware=True)
    g = lambda name, kind=ADD: IndexManifestEntry(kind, binary_row.EMPTY, 0, IndexFileMeta(  # noqa: E731
        "bitmap", name, 10, 5, None, None, GlobalIndexMeta(0, 4, 1)))
    assert [e.index_file.file_name for e in merge_index_entries([g("g0")], [g("g1")])] == ["g0", "g1"]
    assert [e.index_file.file_name for e in merge_index_entries([g("g0")], [g("g0", DELETE)])] == []
    with pytest.raises(ValueError):
        merge_index_entries([g("g0")], [g("g9", DELETE)])


def test_commit_index_changes_is_cumulative(tmp_path):
    io = FileIO(str(tmp_path))
    table = str(tmp_path / "t")
    namer = FileNamer("index-manifest-")
    assert commit_index_changes(io, table, None, [], namer=namer) is None
    m1 = commit_index_changes(io, table, None, [_hash_entry("h-0"), _dv_entry("dv-0")], namer=namer)
    assert m1 == f"index-manifest-{namer.uuid}-0"
    assert commit_index_changes(io, table, m1, [], namer=namer) == m1
    m2 = commit_index_changes(io, table, m1, [_dv_entry("dv-1", bucket=1)], namer=namer)
    live = read_index_manifest(io, f"{table}/manifest/{m2}")
    assert sorted(e.index_file.file_name for e in live) == ["dv-0", "dv-1", "h-0"]
    m3 = commit_index_changes(io, table, m2, [_dv_entry("dv-0", kind=DELETE), _dv_entry("dv-1", bucket=1,
                                                                                         kind=DELETE)], namer=namer)
    assert [e.index_file.file_name for e in read_index_manifest(io, f"{table}/manifest/{m3}")] == ["h-0"]


# ------------------------------------------------------------------ interop with pypaimon

# The _py_* functions below run in the pypaimon worker (tests/oracles): their source is sent
# there with plain arguments (paths, bytes, ints, tuples); each one stands alone.

def _py_read_dvs(path: str, metas: list[tuple]) -> list[tuple[int, list[int]]]:
    """(cardinality, positions) pypaimon reads for each (offset, length, cardinality) of ``path``."""
    from pypaimon.deletionvectors.deletion_vector import DeletionVector
    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.table.source.deletion_file import DeletionFile

    io = LocalFileIO()
    out = []
    for offset, length, cardinality in metas:
        dv = DeletionVector.read(io, DeletionFile(path, offset, length, cardinality))
        out.append((dv.get_cardinality(), list(dv.bit_map())))
    return out


def _py_serialize_dvs(cases: list[list[int]]) -> list[bytes]:
    """pypaimon's BitmapDeletionVector bytes for each list of deleted positions."""
    from pypaimon.deletionvectors.bitmap_deletion_vector import BitmapDeletionVector

    out = []
    for values in cases:
        dv = BitmapDeletionVector()
        for v in values:
            dv.delete(v)
        out.append(dv.serialize())
    return out


def _py_write_dv_index(directory: str, vectors: dict[str, list[int]]) -> dict:
    """pypaimon writes a DV index file of ``vectors`` into ``directory`` (through
    TableDeleteByRowId._write_deletion_vector_index on a stand-in table); returns the entry's
    numbers and ranges."""
    import os
    from types import SimpleNamespace

    from pypaimon.deletionvectors.bitmap_deletion_vector import BitmapDeletionVector
    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.table.row.generic_row import GenericRow
    from pypaimon.write.table_delete import TableDeleteByRowId

    written = {}

    def new_bucket_index_path(partition, bucket, file_name):
        written["path"] = os.path.join(directory, file_name)
        return written["path"], False

    fake = SimpleNamespace(file_io=LocalFileIO(), table=SimpleNamespace(
        path_factory=lambda: SimpleNamespace(new_bucket_index_path=new_bucket_index_path)))
    dvs = {}
    for name, values in vectors.items():
        dvs[name] = BitmapDeletionVector()
        for v in values:
            dvs[name].delete(v)
    entry = TableDeleteByRowId._write_deletion_vector_index(fake, GenericRow([], []), 0, dvs)
    return {"path": written["path"], "file_size": entry.index_file.file_size,
            "row_count": entry.index_file.row_count,
            "ranges": [(m.data_file_name, m.offset, m.length, m.cardinality)
                       for m in entry.index_file.dv_ranges.values()]}


def _py_index_manifest(root: str, entries: list[dict], read_name: str | None = None):
    """pypaimon's IndexManifestEntry for each of ``entries`` (plain fields of ours, see
    ``_plain_entry``; partitions (dt STRING, n INT)). With ``read_name``: compare them with what
    pypaimon's IndexManifestFile reads from that manifest (the count read, a tuple of checks per entry).
    Without: write them with IndexManifestFile and return the new manifest's name."""
    from types import SimpleNamespace

    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.globalindex.global_index_meta import GlobalIndexMeta
    from pypaimon.index.deletion_vector_meta import DeletionVectorMeta
    from pypaimon.index.index_file_meta import IndexFileMeta
    from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
    from pypaimon.manifest.index_manifest_file import IndexManifestFile
    from pypaimon.schema.data_types import AtomicType, DataField
    from pypaimon.table.row.generic_row import GenericRowDeserializer

    fields = [DataField(0, "dt", AtomicType("STRING")), DataField(1, "n", AtomicType("INT"))]

    def entry(e):
        ranges = None if e["dv_ranges"] is None else {r[0]: DeletionVectorMeta(*r) for r in e["dv_ranges"]}
        gim = None if e["global_index"] is None else GlobalIndexMeta(*e["global_index"])
        return IndexManifestEntry(e["kind"], GenericRowDeserializer.from_bytes(e["partition"], fields), e["bucket"],
                                  IndexFileMeta(e["index_type"], e["file_name"], e["file_size"], e["row_count"],
                                                ranges, e["external_path"], gim))

    table = SimpleNamespace(table_path=root, file_io=LocalFileIO(), partition_keys_fields=fields,
                            options=SimpleNamespace(manifest_compression=lambda: "zstd"))
    expected = [entry(e) for e in entries]
    if read_name is None:
        return IndexManifestFile(table).write(expected)
    read = IndexManifestFile(table).read(read_name)
    return {"count": len(read), "checks": [
        (py == exp, py.index_file.dv_ranges == exp.index_file.dv_ranges, py.index_file.external_path,
         py.index_file.global_index_meta == exp.index_file.global_index_meta,
         py.partition.values == exp.partition.values, repr(py), repr(exp))
        for py, exp in zip(read, expected)]}


def _py_hash_index(path: str, directory: str, hashes: list[int]) -> dict:
    """pypaimon's HASH index: the hashes it reads from ``path`` (dynamic_bucket._iter_hashes), and
    the file DynamicBucketIndexMaintainer._write_index writes for ``hashes`` into ``directory``."""
    import os
    from types import SimpleNamespace

    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.index.dynamic_bucket import DynamicBucketIndexMaintainer, _iter_hashes

    io = LocalFileIO()
    entry = SimpleNamespace(partition=SimpleNamespace(values=[]), bucket=0,
                            index_file=SimpleNamespace(file_name=os.path.basename(path)))
    table = SimpleNamespace(file_io=io, path_factory=lambda: SimpleNamespace(
        bucket_index_path=lambda partition, bucket, meta, file_io: path))
    read = list(_iter_hashes(table, entry))

    out = {}

    def new_bucket_index_path(partition, bucket, file_name):
        out["path"] = os.path.join(directory, file_name)
        return out["path"], False

    io.check_or_mkdirs(directory)
    fake = SimpleNamespace(_new_paths=[], table=SimpleNamespace(
        file_io=io, partition_keys_fields=[],
        path_factory=lambda: SimpleNamespace(new_bucket_index_path=new_bucket_index_path)))
    py_entry = DynamicBucketIndexMaintainer._write_index(fake, (), 0, set(hashes))
    return {"read": read, "path": out["path"], "row_count": py_entry.index_file.row_count,
            "index_type": py_entry.index_file.index_type}


def _plain_entry(e: IndexManifestEntry) -> dict:
    """Our entry's fields as plain values, for _py_index_manifest."""
    f, g = e.index_file, e.index_file.global_index
    return {"kind": e.kind, "partition": e.partition, "bucket": e.bucket, "index_type": f.index_type,
            "file_name": f.file_name, "file_size": f.file_size, "row_count": f.row_count,
            "dv_ranges": None if f.dv_ranges is None else [
                (m.data_file_name, m.offset, m.length, m.cardinality) for m in f.dv_ranges],
            "external_path": f.external_path,
            "global_index": None if g is None else (
                g.row_range_start, g.row_range_end, g.index_field_id,
                list(g.extra_field_ids) if g.extra_field_ids else None, g.index_meta, g.source_meta)}


def test_pypaimon_reads_our_deletion_vectors(tmp_path, pypaimon):
    rng = np.random.default_rng(7)
    vectors = {
        "data-0.parquet": DeletionVector([1, 5, 100]),
        "data-1.parquet": DeletionVector(rng.choice(3_000_000, 20_000, replace=False)),
        "data-2.parquet": DeletionVector(np.arange(1000, 9000)),  # run container
        "data-3.parquet": DeletionVector(),
    }
    data, metas = write_dv_index(vectors)
    path = tmp_path / "index-x-0"
    path.write_bytes(data)
    names = list(metas)
    theirs = pypaimon.run(_py_read_dvs, str(path), [(metas[n].offset, metas[n].length, metas[n].cardinality)
                                                    for n in names])
    for name, (cardinality, positions) in zip(names, theirs, strict=True):
        assert cardinality == vectors[name].cardinality
        assert positions == vectors[name].to_numpy().tolist()


def test_we_read_pypaimon_deletion_vectors(pypaimon):
    cases = [[], [1, 5, 100], list(range(0, 10)), list(range(0, 20000, 3)), [2**16, 2**31 - 1]]
    for values, data in zip(cases, pypaimon.run(_py_serialize_dvs, cases), strict=True):
        ours = DeletionVector.deserialize(data)
        assert ours.to_numpy().tolist() == sorted(values)
        # pypaimon does not run-optimize; Java and we do. Same bytes whenever no run helps.
        if values in ([], [1, 5, 100]):
            assert data == DeletionVector(values).serialize()


def test_we_read_pypaimon_dv_index_file(tmp_path, pypaimon):
    def py_write(expected):
        got = pypaimon.run(_py_write_dv_index, str(tmp_path), expected)
        data = open(got["path"], "rb").read()
        assert got["file_size"] == len(data) and data[0] == 1
        assert got["row_count"] == len(expected)
        metas = [DeletionVectorMeta(*m) for m in got["ranges"]]
        back = read_dv_index(data, metas)
        assert {k: v.to_numpy().tolist() for k, v in back.items()} == expected
        return data, metas

    py_write({"b.parquet": [3, 4, 70000], "a.parquet": list(range(50)), "c.parquet": [], "d.parquet": [9]})
    # Without run-friendly content pypaimon's file is byte-identical to ours (it sorts by name)
    expected = {"b.parquet": [3, 5, 70000], "a.parquet": list(range(0, 100, 2)), "c.parquet": []}
    data, metas = py_write(expected)
    ours, our_metas = write_dv_index({k: DeletionVector(expected[k]) for k in sorted(expected)})
    assert data == ours and metas == list(our_metas.values())


def _interop_entries():
    return [
        _dv_entry("index-u-0", _part("2024-01-01", 7), 3,
                  ranges=(("data-1.parquet", 1, 26, 3), ("data-2.parquet", 35, 30, None))),
        _hash_entry("index-u-2", _part("a-long-partition-value", -1), 1, kind=DELETE),
        IndexManifestEntry(ADD, _part("z", 0), 0, IndexFileMeta(
            "btree", "index-u-3", 1234, 99, None, "file:/tmp/x/index-u-3",
            GlobalIndexMeta(0, 999, 5, (6, 7), b"\x01\x02", b"\x03"))),
    ]


def test_pypaimon_reads_our_index_manifest(tmp_path, pypaimon):
    root = str(tmp_path / "t")
    entries = _interop_entries()
    write_index_manifest(FileIO(root), f"{root}/manifest/index-manifest-u-0", entries)
    got = pypaimon.run(_py_index_manifest, root, [_plain_entry(e) for e in entries], "index-manifest-u-0")
    assert got["count"] == len(entries)
    for ours, checks in zip(entries, got["checks"], strict=True):
        same, same_ranges, external_path, same_gim, same_partition, py, expected = checks
        assert same, (py, expected)  # kind, partition values, bucket, file name/size/rows/type
        assert same_ranges, (py, expected)
        assert external_path == ours.index_file.external_path
        assert same_gim, (py, expected)
        assert same_partition, (py, expected)


def test_we_read_pypaimon_index_manifest(tmp_path, pypaimon):
    root = str(tmp_path / "t")
    entries = _interop_entries()
    name = pypaimon.run(_py_index_manifest, root, [_plain_entry(e) for e in entries])
    assert name.startswith("index-manifest-")
    back = read_index_manifest(FileIO(root), f"{root}/manifest/{name}")
    assert back == entries


def test_hash_index_interop_with_pypaimon(tmp_path, pypaimon):
    hashes = np.array([5, -7, 2**31 - 1, -(2**31), 123456789], dtype=np.int32)
    path = tmp_path / "index-h-0"
    path.write_bytes(write_hash_index(hashes))
    got = pypaimon.run(_py_hash_index, str(path), str(tmp_path), hashes.tolist())
    assert got["read"] == hashes.tolist()
    data = open(got["path"], "rb").read()
    assert sorted(read_hash_index(data).tolist()) == sorted(hashes.tolist())
    assert got["row_count"] == len(hashes) and got["index_type"] == "HASH"
