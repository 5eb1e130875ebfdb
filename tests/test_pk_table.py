"""Primary-key tables end to end: upserts, deletes, merge engines, levels, compaction, changelog."""

import os

import pyarrow as pa
import pytest

from paimon_lab.errors import DataValidationError, SchemaError

KV = pa.schema([("k", pa.int32()), ("v1", pa.float64()), ("v2", pa.string())])


def rows(*tuples, schema=KV):
    cols = list(zip(*tuples)) if tuples else [[] for _ in schema]
    return pa.table({f.name: pa.array(list(c), f.type) for f, c in zip(schema, cols)})


def pk_table(catalog, name="db.t", schema=KV, pk=("k",), **options):
    opts = {"bucket": "2", **options}
    return catalog.create_table(name, schema, primary_keys=list(pk), options=opts)


def as_tuples(t: pa.Table, key="k"):
    return [tuple(r.values()) for r in t.sort_by(key).to_pylist()]


# ---------------------------------------------------------------- seed 003 examples, through the table

def test_seed_deduplicate(catalog):
    t = pk_table(catalog)
    t.write(rows((1, 2.0, "apple")))
    t.write(rows((1, 4.0, "banana")))
    t.write(rows((1, 8.0, "cherry")))
    assert as_tuples(t.to_arrow(filter="k = 1")) == [(1, 8.0, "cherry")]
    t2 = pk_table(catalog, "db.t2")
    t2.write(rows((1, 2.0, "apple"), (1, 4.0, "banana"), (1, 4.0, "banana")), row_kinds=["+I", "+I", "-D"])
    assert t2.to_arrow(filter="k = 1").num_rows == 0


def test_seed_first_row(catalog):
    t = pk_table(catalog, **{"merge-engine": "first-row"})
    for r in [(1, 2.0, "apple"), (1, 4.0, "banana"), (1, 8.0, "cherry")]:
        t.write(rows(r))
    assert as_tuples(t.to_arrow()) == [(1, 2.0, "apple")]
    with pytest.raises(DataValidationError, match="first-row.ignore-delete"):
        t.write(rows((1, 2.0, "apple")), row_kinds=["-D"])
        t.compact(full=True)


def test_seed_aggregation(catalog):
    schema = pa.schema([("product_id", pa.int64()), ("price", pa.float64()), ("sales", pa.int64())])
    t = pk_table(catalog, schema=schema, pk=("product_id",), **{
        "merge-engine": "aggregation", "fields.price.aggregate-function": "max",
        "fields.sales.aggregate-function": "sum"})
    t.write(rows((1, 23.0, 15), schema=schema))
    t.write(rows((1, 30.2, 20), schema=schema))
    assert as_tuples(t.to_arrow(), "product_id") == [(1, 30.2, 35)]
    t.compact(full=True)
    assert as_tuples(t.to_arrow(), "product_id") == [(1, 30.2, 35)]


def test_seed_partial_update(catalog):
    schema = pa.schema([("k", pa.int32()), ("v1", pa.float64()), ("v2", pa.int64()), ("v3", pa.string())])
    t = pk_table(catalog, schema=schema, **{"merge-engine": "partial-update"})
    t.write(rows((1, 23.0, 10, None), schema=schema))
    t.write(rows((1, None, None, "This is a book"), schema=schema))
    t.write(rows((1, 25.2, None, None), schema=schema))
    assert as_tuples(t.to_arrow()) == [(1, 25.2, 10, "This is a book")]


# ---------------------------------------------------------------- write path and files

