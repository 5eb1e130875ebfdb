"""Option ``deletion-vectors.bitmap64``: new deletion vectors are written as 64-bit Roaring bitmaps
(Java's ``Bitmap64DeletionVector``, the Iceberg deletion-vector-v1 blob layout) in the same
deletion-vector index files; readers pick the kind of each vector by its magic number.

No Java oracle check: the oracle jars (Paimon 0.9 and 1.0) predate ``bitmap64`` (since 1.2), so
the bytes are checked against the layout itself and against pyiceberg's deletion-vector-v1
deserializer, an independent reader of the same blob layout.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.core.deletion_vector import (
    MAGIC_NUMBER,
    MAGIC_NUMBER_64,
    DeletionVector,
)
from paimon_lab.core.schema import SchemaChange
from paimon_lab.store.file_store import live_index_entries

_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _table(tmp_path, name, pk=True, **options):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    opts = {"bucket": "1", "deletion-vectors.enabled": "true", **options}
    if not pk:
        opts["bucket"] = "-1"
    return cat.create_table(f"db.{name}", _SCHEMA, primary_keys=["id"] if pk else None, options=opts)


def _rows(ids, v="a"):
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": [v] * len(ids)})


def _blobs(t) -> dict[str, bytes]:
    """Raw vector bytes (size field .. CRC) of every live deletion vector, by data file name."""
    out = {}
    for e in live_index_entries(t.store, "DELETION_VECTORS"):
        data = t.store.file_io.read_bytes(t.store.index_path(e.index_file.file_name))
        assert data[0] == 1  # index file version byte, the same for both kinds
        for name, meta in e.index_file.dv_range_map().items():
            size = struct.unpack_from(">i", data, meta.offset)[0]
            out[name] = data[meta.offset: meta.offset + 8 + size]
    return out


def _kinds(t) -> dict[str, int]:
    """Per data file: 64 if its vector carries the little-endian 64-bit magic, 32 for the BE 32-bit one."""
    kinds = {}
    for name, blob in _blobs(t).items():
        if struct.unpack_from("<I", blob, 4)[0] == MAGIC_NUMBER_64:
            kinds[name] = 64
        else:
            assert struct.unpack_from(">I", blob, 4)[0] == MAGIC_NUMBER
            kinds[name] = 32
    return kinds


def _ids(t):
    return sorted(t.to_arrow()["id"].to_pylist())


def test_pk_table_writes_64bit_vectors_and_reads_them(tmp_path):
    t = _table(tmp_path, "pk64", **{"deletion-vectors.bitmap64": "true"})
    t.write(_rows(range(20)))
    t.write(_rows([3, 7], "new"))
    t.write(_rows([5]), row_kinds=["-D"])
    assert set(_kinds(t).values()) == {64}
    got = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert sorted(got) == [i for i in range(20) if i != 5] and got[3] == got[7] == "new" and got[0] == "a"
    t.compact(full=True)
    assert _ids(t) == [i for i in range(20) if i != 5]


def test_32bit_table_keeps_the_old_magic(tmp_path):
    t = _table(tmp_path, "pk32")
    t.write(_rows(range(20)))
    t.write(_rows([3, 7], "new"))
    assert set(_kinds(t).values()) == {32}
    a = _table(tmp_path, "ap32", pk=False)
    a.write(_rows(range(10)))
    a.delete("id < 3")
    assert set(_kinds(a).values()) == {32} and _ids(a) == list(range(3, 10))


def test_append_table_delete_writes_64bit_vectors(tmp_path):
    t = _table(tmp_path, "ap64", pk=False, **{"deletion-vectors.bitmap64": "true"})
    t.write(_rows(range(10)))
    t.write(_rows(range(10, 20)))
    t.delete(f"id IN ({', '.join(str(i) for i in range(0, 20, 3))})")
    kinds = _kinds(t)
    assert len(kinds) == 2 and set(kinds.values()) == {64}
    expected = [i for i in range(20) if i % 3]
    assert _ids(t) == expected
    t.update({"v": "u"}, "id = 4")
    assert set(_kinds(t).values()) == {64}
    assert _ids(t) == expected and t.to_arrow().filter(pa.compute.equal(t.to_arrow()["id"], 4))["v"].to_pylist() == ["u"]


def test_vectors_match_pyiceberg_deletion_vector_v1_reader(tmp_path):
    dvmod = pytest.importorskip("pyiceberg.table.deletion_vector")
    t = _table(tmp_path, "ice", pk=False, **{"deletion-vectors.bitmap64": "true"})
    t.write(_rows(range(5000)))
    evens = ", ".join(str(i) for i in range(3002, 5000, 2))
    t.delete(f"id IN (0, 2, 4, 6, 8) OR id BETWEEN 100 AND 3000 OR id IN ({evens})")  # run and array containers
    (blob,) = _blobs(t).values()
    positions = dvmod.DeletionVector._bitmaps_to_chunked_array(
        dvmod.DeletionVector._deserialize_bitmap(dvmod._extract_vector_payload(blob)))
    expected = sorted({0, 2, 4, 6, 8} | set(range(100, 3001)) | set(range(3002, 5000, 2)))
    assert sorted(positions.to_pylist()) == expected
    assert _ids(t) == sorted(set(range(5000)) - set(expected))
    # one key (positions < 2^32): the same bytes as pyroaring's portable 64-bit serializer
    from pyroaring import BitMap64
    bm = BitMap64(expected)
    bm.run_optimize()
    assert blob[8:-4] == bm.serialize()


def test_compaction_keeps_the_format(tmp_path):
    # append: compacting some files rewrites the index; untouched vectors keep their kind
    t = _table(tmp_path, "apc", pk=False, **{"deletion-vectors.bitmap64": "true", "compaction.min.file-num": "2"})
    for i in range(3):
        t.write(_rows(range(i * 10, i * 10 + 10)))
    t.delete("id IN (1, 11, 21)")
    assert set(_kinds(t).values()) == {64} and len(_kinds(t)) == 3
    t.compact(full=True)
    assert _ids(t) == [i for i in range(30) if i not in (1, 11, 21)]
    t.delete("id = 2")
    assert set(_kinds(t).values()) == {64}
    # primary key: a later write adds positions to the existing 64-bit vector
    p = _table(tmp_path, "pkc", **{"deletion-vectors.bitmap64": "true"})
    p.write(_rows(range(3000)))   # far bigger than the updates: they are lifted above it, not merged in
    p.write(_rows([1], "x"))
    p.write(_rows([2], "y"))
    assert set(_kinds(p).values()) == {64}
    got = {r["id"]: r["v"] for r in p.to_arrow().to_pylist()}
    assert len(got) == 3000 and got[1] == "x" and got[2] == "y"


@pytest.mark.parametrize("pk", [True, False])
def test_alter_to_bitmap64_mixes_old_32bit_and_new_64bit_vectors(tmp_path, pk):
    # file sizes far apart, so that a commit's compaction lifts its small level-0 file above
    # the big ones rather than merging them in (Java's size-ratio pick)
    t = _table(tmp_path, f"mix{int(pk)}", pk=pk)
    t.write(_rows(range(3000)))
    if pk:
        t.write(_rows([1], "x"))
    else:
        t.delete("id = 1")
    (old_file,) = _kinds(t)
    assert _kinds(t) == {old_file: 32}
    t.alter(SchemaChange.set_option("deletion-vectors.bitmap64", "true"))
    t.write(_rows(range(3000, 4000)))
    if pk:
        t.write(_rows([2, 3002], "y"))
    else:
        t.delete("id IN (2, 3002)")
    kinds = _kinds(t)
    new = [k for f, k in kinds.items() if f != old_file]
    # the old file's vector keeps its 32-bit kind (Java adds to the existing vector); new ones are 64-bit
    assert kinds.get(old_file) == 32 and new == [64]
    expected = list(range(4000)) if pk else [i for i in range(4000) if i not in (1, 2, 3002)]
    assert _ids(t) == expected
    if pk:
        got = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
        assert got[1] == "x" and got[2] == got[3002] == "y" and got[3] == "a"
    t.compact(full=True)
    assert _ids(t) == expected


def test_64bit_vector_bytes_round_trip_beyond_2_pow_32():
    dv = DeletionVector(np.array([0, 5, 2**32 + 1, 3 * 2**32]), bitmap64=True)
    back = DeletionVector.deserialize(dv.serialize())
    assert back.bitmap64 and back.to_numpy().tolist() == [0, 5, 2**32 + 1, 3 * 2**32]
