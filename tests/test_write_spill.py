"""The spillable write buffer ('write-buffer-spillable', Java's default): a full buffer becomes
sorted runs on local disk, merged (streamed, slice by slice) into one level-0 run per bucket at
the commit; the result equals the unspilled write's, for every merge engine."""

from __future__ import annotations

import glob
import os

import numpy as np
import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.core.key_value import KeyValueLayout
from paimon_lab.core.options import validate_options
from paimon_lab.errors import OptionError
from paimon_lab.mergetree import spill
from paimon_lab.mergetree.merge_engine import merge_function_for
from paimon_lab.utils.arrow import take_ascending

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.int64()), ("s", pa.string())])


def _catalog(tmp_path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    return cat


def _history(seed: int, commits: int = 3, batches: int = 6, n: int = 1500):
    """Commits of batches of random rows (keys repeat inside and across batches) with row kinds."""
    rng = np.random.default_rng(seed)
    out = []
    for c in range(commits):
        commit = []
        for b in range(batches):
            k = rng.integers(0, 3000, n)
            kinds = rng.choice(["+I", "+U", "-D"], n, p=[0.7, 0.2, 0.1]).tolist()
            rows = pa.table({"k": k, "dt": np.where(k % 2 == 0, "a", "b"), "v": rng.integers(0, 100, n),
                             "s": [f"c{c}b{b}-{i}" if i % 5 else None for i in range(n)]})
            commit.append((rows, kinds))
        out.append(commit)
    return out


def _write(t, history) -> pa.Table:
    for commit in history:
        with t.writer() as w:
            for rows, kinds in commit:
                w.write(rows, row_kinds=kinds)
    return t.to_arrow().sort_by([("dt", "ascending"), ("k", "ascending")])


def _level0_per_bucket(t) -> dict:
    lv = t.levels()
    counts: dict = {}
    for part, bucket, level in zip(lv["partition"], lv["bucket"], lv["level"]):
        if level == 0:
            key = (str(part), bucket)
            counts[key] = counts.get(key, 0) + 1
    return counts


ENGINES = [
    {},
    {"sequence.field": "v"},
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", "fields.s.aggregate-function": "max"},
    {"merge-engine": "first-row"},
    {"changelog-producer": "input"},
    {"changelog-producer": "lookup", "write-only": "false"},     # level 0 lifted at every commit
    {"deletion-vectors.enabled": "true", "write-only": "false"},
    {"bucket": "-1", "dynamic-bucket.target-row-num": "700"},
]


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.get("merge-engine", "seq" if "sequence.field" in e else "dedup") +
                         "".join(f"-{k}={v}" for k, v in e.items() if k in ("changelog-producer", "deletion-vectors.enabled", "bucket")))