def test_upserts_across_commits_and_file_layout(catalog):
    t = pk_table(catalog)
    t.write(rows(*[(i, float(i), f"a{i}") for i in range(100)]))
    t.write(rows(*[(i, float(-i), f"b{i}") for i in range(50, 150)]))
    got = t.to_arrow()
    assert got.num_rows == 150
    d = {r["k"]: r["v2"] for r in got.to_pylist()}
    assert d[10] == "a10" and d[60] == "b60" and d[149] == "b149"
    import pyarrow.parquet as pq
    f = t.plan()[0].files[0]
    path = os.path.join(t.store.bucket_path(t.plan()[0].partition, t.plan()[0].bucket), f.file_name)
    assert pq.read_schema(path).names == ["_KEY_k", "_SEQUENCE_NUMBER", "_VALUE_KIND", "k", "v1", "v2"]
    levels = t.levels()
    assert set(levels["bucket"]) == {0, 1}
    seqs = levels.groupby("bucket")["max_sequence_number"].max()
    counts = levels.groupby("bucket")["row_count"].sum()
    assert all(seqs[b] == counts[b] - 1 for b in seqs.index)  # per-bucket sequence numbers 0..n-1


def test_thin_mode_files_have_no_key_columns(catalog):
    import pyarrow.parquet as pq
    t = pk_table(catalog, **{"data-file.thin-mode": "true"})
    t.write(rows((1, 1.0, "x"), (2, 2.0, "y")))
    t.write(rows((1, 3.0, "z")))
    s = t.plan()[0]
    path = os.path.join(t.store.bucket_path(s.partition, s.bucket), s.files[0].file_name)
    assert pq.read_schema(path).names == ["_SEQUENCE_NUMBER", "_VALUE_KIND", "k", "v1", "v2"]
    assert as_tuples(t.to_arrow()) == [(1, 3.0, "z"), (2, 2.0, "y")]


def test_row_kind_column_and_delete(catalog):
    t = pk_table(catalog)
    t.write(rows(*[(i, float(i), str(i)) for i in range(10)]))
    data = rows((3, 0.0, "x"), (4, 0.0, "x")).append_column("_row_kind", pa.array(["-D", "-U"]))
    t.write(data)
    assert sorted(t.to_arrow()["k"].to_pylist()) == [0, 1, 2, 5, 6, 7, 8, 9]
    t.delete("k >= 8")
    assert sorted(t.to_arrow()["k"].to_pylist()) == [0, 1, 2, 5, 6, 7]
    with pytest.raises(DataValidationError, match="Unknown row kind"):
        t.write(rows((1, 1.0, "a")), row_kinds=["+X"])


