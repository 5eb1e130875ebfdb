"""File indexes against Java Paimon: Java writes append tables with bloom-filter and bitmap
indexes (embedded in the manifest and as separate ``.index`` files, by
'file-index.in-manifest-threshold'); paimon-lab reads Java's indexes, skips files with them, and
builds the same bytes for the same rows; Java reads paimon-lab's indexed append and primary-key
tables. Java 0.9 and the 1.0 snapshot have neither the bsi index (Paimon 1.0.0 added it) nor
file indexes on primary-key data files (1.0.0 too): Java's primary-key files carry none.

The oracle's read takes no filter, so Java's use of our indexes is not observable here; our
index bytes equal to Java's for the same rows are what proves it can use them.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab.fileindex import build_file_index, read_file_index_head
from paimon_lab.io.file_io import join
from paimon_lab.operation.split_read import TableRead

FIELDS = [("id", "BIGINT"), ("tag", "STRING")]
SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string())])
# One index type per column: Java 0.9/1.0 keep one index per column (the first type in its
# HashMap order), newer Java and paimon-lab all of them. Those versions write bitmap format 1 only
# (and refuse to read 2, paimon-lab's and newer Java's default), so the test asks for version 1.
INDEXES = {"file-index.bloom-filter.columns": "tag", "file-index.bloom-filter.tag.items": "50",
           "file-index.bitmap.columns": "id", "file-index.bitmap.id.version": "1"}


def _batch(i: int) -> pa.Table:
    # every file's min/max of tag is [a, z]: only an index can rule a file out
    return pa.table({"id": [i * 10 + k for k in range(5)], "tag": ["a", f"m{i}", f"n{i}", "q", "z"]},
                    schema=SCHEMA)


def _index_bytes(t, split, f) -> bytes | None:
    if f.embedded_index is not None:
        return f.embedded_index
    extra = [x for x in f.extra_files if x.endswith(".index")]
    if not extra:
        return None
    return t.store.file_io.read_bytes(join(t.store.bucket_path(split.partition, split.bucket), extra[0]))


@pytest.mark.compat("append", "file indexes ({threshold} threshold): same bytes as Java", "both")
@pytest.mark.parametrize("threshold,embedded", [("64 kb", True), ("1 b", False)], ids=["embedded", "separate"])
def test_we_use_javas_indexes_and_write_the_same_bytes(jo, java, lab, wh, threshold, embedded):
    options = {"bucket": "1", "bucket-key": "id", "write-only": "true",
               "file-index.in-manifest-threshold": threshold, **INDEXES}
    jo.create(wh, "db.j", FIELDS, options=options, version=java)
    for i in range(3):
        jo.write(wh, "db.j", _batch(i), version=java)
    t = lab.get_table("db.j")
    splits = t.plan()
    files = [(s, f) for s in splits for f in s.files]
    assert len(files) == 3
    reader = TableRead(t.store)
    for split, f in files:
        java_bytes = _index_bytes(t, split, f)
        assert java_bytes is not None and (f.embedded_index is not None) == embedded
        assert {c: sorted(v) for c, v in read_file_index_head(java_bytes).items()} == \
            {"id": ["bitmap"], "tag": ["bloom-filter"]}
        rows = reader.read_file_rows(split, f)
        assert build_file_index(rows, t.options, list(t.store.schema.fields)) == java_bytes
    # Java's indexes let paimon-lab skip files: the plan (embedded) or the read (separate files)
    assert t.to_arrow(filter="tag = 'm1'")["id"].to_pylist() == [11]
    if embedded:
        assert sum(len(s.files) for s in t.plan(filter="tag = 'm1'")) == 1
        assert sum(len(s.files) for s in t.plan(filter="id = 21")) == 1

    # paimon-lab writes the same table; Java reads it, and compacts it
    ours = lab.create_table("db.o", SCHEMA, options=options)
    for i in range(3):
        ours.write(_batch(i))
    ours_files = [(s, f) for s in ours.plan() for f in s.files]
    assert [_index_bytes(ours, s, f) for s, f in ours_files] == [_index_bytes(t, s, f) for s, f in files]
    expected = jo.canonical(pa.concat_tables([_batch(i) for i in range(3)]))
    assert jo.sort_rows(jo.read(wh, "db.o", version=java), "id") == jo.sort_rows(expected, "id")


@pytest.mark.compat("primary-key", "file indexes", "lab writes; Java reads")
def test_java_reads_our_indexed_primary_key_table(jo, java, lab, wh):
    options = {"bucket": "1", "file-index.in-manifest-threshold": "1 b", **INDEXES}
    jo.create(wh, "db.pk", [("id", "BIGINT NOT NULL"), ("tag", "STRING")], primary_keys=["id"],
              options=options, version=java)
    jo.write(wh, "db.pk", _batch(0), version=java)
    t = lab.get_table("db.pk")
    assert all(f.embedded_index is None and not f.extra_files for s in t.plan() for f in s.files)
    for i in (1, 2):
        t.write(_batch(i))
    t = lab.get_table("db.pk")
    mine = [f for s in t.plan() for f in s.files if f.extra_files]
    assert len(mine) >= 2
    assert t.to_arrow(filter="id = 21").to_pylist() == [{"id": 21, "tag": "m2"}]
    expected = jo.sort_rows(jo.canonical(pa.concat_tables([_batch(i) for i in range(3)])), "id")
    assert jo.sort_rows(jo.read(wh, "db.pk", version=java), "id") == expected
    t.compact(full=True)
    assert all(f.extra_files for s in lab.get_table("db.pk").plan() for f in s.files)
    assert jo.sort_rows(jo.read(wh, "db.pk", version=java), "id") == expected


def _wide(n: int = 20000) -> pa.Table:
    """Rows whose indexes exercise Java's encodings: for ``grp`` (bitmap) a run of equal rows, a
    value on every odd row and one on every 7th even row (run, bitmap and array Roaring
    containers) and thousands of distinct values (Java HashMap order across resizes); for ``s``
    (bitmap) non-ASCII strings (their UTF-8 bytes and murmur hash order) and nulls; for ``t`` and
    ``id`` (bloom filters) two sizings by items and fpp."""
    ids = list(range(n))
    grp = [0 if i < 3000 else 1 if i % 2 else 2 if i % 7 == 0 else -i if i % 4 else i * 1000003 for i in ids]
    s = [None if i % 101 == 0 else f"€{i % 500}日\U0001F600" if i % 5 else f"k{i % 977}" for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "grp": pa.array(grp, pa.int64()),
                     "s": pa.array(s, pa.string()), "t": pa.array([f"t{i}" for i in ids], pa.string())})


@pytest.mark.compat("append", "file index bytes on wide data", "both")
def test_index_bytes_match_java_on_wide_data(jo, java, lab, wh):
    options = {"bucket": "1", "bucket-key": "id", "write-only": "true", "file-index.in-manifest-threshold": "1 b",
               "file-index.bitmap.columns": "grp,s", "file-index.bitmap.grp.version": "1",
               "file-index.bitmap.s.version": "1", "file-index.bloom-filter.columns": "t,id",
               "file-index.bloom-filter.t.items": "3000", "file-index.bloom-filter.t.fpp": "0.01",
               "file-index.bloom-filter.id.items": "20000", "file-index.bloom-filter.id.fpp": "0.05"}
    data = _wide()
    jo.create(wh, "db.w", [("id", "BIGINT"), ("grp", "BIGINT"), ("s", "STRING"), ("t", "STRING")],
              options=options, version=java)
    jo.write(wh, "db.w", data, version=java)
    t = lab.get_table("db.w")
    [(split, f)] = [(s, f) for s in t.plan() for f in s.files]
    java_bytes = _index_bytes(t, split, f)
    rows = TableRead(t.store).read_file_rows(split, f)
    assert rows.equals(data)
    assert build_file_index(rows, t.options, list(t.store.schema.fields)) == java_bytes
    assert t.to_arrow(filter="grp = 2").num_rows == data.column("grp").to_pylist().count(2)
    assert sorted(t.to_arrow(filter="s = 'k5'")["id"].to_pylist()) == [5, 4890, 9775, 14660, 19545]
