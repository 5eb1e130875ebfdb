"""Which files a compaction upgrades by metadata, which it rewrites, and the changelog and
deletion vectors it leaves, compared with Java Paimon on the same input (lookup changelog,
deletion vectors, first-row, full-compaction changelog); then Java reads our table and keeps
writing and compacting it.

Java's and our tables get the same commits; each COMPACT snapshot's delta is compared as
(kind, level, row count, upgraded: the same file name deleted and added), the layout as (level,
row count, deleted rows), and the changelog each compaction wrote as rows (both read by
paimon-lab, whose changelog reads tests/java/test_java_merge_engines.py checks against Java).
``target-file-size`` = 1 kb makes every file big enough to be upgraded alone (Java 0.9 and 1.0
join files under 70% of it to a compaction; the upgrade rules are the same in both); commits of
under 1,000 rows keep both sides from rolling files (Java checks the size every 1,000 rows)."""

from __future__ import annotations

import pyarrow as pa
import pytest

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
FIELDS = [("k", "BIGINT NOT NULL"), ("v", "STRING")]


def _rows(keys, tag):
    keys = list(keys)
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


# each commit well under the size of the run below it: the unit a commit lifts is its level-0
# file alone; CLOSE: a commit near the size of the run below, which Java's pick (its universal
# pick, then level 0 taking in the next runs within 'compaction.size-ratio') merges with it
UPSERTS = [(_rows(range(990), "a"), None), (_rows(range(25, 275), "b"), None)]
CLOSE = [(_rows(range(990), "a"), None), (_rows(range(10, 960), "b"), None), (_rows(range(5, 15), "c"), None),
         (_rows(range(0, 900), "d"), None)]
DELETES = (_rows([2, 3, 900], "c"), ["-D", "-D", "+I"])
CASES = {
    "lookup": ({"changelog-producer": "lookup"}, UPSERTS + [DELETES], False),
    "lookup-partial-update": ({"changelog-producer": "lookup", "merge-engine": "partial-update"}, UPSERTS, False),
    "deletion-vectors-lookup": ({"changelog-producer": "lookup", "deletion-vectors.enabled": "true"},
                                UPSERTS + [DELETES], False),
    "first-row-lookup": ({"changelog-producer": "lookup", "merge-engine": "first-row"}, UPSERTS, False),
    "lookup-close-sizes": ({"changelog-producer": "lookup"}, CLOSE, False),
    "force-lookup": ({"force-lookup": "true"}, UPSERTS + [DELETES], False),
    # the lifted rows (v NULL: no update) fold in the rows below, or reads lose 'a...'
    "force-lookup-partial-update": ({"force-lookup": "true", "merge-engine": "partial-update"},
                                    [UPSERTS[0], (_rows(range(25, 275), "b").set_column(1, "v", pa.nulls(250, pa.string())),
                                                  None), (_rows(range(270, 280), "c"), None)], False),
    "deletion-vectors-close-sizes": ({"deletion-vectors.enabled": "true"}, CLOSE, False),
    "full-compaction": ({"changelog-producer": "full-compaction"},
                        [(_rows(range(990), "a"), None), (_rows(range(3000, 3020), "b"), None),
                         (_rows(range(40, 60), "c"), None)], True),
}


def _compactions(t):
    """Per COMPACT snapshot: its delta as (kind, level, rows, upgraded) and its changelog rows."""
    mio = t.store.manifest_io
    out = []
    for snap in t.snapshots():
        if snap.commit_kind != "COMPACT":
            continue
        entries = [e for m in mio.read_manifest_list(snap.delta_manifest_list) for e in mio.read_manifest(m.file_name)]
        names = {}
        for e in entries:
            names.setdefault(e.file.file_name, set()).add(e.kind)
        delta = sorted((e.kind, e.file.level, e.file.row_count, names[e.file.file_name] == {0, 1}) for e in entries)
        log = t.snapshot_changes(snap)
        out.append((delta, sorted(zip(log["rowkind"].to_pylist(), log["k"].to_pylist(), log["v"].to_pylist()))))
    return out


