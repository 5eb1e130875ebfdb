"""Manifests decoded in bulk into Arrow columns: the same entries as the writer's, a bounded
per-process cache, and the live-entry fold (DELETE cancels the ADD of the same file) in columns."""

from __future__ import annotations

import pyarrow as pa

from paimon_lab.core.manifest import (
    ADD,
    DELETE,
    MANIFEST_CACHE,
    DataFileMeta,
    ManifestColumns,
    ManifestColumnsCache,
    ManifestEntry,
    ManifestIO,
    SimpleStats,
)
from paimon_lab.io.file_io import FileIO
from paimon_lab.operation.scan import LiveEntries


def _file(name: str, level: int = 0, **kw) -> DataFileMeta:
    return DataFileMeta(name, 100, 10, b"k0", b"k9", SimpleStats(b"a", b"b", (0, None)),
                        SimpleStats(b"c", b"d", None), 1, 10, 0, level, **kw)


ENTRIES = [
    ManifestEntry(ADD, b"p1", 0, 2, _file("f1", extra_files=("f1.index",), creation_time_millis=1_700_000_000_123,
                                          delete_row_count=None, embedded_index=b"\x01\x02", file_source=1,
                                          value_stats_cols=("a", "b"), external_path="s3://x/f1", first_row_id=5,
                                          write_cols=("a",))),
    ManifestEntry(ADD, b"p2", 1, 2, _file("f2", level=3)),
    ManifestEntry(DELETE, b"p1", 0, 2, _file("f0")),
]


def test_round_trip_through_columns(tmp_path):
    mio = ManifestIO(FileIO(str(tmp_path)), str(tmp_path))
    mio.write_manifest("manifest-x-0", ENTRIES, 0, SimpleStats(b"", b"", ()))
    assert mio.read_manifest("manifest-x-0") == ENTRIES  # from the cache the write filled
    MANIFEST_CACHE.clear()
    cols = mio.read_manifest_columns("manifest-x-0")  # decoded from the file
    assert cols.table.column("_FILE._ROW_COUNT").to_pylist() == [10, 10, 10]
    assert cols.entries([2, 0]) == [ENTRIES[2], ENTRIES[0]]
    assert cols.entries() == ENTRIES
    assert cols.entries([1])[0] is cols.entries()[1]  # built once


def test_cache_is_bounded():
    one = ManifestColumns.from_records([e.to_avro() for e in ENTRIES])
    cache = ManifestColumnsCache(max_bytes=one.nbytes * 2)
    for i in range(5):
        cache.put(("fs", f"m{i}"), one)
        assert cache.get(("fs", "m0")) is not None or i >= 2
    assert cache.get(("fs", "m4")) is one and cache.get(("fs", "m1")) is None


def test_live_entries_fold_deletes():
    first = ManifestColumns.from_records([e.to_avro() for e in ENTRIES])
    later = [ManifestEntry(DELETE, b"p2", 1, 2, _file("f2", level=3)),  # cancels f2 at level 3
             ManifestEntry(ADD, b"p2", 1, 2, _file("f2", level=5)),  # the same file upgraded
             ManifestEntry(DELETE, b"p1", 0, 2, _file("f1", level=2))]  # another level: no match
    second = ManifestColumns.from_records([e.to_avro() for e in later])
    live = LiveEntries.of([first, second])
    assert [(e.file.file_name, e.file.level) for e in live.entries()] == [("f1", 0), ("f2", 5)]
    assert LiveEntries.of([]).entries() == []
    assert isinstance(live.table, pa.Table)
    # the whole identifier counts (extra files, embedded index, external path): only f1's own DELETE cancels it
    gone = ManifestColumns.from_records([ENTRIES[0].as_delete().to_avro(),
                                         ManifestEntry(DELETE, b"p2", 1, 2, _file("f2", level=5, extra_files=("x",))).to_avro()])
    assert [(e.file.file_name, e.file.level) for e in LiveEntries.of([first, second, gone]).entries()] == [("f2", 5)]


def test_stats_prefilter_keeps_every_file_the_exact_check_keeps(lab):
    import numpy as np

    from paimon_lab.operation.scan import FileStoreScan, stats_prefilter

    schema = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string()), ("n", pa.int32())])
    t = lab.create_table("db.t", schema)
    for i in range(8):
        ids = np.arange(i * 100, i * 100 + 100)
        t.write(pa.table({"id": ids, "x": ids / 7.0 - 300, "s": [f"k{j}" for j in ids],
                          "n": pa.array([None] * 100 if i == 3 else list(range(100)), pa.int32())}, schema=schema))
    scan = FileStoreScan(t.store)
    live = scan.live_columns(t.latest_snapshot())
    entries = live.entries()
    for f in ["id = 250", "id < 100", "id >= 799", "id > 800", "x <= -250.5", "x = 0", "id IN (5, 705)",
              "id = 5 OR x > 10", "id < 300 AND s = 'k1'", "n = 7", "n IS NULL", "id BETWEEN 150 AND 420",
              "NOT (id < 100)", "id != 3"]:
        pred = t._predicate(f)
        exact = np.array([scan.file_may_match(e.file, pred) for e in entries])
        keep = stats_prefilter(t.store, live.table, pred)
        if keep is not None:
            assert not (exact & ~keep).any(), f
        assert sum(len(s.files) for s in t.plan(filter=f)) == int(exact.sum()), f
    assert stats_prefilter(t.store, live.table, t._predicate("id < 100")).sum() == 1


def test_some_rows_built_alone_equal_all_built(tmp_path):
    entries = [ManifestEntry(ADD, b"p%d" % i, i % 3, 3, _file(f"g{i}", level=i % 2, extra_files=(f"g{i}.index",) * (i % 2)))
               for i in range(9)]
    one = ManifestColumns.from_records([e.to_avro() for e in entries])
    assert one.files([7, 2]) == [entries[7].file, entries[2].file]  # a take of two rows
    assert one.entries([2]) == [entries[2]]
    assert one.entries([2])[0].file is one.files([2])[0]
    assert ManifestColumns.from_records([e.to_avro() for e in entries]).entries() == entries
    assert one.entries() == entries
