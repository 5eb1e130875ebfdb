"""Merge-on-read fast paths (paimon_lab.mergetree.reader) against the general merge and a model.

The deduplicate engine reads key columns first and values only of winning rows; files whose key
ranges do not overlap are not merged at all; key predicates skip row groups and rows before the
merge, value predicates apply after it; fixed-bucket tables skip buckets a key filter rules out.
"""

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_lab import SchemaChange as C
from paimon_lab.mergetree import reader as merge_read
from paimon_lab.operation import split_read
from paimon_lab.mergetree import shadowed
from paimon_lab.core.predicate import Leaf, col, filter_table, match_mask, parse_filter

KV = pa.schema([("k", pa.int64()), ("v", pa.float64()), ("s", pa.string())])


def pk_table(catalog, name="db.t", schema=KV, pk=("k",), partition=(), **options):
    opts = {"bucket": "2", "write-only": "true", **options}
    return catalog.create_table(name, schema, primary_keys=list(pk), partition_keys=list(partition), options=opts)


def kv_rows(keys, v, s=None, schema=KV):
    keys = list(keys)
    return pa.table({"k": pa.array(keys, schema.field("k").type),
                     "v": pa.array([float(v)] * len(keys) if not isinstance(v, list) else v, pa.float64()),
                     "s": pa.array(s if isinstance(s, list) else [f"{s}{k}" for k in keys], pa.string())})


def slow(table, **kwargs):
    """The same read through the general merge (every column sorted and merged)."""
    mp = pytest.MonkeyPatch()
    mp.setattr(split_read, "supports_fast_merge", lambda fn: False)  # the name the read path calls
    try:
        return table.to_arrow(**kwargs)
    finally:
        mp.undo()


def same(a: pa.Table, b: pa.Table, key="k"):
    assert a.schema == b.schema
    assert a.sort_by(key).to_pylist() == b.sort_by(key).to_pylist()


def levels0(t):
    return sum(len(s.files) for s in t.plan())


# ------------------------------------------------------------------ deduplicate fast path

def test_older_runs_contribute_winners_and_output_is_in_key_order(catalog):
    t = pk_table(catalog, bucket="1")
    t.write(kv_rows(range(0, 100), 1.0, "a"))           # run 1: keys 0..99
    t.write(kv_rows(range(50, 150, 2), 2.0, "b"))       # run 2: every other key of 50..148
    t.write(kv_rows(range(90, 120), 3.0, "c"))          # run 3: 90..119
    assert levels0(t) == 3
    got = t.to_arrow()
    model = {k: (1.0, f"a{k}") for k in range(100)}
    model.update({k: (2.0, f"b{k}") for k in range(50, 150, 2)})
    model.update({k: (3.0, f"c{k}") for k in range(90, 120)})
    assert got["k"].to_pylist() == sorted(model)                       # key order
    assert [(r["k"], r["v"], r["s"]) for r in got.to_pylist()] == [(k, *model[k]) for k in sorted(model)]
    same(got, slow(t))
    # projections, also of the key alone and without the key
    assert t.to_arrow(columns=["s"])["s"].to_pylist() == [model[k][1] for k in sorted(model)]
    assert t.to_arrow(columns=["k"])["k"].to_pylist() == sorted(model)
    assert t.to_arrow(columns=["v", "k"]).column_names == ["v", "k"]
    assert t.to_arrow(columns=[]).num_rows == len(model)
    assert t.to_arrow(limit=7).num_rows == 7