def _layout(t):
    return sorted(t.levels()[["level", "row_count", "deleted_rows"]].itertuples(index=False, name=None))


@pytest.mark.compat("compaction", "files upgraded by metadata or rewritten, changelog: {case}", "same input, same result")
@pytest.mark.parametrize("case", list(CASES))
def test_upgrades_match_java(jo, java, lab, wh, case):
    options, commits, compact = CASES[case]
    options = {"bucket": "1", "target-file-size": "1 kb", **options}
    jo.create(wh, "db.j", FIELDS, primary_keys=["k"], options=options, version=java)
    ours = lab.create_table("db.l", SCHEMA, primary_keys=["k"], options=options)
    for data, kinds in commits:
        jo.write(wh, "db.j", data, row_kinds=kinds, compact=compact, version=java)
        ours.write(data, row_kinds=kinds)
        if compact:
            ours.compact(full=True)
    theirs = lab.get_table("db.j")
    steps = _compactions(ours)
    assert any(upgraded for delta, _ in steps for *_, upgraded in delta)   # the case upgrades something
    assert steps == _compactions(theirs)
    assert _layout(ours) == _layout(theirs)
    expected = theirs.to_arrow().sort_by("k")
    assert ours.to_arrow().sort_by("k").equals(expected)

    # Java reads our files (and vectors), writes over them and compacts; we read the result
    assert jo.sort_rows(jo.read(wh, "db.l", version=java), "k") == jo.sort_rows(jo.canonical(expected), "k")
    more = _rows(range(20, 30), "j")
    jo.write(wh, "db.l", more, compact=True, version=java)
    jo.write(wh, "db.j", more, compact=True, version=java)
    assert lab.get_table("db.l").to_arrow().sort_by("k").equals(lab.get_table("db.j").to_arrow().sort_by("k"))


@pytest.mark.compat("compaction", "an upgraded file keeps its deletion vector", "same input; Java reads, compacts")
def test_upgraded_file_keeps_its_deletion_vector_like_java(jo, java, lab, wh):
    """A full compaction moves an upper-level file with a deletion vector into the top level by
    metadata, the vector still attached (its file name unchanged), as Java does on the same
    commits; Java reads our table and compacts it again."""
    options = {"bucket": "1", "target-file-size": "1 kb", "deletion-vectors.enabled": "true"}
    jo.create(wh, "db.j", FIELDS, primary_keys=["k"], options=options, version=java)
    ours = lab.create_table("db.l", SCHEMA, primary_keys=["k"], options=options)
    commits = [(_rows(range(990), "a"), None), (_rows(range(2000, 2250), "b"), None),
               (_rows([2000, 2001], "b"), ["-D", "-D"])]
    for data, kinds in commits:
        jo.write(wh, "db.j", data, row_kinds=kinds, version=java)
        ours.write(data, row_kinds=kinds)
    jo.compact(wh, "db.j", version=java)
    moved = ours.levels().set_index("level").loc[4, "file_name"]
    assert ours.compact(full=True) is not None
    theirs = lab.get_table("db.j")
    assert _compactions(ours)[-1] == _compactions(theirs)[-1]
    after = ours.levels().set_index("file_name")
    assert after.loc[moved, "level"] == 5 and after.loc[moved, "deleted_rows"] == 2
    assert _layout(ours) == _layout(theirs)
    expected = theirs.to_arrow().sort_by("k")
    assert ours.to_arrow().sort_by("k").equals(expected)
    assert jo.sort_rows(jo.read(wh, "db.l", version=java), "k") == jo.sort_rows(jo.canonical(expected), "k")
    jo.write(wh, "db.l", _rows(range(2100, 2110), "j"), compact=True, version=java)
    model = {**{k: f"a{k}" for k in range(990)}, **{k: f"b{k}" for k in range(2002, 2250)},
             **{k: f"j{k}" for k in range(2100, 2110)}}
    got = lab.get_table("db.l").to_arrow().sort_by("k")
    assert got["k"].to_pylist() == sorted(model) and got["v"].to_pylist() == [model[k] for k in sorted(model)]
