"""Changelog files carry the level Java gives them: 0 for the input producer, the compaction's
output level for the lookup and full-compaction producers. Java's batch scans of deletion-vector
(and first-row) tables skip level-0 files, its changelog reads included, so a lookup changelog
at level 0 reads as empty in Java (tests/java/test_java_merge_engines.py, deletion-vectors-lookup)."""

from __future__ import annotations

import pyarrow as pa
import pytest

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _changelog_levels(t) -> list[int]:
    mio = t.store.manifest_io
    levels = []
    for snap in t.snapshots():
        if snap.changelog_manifest_list:
            for meta in mio.read_manifest_list(snap.changelog_manifest_list):
                levels += [e.file.level for e in mio.read_manifest(meta.file_name)]
    return levels


@pytest.mark.parametrize("options,level0", [
    ({"changelog-producer": "input"}, True),
    ({"changelog-producer": "lookup"}, False),
    ({"changelog-producer": "lookup", "deletion-vectors.enabled": "true"}, False),
    ({"changelog-producer": "full-compaction"}, False),
], ids=["input", "lookup", "lookup-dv", "full-compaction"])
def test_changelog_file_levels(catalog, options, level0):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", **options})
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    t.write(pa.table({"k": [2, 4], "v": ["B", "d"]}, schema=SCHEMA))
    if options["changelog-producer"] == "full-compaction":
        t.compact(full=True)
    t = catalog.get_table("db.t")
    levels = _changelog_levels(t)
    assert levels
    if level0:
        assert set(levels) == {0}
    else:  # the output levels of the compactions that produced them (the top one for full compaction)
        assert min(levels) > 0
        if options["changelog-producer"] == "full-compaction":
            assert set(levels) == {5}  # the top of the default 6 levels