def test_deletes_in_the_newest_run_and_reinserts(catalog):
    t = pk_table(catalog, bucket="1")
    t.write(kv_rows(range(20), 1.0, "a"))
    t.write(kv_rows([3, 4, 5], 0.0, "x"), row_kinds=["-D", "-D", "-U"])
    t.write(kv_rows([4, 30], 2.0, "b"))                  # 4 comes back, 30 is new
    t.write(kv_rows([30, 7], 0.0, "x"), row_kinds=["-D", "-D"])
    got = t.to_arrow()
    assert got["k"].to_pylist() == [0, 1, 2, 4, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
    assert got.filter(pc.equal(got["k"], 4))["s"].to_pylist() == ["b4"]
    same(got, slow(t))
    same(t.to_arrow(filter="k IN (3, 4, 5, 30)"), slow(t, filter="k IN (3, 4, 5, 30)"))
    assert t.to_arrow(filter="k IN (3, 5, 7, 30)").num_rows == 0


def test_key_filter_does_not_resurrect_older_versions(catalog):
    t = pk_table(catalog, bucket="1")
    t.write(kv_rows(range(10), 100.0, "old"))
    t.write(kv_rows([2, 3], 1.0, "new"))
    t.write(kv_rows([5], 0.0, "x"), row_kinds=["-D"])
    # the old versions of 2 and 3 match 'v > 50'; the newest do not: they must not come back
    for f in ["k = 2 AND v > 50", "k IN (2, 3) AND v > 50", "k BETWEEN 1 AND 3 AND v > 50",
              "(k = 2 OR k = 3) AND s = 'old3'", "v > 50", "s LIKE 'old%'"]:
        got = t.to_arrow(filter=f)
        assert 2 not in got["k"].to_pylist() and 3 not in got["k"].to_pylist(), f
        assert 5 not in got["k"].to_pylist(), f
        same(got, slow(t, filter=f))
    assert t.to_arrow(filter="k = 1 AND v > 50")["s"].to_pylist() == ["old1"]
    assert t.to_arrow(filter="k = 2")["s"].to_pylist() == ["new2"]
    assert t.to_arrow(filter="k > 7 OR s = 'new3'")["k"].to_pylist() == [3, 8, 9]


def test_ignore_delete_and_sequence_field(catalog):
    t = pk_table(catalog, "db.ign", bucket="1", **{"ignore-delete": "true"})
    t.write(kv_rows(range(5), 1.0, "a"))
    t.write(kv_rows([1, 2], 0.0, "x"), row_kinds=["-D", "-D"])
    t.write(kv_rows([3], 2.0, "b"))
    got = t.to_arrow()
    assert got["k"].to_pylist() == [0, 1, 2, 3, 4] and got["s"].to_pylist() == ["a0", "a1", "a2", "b3", "a4"]
    same(got, slow(t))

    schema = pa.schema([("k", pa.int64()), ("ts", pa.int64()), ("s", pa.string())])
    t = pk_table(catalog, "db.seq", schema=schema, bucket="1", **{"sequence.field": "ts"})
    t.write(pa.table({"k": [1, 2, 3], "ts": [10, 10, None], "s": ["new", "x", "n1"]}))
    t.write(pa.table({"k": [1, 2, 3], "ts": [5, 11, None], "s": ["late", "y", "n2"]}))
    got = t.to_arrow()
    assert got.to_pylist() == [{"k": 1, "ts": 10, "s": "new"}, {"k": 2, "ts": 11, "s": "y"},
                               {"k": 3, "ts": None, "s": "n2"}]
    same(got, slow(t))


def test_row_kind_flag_padding(catalog):
    schema = pa.schema([("k", pa.int64()), ("ts", pa.int64()), ("s", pa.string())])
    t = pk_table(catalog, schema=schema, bucket="1", **{"sequence.field": "ts",
                                                         "sequence.auto-padding": "row-kind-flag"})
    t.write(pa.table({"k": [1, 2], "ts": [7, 7], "s": ["a", "b"]}))
    t.write(pa.table({"k": [1, 2], "ts": [7, 8], "s": ["a", "b"]}), row_kinds=["-U", "-D"])
    got = t.to_arrow()
    same(got, slow(t))
    assert got["k"].to_pylist() == [1]


def test_composite_and_string_keys_thin_mode_and_partitions(catalog):
    schema = pa.schema([("dt", pa.string()), ("a", pa.string()), ("b", pa.int32()), ("v", pa.float64())])
    for i, opts in enumerate([{}, {"data-file.thin-mode": "true"}]):
        t = pk_table(catalog, f"db.c{i}", schema=schema, pk=("dt", "a", "b"), partition=("dt",), **opts)
        rng = np.random.default_rng(i)
        model = {}
        for commit in range(4):
            n = 300
            a = [f"key{x}" for x in rng.integers(0, 40, n)]
            b = rng.integers(0, 10, n).astype(np.int32)
            dt = [f"d{x}" for x in rng.integers(0, 2, n)]
            v = rng.normal(size=n)
            table = pa.table({"dt": dt, "a": a, "b": pa.array(b, pa.int32()), "v": v})
            kinds = np.where(rng.random(n) < 0.1, "-D", "+I").tolist()
            # one row per key per commit (the model then is simply "last commit wins")
            _, first = np.unique(np.array([f"{x}|{y}|{z}" for x, y, z in zip(dt, a, b)]), return_index=True)
            table = table.take(pa.array(np.sort(first)))
            kinds = [kinds[j] for j in np.sort(first)]
            t.write(table, row_kinds=kinds)
            for r, kind in zip(table.to_pylist(), kinds):
                key = (r["dt"], r["a"], r["b"])
                if kind == "-D":
                    model.pop(key, None)
                else:
                    model[key] = r["v"]
        got = t.to_arrow()
        assert sorted((r["dt"], r["a"], r["b"], r["v"]) for r in got.to_pylist()) == \
            sorted((*k, v) for k, v in model.items())
        same(got, slow(t), key=[("dt", "ascending"), ("a", "ascending"), ("b", "ascending")])
        f = "a IN ('key1', 'key7') AND b >= 3 AND v > 0"
        same(t.to_arrow(filter=f), slow(t, filter=f), key=[("dt", "ascending"), ("a", "ascending"), ("b", "ascending")])


def test_random_histories_match_the_general_merge(catalog):
    rng = np.random.default_rng(7)
    for case in range(6):
        # a small buffer: level-0 files per full buffer, or (case 3) spilled runs merged at the commit
        opts = {"write-buffer-size": "32 kb", "write-buffer-spillable": str(case == 3).lower()} if case % 2 else {}
        if case == 4:
            opts["ignore-delete"] = "true"
        t = pk_table(catalog, f"db.r{case}", bucket=str(1 + case % 3), **opts)
        for commit in range(1 + case % 4 + 1):
            n = int(rng.integers(1, 3000))
            keys = rng.choice(5000, size=n, replace=False)
            kinds = rng.choice(["+I", "+U", "-D", "-U"], size=n, p=[0.6, 0.2, 0.15, 0.05]).tolist()
            t.write(kv_rows(keys, rng.normal(size=n).tolist(), f"c{commit}-"), row_kinds=kinds)
            if case == 5 and commit == 1:
                t.compact(full=True)
        same(t.to_arrow(), slow(t))
        for f in ["k < 1000", "k IN (1, 2, 3, 4000, 4999)", "k >= 2500 AND v < 0", "s LIKE 'c1%'",
                  "k = 17 OR v > 1", "NOT (k < 4000)", "k != 3 AND k IS NOT NULL"]:
            same(t.to_arrow(filter=f), slow(t, filter=f))
        same(t.to_arrow(columns=["s", "k"], filter="v > 0"), slow(t, columns=["s", "k"], filter="v > 0"))


def test_time_travel_and_tags_read_through_the_fast_path(catalog):
    t = pk_table(catalog, bucket="1")
    t.write(kv_rows(range(5), 1.0, "a"))
    t.write(kv_rows([1, 2], 2.0, "b"))
    t.create_tag("after-two", snapshot_id=2)
    t.write(kv_rows([2], 0.0, "x"), row_kinds=["-D"])
    assert t.to_arrow(snapshot_id=1)["s"].to_pylist() == ["a0", "a1", "a2", "a3", "a4"]
    assert t.to_arrow(tag="after-two")["s"].to_pylist() == ["a0", "b1", "b2", "a3", "a4"]
    assert t.to_arrow()["k"].to_pylist() == [0, 1, 3, 4]


def test_files_without_overlap_are_not_merged(catalog, monkeypatch):
    t = pk_table(catalog, bucket="1")
    t.write(kv_rows(range(0, 100), 1.0, "a"))
    t.write(kv_rows(range(100, 200), 2.0, "b"))
    t.write(kv_rows([150], 0.0, "x"), row_kinds=["-D"])
    split = t.plan()[0]
    reader = merge_read.MergeReader(t.store, split.partition, split.bucket)
    names = [f.file_name for f in split.files]
    assert reader.sections(split.files[:2]) == [[0], [1]]
    sections = reader.sections(split.files)
    assert sorted(map(sorted, sections)) == [[names.index(split.files[0].file_name)],
                                             sorted(names.index(f.file_name) for f in split.files[1:])]
    calls = []
    original = merge_read.MergeReader._read_overlapping
    monkeypatch.setattr(merge_read.MergeReader, "_read_overlapping",
                        lambda self, readers, *a: calls.append(sorted(r.meta.min_key for r in readers))
                        or original(self, readers, *a))
    got = t.to_arrow(snapshot_id=2)
    assert got["k"].to_pylist() == list(range(200)) and not calls
    got = t.to_arrow()
    # only the section of keys 100..199 (two files) is merged; keys 0..99 are read straight through
    assert got["k"].to_pylist() == [k for k in range(200) if k != 150]
    assert len(calls) == 1 and len(calls[0]) == 2


def test_runs_with_a_newer_runs_exact_key_set_are_skipped_unread(catalog, monkeypatch):
    """A run whose key column chunks equal a newer run's loses every row: it is dropped before any
    of its columns is decoded. Equal row counts and key ranges alone never drop a run."""
    skipped = []
    original = shadowed.shadowed_runs
    monkeypatch.setattr(shadowed, "_BLOCK", 64)  # chunk bytes compared in several blocks
    monkeypatch.setattr(merge_read, "shadowed_runs",
                        lambda files, chunks: skipped.append(original(files, chunks)) or skipped[-1])
    t = pk_table(catalog, bucket="1")
    t.write(kv_rows(range(100), 1.0, "a"))
    t.write(kv_rows(range(100), 2.0, "b"))                                 # the same keys again
    t.write(kv_rows(range(100), 3.0, "c"), row_kinds=["-D"] * 3 + ["+U"] * 97)
    got = t.to_arrow()
    assert skipped and skipped[-1] == {0, 1}
    assert got["k"].to_pylist() == list(range(3, 100)) and set(got["s"].to_pylist()) == {f"c{k}" for k in range(3, 100)}
    same(got, slow(t))
    same(t.to_arrow(filter="k < 10 AND v > 1"), slow(t, filter="k < 10 AND v > 1"))
    assert t.to_arrow(snapshot_id=2)["s"].to_pylist() == [f"b{k}" for k in range(100)]

    # same row count and key range (0 and 99), one key differs: nothing is skipped
    t = pk_table(catalog, "db.near", bucket="1")
    t.write(kv_rows([0, *range(2, 99), 99], 1.0, "a"))
    t.write(kv_rows([0, 1, *range(3, 99), 99], 2.0, "b"))
    got = t.to_arrow()
    assert skipped[-1] == set()
    assert got.filter(pc.equal(got["k"], 2))["s"].to_pylist() == ["a2"]
    assert got.num_rows == 100
    same(got, slow(t))

    # ignore-delete: a -D in the newer run does not hide the older version, so nothing is skipped
    t = pk_table(catalog, "db.ign2", bucket="1", **{"ignore-delete": "true"})
    t.write(kv_rows(range(10), 1.0, "a"))
    t.write(kv_rows(range(10), 2.0, "b"), row_kinds=["-D"] + ["+I"] * 9)
    got = t.to_arrow()
    assert got["s"].to_pylist() == ["a0"] + [f"b{k}" for k in range(1, 10)]
    same(got, slow(t))

    # sequence.field: an older run's row may win, so nothing is skipped
    schema = pa.schema([("k", pa.int64()), ("ts", pa.int64()), ("s", pa.string())])
    t = pk_table(catalog, "db.seq2", schema=schema, bucket="1", **{"sequence.field": "ts"})
    t.write(pa.table({"k": [1, 2, 3], "ts": [10, 10, 10], "s": ["new", "new", "new"]}))
    t.write(pa.table({"k": [1, 2, 3], "ts": [5, 11, 5], "s": ["late", "y", "late"]}))
    assert t.to_arrow()["s"].to_pylist() == ["new", "y", "new"]


def test_shadowed_runs_with_partitions_nulls_and_an_evolved_schema(catalog, monkeypatch):
    skipped = []
    original = shadowed.shadowed_runs
    monkeypatch.setattr(merge_read, "shadowed_runs",
                        lambda files, chunks: skipped.append(original(files, chunks)) or skipped[-1])
    schema = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.float64()), ("s", pa.string())])
    t = catalog.create_table("db.sp", schema, primary_keys=["k", "p"], partition_keys=["p"],
                             options={"bucket": "1", "write-only": "true"})

    def rows(tag, v):
        return pa.table({"k": pa.array([1, 2, 3, 1, 2], pa.int64()), "p": ["x", "x", "x", "y", "y"],
                         "v": pa.array([v, None, v, v, None], pa.float64()), "s": [f"{tag}{i}" for i in range(5)]})

    t.write(rows("a", 1.0))
    t.write(rows("b", 2.0))                    # same keys per partition: the first runs are skipped
    t.alter(C.add_column("extra", "INT"), C.rename_column("s", "text"))
    t.write(pa.table({"k": pa.array([1, 2, 3], pa.int64()), "p": ["x"] * 3, "v": [None, 3.0, None],
                      "text": ["c0", "c1", "c2"], "extra": pa.array([7, None, 9], pa.int32())}))
    got = t.to_arrow().sort_by([("p", "ascending"), ("k", "ascending")])
    assert got.to_pylist() == [
        {"k": 1, "p": "x", "v": None, "text": "c0", "extra": 7},
        {"k": 2, "p": "x", "v": 3.0, "text": "c1", "extra": None},
        {"k": 3, "p": "x", "v": None, "text": "c2", "extra": 9},
        {"k": 1, "p": "y", "v": 2.0, "text": "b3", "extra": None},
        {"k": 2, "p": "y", "v": None, "text": "b4", "extra": None},
    ]
    # partition x: run 1 shadowed by run 2 (same schema); run 2 is not compared with run 3 (evolved)
    assert sorted(map(sorted, skipped)) == [[0], [0]]
    same(t.to_arrow(), slow(t), key=[("p", "ascending"), ("k", "ascending")])
    assert t.to_arrow(filter="p = 'y' AND v IS NULL")["text"].to_pylist() == ["b4"]