def test_primary_key_is_not_null_and_must_contain_partition_keys(catalog):
    schema = pa.schema([("k", pa.int32()), ("dt", pa.string()), ("v", pa.int32())])
    with pytest.raises(SchemaError, match="must contain the partition keys"):
        catalog.create_table("db.x", schema, primary_keys=["k"], partition_keys=["dt"], options={"bucket": "2"})
    t = catalog.create_table("db.y", schema, primary_keys=["k", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    assert not t.schema.field("k").type.nullable
    with pytest.raises(DataValidationError, match="NOT NULL"):
        t.write(pa.table({"k": pa.array([None], pa.int32()), "dt": ["a"], "v": pa.array([1], pa.int32())}))


def test_partitioned_pk_table_with_bucket_key(catalog):
    schema = pa.schema([("dt", pa.string()), ("shop_id", pa.int64()), ("user_id", pa.int64()),
                        ("num_orders", pa.int32())])
    t = catalog.create_table("db.T", schema, primary_keys=["dt", "shop_id", "user_id"], partition_keys=["dt"],
                             options={"bucket": "4", "bucket-key": "shop_id"})
    data = pa.table({"dt": ["d1"] * 40 + ["d2"] * 40, "shop_id": [i % 5 for i in range(80)],
                     "user_id": list(range(80)), "num_orders": pa.array([1] * 80, pa.int32())})
    t.write(data)
    t.write(data.set_column(3, "num_orders", pa.array([2] * 80, pa.int32())))
    out = t.to_arrow()
    assert out.num_rows == 80 and set(out["num_orders"].to_pylist()) == {2}
    # one shop's rows always share a bucket
    for s in t.plan():
        shops = t.to_arrow(filter=f"dt = '{t.store.partition_codec.from_bytes(s.partition)[0]}'")
        assert shops.num_rows == 40
    assert t.to_arrow(filter="dt = 'd2' AND user_id = 45")["num_orders"].to_pylist() == [2]


# ---------------------------------------------------------------- compaction

def test_full_compaction_commits_compact_snapshot(catalog):
    t = pk_table(catalog, bucket="1")
    for i in range(3):
        t.write(rows(*[(k, float(i), f"v{i}") for k in range(20)]))
    before = t.to_arrow()
    sid = t.compact(full=True)
    snap = t.snapshot(sid)
    assert snap.commit_kind == "COMPACT"
    lv = t.levels()
    assert list(lv["level"]) == [5] and lv["row_count"].sum() == 20
    assert as_tuples(t.to_arrow()) == as_tuples(before)
    delta = t.store.manifest_io.read_manifest_list(snap.delta_manifest_list)
    kinds = [e.kind for m in delta for e in t.store.manifest_io.read_manifest(m.file_name)]
    assert kinds.count(1) == 3 and kinds.count(0) == 1  # DELETE the three level-0 files, ADD one
    assert t.compact(full=True) is None  # nothing left to do


def test_universal_compaction_triggers_on_sorted_run_count(catalog):
    t = pk_table(catalog, bucket="1", **{"num-sorted-run.compaction-trigger": "3"})
    kinds = []
    for i in range(6):
        t.write(rows(*[(k, float(i), "x") for k in range(i, i + 10)]))
    kinds = [s.commit_kind for s in t.snapshots()]
    assert "COMPACT" in kinds
    assert len(t.levels()) <= 4
    assert t.to_arrow().num_rows == 15


def test_write_only_leaves_compaction_to_compact_call(catalog):
    t = pk_table(catalog, bucket="1", **{"write-only": "true", "num-sorted-run.compaction-trigger": "2"})
    for i in range(5):
        t.write(rows((i, 1.0, "a"), (100, float(i), "b")))
    assert all(s.commit_kind == "APPEND" for s in t.snapshots())
    assert set(t.levels()["level"]) == {0}
    sid = t.compact()
    assert t.snapshot(sid).commit_kind == "COMPACT"
    assert as_tuples(t.to_arrow()) == [(0, 1.0, "a"), (1, 1.0, "a"), (2, 1.0, "a"), (3, 1.0, "a"), (4, 1.0, "a"),
                                       (100, 4.0, "b")]


def test_deletes_are_dropped_at_top_level(catalog):
    t = pk_table(catalog, bucket="1")
    t.write(rows((1, 1.0, "a"), (2, 2.0, "b")))
    t.write(rows((1, 1.0, "a")), row_kinds=["-D"])
    t.compact(full=True)
    lv = t.levels()
    assert lv["row_count"].sum() == 1
    assert as_tuples(t.to_arrow()) == [(2, 2.0, "b")]


def test_full_compaction_every_n_delta_commits(catalog):
    t = pk_table(catalog, bucket="1", **{"full-compaction.delta-commits": "2", "write-only": "false"})
    t.write(rows((1, 1.0, "a")))
    t.write(rows((2, 1.0, "a")))
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == ["APPEND", "APPEND", "COMPACT"]


# ---------------------------------------------------------------- changelog producers

def changelog(t, start=0):
    return [(r["rowkind"], r["k"], r["v2"]) for r in t.changes(start).to_pylist()]


def test_input_changelog_producer(catalog):
    t = pk_table(catalog, bucket="1", **{"changelog-producer": "input"})
    t.write(rows((1, 1.0, "a"), (2, 1.0, "b")))
    t.write(rows((1, 1.0, "a"), (1, 2.0, "c")), row_kinds=["-U", "+U"])
    assert changelog(t) == [("+I", 1, "a"), ("+I", 2, "b"), ("-U", 1, "a"), ("+U", 1, "c")]
    snap = t.snapshot(2)
    assert snap.changelog_manifest_list and snap.changelog_record_count == 2
    files = [f for f in os.listdir(t.store.bucket_path(t.store.partition_codec.to_bytes(()), 0)) if f.startswith("changelog-")]
    assert len(files) == 2


def test_lookup_changelog_producer_complete_changelog(catalog):
    t = pk_table(catalog, bucket="1", **{"changelog-producer": "lookup"})
    t.write(rows((1, 1.0, "a"), (2, 1.0, "b")))
    t.write(rows((1, 2.0, "c"), (3, 1.0, "d")))
    t.write(rows((2, 1.0, "b")), row_kinds=["-D"])
    assert changelog(t) == [("+I", 1, "a"), ("+I", 2, "b"), ("-U", 1, "a"), ("+U", 1, "c"), ("+I", 3, "d"),
                            ("-D", 2, "b")]
    assert set(t.levels()["level"]) != {0}  # level 0 never survives a lookup commit


def test_lookup_row_deduplicate(catalog):
    t = pk_table(catalog, bucket="1", **{"changelog-producer": "lookup",
                                         "changelog-producer.row-deduplicate": "true"})
    t.write(rows((1, 1.0, "a")))
    t.write(rows((1, 1.0, "a"), (2, 2.0, "b")))
    assert changelog(t) == [("+I", 1, "a"), ("+I", 2, "b")]


def test_full_compaction_changelog_producer(catalog):
    t = pk_table(catalog, bucket="1", **{"changelog-producer": "full-compaction"})
    t.write(rows((1, 1.0, "a"), (2, 1.0, "b")))
    t.compact(full=True)
    t.write(rows((1, 2.0, "c")))
    t.write(rows((2, 1.0, "b")), row_kinds=["-D"])
    assert changelog(t) == [("+I", 1, "a"), ("+I", 2, "b")]
    t.compact(full=True)
    assert changelog(t, 3) == [("-U", 1, "a"), ("+U", 1, "c"), ("-D", 2, "b")]


def test_changes_without_producer_are_delta_records(catalog):
    t = pk_table(catalog, bucket="1")
    t.write(rows((1, 1.0, "a")))
    t.write(rows((1, 1.0, "a")), row_kinds=["-D"])
    assert changelog(t) == [("+I", 1, "a"), ("-D", 1, "a")]


def test_write_buffer_spills_to_level0_files(catalog):
    # not spillable: each full buffer is a level-0 file; spillable (the default): one level-0 run
    for name, spillable, files in (("db.t", "false", lambda n: n > 3), ("db.s", "true", lambda n: n == 1)):
        t = pk_table(catalog, name, bucket="1", **{"write-buffer-size": "64 kb", "write-only": "true",
                                                   "write-buffer-spillable": spillable})
        with t.writer() as w:
            for i in range(10):
                w.write(rows(*[(k, float(i), "x" * 10) for k in range(i * 1000, i * 1000 + 1000)]))
        lv = t.levels()
        assert files(len(lv)) and set(lv["level"]) == {0}
        assert t.to_arrow().num_rows == 10_000
        assert len(t.snapshots()) == 1


# ---------------------------------------------------------------- dynamic buckets

def test_dynamic_bucket_opens_buckets_at_target_row_num(catalog):
    t = catalog.create_table("db.d", KV, primary_keys=["k"], options={"dynamic-bucket.target-row-num": "100"})
    t.write(rows(*[(i, float(i), "a") for i in range(250)]))
    lv = t.levels()
    assert sorted(lv.groupby("bucket")["row_count"].sum().tolist()) == [50, 100, 100]
    snap = t.latest_snapshot()
    assert snap.index_manifest and snap.index_manifest.startswith("index-manifest-")
    from paimon_lab.store.file_store import live_index_entries
    entries = live_index_entries(t.store)
    assert sorted((e.bucket, e.index_file.row_count) for e in entries) == [(0, 100), (1, 100), (2, 50)]
    assert all(e.index_file.index_type == "HASH" for e in entries)
    # existing keys stay in their bucket; new keys fill the open bucket
    t.write(rows(*[(i, -1.0, "b") for i in range(200, 300)]))
    lv = t.levels()
    assert t.to_arrow().num_rows == 300
    entries = live_index_entries(t.store)
    assert sorted((e.bucket, e.index_file.row_count) for e in entries) == [(0, 100), (1, 100), (2, 100)]
    got = {r["k"]: r["v2"] for r in t.to_arrow().to_pylist()}
    assert got[0] == "a" and got[200] == "b" and got[299] == "b"


def test_dynamic_bucket_partitioned_keeps_index_per_partition(catalog):
    schema = pa.schema([("k", pa.int32()), ("dt", pa.string()), ("v", pa.int64())])
    t = catalog.create_table("db.dp", schema, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": "10"})
    data = pa.table({"k": pa.array(list(range(15)) * 2, pa.int32()), "dt": ["a"] * 15 + ["b"] * 15,
                     "v": list(range(30))})
    t.write(data)
    t.write(data.set_column(2, "v", pa.array([100] * 30, pa.int64())))
    out = t.to_arrow()
    assert out.num_rows == 30 and set(out["v"].to_pylist()) == {100}
    from paimon_lab.store.file_store import live_index_entries
    assert len(live_index_entries(t.store)) == 4  # two buckets in each partition


def _cross_table(catalog, engine, **extra):
    schema = pa.schema([("k", pa.int32()), ("dt", pa.string()), ("v", pa.int64())])
    opts = {"merge-engine": engine, **extra}
    return catalog.create_table(f"db.x_{engine.replace('-', '_')}", schema, primary_keys=["k"],
                                partition_keys=["dt"], options=opts)


def _kdv(t):
    return sorted((r["k"], r["dt"], r["v"]) for r in t.to_arrow().to_pylist())


def test_cross_partition_update_deduplicate_moves_the_key(catalog):
    t = _cross_table(catalog, "deduplicate")
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "dt": ["p1", "p1"], "v": [10, 20]}))
    t.write(pa.table({"k": pa.array([1], pa.int32()), "dt": ["p2"], "v": [11]}))
    assert _kdv(t) == [(1, "p2", 11), (2, "p1", 20)]
    # within one batch the last row's partition wins
    t.write(pa.table({"k": pa.array([2, 2], pa.int32()), "dt": ["p3", "p4"], "v": [21, 22]}))
    assert _kdv(t) == [(1, "p2", 11), (2, "p4", 22)]


