"""Postpone-bucket tables ('bucket' = -2): writes wait unmerged in bucket-postpone, invisible to
batch reads, until a compaction moves them into real buckets (Java's PostponeBucketFileStoreWrite
and postpone compaction are the specification)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from paimon_lab import SchemaChange
from paimon_lab.core.manifest import ADD
from paimon_lab.errors import OptionError
from paimon_lab.operation.scan import FileStoreScan

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                    ("v", pa.string())])


def data(dt, ks, tag):
    return pa.table({"dt": [dt] * len(ks), "k": ks, "v": [f"{tag}{k}" for k in ks]}, schema=SCHEMA)


def rows(t):
    return sorted(t.to_arrow().to_pylist(), key=lambda r: (r["dt"], r["k"]))


def entries(t):
    snap = t.store.snapshot_manager.latest()
    return FileStoreScan(t.store).read_entries(snap)


def bucket_of_keys(t) -> dict:
    """(dt, k) -> (bucket, total buckets) of every live real-bucket file's rows."""
    out = {}
    for e in entries(t):
        if e.bucket < 0:
            continue
        from paimon_lab.mergetree.compact_rewriter import BucketFiles
        kv = BucketFiles(t.store, t.store.kv_layout, e.partition, e.bucket).read_file(e.file)
        for dt, k in zip(kv.column("dt").to_pylist(), kv.column("k").to_pylist()):
            out[(dt, k)] = (e.bucket, e.total_buckets)
    return out


def test_rows_wait_in_the_postpone_bucket_until_compaction(lab):
    t = lab.create_table("db.p", SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"],
                         options={"bucket": "-2", "postpone.default-bucket-num": "3"})
    t.write(data("a", [1, 2, 3, 4], "x"))
    t.write(data("a", [2, 9], "y"))
    t.write(data("b", [5], "z"))
    # invisible to batch reads and count(*); the files sit unmerged in bucket-postpone as Avro,
    # in the manifest as bucket -2 with total buckets -2
    assert rows(t) == [] and t.count() == 0
    es = entries(t)
    assert {(e.bucket, e.total_buckets, e.file.level) for e in es} == {(-2, -2, 0)}
    assert sorted(e.file.row_count for e in es) == [1, 2, 4]
    directory = os.path.join(t.store.path, "dt=a", "bucket-postpone")
    names = sorted(os.listdir(directory))
    assert len(names) == 2 and all(n.startswith("data--u-") and "-s-" in n and n.endswith(".avro") for n in names)
    # streaming without a changelog producer sees each commit's rows as written (Java reads the
    # postpone bucket in streaming mode)
    snaps = t.snapshots()
    assert [s.commit_kind for s in snaps] == ["APPEND"] * 3
    changes = t.snapshot_changes(snaps[1])
    assert sorted(zip(changes.column("rowkind").to_pylist(), changes.column("v").to_pylist())) == [
        ("+I", "y2"), ("+I", "y9")]

    sid = t.compact()
    assert t.snapshot(sid).commit_kind == "COMPACT" and t.snapshot_changes(t.snapshot(sid)).num_rows == 0
    assert rows(t) == [{"dt": "a", "k": 1, "v": "x1"}, {"dt": "a", "k": 2, "v": "y2"}, {"dt": "a", "k": 3, "v": "x3"},
                       {"dt": "a", "k": 4, "v": "x4"}, {"dt": "a", "k": 9, "v": "y9"}, {"dt": "b", "k": 5, "v": "z5"}]
    assert t.count() == 6
    assert all(e.bucket >= 0 and e.total_buckets == 3 for e in entries(t))
    assert sorted(os.listdir(directory)) == names  # the postponed files stay until snapshot expiration
    assert t.compact() is None  # nothing left to move or compact
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert not os.path.exists(directory) and len(rows(t)) == 6