def test_sections_merge_only_overlapping_files_and_keep_key_order(catalog):
    t = pk_table(catalog, bucket="1")
    t.write(kv_rows(range(100), 1.0, "a"))              # section A: 0..99 and its update below
    t.write(kv_rows(range(200, 300), 1.0, "b"))         # section B: 200..299, alone
    t.write(kv_rows(range(400, 500), 1.0, "c"))         # section C: 400..499 and its updates below
    t.write(kv_rows([10, 20, 99], 2.0, "A"))
    t.write(kv_rows([450, 499, 600], 3.0, "C"), row_kinds=["+U", "-D", "+I"])
    split = t.plan()[0]
    reader = merge_read.MergeReader(t.store, split.partition, split.bucket)
    assert sorted(len(s) for s in reader.sections(split.files)) == [1, 2, 2]
    model = {k: f"a{k}" for k in range(100)} | {k: f"b{k}" for k in range(200, 300)} | \
        {k: f"c{k}" for k in range(400, 500)}
    model |= {10: "A10", 20: "A20", 99: "A99", 450: "C450", 600: "C600"}
    del model[499]
    got = t.to_arrow()
    assert got["k"].to_pylist() == sorted(model)                        # key order across sections
    assert got["s"].to_pylist() == [model[k] for k in sorted(model)]
    same(got, slow(t))
    same(t.to_arrow(filter="k BETWEEN 90 AND 460"), slow(t, filter="k BETWEEN 90 AND 460"))


