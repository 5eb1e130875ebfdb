"""Runs proven shadowed from decoded keys (paimon_lab.mergetree.shadowed.covered_runs).

An older file whose every key is held by strictly newer files loses every row of a deduplicating
merge, whatever files the runs were split into. Every test compares with the general merge and
checks which files were dropped, so a run dropped while it still holds a winner fails.
"""

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

from paimon_lab.core import binary_row
from paimon_lab.core import types as T
from paimon_lab.core.manifest import EMPTY_STATS, DataFileMeta
from paimon_lab.mergetree import reader as merge_read
from paimon_lab.mergetree import shadowed

from tests.test_merge_read import slow

KV = pa.schema([("k", pa.int64()), ("v", pa.float64()), ("s", pa.string())])


def pk_table(catalog, name="db.t", schema=KV, pk=("k",), partition=(), **options):
    opts = {"bucket": "1", "write-only": "true", **options}
    return catalog.create_table(name, schema, primary_keys=list(pk), partition_keys=list(partition), options=opts)


def rows(keys, tag, schema=KV):
    keys = list(keys)
    return pa.table({"k": pa.array(keys, schema.field("k").type), "v": pa.array([1.0] * len(keys)),
                     "s": [f"{tag}{k}" for k in keys]})


@pytest.fixture
def dropped(monkeypatch):
    """Per bucket read: the row counts of the files ``covered_runs`` dropped (the byte check off)."""
    seen: list[list[int]] = []
    original = shadowed.covered_runs
    monkeypatch.setattr(merge_read, "shadowed_runs", lambda files, chunks: set())

    def spy(readers, *args):
        gone = original(readers, *args)
        seen.append(sorted(readers[i].meta.row_count for i in gone))
        return gone

    monkeypatch.setattr(merge_read, "covered_runs", spy)
    return seen


def check(t, model, **kwargs):
    got = t.to_arrow(**kwargs).sort_by("k")
    assert got["k"].to_pylist() == sorted(model)
    assert got["s"].to_pylist() == [model[k] for k in sorted(model)]
    assert got.equals(slow(t, **kwargs).sort_by("k"))


def test_a_run_split_differently_is_dropped(catalog, dropped):
    t = pk_table(catalog)
    t.write(rows(range(100), "a"))                  # one file
    t.write(rows(range(40), "b"))                # the same keys again, in two newer files
    t.write(rows(range(40, 100), "c"))
    check(t, {k: ("b" if k < 40 else "c") + str(k) for k in range(100)})
    assert dropped[-1] == [100]

    t = pk_table(catalog, "db.rev")
    t.write(rows(range(60), "a"))                # two files, covered by one newer file
    t.write(rows(range(60, 100), "b"))
    t.write(rows(range(100), "c"))
    check(t, {k: f"c{k}" for k in range(100)})
    assert dropped[-1] == [40, 60]


def test_a_key_only_in_the_older_run_keeps_it(catalog, dropped):
    t = pk_table(catalog)
    t.write(rows(range(101), "a"))                  # key 100 is only here
    t.write(rows(range(50), "b"))
    t.write(rows(range(50, 100), "c"))
    check(t, {**{k: ("b" if k < 50 else "c") + str(k) for k in range(100)}, 100: "a100"})
    assert dropped[-1] == []

    t = pk_table(catalog, "db.hole")                # a key missing inside the range
    t.write(rows(range(100), "a"))
    t.write(rows([k for k in range(60) if k != 33], "b"))
    t.write(rows(range(60, 100), "c"))
    model = {k: ("b" if k < 60 else "c") + str(k) for k in range(100)}
    model[33] = "a33"
    check(t, model)
    assert dropped[-1] == []


def test_the_newer_run_covers_only_some_files(catalog, dropped):
    t = pk_table(catalog)
    t.write(rows(range(50), "a"))
    t.write(rows(range(50, 100), "a"))
    t.write(rows(range(0, 50, 2), "b"))             # covers neither older file
    t.write(rows(range(50, 100), "c"))              # covers the second
    t.write(rows(range(1, 50, 2), "d"))             # with 'b', covers the first
    model = {k: ("b" if k % 2 == 0 else "d") + str(k) for k in range(50)}
    model.update({k: f"c{k}" for k in range(50, 100)})
    check(t, model)
    assert dropped[-1] == [50, 50]                  # both 'a' files; 'b' (even keys) is not in 'd'
    t2 = pk_table(catalog, "db.exact")
    t2.write(rows(range(50), "a"))
    t2.write(rows(range(0, 50, 2), "b"))
    check(t2, {k: ("b" if k % 2 == 0 else "a") + str(k) for k in range(50)})
    assert dropped[-1] == []


