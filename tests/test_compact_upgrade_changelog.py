"""Upgrades of files that need no merge in lookup tables (changelog-producer = lookup, deletion
vectors, first-row) and full-compaction changelog tables, as Java's changelog rewriters decide
(``upgradeStrategy``): a pure metadata move, a move whose rows are read for changelog (and the
deletion vectors of older rows), or a rewrite. Files keep or change their names accordingly; the
rows read, the changelog and the deletion vectors are the same as when everything was rewritten."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab.core import binary_row
from paimon_lab.core.manifest import DataFileMeta
from paimon_lab.core.schema import SchemaChange
from paimon_lab.core.types import AtomicType
from paimon_lab.mergetree.upgrade import (
    CHANGELOG,
    REWRITE,
    UPGRADE,
    UpgradeRules,
    compaction_steps,
)

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
TOP = 5   # the top of the default 6 levels
# The first write is far bigger than the later ones, so that a commit's compaction lifts a later
# file to just above it rather than merging the two (Java's size-ratio pick takes in the next run
# when the candidates are within 'compaction.size-ratio' of it).
BASE = 5000
BIGINT = AtomicType("BIGINT", False)


def _table(lab, name, **options):
    return lab.create_table(f"db.{name}", SCHEMA, primary_keys=["k"], options={"bucket": "1", **options})


def _rows(keys, tag="v"):
    keys = list(keys)
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def _delta(t, snap=None):
    """(kind, file name, level) of a snapshot's delta files (kind 0 add, 1 delete)."""
    snap = snap or t.latest_snapshot()
    mio = t.store.manifest_io
    return sorted((e.kind, e.file.file_name, e.file.level)
                  for m in mio.read_manifest_list(snap.delta_manifest_list) for e in mio.read_manifest(m.file_name))


def _written(t):
    """The level-0 file the latest write added (its APPEND snapshot precedes the COMPACT one)."""
    snaps = t.snapshots()
    append = [s for s in snaps if s.commit_kind == "APPEND"][-1]
    (name,) = [n for kind, n, level in _delta(t, append) if kind == 0 and level == 0]
    return name


def _changes(t):
    """The changelog rows of the latest snapshot, sorted: (rowkind, k, v)."""
    got = t.snapshot_changes(t.latest_snapshot())
    return sorted(zip(got["rowkind"].to_pylist(), got["k"].to_pylist(), got["v"].to_pylist()))


def _model(*batches):
    out = {}
    for keys, tag in batches:
        out.update({k: f"{tag}{k}" for k in keys})
    return out


def _check(t, model):
    got = t.to_arrow().sort_by("k")
    assert got["k"].to_pylist() == sorted(model)
    assert got["v"].to_pylist() == [model[k] for k in sorted(model)]


def _upsert_changelog(old, new):
    """The lookup changelog of upserting ``new`` (key -> value) over ``old``."""
    out = []
    for k, v in new.items():
        if k in old:
            out += [("-U", k, old[k]), ("+U", k, v)]
        else:
            out.append(("+I", k, v))
    return sorted(out)


# ----------------------------------------------------------------- lookup changelog

def test_lookup_deduplicate_upgrades_level0_files_and_emits_their_changelog(lab):
    t = _table(lab, "lk", **{"changelog-producer": "lookup"})
    t.write(_rows(range(BASE)))
    first = _written(t)
    # alone and lifted into the top level: moved, its rows emitted as +I without a rewrite
    assert _delta(t) == [(0, first, TOP), (1, first, 0)]
    assert _changes(t) == sorted(("+I", k, f"v{k}") for k in range(BASE))
    t.write(_rows(range(25, 75), "w"))
    second = _written(t)
    # deduplicate without sequence.field: the newest row wins whatever is above, so the level-0
    # file is moved under the top level as it is, and its keys' changelog looked up
    assert _delta(t) == [(0, second, TOP - 1), (1, second, 0)]
    assert _changes(t) == _upsert_changelog(_model((range(BASE), "v")), _model((range(25, 75), "w")))
    _check(t, _model((range(BASE), "v"), (range(25, 75), "w")))
    assert set(t.levels()["file_name"]) == {first, second}


def test_lookup_upgraded_file_with_deletes_emits_delete_changelog(lab):
    t = _table(lab, "lkd", **{"changelog-producer": "lookup"})
    t.write(_rows(range(10)))
    t.write(_rows([2, 3, 20]), row_kinds=["-D", "-D", "+I"])
    second = _written(t)
    # not into the top level: the file keeps its delete rows, and -D changelog is emitted
    assert _delta(t) == [(0, second, TOP - 1), (1, second, 0)]
    assert _changes(t) == [("+I", 20, "v20"), ("-D", 2, "v2"), ("-D", 3, "v3")]
    _check(t, _model(([0, 1, 4, 5, 6, 7, 8, 9, 20], "v")))


@pytest.mark.parametrize("options", [{"merge-engine": "partial-update"}, {"sequence.field": "v"}],
                         ids=["partial-update", "sequence-field"])