def test_spilled_runs_give_the_same_table_as_an_unspilled_write(tmp_path, monkeypatch, engine):
    monkeypatch.setattr(spill, "SPILL_BATCH_ROWS", 97)   # many slices per merge
    if engine.get("merge-engine") == "first-row":
        history = [[(rows, ["+I"] * rows.num_rows) for rows, _ in c] for c in _history(3)]
    elif engine.get("merge-engine") in ("partial-update", "aggregation"):
        history = [[(rows, [k if k != "-D" else "+U" for k in kinds]) for rows, kinds in c] for c in _history(3)]
    else:
        history = _history(3)
    cat = _catalog(tmp_path)
    common = {"bucket": "2", "write-only": "true", **engine}

    def table(name, **options):
        return cat.create_table(f"db.{name}", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                options={**common, **options})

    spills = []
    real_write = spill.SpillDirectory.write
    monkeypatch.setattr(spill.SpillDirectory, "write", lambda self, kv: spills.append(kv.num_rows) or real_write(self, kv))
    whole_table = table("whole")
    whole = _write(whole_table, history)                         # one buffer per commit
    assert not spills
    spilled_table = table("spilled", **{"write-buffer-size": "40 kb"})
    spilled = _write(spilled_table, history)
    assert len(spills) > 12                                     # several runs per bucket and commit
    flushed_table = table("flushed", **{"write-buffer-size": "40 kb", "write-buffer-spillable": "false"})
    flushed = _write(flushed_table, history)
    assert spilled.equals(whole) and flushed.equals(whole)
    if common["write-only"] == "true" and common["bucket"] != "-1":
        # spilled: one level-0 run per bucket and commit; not spillable: a level-0 file per full buffer
        assert set(_level0_per_bucket(spilled_table).values()) == {3}
        assert min(_level0_per_bucket(flushed_table).values()) > 3
    if engine.get("changelog-producer") == "lookup":   # the same changes, whichever way level 0 was written
        compared = 0
        sort = [("k", "ascending"), ("dt", "ascending"), ("rowkind", "ascending")]
        for a, b in ((spilled_table, whole_table), (flushed_table, whole_table)):
            assert len(a.snapshots()) == len(b.snapshots())
            for sid in range(1, len(b.snapshots()) + 1):
                got, expected = a.snapshot_changes(a.snapshot(sid)), b.snapshot_changes(b.snapshot(sid))
                assert got.sort_by(sort).equals(expected.sort_by(sort))
                compared += expected.num_rows
        assert compared > 0


def test_spill_files_are_removed_at_commit_and_on_abort(tmp_path, monkeypatch):
    made = []
    real = spill.SpillDirectory.write
    monkeypatch.setattr(spill.SpillDirectory, "write", lambda self, kv: made.append(real(self, kv)) or made[-1])
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "1", "write-buffer-size": "40 kb"})
    ((rows, kinds),), = _history(1, commits=1, batches=1)
    with t.writer() as w:
        for _ in range(4):
            w.write(rows, row_kinds=kinds)
        assert made and all(os.path.exists(r.path) for r in made)
    assert not any(os.path.exists(r.path) for r in made) and len(t.snapshots()) == 1
    made.clear()
    with pytest.raises(RuntimeError), t.writer() as w:
        for _ in range(4):
            w.write(rows, row_kinds=kinds)
        assert made
        raise RuntimeError("stop")
    assert not any(os.path.exists(os.path.dirname(r.path)) for r in made) and len(t.snapshots()) == 1


def test_max_disk_size_flushes_level0_files_when_spills_exceed_it(tmp_path):
    cat = _catalog(tmp_path)
    history = _history(5, commits=1)
    opts = {"bucket": "1", "write-buffer-size": "40 kb", "write-only": "true"}
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], options=opts)
    capped = cat.create_table("db.c", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                              options={**opts, "write-buffer-spill.max-disk-size": "1 b"})
    assert _write(t, history).equals(_write(capped, history))
    assert set(_level0_per_bucket(t).values()) == {1}
    assert min(_level0_per_bucket(capped).values()) > 1


