"""Table lifecycle run by commits: automatic tags, tag expiration, partition expiration, long-lived
changelog; and the procedures over them. The clock is injected (paimon_lab.utils.clock.use_clock)."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

from paimon_lab.core.manifest import DELETE
from paimon_lab.errors import OptionError
from paimon_lab.utils.clock import use_clock

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
PART_SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string())])
UTC = dt.timezone.utc


def ms(text: str) -> int:
    """'2024-01-02 00:30' (UTC) as epoch millis."""
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def rows(lo: int, hi: int) -> pa.Table:
    return pa.table({"k": pa.array(range(lo, hi), pa.int64()), "v": [str(i) for i in range(lo, hi)]}, schema=SCHEMA)


def write_at(t, when: str, data: pa.Table, **kw):
    with use_clock(ms(when)):
        return t.write(data, **kw)


# ---------------------------------------------------------------- automatic tags

def test_process_time_daily_tags(lab):
    t = lab.create_table("db.t", SCHEMA, options={"tag.automatic-creation": "process-time",
                                                  "sink.process-time-zone": "UTC"})
    write_at(t, "2024-01-01 10:00", rows(0, 1))          # first snapshot: tags the day before
    assert [g.name for g in t.tags()] == ["2023-12-31"]
    write_at(t, "2024-01-01 23:00", rows(1, 2))          # same day: no new tag
    assert [g.name for g in t.tags()] == ["2023-12-31"]
    write_at(t, "2024-01-02 00:30", rows(2, 3))          # 2024-01-01 has ended
    tags = {g.name: g for g in t.tags()}
    assert sorted(tags) == ["2023-12-31", "2024-01-01"]
    assert tags["2024-01-01"].snapshot.id == 3
    assert t.to_arrow(tag="2024-01-01").num_rows == 3


def test_hourly_tags_delay_formatter_and_retained_max(lab):
    t = lab.create_table("db.t", SCHEMA, options={
        "tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
        "tag.period-formatter": "without_dashes", "tag.creation-delay": "10 min",
        "tag.num-retained-max": "2", "sink.process-time-zone": "UTC"})
    write_at(t, "2024-03-05 10:05", rows(0, 1))
    assert [g.name for g in t.tags()] == ["20240305 09"]
    write_at(t, "2024-03-05 11:05", rows(1, 2))          # 11:05 - 10 min < 11:00 + 1h: not yet
    assert [g.name for g in t.tags()] == ["20240305 09"]
    write_at(t, "2024-03-05 11:15", rows(2, 3))
    write_at(t, "2024-03-05 12:20", rows(3, 4))
    assert [g.name for g in t.tags()] == ["20240305 10", "20240305 11"]   # the oldest went


def test_manual_tags_are_not_auto_tags(lab):
    t = lab.create_table("db.t", SCHEMA, options={"tag.automatic-creation": "process-time",
                                                  "tag.num-retained-max": "1", "sink.process-time-zone": "UTC"})
    write_at(t, "2024-01-01 10:00", rows(0, 1))
    t.create_tag("mine")
    write_at(t, "2024-01-03 10:00", rows(1, 2))
    assert sorted(g.name for g in t.tags()) == ["2024-01-02", "mine"]


def test_watermark_tags(lab):
    t = lab.create_table("db.t", SCHEMA, options={"tag.automatic-creation": "watermark",
                                                  "tag.creation-period": "two-hours"})
    write_at(t, "2030-01-01 00:00", rows(0, 1))                 # no watermark: no tag
    assert t.tags() == []
    assert t.latest_snapshot().watermark == -2**63
    write_at(t, "2030-01-01 00:00", rows(1, 2), watermark=ms("2024-01-01 05:00"))
    assert [g.name for g in t.tags()] == ["2024-01-01 02"]
    write_at(t, "2030-01-01 00:00", rows(2, 3), watermark=ms("2024-01-01 03:00"))  # lower: kept higher
    assert t.latest_snapshot().watermark == ms("2024-01-01 05:00")
    write_at(t, "2030-01-01 00:00", rows(3, 4), watermark=ms("2024-01-01 06:01"))
    assert [g.name for g in t.tags()] == ["2024-01-01 02", "2024-01-01 04"]


def test_batch_tag(lab):
    t = lab.create_table("db.t", SCHEMA, options={"tag.automatic-creation": "batch",
                                                  "sink.process-time-zone": "UTC", "tag.num-retained-max": "2"})
    write_at(t, "2024-01-01 10:00", rows(0, 1))
    write_at(t, "2024-01-01 11:00", rows(1, 2))
    tags = t.tags()
    assert [(g.name, g.snapshot.id) for g in tags] == [("batch-write-2024-01-01", 2)]
    write_at(t, "2024-01-02 11:00", rows(2, 3))
    write_at(t, "2024-01-03 11:00", rows(3, 4))
    assert [g.name for g in t.tags()] == ["batch-write-2024-01-02", "batch-write-2024-01-03"]


def test_tag_json_and_time_expiration(lab):
    t = lab.create_table("db.t", SCHEMA, options={"tag.automatic-creation": "process-time",
                                                  "tag.default-time-retained": "1 d",
                                                  "sink.process-time-zone": "UTC"})
    write_at(t, "2024-01-01 10:00", rows(0, 1))
    with use_clock(ms("2024-01-01 10:00")):
        t.create_tag("keep", time_retained_seconds=10 * 86400)
    text = t.file_io.read_text(t.store.tag_manager.path("2023-12-31"))
    raw = json.loads(text)
    assert raw["tagTimeRetained"] == 86400.0 and raw["id"] == 1
    assert '"tagTimeRetained": 86400.000000000' in text      # a Duration, as Jackson writes it
    local = dt.datetime.fromtimestamp(ms("2024-01-01 10:00") / 1000)
    assert raw["tagCreateTime"] == [local.year, local.month, local.day, local.hour, local.minute]
    write_at(t, "2024-01-01 12:00", rows(1, 2))
    assert "2023-12-31" in {g.name for g in t.tags()}
    # more than a day after the tags were created (local clock: the zone of this process)
    later = dt.datetime.fromtimestamp(ms("2024-01-01 10:00") / 1000) + dt.timedelta(days=1, hours=2)
    with use_clock(int(later.timestamp() * 1000)):
        t.write(rows(2, 3))
    assert "2023-12-31" not in {g.name for g in t.tags()}
    assert "keep" in {g.name for g in t.tags()}


def test_custom_period_duration_names_tags_by_minute(lab):
    t = lab.create_table("db.t", SCHEMA, options={"tag.automatic-creation": "process-time",
                                                  "tag.creation-period-duration": "30 min",
                                                  "sink.process-time-zone": "UTC"})
    write_at(t, "2024-01-01 10:05", rows(0, 1))          # the period [09:30, 10:00) has ended
    write_at(t, "2024-01-01 10:40", rows(1, 2))
    assert [g.name for g in t.tags()] == ["202401010930", "202401011000"]   # Java's yyyyMMddHHmm


@pytest.mark.parametrize("completion, expected", [("true", ["2024-01-01 09", "2024-01-01 10"]),
                                                  ("false", ["2024-01-01 09", "2024-01-01 12"])])
def test_automatic_completion_tags_the_skipped_period_next(lab, completion, expected):
    t = lab.create_table("db.t", SCHEMA, options={"tag.automatic-creation": "process-time",
                                                  "tag.creation-period": "hourly",
                                                  "tag.automatic-completion": completion,
                                                  "sink.process-time-zone": "UTC"})
    write_at(t, "2024-01-01 10:05", rows(0, 1))
    write_at(t, "2024-01-01 13:05", rows(1, 2))          # 10, 11 and 12 have ended: one tag a commit
    assert [g.name for g in t.tags()] == expected


def test_batch_tag_customized_name(lab):
    t = lab.create_table("db.t", SCHEMA, options={"tag.automatic-creation": "batch",
                                                  "tag.batch.customized-name": "nightly"})
    write_at(t, "2024-01-01 10:05", rows(0, 1))
    assert [g.name for g in t.tags()] == ["nightly"]


@pytest.mark.parametrize("zone, tag", [("UTC", "2023-12-31"), ("GMT+08:00", "2024-01-01")])
def test_watermark_time_zone(lab, zone, tag):
    t = lab.create_table("db.t", SCHEMA, options={"tag.automatic-creation": "watermark",
                                                  "sink.watermark-time-zone": zone})
    # 17:00 UTC on Jan 1 is 01:00 on Jan 2 at +08:00: the day that has ended differs
    write_at(t, "2030-01-01 00:00", rows(0, 1), watermark=ms("2024-01-01 17:00"))
    assert [g.name for g in t.tags()] == [tag]


def test_tag_time_expire_disabled_keeps_tags(lab):
    t = lab.create_table("db.t", SCHEMA, options={"tag.automatic-creation": "process-time",
                                                  "tag.default-time-retained": "1 h",
                                                  "tag.time-expire-enabled": "false",
                                                  "sink.process-time-zone": "UTC"})
    write_at(t, "2024-01-01 10:00", rows(0, 1))
    write_at(t, "2024-01-05 10:00", rows(1, 2))          # days past the first tag's retention
    assert [g.name for g in t.tags()] == ["2023-12-31", "2024-01-04"]


def test_tag_options_validate(lab):
    with pytest.raises(OptionError):
        lab.create_table("db.bad", SCHEMA, options={"tag.creation-period": "weekly"})
    with pytest.raises(OptionError):
        lab.create_table("db.bad", SCHEMA, options={"sink.process-time-zone": "Mars/Base"})
    t = lab.create_table("db.t", SCHEMA, options={"tag.automatic-creation": "process-time",
                                                  "tag.creation-delay": "1 d"})
    with pytest.raises(OptionError, match="creation-delay"):
        t.write(rows(0, 1))


# ---------------------------------------------------------------- partition expiration

def _part_rows(dts) -> pa.Table:
    return pa.table({"k": pa.array(range(len(dts)), pa.int64()), "dt": list(dts)}, schema=PART_SCHEMA)


def test_partition_expiration_on_commit(lab):
    t = lab.create_table("db.p", PART_SCHEMA, partition_keys=["dt"], options={
        "partition.expiration-time": "2 d", "partition.expiration-check-interval": "0 s",
        "partition.timestamp-formatter": "yyyyMMdd"})
    local = dt.datetime(2024, 1, 10, 12)
    with use_clock(int(local.timestamp() * 1000)):
        t.write(_part_rows(["20240101", "20240107", "20240109", "junk"]))
    snaps = t.snapshots()
    assert [s.commit_kind for s in snaps] == ["APPEND", "OVERWRITE"]
    assert sorted(t.to_arrow()["dt"].to_pylist()) == ["20240109", "junk"]
    # the dropped partitions are gone from the newest snapshot, still readable in the older one
    assert sorted(t.to_arrow(snapshot_id=1)["dt"].to_pylist()) == ["20240101", "20240107", "20240109", "junk"]


def test_partition_expiration_pattern_update_time_and_max(lab):
    schema = pa.schema([("k", pa.int64()), ("y", pa.string()), ("m", pa.string()), ("d", pa.string())])
    t = lab.create_table("db.p", schema, partition_keys=["y", "m", "d"], options={
        "partition.expiration-time": "1 d", "partition.expiration-check-interval": "0 s",
        "partition.timestamp-pattern": "$y-$m-$d", "partition.expiration-max-num": "1"})
    data = pa.table({"k": [1, 2, 3], "y": ["2024"] * 3, "m": ["01"] * 3, "d": ["01", "02", "05"]}, schema=schema)
    with use_clock(int(dt.datetime(2024, 1, 5, 12).timestamp() * 1000)):
        t.write(data)
    assert sorted(t.to_arrow()["d"].to_pylist()) == ["02", "05"]   # one a time
    u = lab.create_table("db.u", PART_SCHEMA, partition_keys=["dt"], options={
        "partition.expiration-time": "1 h", "partition.expiration-strategy": "update-time",
        "partition.expiration-check-interval": "0 s"})
    with use_clock(int(dt.datetime(2024, 1, 5, 10).timestamp() * 1000)):
        u.write(_part_rows(["old"]))
    with use_clock(int(dt.datetime(2024, 1, 5, 12).timestamp() * 1000)):
        u.write(_part_rows(["new"]))
    assert u.to_arrow()["dt"].to_pylist() == ["new"]


def test_partition_expiration_respects_check_interval(lab):
    t = lab.create_table("db.p", PART_SCHEMA, partition_keys=["dt"], options={
        "partition.expiration-time": "1 d", "partition.expiration-check-interval": "1 h"})
    base = dt.datetime(2024, 1, 10, 12)

    def at(hours):
        return int((base + dt.timedelta(hours=hours)).timestamp() * 1000)

    with use_clock(at(0)):
        t.write(_part_rows(["2024-01-01"]))             # a fresh committer does not check at once
    assert t.to_arrow().num_rows == 1
    with use_clock(at(2)):
        t.write(_part_rows(["2024-01-10"]))
    assert t.to_arrow()["dt"].to_pylist() == ["2024-01-10"]
    with use_clock(at(2.5)):
        t.write(_part_rows(["2024-01-02"]))             # within the hour since the last check
    assert sorted(t.to_arrow()["dt"].to_pylist()) == ["2024-01-02", "2024-01-10"]


@pytest.mark.parametrize("batch, kinds", [(None, ["APPEND", "OVERWRITE"]),
                                          ("1", ["APPEND", "OVERWRITE", "OVERWRITE", "OVERWRITE"])])
def test_partition_expiration_batch_size(lab, batch, kinds):
    options = {"partition.expiration-time": "2 d", "partition.expiration-check-interval": "0 s",
               "partition.timestamp-formatter": "yyyyMMdd"}
    if batch:
        options["partition.expiration-batch-size"] = batch
    t = lab.create_table("db.p", PART_SCHEMA, partition_keys=["dt"], options=options)
    with use_clock(int(dt.datetime(2024, 1, 10, 12).timestamp() * 1000)):
        t.write(_part_rows(["20240101", "20240102", "20240103", "20240109"]))
    assert [s.commit_kind for s in t.snapshots()] == kinds     # one OVERWRITE per batch
    assert t.to_arrow()["dt"].to_pylist() == ["20240109"]


@pytest.mark.parametrize("check, left", [("false", ["2024-01-01", "2024-01-10"]), ("true", ["2024-01-10"])])
def test_end_input_checks_partition_expiration_at_once(lab, check, left):
    t = lab.create_table("db.p", PART_SCHEMA, partition_keys=["dt"], options={
        "partition.expiration-time": "1 d", "partition.expiration-check-interval": "1 h",
        "end-input.check-partition-expire": check})
    with use_clock(int(dt.datetime(2024, 1, 10, 12).timestamp() * 1000)):
        t.write(_part_rows(["2024-01-01", "2024-01-10"]))   # a fresh committer's first commit
    assert sorted(t.to_arrow()["dt"].to_pylist()) == left


# ---------------------------------------------------------------- long-lived changelog

def _bucket_files(t, prefix: str) -> set[str]:
    import os
    out = set()
    for root, _, files in os.walk(t.path):
        out.update(f for f in files if f.startswith(prefix) and "bucket-" in root)
    return out


@pytest.mark.parametrize("producer", ["input", "none"])
def test_long_lived_changelog_survives_snapshot_expiry(lab, producer):
    t = lab.create_table("db.c", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "changelog-producer": producer, "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "2", "changelog.num-retained.max": "4",
        "num-sorted-run.compaction-trigger": "2"})
    written = {}   # APPEND snapshot id -> keys
    for i in range(5):
        written[t.write(rows(i * 10, i * 10 + 3))] = list(range(i * 10, i * 10 + 3))

    def expected(after: int) -> list[int]:
        return sorted(k for sid, keys in written.items() if sid > after for k in keys)

    snaps = [s.id for s in t.snapshots()]
    latest = snaps[-1]
    assert len(snaps) == 2
    cm = t.store.changelog_manager
    kept = cm.list_ids()
    assert kept == list(range(latest - 4 + 1, snaps[0]))       # changelog.num-retained.max = 4
    assert int(t.file_io.read_text(cm.dir + "/LATEST").strip()) == kept[-1]
    assert t.system("changelogs").column("snapshot_id").to_pylist() == kept   # the $changelogs table
    assert any(written.get(c) for c in kept)                   # an expired APPEND snapshot lives on
    # every change since the oldest changelog is still readable, from changelog files or delta files
    start = kept[0] - 1
    assert sorted(t.changes(start, latest)["k"].to_pylist()) == expected(start)
    assert t.to_arrow().num_rows == 15
    streamed = [k for b in t.stream(mode="from-snapshot", snapshot_id=kept[0], timeout=0)
                for k in b.rows["k"].to_pylist()]
    assert sorted(streamed) == expected(start)              # a stream starts inside the changelogs
    if producer == "input":
        assert _bucket_files(t, "changelog-")
    # remove_orphan_files keeps what changelogs read
    assert t.remove_orphan_files(older_than_millis=2**62) == []
    assert sorted(t.changes(start, latest)["k"].to_pylist()) == expected(start)
    # more commits: changelogs beyond changelog.num-retained.max expire, with their files
    for i in range(5, 12):
        written[t.write(rows(i * 10, i * 10 + 3))] = list(range(i * 10, i * 10 + 3))
    latest = t.latest_snapshot().id
    ids = cm.list_ids()
    assert ids == list(range(latest - 4 + 1, t.snapshots()[0].id))
    assert int(t.file_io.read_text(cm.dir + "/EARLIEST").strip()) == ids[0]
    assert sorted(t.changes(ids[0] - 1, latest)["k"].to_pylist()) == expected(ids[0] - 1)
    assert t.to_arrow().num_rows == 36
    # nothing left behind but (no producer) files compacted away in a retained changelog's commit,
    # which go when that changelog does, as in Java
    mio = t.store.manifest_io
    pending = {e.file.file_name for c in cm.changelogs() if producer == "none"
               for m in mio.read_manifest_list(c.delta_manifest_list)
               for e in mio.read_manifest(m.file_name) if e.kind == DELETE}
    orphans = {p.rsplit("/", 1)[-1] for p in t.remove_orphan_files(older_than_millis=2**62, dry_run=True)}
    assert orphans <= pending
    if producer == "input":   # the expired changelogs' files went with them
        live = {f for c in cm.changelogs() + t.snapshots() if c.changelog_manifest_list
                for m in t.store.manifest_io.read_manifest_list(c.changelog_manifest_list)
                for f in (e.file.file_name for e in t.store.manifest_io.read_manifest(m.file_name))}
        assert _bucket_files(t, "changelog-") == live


@pytest.mark.parametrize("retain_min, time_retained, kept", [("1", "1 h", [6]), ("3", "1 h", [5, 6]),
                                                             ("1", "30 d", [1, 2, 3, 4, 5, 6])])
def test_changelog_time_retained_and_min(lab, retain_min, time_retained, kept):
    t = lab.create_table("db.c", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "1", "changelog.num-retained.max": "10",
        "changelog.num-retained.min": retain_min, "changelog.time-retained": time_retained})
    for i in range(6):                                  # a commit a day
        with use_clock(int(dt.datetime(2024, 1, 1 + i, 12).timestamp() * 1000)):
            t.write(rows(i * 10, i * 10 + 3))
    # changelogs older than the time retained go, but the newest 'min' (counting snapshots) stay
    assert t.store.changelog_manager.list_ids() == kept


def test_not_decoupled_deletes_changelog_files(lab):
    t = lab.create_table("db.c", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "1"})
    for i in range(3):
        t.write(rows(i * 10, i * 10 + 3))
    assert t.store.changelog_manager.list_ids() == []
    assert len(_bucket_files(t, "changelog-")) == 1


# ---------------------------------------------------------------- fast-forward

def test_fast_forward_drops_mains_newer_schemas_and_tags(lab):
    from paimon_lab import SchemaChange

    t = lab.create_table("db.f", SCHEMA, options={"bucket": "-1"})
    t.write(rows(0, 2))
    t.create_tag("base")
    b = t.create_branch("dev", tag="base")
    b.write(rows(10, 12))
    # main moves on: a new schema, a commit and a tag the branch never saw
    t.alter(SchemaChange.add_column("extra", pa.int32()))
    t.write(pa.table({"k": [5], "v": ["x"], "extra": pa.array([1], pa.int32())}))
    t.create_tag("main-only")
    assert t.store.schema_manager.list_ids() == [0, 1]
    t.fast_forward("dev")
    assert t.store.schema_manager.list_ids() == [0]
    assert t.schema.field_names == ["k", "v"]
    assert sorted(g.name for g in t.tags()) == ["base"]
    assert sorted(t.to_arrow()["k"].to_pylist()) == [0, 1, 10, 11]
    fresh = lab.get_table("db.f")
    assert fresh.schema.field_names == ["k", "v"]
    assert fresh.latest_snapshot().id == b.latest_snapshot().id
    fresh.write(rows(20, 21))              # main continues from the branch's state
    assert sorted(fresh.to_arrow()["k"].to_pylist()) == [0, 1, 10, 11, 20]


def test_deleting_a_tag_deletes_the_files_only_it_kept(lab):
    t = lab.create_table("db.d", SCHEMA, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write(rows(0, 3))
    t.create_tag("old")
    t.create_tag("old2")
    t.write(rows(10, 13), overwrite=True)
    assert [s.id for s in t.snapshots()] == [2]
    before = _bucket_files(t, "data-")
    assert len(before) == 2
    t.delete_tag("old")                       # 'old2' still holds the first file
    assert _bucket_files(t, "data-") == before
    t.delete_tag("old2")
    assert len(_bucket_files(t, "data-")) == 1
    assert sorted(t.to_arrow()["k"].to_pylist()) == [10, 11, 12]
    assert t.remove_orphan_files(older_than_millis=2**62, dry_run=True) == []


def test_row_dml_commits_run_the_lifecycle_too(lab):
    t = lab.create_table("db.a", SCHEMA, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
                                                  "tag.automatic-creation": "batch"})
    t.write(rows(0, 5))
    t.delete("k < 2")
    assert [s.commit_kind for s in t.snapshots()] == ["OVERWRITE"]
    assert [g.snapshot.id for g in t.tags()] == [2]
    assert sorted(t.to_arrow()["k"].to_pylist()) == [2, 3, 4]