def test_lookup_rewrites_level0_files_a_merge_may_change(lab, options):
    t = _table(lab, "lkr", **{"changelog-producer": "lookup", **options})
    t.write(_rows(range(BASE)))
    first = _written(t)
    assert _delta(t) == [(0, first, TOP), (1, first, 0)]   # into the top level: moved all the same
    t.write(_rows(range(25, 75), "w"))
    second = _written(t)
    delta = _delta(t)
    # other engines fold the older rows into the lifted ones: the file is rewritten
    assert (1, second, 0) in delta and all(n != second for kind, n, _ in delta if kind == 0)
    assert [level for kind, _, level in delta if kind == 0] == [TOP - 1]
    assert _changes(t) == _upsert_changelog(_model((range(BASE), "v")), _model((range(25, 75), "w")))
    _check(t, _model((range(BASE), "v"), (range(25, 75), "w")))


# ----------------------------------------------------------------- full-compaction changelog

def test_full_compaction_upgrades_lone_files_with_insert_changelog(lab):
    t = _table(lab, "fc", **{"changelog-producer": "full-compaction", "compaction.small-file-ratio": "0.000001"})
    t.write(_rows(range(50)))
    t.compact(full=True)
    first = t.levels()["file_name"].iloc[0]
    assert _delta(t)[0] == (0, first, TOP)   # the level-0 file, moved
    assert _changes(t) == [("+I", k, f"v{k}") for k in range(50)]
    t.write(_rows(range(100, 120), "n"))     # overlaps nothing
    added = t.levels()
    (new,) = set(added["file_name"]) - {first}
    t.compact(full=True)
    # the new file is moved to the top by metadata, emitting +I; the top file is left alone
    assert _delta(t) == [(0, new, TOP), (1, new, 0)]
    assert _changes(t) == [("+I", k, f"n{k}") for k in range(100, 120)]
    t.write(_rows(range(40, 60), "w"))       # overlaps the first top file: merged with it
    t.compact(full=True)
    delta = _delta(t)
    assert (1, first, TOP) in delta and (1, new, TOP) not in delta
    assert _changes(t) == _upsert_changelog(_model((range(50), "v")), _model((range(40, 60), "w")))
    _check(t, _model((range(50), "v"), (range(100, 120), "n"), (range(40, 60), "w")))


# ----------------------------------------------------------------- deletion vectors

def test_deletion_vectors_upgrade_level0_file_and_mark_older_rows(lab):
    t = _table(lab, "dv", **{"deletion-vectors.enabled": "true"})
    t.write(_rows(range(BASE)))
    first = _written(t)
    assert _delta(t) == [(0, first, TOP), (1, first, 0)]
    t.write(_rows(range(BASE - 25, BASE + 25), "w"))
    second = _written(t)
    assert _delta(t) == [(0, second, TOP - 1), (1, second, 0)]
    levels = t.levels().set_index("file_name")
    # the upgraded file's keys are marked deleted in the top file, which is not rewritten
    assert levels.loc[first, "deleted_rows"] == 25 and levels.loc[second, "deleted_rows"] == 0
    _check(t, _model((range(BASE), "v"), (range(BASE - 25, BASE + 25), "w")))


def test_deletion_vectors_rewrite_level0_file_with_deletes(lab):
    t = _table(lab, "dvd", **{"deletion-vectors.enabled": "true"})
    t.write(_rows(range(50)))
    t.write(_rows([3, 4, 60]), row_kinds=["-D", "-D", "+I"])
    second = _written(t)
    delta = _delta(t)
    # the deletes must be dropped: rewritten (the two deleted keys marked in the top file)
    assert (1, second, 0) in delta and all(n != second for kind, n, _ in delta if kind == 0)
    assert t.levels()["row_count"].sum() == 51 and t.levels()["deleted_rows"].sum() == 2
    _check(t, _model(([k for k in range(50) if k not in (3, 4)] + [60], "v")))


def test_upgraded_file_keeps_its_deletion_vector(lab):
    t = _table(lab, "dvk", **{"deletion-vectors.enabled": "true", "compaction.small-file-ratio": "0.000001"})
    t.write(_rows(range(BASE)))
    t.write(_rows(range(BASE + 100, BASE + 150)))
    upper = _written(t)
    assert dict(zip(t.levels()["file_name"], t.levels()["level"]))[upper] == TOP - 1
    t.delete(f"k IN ({BASE + 100}, {BASE + 101})")   # marks two rows of the level-4 file deleted
    dv = t.levels().set_index("file_name")
    assert dv.loc[upper, "deleted_rows"] == 2
    t.compact(full=True)
    # overlapping nothing, without delete rows: moved to the top level under its name, with its vector
    assert _delta(t) == [(0, upper, TOP), (1, upper, TOP - 1)]
    after = t.levels().set_index("file_name")
    assert after.loc[upper, "level"] == TOP and after.loc[upper, "deleted_rows"] == 2
    _check(t, _model((list(range(BASE)) + list(range(BASE + 102, BASE + 150)), "v")))


