"""Lifecycle features between Java Paimon and paimon-lab: partitions we expired, tags we created
automatically, long-lived changelogs (changelog/changelog-N) that either side writes and the other
reads or expires further."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from paimon_lab.utils.clock import use_clock

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
FIELDS = [("k", "BIGINT NOT NULL"), ("v", "STRING")]
PART = pa.schema([pa.field("k", pa.int64(), nullable=False), ("dt", pa.string())])


def _rows(lo: int, hi: int) -> pa.Table:
    return pa.table({"k": pa.array(range(lo, hi), pa.int64()), "v": [f"v{i}" for i in range(lo, hi)]}, schema=SCHEMA)


def _same(jo, java_rows, lab_rows: pa.Table) -> None:
    assert jo.sort_rows(java_rows, "k") == jo.sort_rows(jo.canonical(lab_rows), "k")


def _at(*args) -> int:
    return int(dt.datetime(*args).timestamp() * 1000)


@pytest.mark.compat("lifecycle", "expired partitions and automatic tags", "lab writes; Java reads")
def test_java_reads_expired_partitions_and_auto_tags(jo, java, lab, wh):
    t = lab.create_table("db.p", PART, partition_keys=["dt"], options={
        "partition.expiration-time": "2 d", "partition.expiration-check-interval": "0 s",
        "partition.timestamp-formatter": "yyyyMMdd", "tag.automatic-creation": "process-time",
        "tag.default-time-retained": "30 d"})
    data = pa.table({"k": pa.array(range(6), pa.int64()),
                     "dt": ["20240101", "20240102", "20240108", "20240109", "20240110", "20240110"]}, schema=PART)
    with use_clock(_at(2024, 1, 10, 12)):
        t.write(data)
    with use_clock(_at(2024, 1, 11, 0, 30)):
        t.write(data.slice(5))
    assert [s.commit_kind for s in t.snapshots()][:2] == ["APPEND", "OVERWRITE"]
    tags = [g.name for g in t.tags()]
    assert tags == ["2024-01-09", "2024-01-10"]
    java_snaps = jo.snapshots(wh, "db.p", version=java)
    assert [s.get("commitKind") or s.get("commit_kind") for s in java_snaps][:2] == ["APPEND", "OVERWRITE"]
    _same(jo, jo.read(wh, "db.p", version=java), t.to_arrow())
    assert sorted(r["dt"] for r in jo.read(wh, "db.p", snapshot=2, version=java)) == \
        ["20240109", "20240110", "20240110"]
    assert sorted(r["dt"] for r in jo.read(wh, "db.p", version=java)) == ["20240110"] * 3
    for tag in tags:
        _same(jo, jo.read(wh, "db.p", tag=tag, version=java), t.to_arrow(tag=tag))


@pytest.mark.compat("lifecycle", "long-lived changelog files", "both")
def test_long_lived_changelog_both_ways(jo, java, lab, wh):
    options = {"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
               "snapshot.num-retained.max": "2", "changelog.num-retained.max": "5"}
    t = lab.create_table("db.c", SCHEMA, primary_keys=["k"], options=options)
    for i in range(5):
        t.write(_rows(i * 10, i * 10 + 2))
    cm = t.store.changelog_manager
    assert cm.list_ids()
    # Java commits on top: it reads our changelog-N files and hints and expires them further
    for i in range(5, 8):
        jo.write(wh, "db.c", _rows(i * 10, i * 10 + 2), version=java)
    t.store.refresh()
    latest = t.latest_snapshot().id
    ids = cm.list_ids()
    assert ids == list(range(latest - 5 + 1, t.snapshots()[0].id))
    keys = sorted(t.changes(ids[0] - 1, latest)["k"].to_pylist())
    assert keys and keys[-2:] == [70, 71]
    assert set(keys) <= set(range(80))
    _same(jo, jo.read(wh, "db.c", version=java), t.to_arrow())
    # and we commit on top of Java's changelogs
    t.write(_rows(100, 102))
    latest = t.latest_snapshot().id
    ids = cm.list_ids()
    assert ids == list(range(latest - 5 + 1, t.snapshots()[0].id))
    assert sorted(t.changes(ids[0] - 1, latest)["k"].to_pylist())[-2:] == [100, 101]
    _same(jo, jo.read(wh, "db.c", version=java), t.to_arrow())


@pytest.mark.compat("lifecycle", "changelogs Java kept after expiration", "Java writes; lab reads")
def test_lab_reads_changelogs_java_kept(jo, java, lab, wh):
    jo.create(wh, "db.j", FIELDS, primary_keys=["k"], options={
        "bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "1", "changelog.num-retained.max": "10"}, version=java)
    for i in range(4):
        jo.write(wh, "db.j", _rows(i * 10, i * 10 + 2), version=java)
    t = lab.get_table("db.j")
    latest = t.latest_snapshot().id
    assert [s.id for s in t.snapshots()] == [latest]
    assert t.store.changelog_manager.list_ids() == list(range(1, latest))
    assert sorted(t.changes(0, latest)["k"].to_pylist()) == [0, 1, 10, 11, 20, 21, 30, 31]


@pytest.mark.compat("lifecycle", "manifest compaction", "lab compacts; Java reads, writes")
def test_java_reads_after_manifest_compaction(jo, java09, lab, wh):
    t = lab.create_table("db.m", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    for i in range(4):
        t.write(_rows(i * 10, i * 10 + 5))
    t.delete("k < 12")
    assert t.compact_manifests() == t.latest_snapshot().id
    assert t.latest_snapshot().commit_kind == "COMPACT"
    _same(jo, jo.read(wh, "db.m", version=java09), t.to_arrow())
    jo.write(wh, "db.m", _rows(100, 102), version=java09)   # and Java commits on top
    t.store.refresh()
    _same(jo, jo.read(wh, "db.m", version=java09), t.to_arrow())