def test_cross_partition_update_aggregation_stays_in_old_partition(catalog):
    t = _cross_table(catalog, "aggregation", **{"fields.v.aggregate-function": "sum"})
    t.write(pa.table({"k": pa.array([1], pa.int32()), "dt": ["p1"], "v": [10]}))
    t.write(pa.table({"k": pa.array([1], pa.int32()), "dt": ["p2"], "v": [5]}))
    assert _kdv(t) == [(1, "p1", 15)]


def test_cross_partition_update_partial_update_stays_in_old_partition(catalog):
    t = _cross_table(catalog, "partial-update")
    t.write(pa.table({"k": pa.array([1], pa.int32()), "dt": ["p1"], "v": [10]}))
    t.write(pa.table({"k": pa.array([1], pa.int32()), "dt": ["p2"], "v": [7]}))
    assert _kdv(t) == [(1, "p1", 7)]


def test_cross_partition_update_first_row_keeps_existing(catalog):
    t = _cross_table(catalog, "first-row")
    t.write(pa.table({"k": pa.array([1], pa.int32()), "dt": ["p1"], "v": [10]}))
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "dt": ["p2", "p2"], "v": [99, 20]}))
    assert _kdv(t) == [(1, "p1", 10), (2, "p2", 20)]


# ---------------------------------------------------------------- deletion vectors

