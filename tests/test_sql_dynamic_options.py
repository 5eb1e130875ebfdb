"""Dynamic options (OPTIONS hints, a stream's start) are checked against the table as Java's
``FileStoreTable.copy`` checks them: merged with the table's options, then schema-validated."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.errors import OptionError
from paimon_lab.sql import Session, SqlError

pytest.importorskip("duckdb")


@pytest.fixture
def s(tmp_path):
    session = Session()
    session.run(f"CREATE CATALOG c WITH ('type'='paimon', 'warehouse'='file:{tmp_path}'); USE CATALOG c")
    session.run("CREATE TABLE t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')")
    session.run("INSERT INTO t VALUES (1, 'a')")
    session.run("INSERT INTO t VALUES (2, 'b')")
    session.run("CALL sys.create_tag('default.t', 'v1', 1)")
    yield session
    session.close()


@pytest.mark.parametrize("hint, message", [
    ("'scan.mode'='latest', 'scan.snapshot-id'='1'", r"\['scan.snapshot-id'\] must not be set with scan mode 'latest'"),
    ("'scan.snapshot-id'='1', 'scan.tag-name'='v1'", r"exactly one of .*'scan.snapshot-id', 'scan.tag-name'"),
    ("'scan.timestamp-millis'='1', 'scan.snapshot-id'='1'", r"must not be set with scan mode 'from-timestamp'"),
    ("'fields.nope.default-value'='1'", r"'fields.nope.default-value': 'nope' is not a column"),
    ("'merge-engine'='first-row'", r"'merge-engine' cannot be changed by dynamic options"),
    ("'bucket'='4'", r"'bucket' cannot be changed by dynamic options"),
    ("'scan.snapshot-id'='abc'", r"Option 'scan.snapshot-id': 'abc' is not an integer"),
    ("'snapshot.num-retained.min'='0'", r"'snapshot.num-retained.min' must be at least 1"),
])
def test_hints_are_validated_with_the_tables_options(s, hint, message):
    with pytest.raises(SqlError, match=message) as e:
        s.run(f"SELECT * FROM t /*+ OPTIONS({hint}) */")
    assert "OPTIONS hint on 'c.default.t'" in str(e.value) and (e.value.line, e.value.column) == (1, 15)


def test_hints_the_table_agrees_with_still_read(s):
    assert s.run("SELECT v FROM t /*+ OPTIONS('scan.snapshot-id'='1') */").column("v").to_pylist() == ["a"]
    # the same value as the table's own option is no change
    assert s.run("SELECT count(*) AS n FROM t /*+ OPTIONS('bucket'='1', 'scan.mode'='latest') */").to_pylist() == \
        [{"n": 2}]


def test_hint_clashing_with_a_table_option(s):
    s.run("ALTER TABLE t SET ('scan.tag-name' = 'v1')")
    assert s.run("SELECT v FROM t").column("v").to_pylist() == ["a"]
    with pytest.raises(SqlError, match="exactly one of"):
        s.run("SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='2') */")


def test_insert_hints_are_validated(s):
    with pytest.raises(SqlError, match="OPTIONS hint on 'c.default.t': Option 'merge-engine' cannot be changed"):
        s.run("INSERT INTO t /*+ OPTIONS('merge-engine'='first-row') */ VALUES (3, 'c')")
    s.run("INSERT INTO t /*+ OPTIONS('write-buffer-size'='64 mb') */ VALUES (3, 'c')")
    assert s.run("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 3}]


def test_a_streams_start_is_validated_with_the_tables_options(tmp_path):
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("k", pa.int32())]), options={"scan.timestamp-millis": "1"})
    t.write(pa.table({"k": pa.array([1], pa.int32())}))
    with pytest.raises(OptionError, match="must not be set with scan mode 'from-timestamp'"):
        next(t.stream(snapshot_id=1, timeout=0))
    with pytest.raises(OptionError, match=r"must not be set with scan mode 'latest'"):
        next(t.stream(mode="latest", timestamp_millis=5, timeout=0))
    # an explicit mode replaces the table's start (the table's 'scan.timestamp-millis' is dropped)
    assert [b.snapshot_id for b in t.stream(mode="latest-full", timeout=0)] == [1]
    assert [b.snapshot_id for b in t.stream(timeout=0)] == [1]  # the table's start alone


def test_a_streams_own_start_sets_its_mode_as_java_options_do(tmp_path):
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("k", pa.int32())]))
    for i in range(3):
        t.write(pa.table({"k": pa.array([i], pa.int32())}))
    # 'scan.snapshot-id' alone means from-snapshot (not the table's default latest-full)
    assert [b.snapshot_id for b in t.stream(snapshot_id=2, timeout=0)] == [2, 3]
    with pytest.raises(OptionError, match="must not be set with scan mode 'from-timestamp'"):
        next(t.stream(snapshot_id=2, timestamp_millis=1, timeout=0))


def test_insert_overwrite_honours_the_dynamic_partition_overwrite_hint(s):
    s.run("CREATE TABLE p (id INT, dt STRING) PARTITIONED BY (dt)")
    s.run("INSERT INTO p VALUES (1, 'a'), (2, 'b')")
    s.run("INSERT OVERWRITE p VALUES (3, 'a')")  # dynamic (the default): partition 'a' only
    assert sorted(s.run("SELECT id FROM p").column("id").to_pylist()) == [2, 3]
    s.run("INSERT OVERWRITE p /*+ OPTIONS('dynamic-partition-overwrite'='false') */ VALUES (4, 'a')")
    assert s.run("SELECT id FROM p").column("id").to_pylist() == [4]  # the whole table, as Paimon documents


def test_insert_hints_apply_to_the_write(s):
    """'write-only' in an INSERT's hint: this write does not compact, though the table's
    'full-compaction.delta-commits' = 1 makes every other write compact."""
    s.run("CREATE TABLE f (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) "
          "WITH ('bucket' = '1', 'full-compaction.delta-commits' = '1')")
    kinds = lambda: s.run("SELECT commit_kind FROM `f$snapshots` ORDER BY snapshot_id").column(0).to_pylist()
    s.run("INSERT INTO f /*+ OPTIONS('write-only'='true') */ VALUES (1, 'a')")
    assert kinds() == ["APPEND"]
    s.run("INSERT INTO f VALUES (2, 'b')")
    assert kinds() == ["APPEND", "APPEND", "COMPACT"]
    assert "write-only" not in s.run("SELECT key FROM `f$options`").column(0).to_pylist()


def test_read_hints_apply_to_the_read(s):
    """A hint's 'fields.<f>.default-value' fills NULLs of that read, as Java 0.9's copy does."""
    s.run("INSERT INTO t VALUES (3, CAST(NULL AS STRING))")
    hinted = s.run("SELECT v FROM t /*+ OPTIONS('fields.v.default-value'='none') */ WHERE k = 3")
    assert hinted.column("v").to_pylist() == ["none"]
    assert s.run("SELECT v FROM t WHERE k = 3").column("v").to_pylist() == [None]


def test_table_copy(tmp_path):
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["k"],
                             options={"bucket": "1", "full-compaction.delta-commits": "1"})
    quiet = t.copy({"write-only": True})
    assert quiet.options["write-only"] == "true" and "write-only" not in t.options
    quiet.write(pa.table({"k": [1], "v": ["a"]}, schema=schema))
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND"]
    # the copy follows the table's schema changes and keeps its options
    from paimon_lab.core.schema import SchemaChange
    t.alter(SchemaChange.add_column("n", pa.int32()))
    quiet.write(pa.table({"k": [2], "v": ["b"], "n": [7]}))
    assert quiet.schema.id == 1 and quiet.options["write-only"] == "true"
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "APPEND"]
    assert "write-only" not in catalog.get_table("db.t").options    # nothing was written to the schema
    t.write(pa.table({"k": [3], "v": ["c"], "n": [1]}))
    assert [s.commit_kind for s in t.refresh().snapshots()][-1] == "COMPACT"
    with pytest.raises(OptionError, match="'bucket' cannot be changed"):
        t.copy({"bucket": "2"})
    with pytest.raises(OptionError, match="'merge-engine' cannot be changed"):
        t.copy({"merge-engine": "first-row"})


def test_dynamic_options_cannot_remove_fixed_options_or_set_refused_ones(s, tmp_path):
    t = Catalog(str(tmp_path)).get_table("default.t")
    with pytest.raises(OptionError, match="'bucket' cannot be changed"):
        t.copy({"bucket": None})       # a removal is a change: the writer would pick buckets anew
    agg = Catalog(str(tmp_path)).create_table(
        "default.agg", pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.int64())]), primary_keys=["k"],
        options={"bucket": "1", "merge-engine": "aggregation", "fields.a.aggregate-function": "sum"})
    with pytest.raises(OptionError, match="'merge-engine' cannot be changed"):
        agg.copy({"merge-engine": None})
    with pytest.raises(OptionError, match="file.block-size"):
        t.copy({"file.block-size": "1 mb"})     # refused at create: refused here too, not ignored
    with pytest.raises(SqlError, match="sequence.field.sort-order"):
        s.run("SELECT * FROM t /*+ OPTIONS('sequence.field.sort-order'='descending') */")
    with pytest.raises(SqlError, match="file.block-size"):
        s.run("INSERT INTO t /*+ OPTIONS('file.block-size'='1 mb') */ VALUES (9, 'z')")
