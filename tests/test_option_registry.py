"""The option registry: every option has a status, refused options are refused, the README table is
the registry's output, and every implemented option has a behaviour test that fails if the option
had no effect (the walk in test_every_implemented_option_has_a_behaviour_test)."""

from __future__ import annotations

import ast
import datetime as dt
import glob
import io
import itertools
import os
import sys
from dataclasses import replace
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_lab import Catalog
from paimon_lab.core import types as T
from paimon_lab.core.bucket_function import bucket_ids, check_bucket_function
from paimon_lab.core.options import (
    IMPLEMENTED,
    NO_EFFECT,
    OPTIONS,
    PATTERNS,
    REFUSED,
    REGISTRY,
    check_readable,
    registry_entry,
    validate_options,
)
from paimon_lab.core.schema import SchemaChange
from paimon_lab.errors import OptionError, SnapshotNotExistError
from paimon_lab.operation.commit import retry_wait
from paimon_lab.operation.split_read import TableRead
from paimon_lab.sql import Session
from paimon_lab.utils.clock import use_clock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import gen_option_table

_names = itertools.count()


def _table(tmp_path, schema=None, pk=None, partition=None, **options):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    schema = schema or pa.schema([("id", pa.int64()), ("v", pa.string())])
    return cat.create_table(f"db.t{next(_names)}", schema, primary_keys=pk, partition_keys=partition,
                            options={k: str(v) for k, v in options.items()})


def _sql(tmp_path) -> Session:
    s = Session()
    s.run(f"CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = '{tmp_path / 'wh'}'); USE CATALOG paimon;"
          "CREATE DATABASE IF NOT EXISTS db;")
    return s


def _rows(*pairs):
    return pa.table({"id": pa.array([p[0] for p in pairs], pa.int64()), "v": [p[1] for p in pairs]})


def _files(t, pattern="**/*"):
    return [p for p in glob.glob(os.path.join(t.path, pattern), recursive=True) if os.path.isfile(p)]


def _data_files(t):
    return [p for p in _files(t, "bucket-*/*") if not p.endswith(".index")]


def _ids(t, **kw):
    return sorted(t.to_arrow(**kw)["id"].to_pylist())


# ------------------------------------------------------------------ the registry itself

def test_every_row_has_a_status_and_refusals_and_no_effects_a_reason():
    for e in list(REGISTRY.values()) + PATTERNS:
        assert e.status in (IMPLEMENTED, NO_EFFECT, REFUSED), e.key
        if e.status != IMPLEMENTED:
            assert e.reason, f"{e.key}: {e.status} needs a reason"
        else:
            assert e.description, f"{e.key}: implemented needs a description"


def test_every_typed_parser_is_a_registered_option():
    # refused keys may keep their parser: flipping their status stays a one-line change
    assert [k for k in OPTIONS if registry_entry(k) is None] == []


@pytest.mark.parametrize("key", sorted(k for k, e in REGISTRY.items() if e.status == REFUSED))
def test_refused_option_is_refused_by_name(key):
    with pytest.raises(OptionError, match=key.replace(".", r"\.").replace("#", ".")) as info:
        validate_options({key: "1"})
    assert REGISTRY[key].reason in str(info.value)


def test_refused_on_create_and_alter_and_sql(tmp_path):
    with pytest.raises(OptionError, match="row-tracking.enabled"):
        _table(tmp_path, **{"row-tracking.enabled": "true"})
    t = _table(tmp_path)
    with pytest.raises(OptionError, match="deletion-vectors.merge-on-read"):
        t.alter(SchemaChange.set_option("deletion-vectors.merge-on-read", "true"))
    with pytest.raises(OptionError, match="parquet.bloom.filter.enabled"):
        t.alter(SchemaChange.set_option("parquet.bloom.filter.enabled", "true"))
    s = _sql(tmp_path)
    with pytest.raises(Exception, match="row-tracking.enabled"):
        s.execute(f"ALTER TABLE db.{t.identifier.split('.')[-1]} SET ('row-tracking.enabled' = 'true')")
    with pytest.raises(OptionError, match="did you mean 'bucket-key'"):
        validate_options({"bucket-keys": "id"})


def test_remove_record_on_sequence_group_refusal_says_why(tmp_path):
    """Java Paimon 1.0.0 brought the option; the Java oracle (0.9, a 1.0 snapshot before it) cannot
    check an implementation, so it stays refused with that reason."""
    with pytest.raises(OptionError, match=r"'partial-update\.remove-record-on-sequence-group'.*Java Paimon 1\.0\.0.*"
                                          r"oracle.*lacks it"):
        _table(tmp_path, pk=["id"], **{"merge-engine": "partial-update",
                                       "partial-update.remove-record-on-sequence-group": "v"})


def test_tables_carrying_refused_options_are_read_unless_the_option_changes_reads():
    check_readable({"tag.automatic-creation": "process-time", "bucket": "1"})  # reads unaffected
    read_refused = sorted(e.key for e in list(REGISTRY.values()) + PATTERNS if e.status == REFUSED and not e.reads)
    assert read_refused
    key = next(k for k in read_refused if k in REGISTRY)
    with pytest.raises(OptionError, match=key):
        check_readable({key: "x"})


def test_a_java_table_with_a_refused_option_reads_unless_the_option_changes_reads(tmp_path):
    t = _table(tmp_path)
    t.write(_rows((1, "a")))
    base = t.store.schema
    t.store.set_schema(replace(base, options={**base.options, "tag.automatic-creation": "process-time"}))
    assert _ids(t) == [1]
    t.store.set_schema(replace(base, options={**base.options, "deletion-vectors.merge-on-read": "true"}))
    with pytest.raises(OptionError, match="deletion-vectors.merge-on-read"):
        t.to_arrow()


def test_sequence_auto_padding_to_micro_is_the_write_order_tiebreak(tmp_path):
    # Java <= 0.7 padded second/millisecond sequence values with the write order; paimon-lab
    # always orders a key's rows by the sequence field, then by write order.
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("ts", pa.int64())])
    for padding in ("second-to-micro", "millis-to-micro,row-kind-flag"):
        t = _table(tmp_path, schema, pk=["id"], bucket=1, **{"sequence.field": "ts", "sequence.auto-padding": padding})
        t.write(pa.table({"id": [1], "v": ["a"], "ts": [5]}))
        t.write(pa.table({"id": [1], "v": ["b"], "ts": [5]}))
        t.write(pa.table({"id": [1], "v": ["c"], "ts": [4]}))
        assert t.to_arrow()["v"].to_pylist() == ["b"]
    with pytest.raises(OptionError, match="sequence.auto-padding"):
        _table(tmp_path, pk=["id"], bucket=1, **{"sequence.auto-padding": "nanos-to-micro"})