def test_spill_compression_and_its_zstd_level_compress_the_spill_files(tmp_path, monkeypatch):
    sizes: dict = {}
    runs: list = []
    real = spill.SpillDirectory.write
    monkeypatch.setattr(spill.SpillDirectory, "write", lambda self, kv: runs.append(real(self, kv)) or runs[-1])
    ((rows, kinds),), = _history(2, commits=1, batches=1, n=6000)
    rows = rows.set_column(3, "s", pa.array(["abcdefgh" * 8] * rows.num_rows))   # compressible
    cat = _catalog(tmp_path)
    for label, options in {"none": {"spill-compression": "none"}, "lz4": {"spill-compression": "lz4"},
                           "zstd1": {}, "zstd19": {"spill-compression.zstd-level": "19"}}.items():
        t = cat.create_table(f"db.{label}", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", "write-buffer-size": "200 kb", **options})
        runs.clear()
        with t.writer() as w:
            for _ in range(3):
                w.write(rows, row_kinds=kinds)
        assert runs and t.to_arrow().num_rows > 0
        sizes[label] = sum(r.size for r in runs)
    assert sizes["none"] > sizes["lz4"] > sizes["zstd1"] > sizes["zstd19"]
    with pytest.raises(OptionError, match="spill-compression"):
        validate_options({"spill-compression": "lzo"})


def test_merge_runs_streams_composite_keys_with_repeated_first_columns(tmp_path, monkeypatch):
    """Runs whose first key column repeats across many batches (a = one of 3 values): every
    version of a key lands in one slice, slices come in key order, the result equals merging the
    concatenation whole, and no slice holds much more than a batch per run."""
    monkeypatch.setattr(spill, "SPILL_BATCH_ROWS", 50)
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", pa.schema([("a", pa.string()), ("b", pa.int32()), ("v", pa.int64())]),
                         primary_keys=["a", "b"], options={"bucket": "1"})
    layout, fn = KeyValueLayout(t.store.schema), merge_function_for(t.store.schema)
    rng = np.random.default_rng(11)
    runs, seq = [], 0
    for _ in range(5):
        n = int(rng.integers(200, 800))
        rows = pa.table({"a": rng.choice(["x", "y", "zz"], n), "b": rng.integers(0, 400, n).astype(np.int32),
                         "v": rng.integers(0, 10**6, n)})
        kv = layout.sort(layout.to_kv(rows, np.zeros(n, np.int8), seq))
        seq += n
        runs.append(fn.merge(kv, layout.key_columns))
    directory = spill.SpillDirectory(spill.spill_write_options("zstd", 1))
    files = [directory.write(r) for r in runs[:-1]]
    slices = []
    spill.merge_runs(layout, lambda parts: spill.merge_slice(layout, fn, parts),
                     [f.batches() for f in files] + [spill.table_batches(runs[-1])], slices.append)
    directory.clear()
    got = pa.concat_tables(slices)
    expected = fn.merge(layout.sort(pa.concat_tables(runs)), layout.key_columns)
    assert got.equals(expected)
    assert len(slices) > 10 and max(s.num_rows for s in slices) <= 2 * 50 * len(runs)
    assert not glob.glob(os.path.join(directory.path or "/nonexistent", "*"))


def test_file_metadata_from_slice_summaries_equals_metadata_from_the_rows(tmp_path):
    """A level-0/compaction writer keeps only summaries of the slices it wrote (not the rows) until
    a file is finished: the metadata (row count, key range, sequence range, deletes, min/max/null
    counts under truncate(N), NaN skipped, nested columns counted) is the same as from the rows."""
    import decimal

    schema = pa.schema([("k", pa.int64()), ("s", pa.string()), ("d", pa.float64()),
                        ("m", pa.decimal128(12, 2)), ("ts", pa.timestamp("us")), ("l", pa.list_(pa.int32())),
                        ("allnull", pa.string())])
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", schema, primary_keys=["k"],
                         options={"bucket": "1", "target-file-size": "96 kb", "metadata.stats-mode": "truncate(4)"})
    rng = np.random.default_rng(5)
    n = 40_000
    floats = rng.normal(size=n)
    floats[rng.integers(0, n, 50)] = np.nan
    rows = pa.table({
        "k": np.arange(n), "s": [None if i % 7 == 0 else f"v{rng.integers(0, 10**9)}-long" for i in range(n)],
        "d": pa.array(floats).to_pylist(), "m": [decimal.Decimal(int(x)) / 100 for x in rng.integers(-10**6, 10**6, n)],
        "ts": pa.array(rng.integers(0, 10**15, n), pa.timestamp("us")),
        "l": [[int(i)] if i % 3 else None for i in range(n)], "allnull": pa.nulls(n, pa.string())}, schema=schema)
    layout = KeyValueLayout(t.store.schema)
    kinds = rng.choice([0, 2, 3], n).astype(np.int8)
    kv = layout.sort(layout.to_kv(rows, kinds, 100))
    metas = {}
    for mode in ("summaries", "rows"):
        names = iter(f"{tmp_path}/{mode}-{i}.parquet" for i in range(1000))
        w = layout.writer(t.store.file_io, t.store.schema.core, 0, lambda names=names: next(names))
        assert w.rolling.summarize is not None
        if mode == "rows":
            w.rolling.summarize = None
        for start in range(0, n, 3_000):   # written in pieces, as a merge emits them
            w.write(kv.slice(start, 3_000))
        metas[mode] = w.close()
    assert len(metas["rows"]) > 2

    def strip(m):
        return (m.row_count, m.min_key, m.max_key, m.key_stats, m.value_stats, m.min_sequence_number,
                m.max_sequence_number, m.delete_row_count, m.file_size)

    assert [strip(m) for m in metas["summaries"]] == [strip(m) for m in metas["rows"]]