def test_deletion_vectors_mark_old_rows_instead_of_merging(catalog):
    t = pk_table(catalog, bucket="1", **{"deletion-vectors.enabled": "true"})
    t.write(rows(*[(k, 1.0, "old") for k in range(10)]))
    lv = t.levels()
    assert set(lv["level"]) == {5}  # level 0 is compacted away at commit
    t.write(rows((3, 2.0, "new"), (7, 2.0, "new")))
    dvs = t.deletion_vectors()
    assert len(dvs) == 1 and dvs.iloc[0]["cardinality"] == 2
    assert list(dvs.iloc[0]["positions"]) == [3, 7]
    got = {r["k"]: r["v2"] for r in t.to_arrow().to_pylist()}
    assert len(got) == 10 and got[3] == "new" and got[7] == "new" and got[0] == "old"
    snap = t.latest_snapshot()
    from paimon_lab.store.file_store import live_index_entries
    entries = live_index_entries(t.store, "DELETION_VECTORS")
    assert len(entries) == 1 and entries[0].index_file.dv_range_map()[dvs.iloc[0]["file_name"]].cardinality == 2
    # deletes too; time travel sees the older deletion vectors
    t.write(rows((0, 0.0, "x")), row_kinds=["-D"])
    assert sorted(t.to_arrow()["k"].to_pylist()) == list(range(1, 10))
    assert t.to_arrow(snapshot_id=snap.id).num_rows == 10
    # full compaction folds the vectors away
    t.compact(full=True)
    assert t.deletion_vectors().empty
    assert sorted(t.to_arrow()["k"].to_pylist()) == list(range(1, 10))