def test_readme_option_table_is_the_registry_output():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert gen_option_table.updated(readme) == readme, "run python scripts/gen_option_table.py"


# ------------------------------------------------------------------ behaviour tests, one per option
# Each function sets the option and checks an effect the default would not have. A string names an
# existing test elsewhere that does the same (the walk checks that it exists).

def b_bucket(tmp_path):
    t = _table(tmp_path, bucket=3, **{"bucket-key": "id"})
    t.write(_rows(*[(i, "x") for i in range(30)]))
    assert {s.bucket for s in t.plan()} == {0, 1, 2}


def b_bucket_key(tmp_path):
    def buckets(key):
        t = _table(tmp_path, bucket=4, **{"bucket-key": key})
        t.write(pa.table({"id": pa.array(range(40), pa.int64()), "v": ["same"] * 40}))
        return {s.bucket for s in t.plan()}
    assert len(buckets("v")) == 1 and len(buckets("id")) > 1


def b_file_format(tmp_path):
    t = _table(tmp_path, **{"file.format": "orc"})
    t.write(_rows((1, "a")))
    assert all(p.endswith(".orc") for p in _data_files(t))
    assert _ids(t) == [1]


def b_file_compression(tmp_path):
    t = _table(tmp_path, **{"file.compression": "snappy"})
    t.write(_rows((1, "a")))
    assert pq.ParquetFile(_data_files(t)[0]).metadata.row_group(0).column(0).compression == "SNAPPY"


def b_zstd_level(tmp_path):
    data = pa.table({"id": pa.array(range(50_000), pa.int64()), "v": [f"value {i % 977} {i // 7}" for i in range(50_000)]})
    sizes = []
    for level in (1, 19):
        t = _table(tmp_path, **{"file.compression.zstd-level": level, "parquet.enable.dictionary": "false"})
        t.write(data)
        sizes.append(os.path.getsize(_data_files(t)[0]))
    assert sizes[1] < sizes[0]


def b_partition_default_name(tmp_path):
    t = _table(tmp_path, partition=["v"], **{"partition.default-name": "NOPE"})
    t.write(_rows((1, None)))
    assert os.path.isdir(os.path.join(t.path, "v=NOPE"))


def b_partition_legacy_name(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("d", pa.date32())])
    names = []
    for legacy in ("true", "false"):
        t = _table(tmp_path, schema, partition=["d"], **{"partition.legacy-name": legacy})
        t.write(pa.table({"id": pa.array([1], pa.int64()), "d": pa.array([19_000], pa.date32())}))
        names.append(sorted(n for n in os.listdir(t.path) if n.startswith("d=")))
    assert names == [["d=19000"], ["d=2022-01-08"]]


def b_manifest_format(tmp_path):
    t = _table(tmp_path, **{"manifest.format": "avro"})
    t.write(_rows((1, "a")))
    assert all(Path(p).read_bytes()[:4] == b"Obj\x01" for p in _files(t, "manifest/*"))
    with pytest.raises(OptionError):
        _table(tmp_path, **{"manifest.format": "parquet"})


def b_manifest_compression(tmp_path):
    t = _table(tmp_path, **{"manifest.compression": "snappy"})
    t.write(_rows((1, "a")))
    codecs = {fastavro.reader(io.BytesIO(Path(p).read_bytes())).codec for p in _files(t, "manifest/*")}
    assert codecs == {"snappy"}


def _manifest_count(t):
    return len(t.system("manifests"))


def b_manifest_merge_min_count(tmp_path):
    counts = []
    for n in (2, 100):
        t = _table(tmp_path, **{"manifest.merge-min-count": n})
        for i in range(4):
            t.write(_rows((i, "a")))
        counts.append(_manifest_count(t))
    assert counts[0] < counts[1] == 4


def b_manifest_target_file_size(tmp_path):
    counts = []
    for size in ("1 b", "8 mb"):
        t = _table(tmp_path, **{"manifest.merge-min-count": 2, "manifest.target-file-size": size})
        for i in range(4):
            t.write(_rows((i, "a")))
        counts.append(_manifest_count(t))
    assert counts[0] > counts[1]


def b_manifest_full_compaction(tmp_path):
    deletes = []
    for threshold in ("1 b", "16 mb"):
        t = _table(tmp_path, bucket=1, **{"bucket-key": "id", "manifest.full-compaction-threshold-size": threshold})
        for i in range(3):
            t.write(_rows((i, "a")))
        t.compact(full=True)
        t.write(_rows((9, "a")))
        deletes.append(sum(t.system("manifests")["num_deleted_files"].to_pylist()))
        assert _ids(t) == [0, 1, 2, 9]
    assert deletes == [0, 3]


def b_stats_mode(tmp_path):
    t = _table(tmp_path, **{"metadata.stats-mode": "none"})
    t.write(_rows((1, "a"), (5, "b")))
    assert len(t.plan(filter="id > 100")) == 1  # no min/max: the file cannot be skipped
    t2 = _table(tmp_path)
    t2.write(_rows((1, "a"), (5, "b")))
    assert t2.plan(filter="id > 100") == []


def b_snapshot_num_retained_max(tmp_path):
    t = _table(tmp_path, **{"snapshot.num-retained.max": 2, "snapshot.num-retained.min": 1})
    for i in range(4):
        t.write(_rows((i, "a")))
    assert len(t.snapshots()) == 2


def b_snapshot_num_retained_min(tmp_path):
    t = _table(tmp_path, **{"snapshot.num-retained.min": 3, "snapshot.time-retained": "1 ms"})
    for i in range(5):
        t.write(_rows((i, "a")))
    t.expire_snapshots()
    assert len(t.snapshots()) == 3


def b_snapshot_time_retained(tmp_path):
    kept = []
    for retained in ("1 ms", "1 h"):
        t = _table(tmp_path, **{"snapshot.num-retained.min": 1, "snapshot.time-retained": retained})
        for i in range(4):
            t.write(_rows((i, "a")))
        t.expire_snapshots()
        kept.append(len(t.snapshots()))
    assert kept == [1, 4]