def test_deletion_vectors_universal_compaction_marks_older_rows(lab):
    """A universal compaction (not the commit's lift) that takes level 0 under the upper levels
    marks the older rows of its keys deleted too (it used to rewrite them without marking them:
    a read saw both versions)."""
    t = _table(lab, "dvu", **{"deletion-vectors.enabled": "true", "num-sorted-run.compaction-trigger": "3"})
    top = t.store.num_levels - 1
    t.write(_rows(range(5000)))
    t.write(_rows(range(5000, 7000), "b"))
    assert sorted(t.levels()["level"]) == [top - 1, top]
    t.alter(SchemaChange.set_option("write-only", "true"))
    t = lab.get_table("db.dvu")
    # three level-0 runs of growing size over keys of both upper files
    for keys, tag in ((range(80), "c"), (range(4990, 5010), "d"), (range(6000, 6005), "e")):
        t.write(_rows(keys, tag))
    t.compact()
    levels = t.levels()
    assert sorted(levels["level"]) == [top - 2, top - 1, top]
    assert levels["deleted_rows"].sum() == 80 + 20 + 5
    _check(t, _model((range(5000), "v"), (range(5000, 7000), "b"), (range(80), "c"),
                     (range(4990, 5010), "d"), (range(6000, 6005), "e")))


# ----------------------------------------------------------------- first-row

def test_first_row_upgrades_into_top_and_rewrites_below(lab):
    t = _table(lab, "fr", **{"merge-engine": "first-row", "changelog-producer": "lookup"})
    t.write(_rows(range(BASE)))
    first = _written(t)
    assert _delta(t) == [(0, first, TOP), (1, first, 0)]
    assert _changes(t) == sorted(("+I", k, f"v{k}") for k in range(BASE))
    t.write(_rows(range(BASE - 25, BASE + 25), "w"))
    second = _written(t)
    delta = _delta(t)
    # a first-row lift drops the keys found above: the file is rewritten with the new keys only
    assert (1, second, 0) in delta and all(n != second for kind, n, _ in delta if kind == 0)
    assert t.levels()["row_count"].tolist() == [25, BASE]
    assert _changes(t) == sorted(("+I", k, f"w{k}") for k in range(BASE, BASE + 25))
    _check(t, _model((range(BASE), "v"), (range(BASE, BASE + 25), "w")))


# ----------------------------------------------------------------- the rules themselves

def _file(name, level, lo, hi, size=10 << 20, deletes=0):
    key = lambda v: binary_row.serialize([v], [BIGINT])
    return DataFileMeta(file_name=name, file_size=size, row_count=10, min_key=key(lo), max_key=key(hi),
                        key_stats=None, value_stats=None, min_sequence_number=0, max_sequence_number=1,
                        schema_id=0, level=level, extra_files=(), delete_row_count=deletes)


def _rules(rewriter, dv=False, keeps_newest=False):
    return UpgradeRules(rewriter, TOP, 1 << 20, dv, keeps_newest)


@pytest.mark.parametrize("rules, level, output, deletes, expected", [
    (_rules("plain"), 0, 3, 0, UPGRADE),
    (_rules("plain"), 0, TOP, 1, REWRITE),
    (_rules("full-compaction"), 2, 3, 0, UPGRADE),
    (_rules("full-compaction"), 2, TOP, 0, CHANGELOG),
    (_rules("full-compaction"), 0, TOP, None, REWRITE),
    (_rules("lookup"), 2, 3, 0, UPGRADE),
    (_rules("lookup"), 0, TOP, 0, CHANGELOG),
    (_rules("lookup"), 0, 3, 0, REWRITE),
    (_rules("lookup", keeps_newest=True), 0, 3, 1, CHANGELOG),
    (_rules("lookup", dv=True, keeps_newest=True), 0, 3, 1, REWRITE),
    (_rules("lookup", dv=True, keeps_newest=True), 0, 3, 0, CHANGELOG),
    (_rules("lookup", dv=True), 0, 3, 0, REWRITE),
    (_rules("lookup", dv=True), 0, TOP, 0, CHANGELOG),
    (_rules("lookup", dv=True), 3, 4, 0, UPGRADE),
])
def test_upgrade_step_follows_java(rules, level, output, deletes, expected):
    assert rules.upgrade_step(_file("f", level, 0, 9, deletes=deletes), output) == expected


def test_steps_keep_key_order_and_rewrite_overlaps_together():
    rules = _rules("lookup", keeps_newest=True)
    a, b, c = _file("a", 0, 0, 9), _file("b", 4, 5, 20), _file("c", 0, 30, 40)
    small = _file("s", 0, 50, 60, size=10)
    steps = compaction_steps([c, a, b, small], [BIGINT], 3, rules)
    assert [(kind, [f.file_name for f in group]) for kind, group in steps] == [
        (REWRITE, ["a", "b"]), (CHANGELOG, ["c"]), (CHANGELOG, ["s"])]
    assert compaction_steps([a], [BIGINT], 3, None) is None