def test_buckets_match_a_fixed_bucket_table(lab):
    """Rows land in the bucket a fixed 'bucket' = 4 table puts them in."""
    pp = lab.create_table("db.pp", SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"],
                          options={"bucket": "-2", "postpone.default-bucket-num": "4"})
    fixed = lab.create_table("db.fixed", SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"],
                             options={"bucket": "4"})
    batch = pa.concat_tables([data("a", list(range(40)), "v"), data("b", list(range(100, 120)), "v")])
    pp.write(batch)
    fixed.write(batch)
    pp.compact()
    got, want = bucket_of_keys(pp), bucket_of_keys(fixed)
    assert len(got) == 60 and got == want
    assert len({b for b, _ in got.values()}) == 4


def test_upserts_and_deletes_across_postponed_commits_follow_commit_order(lab):
    t = lab.create_table("db.p", SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"],
                         options={"bucket": "-2", "postpone.default-bucket-num": "2"})
    t.write(data("a", [1, 2, 3], "first"))
    t.compact()
    t.write(data("a", [1, 4], "second"))
    t.write(data("a", [1, 2], "third"))
    t.write(data("a", [3], "gone"), row_kinds=["-D"])
    t.write(data("a", [4, 4], "dup"))  # within one commit, the later row wins
    assert rows(t) == [{"dt": "a", "k": k, "v": f"first{k}"} for k in (1, 2, 3)]
    t.compact()
    assert rows(t) == [{"dt": "a", "k": 1, "v": "third1"}, {"dt": "a", "k": 2, "v": "third2"},
                       {"dt": "a", "k": 4, "v": "dup4"}]
    # full compaction then leaves one file per bucket in the top level
    t.compact(full=True)
    top = t.store.num_levels - 1
    assert {e.file.level for e in entries(t)} == {top}


def test_bucket_count_per_partition(lab):
    """A partition keeps the bucket count its real buckets record; a new one takes
    'postpone.default-bucket-num' at its first compaction, else an estimate from its rows."""
    t = lab.create_table("db.p", SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"],
                         options={"bucket": "-2", "postpone.default-bucket-num": "2"})
    t.write(data("a", list(range(10)), "v"))
    t.compact()
    t.alter(SchemaChange.set_option("postpone.default-bucket-num", "5"))
    t = lab.get_table("db.p")
    t.write(pa.concat_tables([data("a", list(range(10, 20)), "v"), data("b", list(range(10)), "v")]))
    t.compact()
    totals = {(dt, tb) for (dt, _), (_, tb) in bucket_of_keys(t).items()}
    assert totals == {("a", 2), ("b", 5)}
    t.alter(SchemaChange.remove_option("postpone.default-bucket-num"),
            SchemaChange.set_option("postpone.target-row-num-per-bucket", "4"))
    t = lab.get_table("db.p")
    t.write(data("c", list(range(9)), "v"))  # 9 rows at 4 per bucket: 3 buckets
    t.compact()
    assert {tb for (dt, _), (_, tb) in bucket_of_keys(t).items() if dt == "c"} == {3}
    assert len(rows(t)) == 39


def test_postpone_bucket_refusals(lab):
    with pytest.raises(OptionError, match="needs a primary key"):
        lab.create_table("db.a", SCHEMA, options={"bucket": "-2"})
    with pytest.raises(OptionError, match="partition keys"):
        lab.create_table("db.b", SCHEMA, primary_keys=["k"], partition_keys=["dt"], options={"bucket": "-2"})
    with pytest.raises(OptionError, match="merge-on-read"):
        lab.create_table("db.c", SCHEMA, primary_keys=["dt", "k"], options={"bucket": "-2",
                                                                          "postpone.merge-on-read": "true"})


def test_sql_call_compact_moves_postponed_rows(wh):
    from paimon_lab.sql import Session

    s = Session(wh)
    try:
        s.run("CREATE TABLE t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '-2', "
              "'postpone.default-bucket-num' = '2')")
        s.run("INSERT INTO t VALUES (1, 'a'), (2, 'b'); INSERT INTO t VALUES (1, 'c')")
        assert s.execute("SELECT count(*) FROM t").column(0).to_pylist() == [0]
        s.run("CALL sys.compact('default.t')")
        assert sorted(s.execute("SELECT k, v FROM t").to_pylist(), key=lambda r: r["k"]) == [
            {"k": 1, "v": "c"}, {"k": 2, "v": "b"}]
    finally:
        s.close()