@pytest.mark.parametrize("engine,opts,expected", [
    ("aggregation", {"fields.v1.aggregate-function": "sum"}, (1, 6.0, "c")),
    ("partial-update", {}, (1, 3.0, "b")),
])   # first-row takes no deletion vectors (Java's schema validation refuses them)
def test_deletion_vectors_with_merge_engines(catalog, engine, opts, expected):
    t = pk_table(catalog, bucket="1", **{"deletion-vectors.enabled": "true", "merge-engine": engine, **opts})
    t.write(rows((1, 1.0, "a")))
    t.write(rows((1, 2.0, "b") if engine != "partial-update" else (1, None, "b")))
    t.write(rows((1, 3.0, "c") if engine != "partial-update" else (1, 3.0, None)))
    assert as_tuples(t.to_arrow()) == [expected]


def test_deletion_vectors_with_lookup_changelog(catalog):
    t = pk_table(catalog, bucket="1", **{"deletion-vectors.enabled": "true", "changelog-producer": "lookup"})
    t.write(rows((1, 1.0, "a"), (2, 1.0, "b")))
    t.write(rows((1, 2.0, "c")))
    assert changelog(t) == [("+I", 1, "a"), ("+I", 2, "b"), ("-U", 1, "a"), ("+U", 1, "c")]


def test_count_aggregate_survives_repeated_merges(catalog):
    schema = pa.schema([("k", pa.int32()), ("n", pa.int64()), ("s", pa.int64())])
    t = pk_table(catalog, schema=schema, bucket="1", **{
        "merge-engine": "aggregation", "fields.n.aggregate-function": "count",
        "fields.s.aggregate-function": "sum"})
    t.write(pa.table({"k": pa.array([1, 1], pa.int32()), "n": [7, None], "s": [1, 2]}))
    t.write(pa.table({"k": pa.array([1], pa.int32()), "n": [5], "s": [3]}))
    assert as_tuples(t.to_arrow()) == [(1, 2, 6)]
    t.compact(full=True)
    t.write(pa.table({"k": pa.array([1], pa.int32()), "n": [9], "s": [4]}))
    assert as_tuples(t.to_arrow()) == [(1, 3, 10)]
    t.compact(full=True)
    assert as_tuples(t.to_arrow()) == [(1, 3, 10)]


def test_read_optimized_reads_only_the_top_level(catalog):
    t = pk_table(catalog, bucket="1")
    t.write(rows((1, 1.0, "a"), (2, 1.0, "b")))
    t.compact(full=True)
    t.write(rows((1, 2.0, "new"), (3, 1.0, "c")))
    assert as_tuples(t.to_arrow(read_optimized=True)) == [(1, 1.0, "a"), (2, 1.0, "b")]
    assert as_tuples(t.to_arrow()) == [(1, 2.0, "new"), (2, 1.0, "b"), (3, 1.0, "c")]


def test_sequence_field_orders_updates_by_user_column(catalog):
    schema = pa.schema([("k", pa.int32()), ("ts", pa.int64()), ("v", pa.string())])
    t = pk_table(catalog, schema=schema, bucket="1", **{"sequence.field": "ts"})
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "ts": [10, 10], "v": ["new", "x"]}))
    t.write(pa.table({"k": pa.array([1], pa.int32()), "ts": [5], "v": ["late-but-old"]}))
    assert as_tuples(t.to_arrow()) == [(1, 10, "new"), (2, 10, "x")]
    t.compact(full=True)
    assert as_tuples(t.to_arrow()) == [(1, 10, "new"), (2, 10, "x")]