def b_snapshot_expire_limit(tmp_path):
    t = _table(tmp_path, **{"snapshot.num-retained.min": 1, "snapshot.time-retained": "1 h",
                            "snapshot.expire.limit": 2})
    for i in range(6):
        t.write(_rows((i, "a")))
    t.alter(SchemaChange.set_option("snapshot.time-retained", "1 ms"))
    t.expire_snapshots()
    assert len(t.snapshots()) == 4


def _three_commits(tmp_path, **options):
    t = _table(tmp_path, **options)
    for i in (1, 2, 3):
        t.write(_rows((i, "a")))
    return t


def b_scan_snapshot_id(tmp_path):
    t = _three_commits(tmp_path)
    t.alter(SchemaChange.set_option("scan.snapshot-id", "2"))
    assert _ids(t) == [1, 2] and _ids(t, snapshot_id=1) == [1]
    assert sum(s.row_count for s in t.plan() for s in s.files) == 2
    assert t.count() == 2 and t.min_max("id")["id"] == (1, 2)  # the rows to_arrow() reads


def b_scan_tag_name(tmp_path):
    t = _three_commits(tmp_path)
    t.create_tag("first", 1)
    t.alter(SchemaChange.set_option("scan.tag-name", "first"))
    assert _ids(t) == [1]
    assert t.count() == 1 and t.min_max("id")["id"] == (1, 1)


def b_scan_version(tmp_path):
    # a query option only: Java refuses it as a table option (its schema validation wants
    # scan.snapshot-id or scan.tag-name there), and so does paimon-lab
    t = _three_commits(tmp_path)
    t.create_tag("v1", 1)
    with pytest.raises(OptionError, match="scan.snapshot-id"):
        t.alter(SchemaChange.set_option("scan.version", "v1"))
    s = _sql(tmp_path)
    name = t.identifier.split(".")[-1]
    for version, ids in (("v1", [1]), ("2", [1, 2])):
        got = s.execute(f"SELECT id FROM db.{name} /*+ OPTIONS('scan.version' = '{version}') */")
        assert sorted(got.column("id").to_pylist()) == ids


def b_scan_timestamp_millis(tmp_path):
    t = _three_commits(tmp_path)
    t.alter(SchemaChange.set_option("scan.timestamp-millis", str(t.snapshot(1).time_millis)))
    assert _ids(t) == [1]


def b_scan_timestamp(tmp_path):
    t = _three_commits(tmp_path)
    first = dt.datetime.fromtimestamp(t.snapshot(1).time_millis / 1000)     # the machine's wall clock
    t.alter(SchemaChange.set_option("scan.timestamp", first.strftime("%Y-%m-%d %H:%M:%S.%f")[:23]))
    assert _ids(t) == [1]
    millis = int(dt.datetime.strptime(t.options["scan.timestamp"], "%Y-%m-%d %H:%M:%S.%f").timestamp() * 1000)
    plain = t.copy({"scan.timestamp": None})
    assert [b.snapshot_id for b in t.stream(timeout=0)] == \
        [b.snapshot_id for b in plain.stream(mode="from-timestamp", timestamp_millis=millis, timeout=0)] != \
        [b.snapshot_id for b in plain.stream(timeout=0)]        # a stream starts there too
    with pytest.raises(OptionError, match="scan.timestamp"):
        t.copy({"scan.timestamp": "yesterday"}).to_arrow()


def b_scan_watermark(tmp_path):
    t = _table(tmp_path)
    for i, watermark in ((1, None), (2, 100), (3, 200)):
        t.write(_rows((i, "a")), watermark=watermark)
    t.alter(SchemaChange.set_option("scan.watermark", "150"))
    assert _ids(t) == [1, 2, 3]                     # snapshot 3: the first with a watermark >= 150
    assert _ids(t.copy({"scan.watermark": "100"})) == [1, 2]
    with pytest.raises(SnapshotNotExistError, match="watermark"):
        t.copy({"scan.watermark": "500"}).to_arrow()
    with pytest.raises(OptionError, match="batch reads only"):
        next(t.stream(timeout=0))


def b_scan_file_creation_time_millis(tmp_path):
    t = _table(tmp_path, partition=["v"])
    with use_clock(1_700_000_000_000):
        t.write(_rows((1, "a"), (2, "b")))
    with use_clock(1_700_000_060_000):
        t.write(_rows((3, "a")))
    late = t.copy({"scan.file-creation-time-millis": "1700000030000"})   # between the two writes
    assert _ids(late) == [3] and late.count() == 1 and late.count(filter="v = 'a'") == 1
    assert late.min_max("id")["id"] == (3, 3) and len(late.plan()) == 1
    assert [b.num_rows for b in late.stream(timeout=0)] == [1]
    assert _ids(t) == [1, 2, 3]                          # the table itself still reads every file
    t.compact(full=True)                                  # a compaction sees every file too
    assert _ids(t) == [1, 2, 3]


def b_incremental_between_timestamp(tmp_path):
    t = _three_commits(tmp_path)
    first, third = t.snapshot(1).time_millis, t.snapshot(3).time_millis
    t.alter(SchemaChange.set_option("incremental-between-timestamp", f"{first},{third}"))
    assert _ids(t) == [2, 3]                                  # after snapshot 1, up to snapshot 3
    assert t.count() == 2
    with pytest.raises(OptionError, match="epoch milliseconds"):
        t.copy({"incremental-between-timestamp": "a,b"}).to_arrow()


def b_scan_mode(tmp_path):
    t = _three_commits(tmp_path, bucket=1, **{"bucket-key": "id"})
    t.alter(SchemaChange.set_option("scan.mode", "compacted-full"))
    with pytest.raises(SnapshotNotExistError):
        t.to_arrow()
    t.compact(full=True)
    t.write(_rows((4, "a")))
    assert _ids(t) == [1, 2, 3]


def b_incremental_between(tmp_path):
    t = _three_commits(tmp_path)
    t.alter(SchemaChange.set_option("incremental-between", "1,3"))
    assert _ids(t) == [2, 3]
    assert _ids(t, snapshot_id=1) == [1]
    assert t.count() == 2 and t.count(filter="id > 2") == 1 and t.min_max("id")["id"] == (2, 3)


def _pk(tmp_path, **options):
    return _table(tmp_path, pk=["id"], **{"bucket": 1, **options})


def b_write_only(tmp_path):
    t = _pk(tmp_path, **{"write-only": "true", "num-sorted-run.compaction-trigger": 2})
    for i in range(4):
        t.write(_rows((i, "a")))
    assert all(s.commit_kind == "APPEND" for s in t.snapshots())