def test_postpone_bucket_writer_flushes_a_full_buffer_as_written(tmp_path):
    """A postpone-bucket table's writer does not sort or spill: each full buffer becomes postponed
    files, and the rows land after the compaction that moves them into real buckets."""
    cat = _catalog(tmp_path)
    t = cat.create_table("db.p", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "-2", "postpone.default-bucket-num": "2", "write-buffer-size": "40 kb"})
    ((rows, _kinds),), = _history(9, commits=1, batches=1)
    model = {}
    with t.writer() as w:
        for i in range(4):
            batch = rows.set_column(2, "v", pa.array(np.full(rows.num_rows, i)))
            w.write(batch)
            model.update({(k, d): i for k, d in zip(batch["k"].to_pylist(), batch["dt"].to_pylist())})
    postponed = glob.glob(os.path.join(t.path, "dt=a", "bucket-postpone", "*"))
    assert len(postponed) > 2
    t.compact()
    got = t.to_arrow()
    assert {(k, d): v for k, d, v in zip(got["k"].to_pylist(), got["dt"].to_pylist(), got["v"].to_pylist())} == model


def test_a_dropped_spill_directory_is_removed(tmp_path):
    import gc

    directory = spill.SpillDirectory(spill.spill_write_options("lz4", None))
    run = directory.write(pa.table({"k": [1, 2, 3]}))
    path = os.path.dirname(run.path)
    assert os.path.isdir(path)
    del directory, run
    gc.collect()
    assert not os.path.exists(path)


MERGE_ENGINES = [
    {},
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    {"merge-engine": "first-row"},
    {"ignore-delete": "true"},
]


@pytest.mark.parametrize("key_type", [pa.int64(), pa.int16(), pa.date32(), pa.timestamp("us")], ids=str)
@pytest.mark.parametrize("engine", MERGE_ENGINES, ids=lambda e: e.get("merge-engine", "dedup") + ("-ignore" if e.get("ignore-delete") else ""))
def test_merge_slice_by_key_order_equals_the_general_sort(tmp_path, monkeypatch, engine, key_type):
    """A slice merged by the stable key sort (one integer-like key) gives exactly what sorting by
    key and sequence number and merging gives: keys repeat across parts and inside a part, the
    last part is the newest; with the parts' sequence numbers out of run order it falls back."""
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", pa.schema([("k", key_type), ("v", pa.int64()), ("s", pa.string())]),
                         primary_keys=["k"], options={"bucket": "1", **engine})
    layout, fn = KeyValueLayout(t.store.schema), merge_function_for(t.store.schema)
    rng = np.random.default_rng(5)
    kinds_allowed = [0, 1, 2, 3] if engine.get("merge-engine") in (None, "aggregation") else [0, 2]
    if engine.get("merge-engine") == "first-row":
        kinds_allowed = [0]
    parts, seq = [], 0
    for _ in range(4):
        n = int(rng.integers(50, 400))
        keys = rng.integers(0, 120, n)
        key = pa.array(keys, pa.int32() if key_type == pa.date32() else pa.int64()).view(key_type) \
            if pa.types.is_temporal(key_type) else pa.array(keys, pa.int64()).cast(key_type)
        rows = pa.table({"k": key, "v": rng.integers(0, 100, n),
                         "s": [f"s{seq + i}" for i in range(n)]})
        kinds = rng.choice(kinds_allowed, n).astype(np.int8)
        parts.append(layout.sort(layout.to_kv(rows, kinds, seq)))   # unmerged: keys repeat inside
        seq += n
    expected = fn.merge(layout.sort(pa.concat_tables(parts)), layout.key_columns)
    calls = []
    real_sort = KeyValueLayout.sort
    monkeypatch.setattr(KeyValueLayout, "sort", lambda self, kv: calls.append(1) or real_sort(self, kv))
    got = spill.merge_slice(layout, fn, parts)
    assert got.equals(expected) and not calls          # the fast path, and the same rows
    # an older run holding the newer sequence numbers: the key order alone would be wrong
    swapped = [parts[1], parts[0]] + parts[2:]
    assert spill.merge_slice(layout, fn, swapped).equals(expected) and calls