def test_sequence_auto_padding_row_kind_flag(catalog):
    schema = pa.schema([("k", pa.int32()), ("ts", pa.int64()), ("v", pa.string())])
    t = pk_table(catalog, schema=schema, bucket="1", **{"sequence.field": "ts",
                                                         "sequence.auto-padding": "row-kind-flag"})
    # +U arrives before its -U with the same op time: the -U must still be applied first
    t.write(pa.table({"k": pa.array([1, 1], pa.int32()), "ts": [7, 7], "v": ["after", "before"]}),
            row_kinds=["+U", "-U"])
    assert as_tuples(t.to_arrow()) == [(1, 7, "after")]


def test_compaction_merges_large_units_in_key_slices(catalog, monkeypatch):
    from paimon_lab.mergetree import compact_rewriter as compact

    calls = []
    original = compact.merge_sorted

    def counting(layout, fn, kv, *args):
        calls.append(kv.num_rows)
        return original(layout, fn, kv, *args)

    t = pk_table(catalog, bucket="1", **{"write-buffer-size": "64 kb", "write-only": "true"})
    expected = {}
    for i in range(4):
        data = rows(*[(k, float(i), f"v{i}") for k in range(i * 500, i * 500 + 3000)])
        t.write(data)
        expected.update({k: (float(i), f"v{i}") for k in range(i * 500, i * 500 + 3000)})
    t.write(rows(*[(k, 0.0, "x") for k in range(0, 4500, 7)]), row_kinds=["-D"] * len(range(0, 4500, 7)))
    for k in range(0, 4500, 7):
        expected.pop(k)
    monkeypatch.setattr(compact, "merge_sorted", counting)
    t.compact(full=True)
    assert len(calls) > 3 and max(calls) < 6000  # merged slice by slice (64 KB buffer -> 1024-row slices)
    got = {r["k"]: (r["v1"], r["v2"]) for r in t.to_arrow().to_pylist()}
    assert got == expected
    lv = t.levels()
    assert set(lv["level"]) == {5} and lv["row_count"].sum() == len(expected)
    mins = [r for r in lv["min_key"]]
    assert mins == sorted(mins)  # the top level is one sorted run


def test_overwrite_of_pk_table_ignores_the_replaced_files(catalog):
    t = pk_table(catalog, bucket="1", **{"num-sorted-run.compaction-trigger": "2"})
    t.write(rows((1, 1.0, "a"), (2, 1.0, "b")))
    t.write(rows((3, 1.0, "c")))
    t.write(rows((1, 9.0, "z")), overwrite=True)
    assert as_tuples(t.to_arrow()) == [(1, 9.0, "z")]
    lv = t.levels()
    assert lv["row_count"].sum() == 1 and lv["min_sequence_number"].min() == 0


def test_bucket_change_needs_overwrite(catalog):
    t = pk_table(catalog, bucket="2")
    t.write(rows(*[(i, 1.0, "a") for i in range(10)]))
    import dataclasses
    newer = dataclasses.replace(t.schema, id=1, options={**t.schema.options, "bucket": "4"})
    t.schema_manager.create(newer)
    t.refresh()
    with pytest.raises(SchemaError, match="rescale it"):
        t.write(rows((99, 1.0, "x")))
    t.write(t.to_arrow(), overwrite=True)
    assert {s.bucket for s in t.plan()} == {0, 1, 2, 3}
    t.write(rows((99, 1.0, "x")))
    assert t.to_arrow().num_rows == 11