def b_compaction_trigger(tmp_path):
    kinds = []
    for trigger in (2, 50):
        t = _pk(tmp_path, **{"num-sorted-run.compaction-trigger": trigger})
        for i in range(4):
            t.write(_rows((i, "a")))
        kinds.append({s.commit_kind for s in t.snapshots()})
    assert "COMPACT" in kinds[0] and kinds[1] == {"APPEND"}


def b_num_levels(tmp_path):
    t = _pk(tmp_path, **{"num-levels": 3})
    t.write(_rows((1, "a")))
    t.compact(full=True)
    assert set(t.levels()["level"]) == {2}


def _amp_or_ratio_compacts(tmp_path, **options):
    # runs, newest first: 1 row, 2000 rows, 5000 rows at the top level
    t = _pk(tmp_path, **{"num-sorted-run.compaction-trigger": 3, **{k: str(v) for k, v in options.items()}})
    t.write(_rows(*[(i, "x") for i in range(5000)]))
    t.compact(full=True)
    t.write(_rows(*[(i, "y") for i in range(10_000, 12_000)]))
    t.write(_rows((20_000, "z")))
    return t.latest_snapshot().commit_kind == "COMPACT"


def b_size_amplification(tmp_path):
    assert _amp_or_ratio_compacts(tmp_path, **{"compaction.max-size-amplification-percent": 1})
    assert not _amp_or_ratio_compacts(tmp_path, **{"compaction.max-size-amplification-percent": 10_000,
                                                  "compaction.size-ratio": 0})


def b_size_ratio(tmp_path):
    assert _amp_or_ratio_compacts(tmp_path, **{"compaction.max-size-amplification-percent": 10_000,
                                               "compaction.size-ratio": 10_000})
    assert not _amp_or_ratio_compacts(tmp_path, **{"compaction.max-size-amplification-percent": 10_000,
                                                  "compaction.size-ratio": 0})


def _append_compacts(tmp_path, **options):
    t = _table(tmp_path, **options)
    for i in range(4):
        t.write(_rows((i, "a")))
    return t.compact() is not None


def b_compaction_min_file_num(tmp_path):
    assert _append_compacts(tmp_path, **{"compaction.min.file-num": 2})
    assert not _append_compacts(tmp_path, **{"compaction.min.file-num": 10})


def b_compaction_max_file_num(tmp_path):
    t = _table(tmp_path, **{"compaction.min.file-num": 2, "compaction.max.file-num": 2})
    for i in range(4):
        t.write(_rows((i, "a")))
    t.compact()
    assert len(_data_files(t)) < 8 and sum(len(s.files) for s in t.plan()) > 1


def b_changelog_file_prefix(tmp_path):
    t = _pk(tmp_path, **{"changelog-producer": "input", "changelog-file.prefix": "chg-"})
    t.write(_rows((1, "a")))
    assert any(os.path.basename(p).startswith("chg-") for p in _data_files(t))


def b_data_file_prefix(tmp_path):
    t = _table(tmp_path, **{"data-file.prefix": "part-"})
    t.write(_rows((1, "a")))
    assert all(os.path.basename(p).startswith("part-") for p in _data_files(t))


def b_file_index_read_enabled(tmp_path):
    counts = []
    for enabled in ("true", "false"):
        t = _table(tmp_path, **{"file-index.bitmap.columns": "v", "file-index.read.enabled": enabled})
        for i in range(3):
            t.write(_rows((i, "a"), (i, f"m{i}"), (i, "z")))
        counts.append(sum(len(s.files) for s in t.plan(filter="v = 'm1'")))
        assert _ids(t, filter="v = 'm1'") == [1]
    assert counts == [1, 3]


def b_dynamic_partition_overwrite(tmp_path):
    out = []
    for dynamic in ("true", "false"):
        t = _table(tmp_path, partition=["v"], **{"dynamic-partition-overwrite": dynamic})
        t.write(_rows((1, "a"), (2, "b")))
        t.write(_rows((3, "a")), overwrite=True)
        out.append(_ids(t))
    assert out == [[2, 3], [3]]


def b_ignore_delete(tmp_path):
    t = _pk(tmp_path, **{"ignore-delete": "true"})
    t.write(_rows((1, "a")))
    t.write(_rows((1, "a")), row_kinds=["-D"])
    assert _ids(t) == [1]


def b_first_row_ignore_delete(tmp_path):
    t = _pk(tmp_path, **{"merge-engine": "first-row", "first-row.ignore-delete": "true"})
    t.write(_rows((1, "a")))
    t.write(_rows((1, "a")), row_kinds=["-D"])
    assert _ids(t) == [1]


def b_partial_update_ignore_delete(tmp_path):
    t = _pk(tmp_path, **{"merge-engine": "partial-update", "partial-update.ignore-delete": "true"})
    t.write(_rows((1, "a")))
    t.write(_rows((1, "a")), row_kinds=["-D"])
    assert _ids(t) == [1]


def b_partial_update_remove_record_on_delete(tmp_path):
    t = _pk(tmp_path, **{"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"})
    t.write(_rows((1, "a")))
    t.write(_rows((1, "a")), row_kinds=["-D"])
    assert _ids(t) == []


def b_consumer_id(tmp_path):
    t = _table(tmp_path, **{"consumer-id": "job1"})
    t.write(_rows((1, "a")))
    for _ in t.stream(timeout=0):
        pass
    assert "job1" in set(t.system("consumers")["consumer_id"].to_pylist())


def b_sql_primary_key_and_partition(tmp_path):
    s = _sql(tmp_path)
    s.execute("CREATE TABLE db.sq (id BIGINT, p STRING) WITH ('primary-key' = 'id,p', 'partition' = 'p')")
    t = Catalog(str(tmp_path / "wh")).get_table("db.sq")
    assert list(t.schema.primary_keys) == ["id", "p"] and list(t.schema.partition_keys) == ["p"]


def b_rows_per_second(tmp_path):
    s = _sql(tmp_path)
    s.execute("SET 'execution.checkpointing.interval' = '1 s'")
    counts = []
    for rate in (7, 3):
        s.execute(f"CREATE TEMPORARY TABLE g{rate} (id INT) WITH ('connector' = 'datagen', 'rows-per-second' = '{rate}')")
        counts.append(s.execute(f"SELECT count(*) AS n FROM g{rate}").column("n")[0].as_py())
    assert counts[0] * 3 == counts[1] * 7 and counts[0] > 0