def test_pypaimon_reads_the_compacted_table_and_writes_postponed_rows(lab, py_catalog):
    """pypaimon 2.1 writes a postpone table's rows to bucket -2 too and reads only real buckets:
    it sees paimon_lab's compaction, and paimon_lab compacts the rows pypaimon postponed."""
    t = lab.create_table("db.p", SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"],
                         options={"bucket": "-2", "postpone.default-bucket-num": "3"})
    t.write(data("a", [1, 2, 3], "lab"))
    assert py_catalog.read_table("db.p").num_rows == 0
    t.compact()
    py = py_catalog.read_table("db.p")
    assert sorted(zip(py.column("k").to_pylist(), py.column("v").to_pylist())) == [(1, "lab1"), (2, "lab2"), (3, "lab3")]
    py_catalog.write_table("db.p", data("a", [2, 7], "py"))
    t = lab.get_table("db.p")
    assert [e.bucket for e in entries(t) if e.kind == ADD and e.bucket < 0] == [-2]
    assert len(rows(t)) == 3
    t.compact()
    assert [(r["k"], r["v"]) for r in rows(t)] == [(1, "lab1"), (2, "py2"), (3, "lab3"), (7, "py7")]
    py = py_catalog.read_table("db.p")
    assert sorted(zip(py.column("k").to_pylist(), py.column("v").to_pylist())) == [
        (1, "lab1"), (2, "py2"), (3, "lab3"), (7, "py7")]


def test_postpone_target_size_per_bucket(lab):
    """Without a default bucket count or target rows, a new partition gets one bucket per
    'postpone.target-size-per-bucket' bytes of postponed files (rounded up)."""
    t = lab.create_table("db.p", SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"], options={"bucket": "-2"})
    t.write(data("a", list(range(50)), "v"))
    t.write(data("b", list(range(50)), "v"))
    size_a = sum(e.file.file_size for e in entries(t) if e.partition == entries(t)[0].partition)
    t.alter(SchemaChange.set_option("postpone.target-size-per-bucket", str(size_a // 3)))
    t = lab.get_table("db.p")
    t.compact()
    totals = {tb for _, tb in bucket_of_keys(t).values()}
    assert totals == {-(-size_a // (size_a // 3))}  # both partitions wrote the same bytes
    # the default (1 gb) gives a small partition one bucket
    t.write(data("c", [1, 2], "v"))
    t.alter(SchemaChange.remove_option("postpone.target-size-per-bucket"))
    lab.get_table("db.p").compact()
    assert {tb for (dt, _), (_, tb) in bucket_of_keys(lab.get_table("db.p")).items() if dt == "c"} == {1}


def test_streaming_full_scan_adds_the_postponed_rows(lab):
    """Without a changelog producer a streaming read's first batch holds the merged real buckets
    plus the still-postponed rows as written (Java does not restrict that scan to real buckets);
    later batches are each commit's rows; the COMPACT snapshot adds nothing."""
    t = lab.create_table("db.p", SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"],
                         options={"bucket": "-2", "postpone.default-bucket-num": "2"})
    t.write(data("a", [1, 2], "old"))
    t.compact()
    t.write(data("a", [2, 3], "new"))
    t.write(data("a", [1], "del"), row_kinds=["-D"])
    batches = list(t.stream(mode="latest-full", timeout=0))
    assert len(batches) == 1
    got = batches[0].rows
    assert sorted(zip(got.column("rowkind").to_pylist(), got.column("k").to_pylist(), got.column("v").to_pylist())) == [
        ("+I", 1, "old1"), ("+I", 2, "new2"), ("+I", 2, "old2"), ("+I", 3, "new3"), ("-D", 1, "del1")]
    sid = t.compact()
    later = list(t.stream(mode="from-snapshot", snapshot_id=sid - 1, timeout=0))
    assert [b.snapshot_id for b in later] == [sid - 1]