def test_merge_slice_keeps_the_general_sort_for_sequence_fields_and_composite_keys(tmp_path, monkeypatch):
    """'sequence.field' orders versions by a value column, composite keys by several columns: those
    slices go through the general sort."""
    cat = _catalog(tmp_path)
    for name, keys, options in (("seq", ["k"], {"sequence.field": "v"}), ("two", ["k", "v"], {})):
        t = cat.create_table(f"db.{name}", pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())]),
                             primary_keys=keys, options={"bucket": "1", **options})
        layout, fn = KeyValueLayout(t.store.schema), merge_function_for(t.store.schema)
        rows = pa.table({"k": [1, 1, 2], "v": [9, 3, 5], "s": ["a", "b", "c"]})
        parts = [layout.sort(layout.to_kv(rows, np.zeros(3, np.int8), 0)),
                 layout.sort(layout.to_kv(rows.slice(0, 1), np.zeros(1, np.int8), 3))]
        expected = fn.merge(layout.sort(pa.concat_tables(parts)), layout.key_columns)
        assert spill.merge_slice(layout, fn, parts).equals(expected)
        assert spill._run_order(layout, parts) is None


def test_a_key_column_equal_to_its_value_column_is_stored_once_and_restored():
    """A spilled run leaves out a key column that repeats its value column (and keeps one that
    differs anywhere, nulls included); its batches give back the run as written."""
    directory = spill.SpillDirectory(spill.spill_write_options("zstd", 1), {"_KEY_k": "k", "_KEY_j": "j"})
    kv = pa.table({"_KEY_k": pa.array([1, 2, 3], pa.int64()), "_SEQUENCE_NUMBER": pa.array([0, 1, 2], pa.int64()),
                   "k": pa.array([1, 2, 3], pa.int64()), "j": pa.array([1, None, 3], pa.int64()),
                   "_KEY_j": pa.array([1, 2, 3], pa.int64())})
    run = directory.write(kv)
    with pa.OSFile(run.path, "rb") as f:
        stored = pa.ipc.open_stream(f).read_all()
    assert stored.column_names == ["_SEQUENCE_NUMBER", "k", "j", "_KEY_j"]
    assert pa.concat_tables(run.batches()).equals(kv)
    directory.clear()


def test_take_ascending_equals_take_over_a_buffer_of_many_chunks():
    """A full buffer's bucket rows are taken chunk by chunk: the same rows as one take, for empty,
    single, chunk-boundary and all-row indices (descending ones fall back to the plain take)."""
    t = pa.concat_tables([pa.table({"a": np.arange(i * 10, i * 10 + 10), "s": [f"r{i}-{x}" for x in range(10)]})
                          for i in range(5)])
    for idx in ([], [0, 9, 10, 11, 49], list(range(50)), [25], [30, 2, 41], [9, 9, 10]):
        indices = pa.array(idx, pa.int64())
        assert take_ascending(t, indices).equals(t.take(indices)), idx
    assert take_ascending(t, None) is t