def test_deletes_in_the_newer_run_hide_the_older_rows(catalog, dropped):
    t = pk_table(catalog)
    t.write(rows(range(100), "a"))
    t.write(rows(range(30), "b"), row_kinds=["-D"] * 5 + ["+U"] * 25)
    t.write(rows(range(30, 100), "c"))
    check(t, {k: ("b" if k < 30 else "c") + str(k) for k in range(5, 100)})
    assert dropped[-1] == [100]
    check(t, {k: "b" + str(k) for k in range(5, 30)}, filter="k < 30")


def test_ignore_delete_and_sequence_field_never_drop(catalog, dropped):
    t = pk_table(catalog, "db.ign", **{"ignore-delete": "true"})
    t.write(rows(range(10), "a"))
    t.write(rows(range(4), "b"), row_kinds=["-D"] + ["+I"] * 3)
    t.write(rows(range(4, 10), "c"))
    check(t, {0: "a0", **{k: ("b" if k < 4 else "c") + str(k) for k in range(1, 10)}})
    assert dropped == []

    schema = pa.schema([("k", pa.int64()), ("ts", pa.int64()), ("s", pa.string())])
    t = pk_table(catalog, "db.seq", schema=schema, **{"sequence.field": "ts"})
    t.write(pa.table({"k": [1, 2, 3, 4], "ts": [10] * 4, "s": ["new"] * 4}))
    t.write(pa.table({"k": [1, 2], "ts": [5, 11], "s": ["late", "y"]}))
    t.write(pa.table({"k": [3, 4], "ts": [5, 5], "s": ["late", "late"]}))
    assert t.to_arrow()["s"].to_pylist() == ["new", "y", "new", "new"]
    assert dropped == []


def test_partition_key_in_the_primary_key_and_key_filters(catalog, dropped):
    schema = pa.schema([("k", pa.int32()), ("p", pa.string()), ("s", pa.string())])
    t = pk_table(catalog, "db.part", schema=schema, pk=("k", "p"), partition=("p",))

    def part(keys, p, tag):
        keys = list(keys)
        return pa.table({"k": pa.array(keys, pa.int32()), "p": [p] * len(keys), "s": [f"{tag}{k}" for k in keys]})

    t.write(pa.concat_tables([part(range(50), "x", "a"), part(range(50), "y", "a")]))
    t.write(pa.concat_tables([part(range(20), "x", "b"), part(range(10), "y", "b")]))
    t.write(pa.concat_tables([part(range(20, 50), "x", "c"), part(range(10, 49), "y", "c")]))
    got = t.to_arrow().sort_by([("p", "ascending"), ("k", "ascending")])
    expect = [("b" if k < 20 else "c") + str(k) for k in range(50)] + \
        [("b" if k < 10 else "c") + str(k) for k in range(49)] + ["a49"]
    assert got["s"].to_pylist() == expect
    assert got.equals(slow(t).sort_by([("p", "ascending"), ("k", "ascending")]))
    assert sorted(set(map(tuple, dropped))) == [(), (50,)]     # x: dropped; y: key 49 only in "a"
    got = t.to_arrow(filter="k >= 45 AND p = 'y'")
    assert got["s"].to_pylist() == ["c45", "c46", "c47", "c48", "a49"]


def test_random_histories_match_the_general_merge(catalog, dropped):
    rng = np.random.default_rng(7)
    t = pk_table(catalog, "db.rand", bucket="2")
    model = {}
    for c in range(8):
        if c % 3 == 0:                               # a full reload, split into two commits
            cut = int(rng.integers(1, 199))
            for tag, keys in ((f"r{c}", range(cut)), (f"s{c}", range(cut, 200))):
                t.write(rows(keys, tag))
                model.update({k: f"{tag}{k}" for k in keys})
        else:
            keys = sorted(set(rng.integers(0, 220, 60).tolist()))
            kinds = ["-D" if rng.random() < 0.2 else "+U" for _ in keys]
            t.write(rows(keys, f"u{c}"), row_kinds=kinds)
            for k, kind in zip(keys, kinds):
                if kind == "-D":
                    model.pop(k, None)
                else:
                    model[k] = f"u{c}{k}"
        check(t, model)
    assert any(dropped)


