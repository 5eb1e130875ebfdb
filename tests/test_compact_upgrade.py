"""Compaction moves files that need no merge to the output level by metadata only (Java's
upgrade), and rewrites them where Java does: deletes going to the top level, runs of small files
(changelog producers, deletion vectors and first-row: tests/test_compact_upgrade_changelog.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _table(lab, name, **options):
    return lab.create_table(f"db.{name}", SCHEMA, primary_keys=["k"], options={"bucket": "1", **options})


def _rows(keys, tag="v"):
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def _delta(t):
    snap = t.latest_snapshot()
    mio = t.store.manifest_io
    return sorted((e.kind, e.file.file_name, e.file.level)
                  for m in mio.read_manifest_list(snap.delta_manifest_list) for e in mio.read_manifest(m.file_name))


def test_lone_level0_file_is_upgraded_not_rewritten(lab):
    t = _table(lab, "t")
    t.write(_rows(range(50)))
    name = t.levels()["file_name"].iloc[0]
    assert t.compact(full=True) is not None
    top = t.store.num_levels - 1
    assert _delta(t) == [(0, name, top), (1, name, 0)]
    assert t.to_arrow().sort_by("k").equals(_rows(range(50)))
    # nothing left to do: the file is at the top without deletes
    assert t.compact(full=True) is None


def test_file_with_deletes_is_rewritten_into_the_top_level(lab):
    t = _table(lab, "t")
    t.write(_rows(range(50)), row_kinds=["+I"] * 40 + ["-D"] * 10)
    name = t.levels()["file_name"].iloc[0]
    assert t.compact(full=True) is not None
    delta = _delta(t)
    assert (1, name, 0) in delta and all(n != name for kind, n, _ in delta if kind == 0)
    assert t.levels()["row_count"].tolist() == [40]
    assert t.to_arrow().sort_by("k").equals(_rows(range(40)))


def test_overlapping_files_are_merged(lab):
    t = _table(lab, "t")
    t.write(_rows(range(50)))
    t.write(_rows(range(25, 75), "w"))
    names = set(t.levels()["file_name"])
    assert t.compact(full=True) is not None
    after = t.levels()
    assert len(after) == 1 and after["file_name"].iloc[0] not in names
    assert t.to_arrow().num_rows == 75


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_changelog_producers_read_the_rows_of_an_upgraded_file(lab, producer):
    t = _table(lab, "t", **{"changelog-producer": producer, "write-only": "true"})
    t.write(_rows(range(20)))
    name = t.levels()["file_name"].iloc[0]
    t.compact(full=True)
    t = lab.get_table("db.t")
    assert t.levels()["file_name"].tolist() == [name]   # moved to the top, not rewritten
    assert t.to_arrow().num_rows == 20
    # the changelog was produced from the rows
    assert t.snapshot_changes(t.latest_snapshot())["rowkind"].to_pylist() == ["+I"] * 20


@pytest.mark.parametrize("ratio, rewritten", [("0.7", False), ("5", True)])
def test_small_file_ratio_decides_which_files_of_a_unit_are_rewritten(lab, ratio, rewritten):
    t = _table(lab, f"r{ratio.replace('.', '')}", **{"target-file-size": "4 kb",
                                                     "compaction.small-file-ratio": ratio})
    t.write(_rows(range(5000)))                # level-0 files of ~6 KB, side by side in key order
    before = t.levels()
    assert len(before) > 1 and set(before["level"]) == {0}
    # a file alone in its key range is upgraded unless it is under target-file-size * ratio;
    # small files are rewritten together
    assert t.compact(full=True) is not None
    after = t.levels()
    assert set(after["level"]) == {t.store.num_levels - 1}
    assert (set(after["file_name"]) == set(before["file_name"])) is not rewritten
    assert t.to_arrow().sort_by("k").equals(_rows(range(5000)))
    # one run at the top level without deletes: a full compaction has nothing to do (as Java)
    assert t.compact(full=True) is None
    assert set(t.levels()["file_name"]) == set(after["file_name"])


def test_full_compaction_upgrades_big_files_and_rewrites_overlapping_ones(lab):
    t = _table(lab, "mix", **{"target-file-size": "4 kb"})
    t.write(_rows(range(0, 3000)))             # side-by-side level-0 files
    t.write(_rows(range(100, 130), "new"))     # overlaps the first of them only
    files = t.levels()
    assert t.compact(full=True) is not None
    after = t.levels()
    kept = set(files["file_name"]) & set(after["file_name"])
    # the files whose key ranges nothing else touches keep their names (upgraded by metadata);
    # the overlapping ones are merged into new files
    assert kept and len(kept) < len(files) - 1
    model = {k: f"v{k}" for k in range(3000)} | {k: f"new{k}" for k in range(100, 130)}
    got = t.to_arrow().sort_by("k")
    assert got["k"].to_pylist() == sorted(model) and got["v"].to_pylist() == [model[k] for k in sorted(model)]


def test_full_compaction_rewrites_only_top_level_files_with_deletion_vectors(lab):
    t = _table(lab, "dv", **{"target-file-size": "4 kb", "deletion-vectors.enabled": "true"})
    t.write(_rows(range(3000)))
    t.compact(full=True)
    top = t.levels()
    assert len(top) > 1 and set(top["level"]) == {t.store.num_levels - 1} and not top["deleted_rows"].any()
    t.delete("k IN (5, 6)")                    # marks two rows of the first top-level file deleted
    dv = t.levels()
    assert set(dv["level"]) == {t.store.num_levels - 1} and dv["deleted_rows"].sum() == 2
    t.compact(full=True)
    after = t.levels()
    # as Java 1.2+ (apache/paimon#5638): the file with a deletion vector is rewritten (its deleted
    # rows dropped), the other top-level files are left as they are
    assert not after["deleted_rows"].any()
    kept = set(top["file_name"]) & set(after["file_name"])
    assert len(kept) == len(top) - 1
    assert t.to_arrow().sort_by("k").equals(_rows([k for k in range(3000) if k not in (5, 6)]))
    assert t.compact(full=True) is None
