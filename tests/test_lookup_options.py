"""The lookup options: 'lookup-wait' (behaviour) and the cache knobs accepted with no effect."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_lab.core.options import OPTIONS, validate_options
from paimon_lab.errors import OptionError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _levels(t):
    return sorted(f.level for s in t.plan() for f in s.files)


@pytest.mark.parametrize("key", ["lookup-wait", "changelog-producer.lookup-wait"])
def test_lookup_wait_false_lifts_a_commit_with_the_next(lab, key):
    t = lab.create_table("db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "changelog-producer": "lookup", key: "false"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    assert _levels(t) == [0]
    assert t.changes(start_snapshot=0).num_rows == 0  # no lookup changelog yet
    assert t.to_arrow().to_pylist() == [{"id": 1, "v": "a"}]  # level 0 merged on read
    t.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    assert _levels(t) == [0, 5]  # the first commit's file lifted, the second's still in level 0
    assert t.changes(start_snapshot=0).column("id").to_pylist() == [1]
    assert t.to_arrow().sort_by("id")["id"].to_pylist() == [1, 2]


def test_lookup_wait_default_lifts_at_commit(lab):
    t = lab.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "lookup"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    assert _levels(t) == [5]
    assert t.changes(start_snapshot=0).column("id").to_pylist() == [1]


def test_deletion_vectors_without_lookup_wait_show_a_commit_after_the_next(lab):
    t = lab.create_table("db.dv", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "lookup-wait": "false"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    assert t.to_arrow().num_rows == 0  # still in level 0, which batch reads skip (as Java)
    t.write(pa.table({"id": [1, 2], "v": ["b", "c"]}, schema=SCHEMA))
    assert t.to_arrow().to_pylist() == [{"id": 1, "v": "a"}]


def test_cache_knobs_are_declared_with_a_reason_and_validated():
    knobs = ["lookup.cache-rows", "lookup.hash-load-factor", "lookup.local-file-type", "lookup.cache-spill-compression",
             "lookup.cache.bloom.filter.enabled", "lookup.cache.bloom.filter.fpp", "lookup.async", "lookup.cache"]
    for key in knobs:
        assert OPTIONS[key].description.startswith("No effect by design")
    validate_options({"lookup.cache-rows": "1000", "lookup.local-file-type": "sort",
                      "lookup.cache-max-memory-size": "64 mb", "lookup.hash-load-factor": "0.5"})
    for bad in ({"lookup.local-file-type": "tree"}, {"lookup.cache-max-memory-size": "lots"},
                {"lookup-wait": "maybe"}):
        with pytest.raises(OptionError):
            validate_options(bad)
    with pytest.raises(OptionError, match="gentle"):
        validate_options({"lookup-compact": "gentle"})


def test_commit_force_compact_makes_a_commit_wait_for_its_lookup_compaction(lab):
    """Java's writer waits for the compaction before a commit with 'commit.force-compact' whatever
    its caller asked (Flink's 'lookup-wait' = false among them)."""
    t = lab.create_table("db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "changelog-producer": "lookup", "lookup-wait": "false", "commit.force-compact": "true"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    assert _levels(t) == [5]
    assert t.changes(start_snapshot=0).column("id").to_pylist() == [1]


def test_force_lookup_lifts_level0_at_every_commit_without_a_changelog(lab):
    plain = lab.create_table("db.plain", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t = lab.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", "force-lookup": "true"})
    for table in (plain, t):
        table.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
        table.write(pa.table({"id": [2, 3], "v": ["c", "d"]}, schema=SCHEMA))
    assert _levels(plain) == [0, 0]
    assert 0 not in _levels(t)
    assert t.to_arrow().sort_by("id")["v"].to_pylist() == ["a", "c", "d"]
    assert not [f for s in t.snapshots() for f in [s.changelog_manifest_list] if f]


def test_force_lookup_folds_older_rows_into_the_lifted_one(lab):
    """As Java's lookup compaction: the lifted row of a partial-update key merges in the key's
    newest row above, so a read takes only the newest upper row of each key."""
    schema = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.string())])
    t = lab.create_table("db.pu", schema, primary_keys=["id"], options={
        "bucket": "1", "force-lookup": "true", "merge-engine": "partial-update"})
    t.write(pa.table({"id": range(1000), "a": ["x"] * 1000, "b": [None] * 1000}, schema=schema))
    t.write(pa.table({"id": [1], "a": [None], "b": ["y"]}, schema=schema))   # small: lifted alone to level 4
    levels = t.levels()
    assert sorted(levels["level"]) == [4, 5]
    (newer,) = levels[levels["level"] == 4]["file_name"]
    (path,) = glob.glob(os.path.join(t.path, "bucket-0", newer))
    assert pq.read_table(path).select(["a", "b"]).to_pylist() == [{"a": "x", "b": "y"}]
    assert t.to_arrow(filter="id = 1").to_pylist() == [{"id": 1, "a": "x", "b": "y"}]