def b_retry_waits(tmp_path):
    t = _table(tmp_path, **{"commit.min-retry-wait": "2 s", "commit.max-retry-wait": "3 s"})
    waits = [retry_wait(t.store.schema.core, attempt) for attempt in range(6)]
    assert all(1.0 <= w <= 3.0 for w in waits) and max(waits) > 1.5


def b_streaming_read_overwrite(tmp_path):
    seen = []
    for flag in ("false", "true"):
        t = _table(tmp_path, pk=["id"], **{"bucket": "1", "streaming-read-overwrite": flag})
        t.write(_rows((1, "a")))
        t.write(_rows((2, "b")), overwrite=True)
        seen.append(t.changes(1)["id"].to_pylist())
    assert seen == [[], [2]]


def _parquet_meta(t):
    return pq.ParquetFile(_data_files(t)[0]).metadata


_MANY = pa.table({"id": pa.array(range(20_000), pa.int64()), "v": [f"v{i}" for i in range(20_000)]})


def b_parquet_compression(tmp_path):
    t = _table(tmp_path, **{"file.compression": "zstd", "parquet.compression": "gzip"})
    t.write(_rows((1, "a")))
    assert _parquet_meta(t).row_group(0).column(0).compression == "GZIP"


def b_parquet_zstd_level(tmp_path):
    sizes = []
    for level in (1, 19):
        t = _table(tmp_path, **{"parquet.compression.codec.zstd.level": level, "parquet.enable.dictionary": "false"})
        t.write(_MANY)
        sizes.append(os.path.getsize(_data_files(t)[0]))
    assert sizes[1] < sizes[0]


def b_parquet_block_size(tmp_path):
    t = _table(tmp_path, **{"parquet.block.size": 16 * 1024})
    t.write(_MANY)
    assert _parquet_meta(t).num_row_groups > 4
    t2 = _table(tmp_path)
    t2.write(_MANY)
    assert _parquet_meta(t2).num_row_groups == 1


def _pages(t, column=0):
    meta = _parquet_meta(t).row_group(0).column(column)
    return meta.total_compressed_size, meta


def b_parquet_page_size(tmp_path):
    def index_pages(options):
        t = _table(tmp_path, **{"parquet.enable.dictionary": "false", "file.compression": "none", **options})
        t.write(_MANY)
        return pq.ParquetFile(_data_files(t)[0]).metadata.row_group(0).column(0).data_page_offset, t
    # smaller pages: more page headers, so the same column takes more bytes
    sizes = []
    for options in ({"parquet.page.size": 1024}, {}):
        _, t = index_pages(options)
        sizes.append(_parquet_meta(t).row_group(0).column(0).total_compressed_size)
    assert sizes[0] > sizes[1]


def b_parquet_dictionary_page_size(tmp_path):
    sizes = []
    for limit in (64, 1 << 20):
        t = _table(tmp_path, **{"parquet.enable.dictionary": "true", "parquet.dictionary.page.size": limit,
                                "file.compression": "none"})
        t.write(pa.table({"id": pa.array(range(20_000), pa.int64()), "v": [f"v{i % 500}" for i in range(20_000)]}))
        sizes.append(_parquet_meta(t).row_group(0).column(1).total_uncompressed_size)
    assert sizes[0] > sizes[1]  # past the limit the column falls back to PLAIN


def b_parquet_writer_version(tmp_path):
    t = _table(tmp_path, **{"parquet.writer.version": "v2"})
    t.write(_rows((1, "a")))
    f = pq.ParquetFile(_data_files(t)[0])
    assert f.metadata.row_group(0).column(0).data_page_offset >= 0
    assert _ids(t) == [1]
    raw = Path(_data_files(t)[0]).read_bytes()
    t1 = _table(tmp_path)
    t1.write(_rows((1, "a")))
    assert raw != Path(_data_files(t1)[0]).read_bytes()


def _orc_file(tmp_path, **options):
    t = _table(tmp_path, **{"file.format": "orc", **options})
    t.write(_MANY)
    return t, _data_files(t)[0]


def b_orc_stripe_size(tmp_path):
    from pyarrow import orc
    _, small = _orc_file(tmp_path, **{"orc.stripe.size": 4096, "file.compression": "none"})
    _, default = _orc_file(tmp_path)
    assert orc.ORCFile(small).nstripes > orc.ORCFile(default).nstripes == 1


def _orc_size(tmp_path, **options):
    return os.path.getsize(_orc_file(tmp_path, **options)[1])


def b_orc_compress_size(tmp_path):
    assert _orc_size(tmp_path, **{"orc.compress.size": 4 << 20}) != _orc_size(tmp_path)


def b_orc_row_index_stride(tmp_path):
    assert _orc_size(tmp_path, **{"orc.row.index.stride": 1000}) > _orc_size(tmp_path)


def b_orc_bloom_filter(tmp_path):
    assert _orc_size(tmp_path, **{"orc.bloom.filter.columns": "v"}) > _orc_size(tmp_path)
    assert _orc_size(tmp_path, **{"orc.bloom.filter.columns": "v", "orc.bloom.filter.fpp": 0.0001}) > \
        _orc_size(tmp_path, **{"orc.bloom.filter.columns": "v", "orc.bloom.filter.fpp": 0.3})


def b_orc_dictionary_threshold(tmp_path):
    repeated = pa.table({"id": pa.array(range(20_000), pa.int64()), "v": [f"value-{i % 50}" for i in range(20_000)]})
    sizes = []
    for threshold in (0.0, 0.8):
        t = _table(tmp_path, **{"file.format": "orc", "file.compression": "none",
                                "orc.dictionary.key.threshold": threshold})
        t.write(repeated)
        sizes.append(os.path.getsize(_data_files(t)[0]))
    assert sizes[1] < sizes[0]


def b_commit_user_prefix(tmp_path):
    t = _table(tmp_path, **{"commit.user-prefix": "etl"})
    t.write(_rows((1, "a")))
    assert t.latest_snapshot().commit_user.startswith("etl_")
    t2 = _table(tmp_path)
    t2.write(_rows((1, "a")))
    assert not t2.latest_snapshot().commit_user.startswith("etl_")


def b_initial_buckets(tmp_path):
    import numpy as np

    from paimon_lab.spark.shared import SharedBucketAssigner
    opened = []
    for n in (4, None):
        t = _table(tmp_path, pk=["id"], bucket=-1, **({"dynamic-bucket.initial-buckets": n} if n else {}))
        idx = SharedBucketAssigner(t.store, None).index_for(b"")
        opened.append(len(set(idx.assign(np.arange(1000, dtype=np.int32)).tolist())))
    assert opened == [4, 1]