@pytest.mark.parametrize("options", [
    {"bucket": "1", "changelog-producer": "lookup"},
    {"bucket": "1", "deletion-vectors.enabled": "true"},
    {"bucket": "1", "changelog-producer": "lookup", "merge-engine": "first-row"},
    {"bucket": "-1", "cross-partition": "yes"},
], ids=["lookup", "dv", "first-row", "cross-partition"])
def test_nested_columns_through_lookup_and_cross_partition_paths(tmp_path, options):
    """ARRAY/MAP/ROW value columns survive the writer's key joins (Arrow's hash join carries no
    nested columns): the second write into a lookup, DV, first-row or cross-partition table."""
    from paimon_lab import Catalog

    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    cross = options.pop("cross-partition", None) is not None
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("p", pa.string()), ("a", pa.list_(pa.int32())),
                        ("m", pa.map_(pa.string(), pa.int64())), ("r", pa.struct([("x", pa.int32())]))])
    t = cat.create_table("db.t", schema, primary_keys=["k"], partition_keys=["p"] if cross else [], options=options)
    t.write(pa.table({"k": [1, 2], "p": ["x", "x"], "a": [[1], [2, 3]], "m": [[("a", 1)], []],
                      "r": [{"x": 1}, None]}, schema=schema))
    t.write(pa.table({"k": [2, 3], "p": ["y", "y"], "a": [[9], None], "m": [None, [("b", 2)]],
                      "r": [{"x": 2}, {"x": 3}]}, schema=schema))
    got = {r["k"]: r for r in t.to_arrow().to_pylist()}
    assert sorted(got) == [1, 2, 3]
    assert got[3]["m"] == [("b", 2)] and got[1]["a"] == [1]
    if options.get("merge-engine") == "first-row":
        assert got[2]["a"] == [2, 3] and got[2]["r"] is None
    else:
        assert got[2]["a"] == [9] and got[2]["r"] == {"x": 2} and got[2]["m"] is None
        if cross:
            assert got[2]["p"] == "y"


@pytest.mark.parametrize("options", [{"deletion-vectors.enabled": "true"}, {"merge-engine": "first-row"},
                                     {"changelog-producer": "lookup"}, {}], ids=["dv", "first-row", "lookup", "plain"])
def test_write_returns_the_snapshot_that_shows_the_rows(tmp_path, options):
    from paimon_lab import Catalog

    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]),
                         primary_keys=["k"], options={"bucket": "1", **options})
    for i in range(3):
        sid = t.write(pa.table({"k": [1, 2 + i], "v": [f"v{i}", "x"]}))
        got = t.to_arrow(snapshot_id=sid).sort_by("k").to_pylist()
        assert {"k": 2 + i, "v": "x"} in got, (sid, [s.commit_kind for s in t.snapshots()])
        if options.get("merge-engine") != "first-row":
            assert {"k": 1, "v": f"v{i}"} in got


def test_cross_partition_update_finds_keys_without_hash_index(catalog):
    """Java's cross-partition writer keeps its key index in RocksDB and writes no HASH index files:
    an update, move or delete of a key must go to the bucket its row is in, found from the data."""
    import json

    t = _cross_table(catalog, "deduplicate", **{"dynamic-bucket.target-row-num": "2"})
    t.write(pa.table({"k": pa.array(range(6), pa.int32()), "dt": ["p1"] * 6, "v": list(range(6))}))
    from paimon_lab.store.file_store import live_index_entries
    assert {s.bucket for s in t.plan()} == {0, 1, 2}
    assert live_index_entries(t.store) == []  # as Java: no HASH index for cross-partition tables
    path = os.path.join(t.store.path, "snapshot", "snapshot-1")
    with open(path) as f:
        snapshot = json.load(f)
    snapshot["indexManifest"] = None  # the table as Java leaves it
    with open(path, "w") as f:
        json.dump(snapshot, f)
    t = catalog.get_table(t.identifier)
    assert live_index_entries(t.store) == []
    t.write(pa.table({"k": pa.array([5, 3, 4, 6], pa.int32()), "dt": ["p1", "p2", "p1", "p1"], "v": [50, 30, 4, 60]}),
            row_kinds=["+U", "+I", "-D", "+I"])
    assert _kdv(t) == [(0, "p1", 0), (1, "p1", 1), (2, "p1", 2), (3, "p2", 30), (5, "p1", 50), (6, "p1", 60)]