def test_interleaved_runs_where_every_row_wins(catalog):
    """Two runs whose key ranges overlap but share no key: every row wins, yet the winners are
    interleaved, so keys and values must still be gathered into key order together."""
    t = pk_table(catalog, bucket="1")
    t.write(kv_rows([1, 3, 5, 7], 1.0, "odd"))
    t.write(kv_rows([2, 4, 6, 8], 2.0, "even"))
    got = t.to_arrow()
    assert got["k"].to_pylist() == list(range(1, 9))
    assert got["s"].to_pylist() == [f"{'odd' if k % 2 else 'even'}{k}" for k in range(1, 9)]
    assert got.to_pylist() == slow(t).sort_by("k").to_pylist()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 900), st.integers(1, 150), st.integers(1, 3),
                          st.sampled_from(["+I", "-D", "mixed"])), min_size=1, max_size=6),
       st.booleans(), st.booleans())
def test_sections_match_a_model(tmp_path_factory, commits, small_buffer, few_values):
    """Commits of key ranges that may or may not overlap (some runs disjoint, some overlapping,
    some several files through a small write buffer): the fast read equals a dict model, in key
    order, and the general merge. ``few_values``: the string column has a handful of values, so
    it is stored with a dictionary and merged as dictionary codes."""
    from paimon_lab import Catalog

    cat = Catalog(str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    t = pk_table(cat, bucket="1", **({"write-buffer-size": "8 kb", "write-buffer-spillable": "false"}
                                     if small_buffer else {}))
    model = {}
    for n, (start, length, step, kind) in enumerate(commits):
        keys = list(range(start, start + length * step, step))
        kinds = ["+I" if kind == "+I" or (kind == "mixed" and k % 3) else "-D" for k in keys]
        text = [f"c{n}-{k % 4 if few_values else k}" for k in keys]
        t.write(kv_rows(keys, float(n), text), row_kinds=kinds)
        for k, kd, s in zip(keys, kinds, text):
            if kd == "-D":
                model.pop(k, None)
            else:
                model[k] = s
    got = t.to_arrow()
    assert got["k"].to_pylist() == sorted(model)
    assert got["s"].to_pylist() == [model[k] for k in sorted(model)]
    same(got, slow(t))


def test_schema_evolution_through_the_fast_path(catalog):
    schema = pa.schema([("k", pa.int32()), ("v", pa.int32()), ("s", pa.string())])
    t = catalog.create_table("db.e", schema, primary_keys=["k"], options={"bucket": "1", "write-only": "true"})
    t.write(pa.table({"k": pa.array([1, 2, 3], pa.int32()), "v": pa.array([10, 20, 30], pa.int32()),
                      "s": ["a", "b", "c"]}))
    t.alter(C.update_column_type("v", "BIGINT"), C.rename_column("s", "text"), C.add_column("extra", "DOUBLE"))
    t.write(pa.table({"k": pa.array([2, 4], pa.int32()), "v": [200, 400], "text": ["B", "d"], "extra": [1.0, None]}))
    expected = [{"k": 1, "v": 10, "text": "a", "extra": None}, {"k": 2, "v": 200, "text": "B", "extra": 1.0},
                {"k": 3, "v": 30, "text": "c", "extra": None}, {"k": 4, "v": 400, "text": "d", "extra": None}]
    assert t.to_arrow().to_pylist() == expected
    assert t.to_arrow(filter="text = 'c' AND k > 1").to_pylist() == [expected[2]]
    assert t.to_arrow(columns=["text"], filter="k IN (1, 4)")["text"].to_pylist() == ["a", "d"]


def test_deletion_vectors_read_only_needed_columns(catalog):
    t = pk_table(catalog, bucket="1", **{"deletion-vectors.enabled": "true", "write-only": "false"})
    t.write(kv_rows(range(10), 1.0, "old"))
    t.write(kv_rows([3, 7], 2.0, "new"))
    t.write(kv_rows([0], 0.0, "x"), row_kinds=["-D"])
    assert sorted(t.to_arrow(columns=["s"], filter="k IN (3, 4)")["s"].to_pylist()) == ["new3", "old4"]
    assert sorted(t.to_arrow(filter="v > 1.5")["k"].to_pylist()) == [3, 7]
    assert sorted(t.to_arrow(columns=["k"])["k"].to_pylist()) == list(range(1, 10))


def test_dictionary_coded_strings_in_every_fast_path(catalog):
    """String columns stored with a dictionary are read as their codes and turned into strings
    only for the rows kept. Files of one bucket mix dictionary and plain chunks of the same column
    (few distinct values against all distinct), nulls, a dictionary that falls back to plain pages,
    and a string key: the merged, sectioned, sliced, deletion-vector and compacted reads all
    equal a model and the general merge."""
    schema = pa.schema([("k", pa.string()), ("n", pa.int64()), ("status", pa.string()), ("s", pa.string())])
    rng = np.random.default_rng(3)

    def rows(keys, commit, few_values):
        status = [None if k % 7 == 0 else (f"st{k % 3}" if few_values else f"u{commit}-{k}-{rng.integers(1e9)}")
                  for k in keys]
        return pa.table({"k": [f"{k:06d}" for k in keys], "n": pa.array(keys, pa.int64()),
                         "status": status, "s": [f"c{commit}-{k % 5}" for k in keys]}, schema=schema)

    for options in ({}, {"deletion-vectors.enabled": "true", "write-only": "false"},
                    {"parquet.dictionary.page.size": "64"}):
        name = f"db.dict{len(catalog.list_tables('db'))}"
        t = catalog.create_table(name, schema, primary_keys=["k"],
                                 options={"bucket": "1", "write-only": "true", **options})
        model = {}
        commits = [(range(3000), True), (range(0, 3000, 3), False), (range(1500, 4000, 2), True),
                   (range(5000, 5100), False), (range(2990, 3010), True)]
        for c, (keys, few) in enumerate(commits):
            batch = rows(list(keys), c, few)
            t.write(batch)
            model.update({r["k"]: r for r in batch.to_pylist()})
        want = [model[k] for k in sorted(model)]
        split = t.plan()[0]
        path = os.path.join(t.store.bucket_path(split.partition, split.bucket), split.files[0].file_name)
        reader = merge_read.KVFileReader(t.store, t.store.kv_layout, path, split.files[0])
        try:  # the first run's status column really comes back as codes (a plain string otherwise)
            assert pa.types.is_dictionary(reader.read(["status"], keep_dictionary=True).schema.field(0).type)
            assert reader.read(["status"]).schema.field(0).type == pa.string()
        finally:
            reader.close()
        got = t.to_arrow().sort_by("k")   # deletion-vector reads are not in key order
        assert got.schema.types == schema.types and got.to_pylist() == want
        same(got, slow(t), key="k")
        picked = t.to_arrow(columns=["status", "k"], filter="k >= '002990' AND k < '003005'").sort_by("k")
        assert picked.to_pylist() == [{"status": r["status"], "k": r["k"]} for r in want
                                      if "002990" <= r["k"] < "003005"]
        assert t.to_arrow(filter="status = 'st1'").sort_by("k").to_pylist() == \
            [r for r in want if r["status"] == "st1"]
        t.compact(full=True)
        assert t.to_arrow().to_pylist() == want


# ------------------------------------------------------------------ pruning

def test_row_groups_are_skipped_by_key_statistics(catalog):
    t = pk_table(catalog, bucket="1")
    t.write(kv_rows(range(10_000), 1.0, "a"))
    t.write(kv_rows(range(0, 10_000, 3), 2.0, "b"))
    split = t.plan()[0]
    for f in split.files:  # rewrite each file with small row groups (same rows)
        path = os.path.join(t.store.bucket_path(split.partition, split.bucket), f.file_name)
        pq.write_table(pq.read_table(path), path, row_group_size=500)
    reader = merge_read.KVFileReader(t.store, t.store.kv_layout, os.path.join(t.store.bucket_path(split.partition, split.bucket),
                                                                   split.files[0].file_name), split.files[0])
    try:
        assert reader.prune_row_groups(parse_filter("k = 4321", t.schema.arrow_schema()))
        assert reader.row_groups == [8] and reader.num_rows == 500
        assert not reader.prune_row_groups(parse_filter("k > 20000", t.schema.arrow_schema()))
    finally:
        reader.close()
    for f in ["k = 4321", "k = 4323", "k IN (1, 5000, 9999)", "k BETWEEN 2990 AND 3010", "k > 9990 AND v > 1"]:
        same(t.to_arrow(filter=f), slow(t, filter=f))
    assert t.to_arrow(filter="k = 4323")["s"].to_pylist() == ["b4323"]


def test_key_filters_prune_buckets(catalog):
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
    t = catalog.create_table("db.b", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "4"})
    ids = np.arange(400)
    t.write(pa.table({"id": ids, "dt": ["d1", "d2"] * 200, "v": [f"x{i}" for i in ids]}))
    assert len(t.plan()) == 8
    one = t.plan(filter="id = 17")
    assert len(one) == 2 and len({s.bucket for s in one}) == 1
    assert t.to_arrow(filter="id = 17")["v"].to_pylist() == ["x17"]
    assert len(t.plan(filter="id = 17 AND dt = 'd2'")) == 1
    assert t.to_arrow(filter="id = 17 AND dt = 'd1'").num_rows == 0
    got = t.to_arrow(filter="id IN (1, 2, 3, 250) AND v != 'x2'")
    assert sorted(got["id"].to_pylist()) == [1, 3, 250]
    assert t.plan(filter="id = 1 AND id = 2") == []
    assert len({s.bucket for s in t.plan(filter="id = 1 OR id = 2")}) <= 2
    assert sorted(t.to_arrow(filter="id = 1 OR (id = 2 AND v = 'x2') OR id IN (7, 9)")["id"].to_pylist()) == [1, 2, 7, 9]
    assert len({s.bucket for s in t.plan(filter="id = 1 OR v = 'x2'")}) == 4  # v pins nothing
    # an append table with a bucket key prunes the same way
    a = catalog.create_table("db.ab", schema, options={"bucket": "3", "bucket-key": "id"})
    a.write(pa.table({"id": ids, "dt": ["d"] * 400, "v": [f"x{i}" for i in ids]}))
    assert len(a.plan(filter="id = 5")) == 1 and a.to_arrow(filter="id = 5")["v"].to_pylist() == ["x5"]
    assert sorted(a.to_arrow(filter="id IN (5, 6, 7)")["id"].to_pylist()) == [5, 6, 7]