def b_default_value(tmp_path):
    for pk in (None, ["id"]):
        t = _table(tmp_path, pk=pk, **({"bucket": 1} if pk else {}))
        t.write(_rows((1, "a")))
        t.alter(SchemaChange.add_column("n", "INT"),
                SchemaChange.set_option("fields.n.default-value", "7"),
                SchemaChange.set_option("fields.v.default-value", "dflt"))
        t.write(pa.table({"id": pa.array([2, 3], pa.int64()), "v": [None, "c"], "n": pa.array([None, 5], pa.int32())}))
        got = sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])
        assert got == [{"id": 1, "v": "a", "n": 7}, {"id": 2, "v": "dflt", "n": 7}, {"id": 3, "v": "c", "n": 5}]
        assert _ids(t, filter="n = 7") == [1, 2]
        assert _ids(t, filter="v = 'dflt' OR n = 5") == [2, 3]
        assert t.to_arrow(columns=["n"], filter="n = 7", limit=1).num_rows == 1
        assert sum(len(s.files) for s in t.plan(filter="n = 7")) == len([f for s in t.plan() for f in s.files])
    with pytest.raises(OptionError, match="not a INT|is not a"):
        t.alter(SchemaChange.set_option("fields.n.default-value", "seven"))
    with pytest.raises(OptionError, match="primary key"):
        t.alter(SchemaChange.set_option("fields.id.default-value", "1"))


def test_bucket_functions_match_javas_definitions():
    def b(values, dtype, n, function, arrow_type=None):
        column = pa.array(values, arrow_type)
        return bucket_ids([column], [T.parse_type(dtype)], n, function).tolist()
    assert b([-7, 7, 0], "INT", 4, "mod") == [1, 3, 0]                           # Math.floorMod
    assert b([10**12 + 3], "BIGINT", 7, "mod") == [(10**12 + 3) % 7]
    assert b([5, -5, None], "INT", 4, "hive", pa.int32()) == [1, 3, 0]           # (h & MAX) % n
    assert b(["abc", "", None], "STRING", 4, "hive") == [96354 % 4, 0, 0]        # 31-polynomial of the bytes
    assert b(["é"], "STRING", 1000, "hive") == [(((-61 * 31) + -87) & 0x7FFFFFFF) % 1000]  # signed UTF-8 bytes
    assert b([b"\xff"], "BYTES", 10, "hive") == [0x7FFFFFFF % 10]
    assert b([1 << 40], "BIGINT", 7, "hive", pa.int64()) == [256 % 7]           # Long.hashCode
    assert b([1.0, -0.0], "DOUBLE", 10, "hive") == [0x3FF00000 % 10, 0]
    assert b([True, False], "BOOLEAN", 3, "hive") == [1, 0]
    two = bucket_ids([pa.array([1], pa.int32()), pa.array(["a"])], [T.parse_type("INT"), T.parse_type("STRING")], 5,
                     "hive").tolist()
    assert two == [(31 * 1 + 97) % 5]
    with pytest.raises(OptionError, match="single INT or BIGINT"):
        check_bucket_function("mod", ["s"], [T.parse_type("STRING")])
    with pytest.raises(OptionError, match="cannot hash"):
        check_bucket_function("hive", ["d"], [T.parse_type("DECIMAL(10, 2)")])


def b_bucket_function(tmp_path):
    t = _table(tmp_path, bucket=4, **{"bucket-key": "id", "bucket-function.type": "mod"})
    t.write(_rows(*[(i, "x") for i in range(12)]))
    for s in t.plan():
        assert {r % 4 for r in TableRead(t.store).read([s])["id"].to_pylist()} == {s.bucket}
    assert [s.bucket for s in t.plan(filter="id = 6")] == [2]  # bucket pruning uses the same function
    assert _ids(t, filter="id = 6") == [6]
    h = _table(tmp_path, pk=["id"], bucket=3, **{"bucket-function.type": "hive"})
    h.write(_rows(*[(i, "x") for i in range(30)]))
    for s in h.plan():
        assert {r % 3 for r in TableRead(h.store).read([s])["id"].to_pylist()} == {s.bucket}  # Long.hashCode of small ids
    with pytest.raises(OptionError, match="single INT or BIGINT"):
        _table(tmp_path, bucket=2, **{"bucket-key": "v", "bucket-function.type": "mod"})