def _fake(keys, lo_seq, hi_seq):
    keys = np.asarray(keys, dtype=np.int64)
    lo = hi = binary_row.serialize([0], [T.atomic("BIGINT")])
    if len(keys):
        lo = binary_row.serialize([int(keys.min())], [T.atomic("BIGINT")])
        hi = binary_row.serialize([int(keys.max())], [T.atomic("BIGINT")])
    meta = DataFileMeta(file_name="f.parquet", file_size=0, row_count=len(keys), min_key=lo, max_key=hi,
                        key_stats=EMPTY_STATS, value_stats=EMPTY_STATS, min_sequence_number=lo_seq,
                        max_sequence_number=hi_seq, schema_id=0, level=0)
    return SimpleNamespace(meta=meta, read=lambda names: pa.table({names[0]: pa.array(keys)}))


def test_sequence_order_and_unsorted_keys():
    def gone(*readers):
        return shadowed.covered_runs(list(readers), ["_KEY_k"], [T.atomic("BIGINT")])

    assert gone(_fake(range(10), 0, 9), _fake(range(10), 10, 19)) == {0}
    # sequence ranges that overlap prove nothing, in either order
    assert gone(_fake(range(10), 0, 10), _fake(range(10), 10, 19)) == set()
    assert gone(_fake(range(10), 10, 19), _fake(range(10), 0, 9)) == {1}
    # an unsorted newer file can only miss keys, never invent one
    assert gone(_fake([0, 1, 2, 3], 0, 3), _fake([3, 0, 2, 5], 4, 7)) == set()
    assert gone(_fake([0, 1, 2, 3], 0, 3), _fake([3, 0, 2, 1], 4, 7)) <= {0}
    # keys a newer file holds but the older one does not are fine
    assert gone(_fake([2, 4], 0, 1), _fake(range(10), 2, 11)) == {0}
    assert gone(_fake([2, 4, 11], 0, 2), _fake(range(10), 3, 12)) == set()


def test_two_varying_key_columns_are_not_judged_by_one(catalog, dropped):
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("s", pa.string())])
    t = pk_table(catalog, "db.two", schema=schema, pk=("a", "b"))
    t.write(pa.table({"a": [0, 0], "b": [0, 1], "s": ["old", "old"]}))
    t.write(pa.table({"a": [0, 0, 0], "b": [0, 2, 3], "s": ["new"] * 3}))
    got = t.to_arrow().sort_by([("a", "ascending"), ("b", "ascending")])
    assert list(zip(got["b"].to_pylist(), got["s"].to_pylist())) == [(0, "new"), (1, "old"), (2, "new"), (3, "new")]
    assert not any(dropped)


def test_keys_decoded_for_the_check_are_not_decoded_again(catalog, monkeypatch):
    """Where nothing can be dropped (partial updates), the merge reuses the keys the check
    decoded: every file's key column is decoded once."""
    decoded: list[tuple[str, tuple]] = []
    real = merge_read.KVFileReader._read_parquet

    def spy(self, names, keep_dictionary):
        decoded.append((self.path, tuple(names)))
        return real(self, names, keep_dictionary)

    monkeypatch.setattr(merge_read.KVFileReader, "_read_parquet", spy)
    monkeypatch.setattr(shadowed, "_PROBE", 4)
    t = pk_table(catalog)
    t.write(rows(range(50), "a"))
    t.write(rows(range(0, 50, 3), "b"))
    t.write(rows(range(1, 50, 3), "c"))
    t.write(rows(range(0, 50, 2), "d"))
    model = {k: f"a{k}" for k in range(50)}
    for tag, keys in (("b", range(0, 50, 3)), ("c", range(1, 50, 3)), ("d", range(0, 50, 2))):
        model.update({k: f"{tag}{k}" for k in keys})
    decoded.clear()
    got = t.to_arrow().sort_by("k")
    assert got["s"].to_pylist() == [model[k] for k in sorted(model)]
    keys_only = [d for d in decoded if d[1] == ("_KEY_k",)]
    assert keys_only and len(keys_only) == len(set(keys_only))
