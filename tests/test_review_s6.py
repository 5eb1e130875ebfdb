"""Data-safety review (s6): regressions for defects found in the merged long-lived changelog,
compaction-upgrade and maintenance code."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab.operation.expire import expire_changelogs

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(keys, tag="v"):
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def test_changelog_expiry_keeps_a_file_its_commit_upgraded(lab):
    """No changelog producer, changelog outliving snapshots: a compaction that upgrades a file
    (DELETE f@0 + ADD f@top in one delta) must not make changelog expiry delete f, which the
    latest snapshot still reads (Java's getDataFileToDelete drops a DELETE re-ADDed in the list)."""
    t = lab.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
        "changelog.num-retained.max": "20"})
    t.write(_rows(range(50)))
    name = t.levels()["file_name"].iloc[0]
    t.compact(full=True)                       # upgrade: same file, top level
    assert t.levels()["file_name"].tolist() == [name]
    for i in range(3):                         # other keys: the upgraded file stays live
        t.write(_rows([1000 + i]))
    assert t.store.changelog_manager.list_ids()  # snapshots 1, 2 live on as changelogs
    expire_changelogs(t.store, retain_max=1, retain_min=1)
    t = lab.get_table("db.t")
    assert t.to_arrow().num_rows == 53