BEHAVIOUR = {
    "bucket": b_bucket,
    "bucket-key": b_bucket_key,
    "bucket-function.type": b_bucket_function,
    "file.format": b_file_format,
    "file.compression": b_file_compression,
    "file.compression.zstd-level": b_zstd_level,
    "target-file-size": "tests/test_append_table.py::test_rolling_at_target_file_size",
    "partition.default-name": b_partition_default_name,
    "partition.legacy-name": b_partition_legacy_name,
    "manifest.format": b_manifest_format,
    "manifest.compression": b_manifest_compression,
    "manifest.target-file-size": b_manifest_target_file_size,
    "manifest.merge-min-count": b_manifest_merge_min_count,
    "manifest.full-compaction-threshold-size": b_manifest_full_compaction,
    "metadata.stats-mode": b_stats_mode,
    "fields.<f>.stats-mode": "tests/test_interop.py::test_nested_types",
    "commit.max-retries": "tests/test_type_lengths.py::test_commit_retries_must_not_be_negative",
    "commit.min-retry-wait": b_retry_waits,
    "commit.max-retry-wait": b_retry_waits,
    "snapshot.num-retained.min": b_snapshot_num_retained_min,
    "snapshot.num-retained.max": b_snapshot_num_retained_max,
    "snapshot.time-retained": b_snapshot_time_retained,
    "snapshot.expire.limit": b_snapshot_expire_limit,
    "scan.snapshot-id": b_scan_snapshot_id,
    "scan.tag-name": b_scan_tag_name,
    "scan.timestamp-millis": b_scan_timestamp_millis,
    "scan.timestamp": b_scan_timestamp,
    "incremental-between-timestamp": b_incremental_between_timestamp,
    "scan.watermark": b_scan_watermark,
    "scan.file-creation-time-millis": b_scan_file_creation_time_millis,
    "scan.version": b_scan_version,
    "scan.mode": b_scan_mode,
    "incremental-between": b_incremental_between,
    "incremental-between-scan-mode": "tests/test_new_user_incremental.py::test_incremental_between_scan_mode",
    "write-only": b_write_only,
    "write-buffer-size": "tests/test_pk_table.py::test_write_buffer_spills_to_level0_files",
    "num-levels": b_num_levels,
    "num-sorted-run.compaction-trigger": b_compaction_trigger,
    "compaction.max-size-amplification-percent": b_size_amplification,
    "compaction.size-ratio": b_size_ratio,
    "compaction.min.file-num": b_compaction_min_file_num,
    "compaction.max.file-num": b_compaction_max_file_num,
    "full-compaction.delta-commits": "tests/test_pk_table.py::test_full_compaction_every_n_delta_commits",
    "merge-engine": "tests/test_merge_function.py::test_partial_update_rejects_or_ignores_retractions",
    "changelog-producer": "tests/test_pk_table.py::test_input_changelog_producer",
    "changelog-producer.row-deduplicate": "tests/test_pk_table.py::test_lookup_row_deduplicate",
    "sequence.field": "tests/test_pk_table.py::test_sequence_field_orders_updates_by_user_column",
    "rowkind.field": "tests/test_interop_pk.py::test_lab_honours_rowkind_field",
    "sequence.auto-padding": "tests/test_pk_table.py::test_sequence_auto_padding_row_kind_flag",
    "ignore-delete": b_ignore_delete,
    "first-row.ignore-delete": b_first_row_ignore_delete,
    "partial-update.ignore-delete": b_partial_update_ignore_delete,
    "partial-update.remove-record-on-delete": b_partial_update_remove_record_on_delete,
    "aggregation.remove-record-on-delete":
        "tests/test_stateful.py::test_delete_on_aggregation_needs_remove_record_on_delete",
    "deletion-vectors.enabled": "tests/test_stateful.py::test_append_dv_compaction_keeps_deleted_rows_deleted",
    "dynamic-bucket.target-row-num": "tests/test_pk_table.py::test_dynamic_bucket_opens_buckets_at_target_row_num",
    "dynamic-partition-overwrite": b_dynamic_partition_overwrite,
    "table.exec.sink.type-length-enforcer": "tests/test_type_lengths.py::test_trim_pad_and_ignore",
    "data-file.thin-mode": "tests/test_pk_table.py::test_thin_mode_files_have_no_key_columns",
    "data-file.prefix": b_data_file_prefix,
    "changelog-file.prefix": b_changelog_file_prefix,
    "file-index.in-manifest-threshold": "tests/test_file_index.py::test_file_indexes_skip_files_in_the_table",
    "file-index.read.enabled": b_file_index_read_enabled,
    "file-index.<type>.columns": "tests/test_file_index.py::test_file_indexes_skip_files_in_the_table",
    "file-index.<type>.<col>.<param>": "tests/test_file_index.py::test_bloom_pruning",
    "consumer-id": b_consumer_id,
    "consumer.expiration-time": "tests/test_stream.py::test_consumer_resumes_and_protects_snapshots",
    "streaming-read-overwrite": b_streaming_read_overwrite,
    "type": "tests/test_sql.py::test_seed000_format_table",
    "object-location": "tests/test_sql.py::test_seed000_object_table",
    "field-delimiter": "tests/test_sql.py::test_seed000_format_table",
    "csv.field-delimiter": "tests/test_sql.py::test_seed000_format_table",
    "parquet.enable.dictionary": "tests/test_parquet_layout.py::test_dictionary_option_forces_dictionaries",
    "parquet.delta-encoding": "tests/test_parquet_layout.py::test_delta_encoding_option",
    "primary-key": b_sql_primary_key_and_partition,
    "partition": b_sql_primary_key_and_partition,
    "connector": "tests/test_sql.py::test_datagen_bounded_and_deterministic",
    "number-of-rows": "tests/test_sql.py::test_datagen_bounded_and_deterministic",
    "rows-per-second": b_rows_per_second,
    "fields.<f>.kind": "tests/test_sql.py::test_datagen_bounded_and_deterministic",
    "parquet.compression": b_parquet_compression,
    "parquet.compression.codec.zstd.level": b_parquet_zstd_level,
    "parquet.block.size": b_parquet_block_size,
    "parquet.page.size": b_parquet_page_size,
    "parquet.dictionary.page.size": b_parquet_dictionary_page_size,
    "parquet.writer.version": b_parquet_writer_version,
    "orc.stripe.size": b_orc_stripe_size,
    "orc.compress.size": b_orc_compress_size,
    "orc.row.index.stride": b_orc_row_index_stride,
    "orc.bloom.filter.columns": b_orc_bloom_filter,
    "orc.bloom.filter.fpp": b_orc_bloom_filter,
    "orc.dictionary.key.threshold": b_orc_dictionary_threshold,
    "commit.user-prefix": b_commit_user_prefix,
    "dynamic-bucket.initial-buckets": b_initial_buckets,
    "materialized-table.*": "tests/test_sql.py::test_materialized_table_state_survives_a_new_session",
    "fields.<f>.default-value": b_default_value,
    "fields.<f>.nested-key": "tests/test_aggregate_collections.py::test_nested_update_by_nested_key_and_appending",
    "lookup-wait": "tests/test_lookup_options.py::test_lookup_wait_false_lifts_a_commit_with_the_next",
    "lookup.cache-max-disk-size": "tests/test_commit_cost.py::test_lookup_cache_max_disk_size_bounds_the_local_files",
    "lookup.cache-file-retention": "tests/test_commit_cost.py::test_lookup_cache_file_retention_drops_unused_files",
    "lookup.cache-max-memory-size": "tests/test_commit_cost.py::test_lookup_cache_max_memory_size_bounds_the_open_files",
    "changelog-producer.lookup-wait": "tests/test_lookup_options.py::test_lookup_wait_false_lifts_a_commit_with_the_next",
    "lookup-compact": "tests/test_lookup_options.py::test_cache_knobs_are_declared_with_a_reason_and_validated",
    "fields.<f>.aggregate-function": "tests/test_merge_function.py::test_seed_aggregation",
    "fields.default-aggregate-function": "tests/test_merge_function.py::test_aggregation_nulls_and_defaults",
    "fields.<f>.ignore-retract": "tests/test_merge_function.py::test_aggregation_retractions_for_sum_count_product",
    "fields.<f>.sequence-group": "tests/test_merge_function.py::test_seed_partial_update_sequence_groups",
    "fields.<f>.distinct": "tests/test_merge_function.py::test_listagg_delimiter_and_distinct",
    "fields.<f>.list-agg-delimiter": "tests/test_merge_function.py::test_listagg_delimiter_and_distinct",
}
for _k in ("definition-query", "interval-freshness", "interval-freshness.time-unit", "logical-refresh-mode",
           "refresh-mode", "refresh-status"):
    BEHAVIOUR[f"materialized-table.{_k}"] = BEHAVIOUR["materialized-table.*"]

