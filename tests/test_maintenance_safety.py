"""Files that maintenance must keep: a compaction's upgraded file (same name at a new level)
through changelog expiry and dropped compactions, long-lived changelogs through rollback and
branch expiry, and cross-partition keys still in level 0. Each test failed before its fix."""

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


def _upgrade_messages(t):
    """A full compaction of ``t`` prepared but not committed (as operation/compact.py does)."""
    import uuid

    from paimon_lab.operation.kv_write import KeyValueFileStoreWrite
    write = KeyValueFileStoreWrite(t.store, str(uuid.uuid4()))
    write.compact(True)
    return write, [m for m in (w.prepare_commit(False) for w in write.writers.values()) if m.compacted]


def test_compaction_losing_a_conflict_keeps_the_file_it_upgraded(lab):
    """Two compactions upgrade the same file; the second loses the conflict. Dropping what it
    wrote must not delete the upgraded file: it is a committed file under the same name."""
    from paimon_lab.errors import CommitConflictError
    from paimon_lab.operation.commit import FileStoreCommit

    t = lab.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write(_rows(range(50)))
    write, messages = _upgrade_messages(t)
    assert [f.file_name for f in messages[0].compact_after] == [f.file_name for f in messages[0].compact_before]
    assert t.compact(full=True) is not None          # the other compaction wins
    with pytest.raises(CommitConflictError):
        FileStoreCommit(t.store, write.commit_user).commit(messages)
    assert lab.get_table("db.t").to_arrow().num_rows == 50


def test_failed_compaction_commit_keeps_the_file_it_upgraded(lab, monkeypatch):
    """A compaction commit that fails is discarded; an upgraded file is not ours to delete."""
    from paimon_lab.operation import compact as compact_mod

    t = lab.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write(_rows(range(50)))

    def fail(self, *a, **kw):
        raise OSError("object store down")
    monkeypatch.setattr(compact_mod.FileStoreCommit, "commit", fail)
    with pytest.raises(OSError):
        t.compact(full=True)
    monkeypatch.undo()
    assert lab.get_table("db.t").to_arrow().num_rows == 50


def test_cross_partition_key_in_unlifted_level0_is_located(lab):
    """kv_write._locations read key locations with a batch read, which skips level 0 on
    deletion-vector / first-row tables; with 'lookup-wait' = false a commit's level-0 files stay
    unlifted, so a key written by an earlier commit was not found: it got a second bucket, and a
    cross-partition move left its old rows behind (duplicates, moved rows resurrected)."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.int64(), nullable=False),
                        ("v", pa.string())])
    lab.create_table("db.x", schema, primary_keys=["k"], partition_keys=["p"], options={
        "bucket": "-1", "deletion-vectors.enabled": "true", "lookup-wait": "false",
        "dynamic-bucket.target-row-num": "1"})
    for k, p, v in [(1, 1, "a"), (2, 1, "b"), (2, 1, "c"), (2, 2, "d")]:
        lab.get_table("db.x").write(pa.table({"k": [k], "p": [p], "v": [v]}, schema=schema))
    t = lab.get_table("db.x")
    t.compact(full=True)   # lift every level-0 file
    assert lab.get_table("db.x").to_arrow().sort_by("k").to_pylist() == [
        {"k": 1, "p": 1, "v": "a"}, {"k": 2, "p": 2, "v": "d"}]


def test_rollback_to_an_expired_tag_drops_the_newer_long_lived_changelogs(lab):
    """Rolling back to a tag older than the earliest snapshot must drop the long-lived changelogs
    of the rolled-back commits (Java's RollbackHelper.cleanLongLivedChangelogs): else reading
    changes over that range brings the rolled-back rows back."""
    lab.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
        "changelog.num-retained.max": "20", "changelog-producer": "input"})
    t = lab.get_table("db.t")
    t.write(_rows([1], "a"))
    t.create_tag("t1", 1)
    for i in range(2, 6):
        lab.get_table("db.t").write(_rows([i], "rolled-back"))
    t = lab.get_table("db.t")
    assert t.store.changelog_manager.list_ids()[-1] > 1
    t.rollback_to(tag="t1")
    t = lab.get_table("db.t")
    assert all(i <= 1 for i in t.store.changelog_manager.list_ids())
    t.write(_rows([9], "new"))
    t = lab.get_table("db.t")
    latest = t.store.snapshot_manager.latest_id()
    assert t.changes(1, latest).column("v").to_pylist() == ["new9"]
    assert t.to_arrow().sort_by("k").column("v").to_pylist() == ["a1", "new9"]


def test_branch_changelog_expiry_keeps_what_main_changelogs_read(lab):
    """A branch made from snapshot 1 shares its changelog files. When main's snapshot 1 lives on
    as a long-lived changelog, expiring the branch's changelog 1 must not delete them."""
    lab.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
        "changelog.num-retained.max": "20", "changelog-producer": "input"})
    t = lab.get_table("db.t")
    t.write(_rows([1], "a"))
    t.create_branch("b", snapshot_id=1)
    for i in range(2, 5):
        lab.get_table("db.t").write(_rows([i], "main"))
        lab.get_table("db.t").on_branch("b").write(_rows([i], "branch"))
    main = lab.get_table("db.t")
    assert 1 in main.store.changelog_manager.list_ids()
    b = main.on_branch("b")
    assert 1 in b.store.changelog_manager.list_ids()
    b.expire_changelogs(retain_max=1, retain_min=1)
    assert 1 not in b.store.changelog_manager.list_ids()
    main = lab.get_table("db.t")
    assert main.changes(0, 2).column("v").to_pylist()[:1] == ["a1"]


@pytest.mark.parametrize("options", [
    {"merge-engine": "first-row", "lookup-wait": "false"},
    {"deletion-vectors.enabled": "true", "lookup-wait": "false"},
    {"deletion-vectors.enabled": "true"},
    {}])
def test_cross_partition_moves_and_deletes_land_once(lab, options):
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.int64(), nullable=False),
                        ("v", pa.string())])
    lab.create_table("db.y", schema, primary_keys=["k"], partition_keys=["p"], options={
        "bucket": "-1", "dynamic-bucket.target-row-num": "1", **options})
    steps = [([1], [1], ["a"], None), ([2], [1], ["b"], None), ([2], [1], ["c"], None), ([2], [2], ["d"], None),
             ([3], [2], ["e"], None), ([3], [2], ["e"], ["-D"]), ([3], [3], ["f"], None)]
    for k, p, v, kinds in steps:
        lab.get_table("db.y").write(pa.table({"k": k, "p": p, "v": v}, schema=schema), row_kinds=kinds)
    lab.get_table("db.y").compact(full=True)
    got = {r["k"]: (r["p"], r["v"]) for r in lab.get_table("db.y").to_arrow().to_pylist()}
    assert lab.get_table("db.y").to_arrow().num_rows == len(got)
    if options.get("merge-engine") == "first-row":
        assert got == {1: (1, "a"), 2: (1, "b"), 3: (3, "f")} or got == {1: (1, "a"), 2: (1, "b"), 3: (2, "e")}
    else:
        assert got == {1: (1, "a"), 2: (2, "d"), 3: (3, "f")}
