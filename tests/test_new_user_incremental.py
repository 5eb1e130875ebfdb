"""A new user's batch incremental reads, as the Paimon docs write them: 'incremental-between'
(snapshot ids), 'incremental-between-timestamp', 'incremental-between-scan-mode', and
$audit_log over a range. Java's semantics (tests/java/test_java_incremental.py checks them against
Java): the range's files merged by key, the range checked."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab import Catalog, SchemaChange
from paimon_lab.errors import ArgumentError, OptionError, SnapshotNotExistError
from paimon_lab.sql import Session, SqlError

pytest.importorskip("duckdb")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])


@pytest.fixture
def wh(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _four_commits(cat, **options):
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", **options})
    t.write({"id": [1, 2], "v": ["a", "b"], "n": [1, 1]})
    t.write({"id": [1], "v": ["b"], "n": [10]})
    t.write({"id": [1, 3], "v": ["c", "x"], "n": [100, 5]})
    t.write({"id": [2], "v": ["b"], "n": [1]}, row_kinds=["-D"])
    return t


def q(s, sql):
    return sorted(tuple(r.values()) for r in s.execute(sql).to_pylist())


def test_incremental_between_merges_a_key_written_twice(wh):
    _four_commits(wh, **{"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"})
    s = Session(wh)
    s.run("USE db")
    assert q(s, "SELECT * FROM t /*+ OPTIONS('incremental-between'='1,4') */") == [(1, "c", 110), (3, "x", 5)]
    assert q(s, "SELECT * FROM `t$audit_log` /*+ OPTIONS('incremental-between'='1,4') */") == \
        [("+I", 1, "c", 110), ("+I", 3, "x", 5), ("-D", 2, "b", 1)]
    binlog = s.execute("SELECT * FROM `t$binlog` /*+ OPTIONS('incremental-between'='1,4') */").to_pylist()
    assert sorted((r["rowkind"], r["id"], r["n"]) for r in binlog) == \
        [("+I", [1], [110]), ("+I", [3], [5]), ("-D", [2], [1])]


def test_incremental_range_is_checked(wh):
    t = _four_commits(wh)
    with pytest.raises(ArgumentError, match="starting snapshot id 3 .* must not be greater than .* 1"):
        t.incremental_changes(3, 1)
    with pytest.raises(SnapshotNotExistError, match=r"\(1, 9\] is out of the table's snapshots \[1, 4\]"):
        t.incremental_changes(1, 9)
    assert t.incremental_changes(0, 1).num_rows == 2      # from before the earliest snapshot
    assert t.incremental_changes(2, 2).num_rows == 0
    assert t.incremental_changes("0", "1").num_rows == 2   # ids as text are ids, not tags
    t.alter(SchemaChange.set_option("incremental-between", "4,2"))
    with pytest.raises(ArgumentError, match="must not be greater"):
        t.to_arrow()


def test_incremental_between_scan_mode(wh):
    t = _four_commits(wh, **{"changelog-producer": "input"})
    s = Session(wh)
    s.run("USE db")
    hint = "/*+ OPTIONS('incremental-between'='0,2', 'incremental-between-scan-mode'='{}') */"
    assert q(s, "SELECT * FROM t " + hint.format("delta")) == [(1, "b", 10), (2, "b", 1)]
    assert q(s, "SELECT * FROM t " + hint.format("changelog")) == [(1, "b", 10), (2, "b", 1)]
    fc = wh.create_table("db.fc", SCHEMA, primary_keys=["id"],
                         options={"bucket": "1", "changelog-producer": "full-compaction"})
    fc.write({"id": [1, 2], "v": ["a", "b"], "n": [1, 1]})
    fc.write({"id": [1], "v": ["c"], "n": [2]})
    fc.compact(full=True)                  # snapshot 3: the changelog of the full compaction
    rng = "/*+ OPTIONS('incremental-between'='{}', 'incremental-between-scan-mode'='{}') */"
    assert q(s, "SELECT id, v FROM fc " + rng.format("1,2", "delta")) == [(1, "c")]
    assert q(s, "SELECT id, v FROM fc " + rng.format("1,2", "changelog")) == []
    assert q(s, "SELECT id, v FROM fc " + rng.format("2,3", "delta")) == []          # COMPACT: no delta
    assert q(s, "SELECT id, v FROM fc " + rng.format("2,3", "changelog")) == [(1, "c"), (2, "b")]
    assert q(s, "SELECT id, v FROM fc " + rng.format("2,3", "auto")) == [(1, "c"), (2, "b")]
    plain = _plain_table(wh)
    one = "/*+ OPTIONS('incremental-between'='0,1', 'incremental-between-scan-mode'='{}') */"
    assert q(s, "SELECT * FROM p " + one.format("changelog")) == []      # no changelog files
    assert q(s, "SELECT * FROM p " + one.format("delta")) == [(1, "a", 1)]
    assert plain.incremental_changes(0, 1, mode="changelog").num_rows == 0
    with pytest.raises(SqlError, match="'incremental-between-scan-mode': 'bogus' is not one of auto, delta, changelog, diff"):
        s.execute("SELECT * FROM t " + hint.format("bogus"))
    with pytest.raises(SqlError, match="needs 'incremental-between'"):
        s.execute("SELECT * FROM t /*+ OPTIONS('incremental-between-scan-mode'='delta') */")
    with pytest.raises(OptionError, match="incremental-between-scan-mode"):
        t.alter(SchemaChange.set_option("incremental-between-scan-mode", "nope"))
    t.alter(SchemaChange.set_option("incremental-between", "0,2"),
            SchemaChange.set_option("incremental-between-scan-mode", "delta"))
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]


def _plain_table(cat):
    p = cat.create_table("db.p", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    p.write({"id": [1], "v": ["a"], "n": [1]})
    return p


def test_incremental_between_timestamp(wh):
    t = _four_commits(wh)
    ms = [sn.time_millis for sn in t.snapshots()]
    s = Session(wh)
    s.run("USE db")

    def between(a, b):
        return q(s, f"SELECT id, v FROM t /*+ OPTIONS('incremental-between-timestamp'='{a},{b}') */")

    assert between(ms[0] - 1000, ms[0]) == [(1, "a"), (2, "b")]   # a start before the first snapshot includes it
    assert between(ms[0], ms[2]) == [(1, "c"), (3, "x")]
    assert between(ms[3] + 1000, ms[3] + 2000) == []                # after the last snapshot: nothing
    with pytest.raises(SqlError, match="epoch milliseconds, got '2024-01-01 00:00:00,2024-01-02 00:00:00'"):
        s.execute("SELECT * FROM t /*+ OPTIONS('incremental-between-timestamp'="
                  "'2024-01-01 00:00:00,2024-01-02 00:00:00') */")


def test_incremental_between_two_tags_is_their_diff(wh):
    t = wh.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write({"id": [1, 2, 4], "v": ["a", "b", "d"], "n": [1, 1, 1]})
    t.create_tag("t1")
    t.write({"id": [1, 3], "v": ["c", "x"], "n": [1, 5]})
    t.write({"id": [1, 4], "v": ["a", "d"], "n": [1, 1]})      # keys 1 and 4 back to their t1 rows
    t.write({"id": [2], "v": ["b"], "n": [1]}, row_kinds=["-D"])
    t.compact(full=True)   # (as Java, the diff merges the files only one side has: t1's file is one)
    t.create_tag("t2")
    s = Session(wh)
    s.run("USE db")
    assert q(s, "SELECT * FROM t /*+ OPTIONS('incremental-between'='t1,t2') */") == [(3, "x", 5)]
    assert q(s, "SELECT * FROM `t$audit_log` /*+ OPTIONS('incremental-between'='t1,t2') */") == \
        [("+I", 3, "x", 5), ("-D", 2, "b", 1)]
    # the same range by snapshot ids reads the merged files of the commits instead
    assert q(s, "SELECT id FROM t /*+ OPTIONS('incremental-between'='1,4') */") == [(1,), (3,), (4,)]
    assert q(s, "SELECT id FROM t /*+ OPTIONS('incremental-between'='1,5', "
                "'incremental-between-scan-mode'='diff') */") == [(3,)]
    assert q(s, "SELECT id FROM t /*+ OPTIONS('incremental-between'='0,5', "
                "'incremental-between-scan-mode'='diff') */") == [(1,), (3,), (4,)]
    with pytest.raises(SqlError, match="two snapshot ids or two tag names"):
        s.execute("SELECT * FROM t /*+ OPTIONS('incremental-between'='t1,4') */")
    with pytest.raises(SqlError, match="Tag 'nope' does not exist"):
        s.execute("SELECT * FROM t /*+ OPTIONS('incremental-between'='t1,nope') */")
    with pytest.raises(ArgumentError, match="must be later than its start"):
        t.incremental_changes("t2", "t1")


def test_changelog_files_are_merged_by_age_not_level(wh):
    """A lookup table's changelog files take the level of the compaction that wrote them, so a
    newer one may sit above an older one: the range's latest change wins (Java's
    LookupMergeFunction keeps the latest row above level 0), and partial updates read too."""
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("a", pa.int64()), ("b", pa.int64())])
    for engine in ("deduplicate", "partial-update"):
        t = wh.create_table(f"db.{engine.replace('-', '_')}", schema, primary_keys=["id"],
                            options={"changelog-producer": "lookup", "bucket": "1", "merge-engine": engine})
        quiet = t.copy({"write-only": "true"})
        write = lambda table, ids, a: table.write({"id": pa.array(ids, pa.int32()), "a": [a] * len(ids)})
        write(t, [1, 2], 1)
        write(t, [1], 2)
        write(quiet, [1], 3)
        t.compact(full=True)        # changelog at the top level
        write(t, [1], 4)            # changelog of the lift to a level below it
        start = t.latest_snapshot().id
        write(quiet, [1], 5)
        t.compact(full=True)        # the newest changelog: at the top level again
        levels = [e.file.level for s in t.snapshots() if s.id > start and s.changelog_manifest_list
                  for m in t.store.manifest_io.read_manifest_list(s.changelog_manifest_list)
                  for e in t.store.manifest_io.read_manifest(m.file_name)]
        assert levels == [max(levels)]
        end = t.latest_snapshot().id
        got = t.incremental_changes(start - 2, end, mode="changelog")
        assert got.filter(pa.compute.equal(got["id"], 1))["a"].to_pylist()[-1] == 5, engine
        assert t.copy({"incremental-between": f"{start - 2},{end}"}).to_arrow().to_pylist()[0]["a"] == 5


def test_tag_diff_compares_nested_values(wh):
    """Between two tags a key counts as changed when any value differs, ARRAY/MAP/ROW ones too
    (Arrow has no equality kernel for them); NULL equals NULL and NaN equals NaN."""
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("a", pa.list_(pa.int64())),
                        ("m", pa.map_(pa.string(), pa.float64())), ("r", pa.struct([("x", pa.int32())]))])
    t = wh.create_table("db.nested", schema, primary_keys=["id"], options={"bucket": "1"})
    rows = {"id": pa.array([1, 2, 3], pa.int32()), "a": [[1], None, [5, 6]],
            "m": pa.array([[("k", float("nan"))], [("k", 1.0)], None], schema.field("m").type), "r": [{"x": 1}, None, {"x": 3}]}
    t.write(pa.table(rows, schema=schema))
    t.create_tag("t1")
    t.write(pa.table({**rows, "a": [[1], None, [5, 7]]}, schema=schema))    # only key 3 changes
    t.compact(full=True)
    t.create_tag("t2")
    got = t.incremental_changes("t1", "t2")
    assert got["id"].to_pylist() == [3] and got["a"].to_pylist() == [[5, 7]]