# ------------------------------------------------------------------ predicate evaluation

@pytest.mark.parametrize("text", [
    "a = 2", "a != 2", "a < 2", "a <= 2", "a > 2", "a >= 2", "a IN (1, 3)", "a NOT IN (1, 3)",
    "a IS NULL", "a IS NOT NULL", "s LIKE 'b%'", "s = 'c' OR a = 1", "NOT (a = 1 AND s = 'a')",
    "a IN (1, NULL)", "a NOT IN (1, NULL)", "a BETWEEN 1 AND 2", "a > 1.5", "NOT (a IN (1, 2))",
])
def test_evaluate_matches_the_expression(text):
    table = pa.table({"a": pa.array([1, 2, None, 3, 2], pa.int32()), "s": ["a", "bb", "c", None, "b"]})
    pred = parse_filter(text, table.schema)
    assert filter_table(table, pred).to_pylist() == table.filter(pred.to_expression()).to_pylist(), text
    expected = [r in table.filter(pred.to_expression()).to_pylist() for r in table.to_pylist()]
    assert match_mask(table, pred).tolist() == expected, text


def test_many_literal_in_prunes_by_range():
    leaf = col("a").isin(list(range(100, 200, 7)) + [None])
    assert leaf.may_match({"a": (0, 99, 0)}, 10) is False
    assert leaf.may_match({"a": (101, 106, 0)}, 10) is False
    assert leaf.may_match({"a": (101, 107, 0)}, 10) is True
    assert leaf.may_match({"a": (190, 500, 0)}, 10) is True
    assert Leaf("in", "a", (1.0, float("nan"), 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0)).may_match(
        {"a": (2.0, 2.5, 0)}, 1) is False