BEHAVIOUR["deletion-vectors.bitmap64"] = "tests/test_dv_bitmap64.py::test_alter_to_bitmap64_mixes_old_32bit_and_new_64bit_vectors"

_SPILL = "tests/test_write_spill.py::"
BEHAVIOUR.update({
    "write-buffer-spillable": "tests/test_pk_table.py::test_write_buffer_spills_to_level0_files",
    "write-buffer-spill.max-disk-size": _SPILL + "test_max_disk_size_flushes_level0_files_when_spills_exceed_it",
    "spill-compression": _SPILL + "test_spill_compression_and_its_zstd_level_compress_the_spill_files",
    "spill-compression.zstd-level": _SPILL + "test_spill_compression_and_its_zstd_level_compress_the_spill_files",
})

_POSTPONE = "tests/test_postpone_bucket.py::"
BEHAVIOUR.update({
    "postpone.default-bucket-num": _POSTPONE + "test_bucket_count_per_partition",
    "postpone.target-row-num-per-bucket": _POSTPONE + "test_bucket_count_per_partition",
    "postpone.target-size-per-bucket": _POSTPONE + "test_postpone_target_size_per_bucket",
})

_LIFECYCLE = "tests/test_auto_lifecycle.py::"
BEHAVIOUR.update({
    "tag.automatic-creation": _LIFECYCLE + "test_process_time_daily_tags",
    "tag.creation-period": _LIFECYCLE + "test_hourly_tags_delay_formatter_and_retained_max",
    "tag.creation-period-duration": _LIFECYCLE + "test_custom_period_duration_names_tags_by_minute",
    "tag.creation-delay": _LIFECYCLE + "test_hourly_tags_delay_formatter_and_retained_max",
    "tag.period-formatter": _LIFECYCLE + "test_hourly_tags_delay_formatter_and_retained_max",
    "tag.num-retained-max": _LIFECYCLE + "test_hourly_tags_delay_formatter_and_retained_max",
    "tag.default-time-retained": _LIFECYCLE + "test_tag_json_and_time_expiration",
    "tag.time-expire-enabled": _LIFECYCLE + "test_tag_time_expire_disabled_keeps_tags",
    "tag.automatic-completion": _LIFECYCLE + "test_automatic_completion_tags_the_skipped_period_next",
    "tag.batch.customized-name": _LIFECYCLE + "test_batch_tag_customized_name",
    "sink.process-time-zone": _LIFECYCLE + "test_process_time_daily_tags",
    "sink.watermark-time-zone": _LIFECYCLE + "test_watermark_time_zone",
    "partition.expiration-time": _LIFECYCLE + "test_partition_expiration_on_commit",
    "partition.expiration-check-interval": _LIFECYCLE + "test_partition_expiration_respects_check_interval",
    "partition.expiration-strategy": _LIFECYCLE + "test_partition_expiration_pattern_update_time_and_max",
    "partition.expiration-max-num": _LIFECYCLE + "test_partition_expiration_pattern_update_time_and_max",
    "partition.expiration-batch-size": _LIFECYCLE + "test_partition_expiration_batch_size",
    "partition.timestamp-formatter": _LIFECYCLE + "test_partition_expiration_pattern_update_time_and_max",
    "partition.timestamp-pattern": _LIFECYCLE + "test_partition_expiration_pattern_update_time_and_max",
    "end-input.check-partition-expire": _LIFECYCLE + "test_end_input_checks_partition_expiration_at_once",
    "changelog.num-retained.min": _LIFECYCLE + "test_changelog_time_retained_and_min",
    "changelog.num-retained.max": _LIFECYCLE + "test_long_lived_changelog_survives_snapshot_expiry",
    "changelog.time-retained": _LIFECYCLE + "test_changelog_time_retained_and_min",
    "compaction.small-file-ratio":
        "tests/test_compact_upgrade.py::test_small_file_ratio_decides_which_files_of_a_unit_are_rewritten",
    "metastore.partitioned-table": "tests/test_hive_catalog.py::test_entries_in_metastore",
    "hive.<key>": "tests/test_hive_catalog.py::test_entries_in_metastore",
})

_OPTS = "tests/test_per_level_options.py::"
BEHAVIOUR.update({
    "file.format.per.level": _OPTS + "test_format_per_level_picks_the_format_of_written_and_compacted_files",
    "file.compression.per.level": _OPTS + "test_compression_per_level",
    "commit.force-compact":
        "tests/test_lookup_options.py::test_commit_force_compact_makes_a_commit_wait_for_its_lookup_compaction",
    "force-lookup": "tests/test_lookup_options.py::test_force_lookup_folds_older_rows_into_the_lifted_one",
    "record-level.expire-time": "tests/test_record_level_expire.py::test_compaction_drops_expired_records_reads_do_not",
    "record-level.time-field": "tests/test_record_level_expire.py::test_time_field_types",
    "record-level.time-field-type": "tests/test_record_level_expire.py::test_settings_java_refuses",
    "partition.mark-done-action": "tests/test_partition_mark_done.py::test_success_file_keeps_its_creation_time",
    "partition.end-input-to-done":
        "tests/test_partition_mark_done.py::test_end_input_to_done_marks_the_partitions_a_batch_write_wrote",
})


def _implemented():
    return sorted(e.key for e in list(REGISTRY.values()) + PATTERNS if e.status == IMPLEMENTED)


def _test_exists(ref: str) -> bool:
    path, name = ref.split("::")
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


def test_every_implemented_option_has_a_behaviour_test():
    missing = [k for k in _implemented() if k not in BEHAVIOUR]
    assert not missing, f"implemented options without a behaviour test: {missing}"
    stale = [k for k in BEHAVIOUR if k not in _implemented()]
    assert not stale, f"behaviour tests for options not marked implemented: {stale}"
    unknown = [ref for ref in BEHAVIOUR.values() if isinstance(ref, str) and not _test_exists(ref)]
    assert not unknown, f"behaviour tests that do not exist: {unknown}"


@pytest.mark.parametrize("key", sorted(k for k, v in BEHAVIOUR.items() if callable(v)))
def test_option_has_its_effect(key, tmp_path):
    BEHAVIOUR[key](tmp_path)
