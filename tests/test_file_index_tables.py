"""File indexes written for primary-key data files (as Java Paimon 1.0 does), kept through every
compaction (merge-tree and append), and the skipping they allow, which
'file-index.read.enabled' = false turns off."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab.core.schema import SchemaChange
from paimon_lab.operation import split_read

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _files(t, **kw):
    return [f for s in t.plan(**kw) for f in s.files]


def _has_index(f):
    return f.embedded_index is not None or any(x.endswith(".index") for x in f.extra_files)


@pytest.mark.parametrize("threshold", ["1 mb", "1 b"], ids=["embedded", "separate"])
def test_pk_files_carry_indexes_and_skip_by_key(lab, threshold):
    t = lab.create_table("db.pk", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "write-only": "true", "file-index.bloom-filter.columns": "id",
        "file-index.bitmap.columns": "v", "file-index.in-manifest-threshold": threshold})
    t.write(pa.table({"id": [1, 100], "v": ["a", "b"]}, schema=SCHEMA))
    t.write(pa.table({"id": [50], "v": ["c"]}, schema=SCHEMA))
    files = _files(t)
    assert len(files) == 2 and all(_has_index(f) for f in files)
    # min/max of the first file (1..100) holds 50: only its bloom filter rules it out
    assert [f.row_count for f in _files(t, filter="id = 50")] == [1]
    assert t.to_arrow(filter="id = 50").to_pylist() == [{"id": 50, "v": "c"}]
    # a value filter never skips a file of a merge-on-read table (older versions live elsewhere)
    assert len(_files(t, filter="v = 'c'")) == 2
    t.alter(SchemaChange.set_option("file-index.read.enabled", "false"))
    t = lab.get_table("db.pk")
    assert len(_files(t, filter="id = 50")) == 2
    assert t.to_arrow(filter="id = 50").to_pylist() == [{"id": 50, "v": "c"}]

    t.alter(SchemaChange.set_option("file-index.read.enabled", "true"))
    t = lab.get_table("db.pk")
    t.compact(full=True)
    files = _files(t)
    assert len(files) == 1 and files[0].level > 0 and _has_index(files[0])
    assert t.to_arrow().sort_by("id")["id"].to_pylist() == [1, 50, 100]
    assert _files(t, filter="id = 51") == []


def test_deletion_vector_tables_skip_by_value_index(lab):
    t = lab.create_table("db.dv", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "v"})
    # two big top-level files, each with min/max [a, z], then a small one: its commit lifts it
    # above them (it is far smaller: Java's size-ratio pick leaves them out)
    for start in (0, 2000):
        ids = list(range(start, start + 2000))
        t.write(pa.table({"id": ids, "v": ["a" if i % 2 else "z" for i in ids]}, schema=SCHEMA))
        t.compact(full=True)
    assert all(_has_index(f) for f in _files(t))
    t.write(pa.table({"id": [5001, 5002], "v": ["a", "m"]}, schema=SCHEMA))
    t.compact()
    top = [f for f in _files(t) if f.level > 0]
    hit = [f for f in _files(t, filter="v = 'm'") if f.level > 0]
    assert len(hit) < len(top)
    assert t.to_arrow(filter="v = 'm'").to_pylist() == [{"id": 5002, "v": "m"}]
    t.alter(SchemaChange.set_option("file-index.read.enabled", "false"))
    t = lab.get_table("db.dv")
    assert len([f for f in _files(t, filter="v = 'm'") if f.level > 0]) == len(top)


def test_append_compaction_keeps_indexes_and_reads_skip(lab, monkeypatch):
    t = lab.create_table("db.ap", SCHEMA, options={
        "bucket": "1", "bucket-key": "id", "file-index.bloom-filter.columns": "v",
        "file-index.in-manifest-threshold": "1 b", "write-only": "true"})
    for i in range(4):  # every file's min/max is [a, z]: only the index can rule one out
        t.write(pa.table({"id": [i, i, i], "v": ["a", f"v{i}", "z"]}, schema=SCHEMA))
        if i == 2:
            t.compact(full=True)
    files = _files(t)
    assert len(files) == 2 and all(_has_index(f) for f in files)
    opened = []
    for name in ("read_file", "read_parquet_late"):  # a filtered Parquet read takes the latter
        real = getattr(split_read, name)
        monkeypatch.setattr(split_read, name, lambda io, path, *a, _real=real, **k:
                            opened.append(path) or _real(io, path, *a, **k))
    assert t.to_arrow(filter="v = 'v3'")["id"].to_pylist() == [3]
    assert len(opened) == 1  # the compacted file's separate index ruled it out
    t.alter(SchemaChange.set_option("file-index.read.enabled", "false"))
    opened.clear()
    assert lab.get_table("db.ap").to_arrow(filter="v = 'v3'")["id"].to_pylist() == [3]
    assert len(opened) == 2