@pytest.mark.parametrize("text", [
    "id IN (" + ", ".join(map(str, range(-3, 30))) + ")",
    "id NOT IN (" + ", ".join(map(str, range(30))) + ", NULL)",
    "s in (" + ", ".join(f"'v{i}'" for i in range(20)) + ", 'a,b', '')",
    "x IN (1.5, 2e3, -3, 1., " + ", ".join(map(str, range(20))) + ")",
    "id IN (" + ", ".join(map(str, range(20))) + ",)",                      # not plain: sqlglot decides
    "id IN (" + ", ".join(map(str, range(20))) + ") AND s IN (" + ", ".join(f"'{i}'" for i in range(20)) + ")",
    "id IN (" + ", ".join(map(str, range(20))) + ", 'it''s')",
])
def test_long_in_lists_parse_like_sql(text):
    import sqlglot

    from paimon_lab.errors import FilterError
    from paimon_lab.core.predicate import _convert, _parse_long_in_list

    try:
        expected = _convert(sqlglot.parse_one(text), text)
    except (sqlglot.errors.ParseError, FilterError):
        expected = None
    fast = _parse_long_in_list(text)
    assert fast is None or fast == expected
    if expected is not None:
        assert parse_filter(text) == expected



def test_lookup_changelog_tables_read_level0_like_java(tmp_path):
    """Java's batchScanSkipLevel0 covers deletion vectors and first-row only: level-0 files of a
    lookup-changelog table (left by a write-only writer, or an APPEND snapshot before the COMPACT
    that lifts them) are merged on read, so upserts and deletes there are not lost."""
    from paimon_lab import Catalog

    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "1", "changelog-producer": "lookup"})
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}))
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "COMPACT"]
    assert t.to_arrow(snapshot_id=1).sort_by("k")["v"].to_pylist() == ["a", "b", "c"]
    from paimon_lab.core.schema import SchemaChange as C

    t.alter(C.set_option("write-only", "true"))   # a writer that leaves level 0 to a compaction job
    t.write(pa.table({"k": [2, 4], "v": ["b2", "d"]}))
    t.write(pa.table({"k": [3], "v": [None]}), row_kinds=["-D"])
    assert (t.levels()["level"] == 0).any()
    assert t.to_arrow().sort_by("k").to_pylist() == [{"k": 1, "v": "a"}, {"k": 2, "v": "b2"}, {"k": 4, "v": "d"}]
    fr = cat.create_table("db.fr", schema, primary_keys=["k"], options={"bucket": "1", "merge-engine": "first-row"})
    fr.write(pa.table({"k": [1], "v": ["a"]}))
    assert fr.to_arrow(snapshot_id=1).num_rows == 0   # first-row: level 0 is not read (as in Java)
    assert fr.to_arrow().num_rows == 1
