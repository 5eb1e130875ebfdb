"""The lifecycle procedures through SQL (CALL sys.<name>, positional and named arguments) and the
lifecycle options through ALTER TABLE ... SET."""

from __future__ import annotations

import datetime as dt

import pytest

from paimon_lab import Catalog
from paimon_lab.sql import Session, SqlError
from paimon_lab.store.consumer import ConsumerManager
from paimon_lab.utils.clock import use_clock

pytest.importorskip("duckdb")


def local_ms(*args) -> int:
    return int(dt.datetime(*args).timestamp() * 1000)


@pytest.fixture
def s(tmp_path):
    session = Session()
    session.run(f"CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = '{tmp_path}/wh'); USE CATALOG paimon;")
    yield session
    session.close()


def col(table, name):
    return table[name].to_pylist()


def test_expire_partitions_procedure(s, tmp_path):
    s.run("CREATE TABLE p (k BIGINT, dt STRING) PARTITIONED BY (dt)")
    with use_clock(local_ms(2024, 1, 10, 12)):
        s.run("INSERT INTO p VALUES (1, '2024-01-01'), (2, '2024-01-05'), (3, '2024-01-09')")
        out = s.execute("CALL sys.expire_partitions(`table` => 'default.p', expiration_time => '3 d')")
        assert col(out, "expired_partitions") == ["dt=2024-01-01", "dt=2024-01-05"]
        again = s.execute("CALL sys.expire_partitions('default.p', '3 d')")
        assert col(again, "expired_partitions") == ["No expired partitions."]
        one = s.execute("CALL sys.expire_partitions('default.p', '0 d', NULL, NULL, NULL, 1)")
        assert col(one, "expired_partitions") == ["dt=2024-01-09"]
    t = Catalog(f"{tmp_path}/wh").get_table("default.p")
    assert [sn.commit_kind for sn in t.snapshots()] == ["APPEND", "OVERWRITE", "OVERWRITE"]
    assert t.to_arrow().num_rows == 0
    with pytest.raises(SqlError, match="expiration-time"):
        s.execute("CALL sys.expire_partitions('default.p')")


def test_tag_procedures(s, tmp_path):
    s.run("CREATE TABLE t (k BIGINT, v STRING)")
    t = Catalog(f"{tmp_path}/wh").get_table("default.t")
    with use_clock(1_000_000):
        t.write({"k": [1], "v": ["a"]}, watermark=500)
    with use_clock(2_000_000):
        t.write({"k": [2], "v": ["b"]}, watermark=1500)
    out = s.execute("CALL sys.create_tag_from_timestamp('default.t', 'ts', 1500000)")
    assert (col(out, "tagName"), col(out, "snapshot"), col(out, "commit_time"), col(out, "watermark")) == \
        (["ts"], [2], [2_000_000], ["1500"])
    out = s.execute("CALL sys.create_tag_from_watermark(`table` => 'default.t', tag => 'wm', watermark => 400, "
                    "time_retained => '1 h')")
    assert col(out, "snapshot") == [1]
    with pytest.raises(SqlError, match="watermark"):
        s.execute("CALL sys.create_tag_from_watermark('default.t', 'none', 99999)")
    assert t.tag_manager.get("wm").time_retained_seconds == 3600
    s.run("CALL sys.rename_tag('default.t', 'ts', 'ts2')")
    s.run("CALL sys.replace_tag('default.t', 'ts2', 1)")
    assert {g.name: g.snapshot.id for g in t.tags()} == {"ts2": 1, "wm": 1}
    # 'wm' was created at the real time with one hour to live
    later = dt.datetime.now() + dt.timedelta(hours=2)
    with use_clock(int(later.timestamp() * 1000)):
        assert col(s.execute("CALL sys.expire_tags('default.t')"), "expired_tags") == ["wm"]
        assert col(s.execute("CALL sys.expire_tags('default.t')"), "expired_tags") == ["No expired tags."]
    cutoff = (dt.datetime.now() + dt.timedelta(minutes=5)).strftime("%Y-%m-%d %H:%M:%S")
    assert col(s.execute(f"CALL sys.expire_tags('default.t', '{cutoff}')"), "expired_tags") == ["ts2"]


def test_trigger_tag_creation_watermark_rollback_and_consumers(s, tmp_path):
    s.run("CREATE TABLE t (k BIGINT, v STRING) WITH ('tag.automatic-creation' = 'process-time', "
          "'sink.process-time-zone' = 'UTC', 'write-only' = 'true')")
    t = Catalog(f"{tmp_path}/wh").get_table("default.t")
    day = 86_400_000
    with use_clock(10 * day + 5):
        t.write({"k": [1], "v": ["a"]}, watermark=100)
        t.write({"k": [2], "v": ["b"]}, watermark=200)
    assert t.tags() == []                          # write-only: no tags on commit
    s.run("CALL sys.trigger_tag_automatic_creation('default.t')")
    assert [g.name for g in t.tags()] == ["1970-01-10"]
    s.run("CALL sys.rollback_to_watermark('default.t', 150)")
    assert [sn.id for sn in t.snapshots()] == [1]
    t.store.refresh()
    cm = ConsumerManager(t.store)
    cm.record("a1", 1)
    cm.record("b1", 1)
    s.run("CALL sys.reset_consumer('default.t', 'a1', 1)")
    s.run("CALL sys.clear_consumers('default.t', 'a.*')")
    assert list(cm.list()) == ["b1"]
    s.run("CALL sys.reset_consumer(`table` => 'default.t', consumer_id => 'b1')")
    assert cm.list() == {}


def test_lifecycle_options_through_alter(s):
    s.run("CREATE TABLE t (k BIGINT, dt STRING) PARTITIONED BY (dt)")
    s.run("ALTER TABLE t SET ('partition.expiration-time' = '7 d', 'tag.automatic-creation' = 'watermark', "
          "'tag.period-formatter' = 'without_dashes_and_spaces', 'changelog.num-retained.max' = '50', "
          "'partition.timestamp-formatter' = 'yyyyMMdd')")
    for bad in ("'tag.creation-period' = 'weekly'", "'partition.expiration-strategy' = 'size'",
                "'partition.timestamp-formatter' = 'yyyy-Q'", "'changelog.time-retained' = 'soon'",
                "'sink.watermark-time-zone' = 'Nowhere/City'"):
        with pytest.raises(SqlError):
            s.run(f"ALTER TABLE t SET ({bad})")


def test_show_procedures_lists_the_new_ones(s):
    names = set(s.execute("SHOW PROCEDURES").column(0).to_pylist())
    for p in ("expire_partitions", "create_tag_from_timestamp", "create_tag_from_watermark", "expire_tags",
              "rename_tag", "replace_tag", "rollback_to_watermark", "reset_consumer", "clear_consumers",
              "trigger_tag_automatic_creation"):
        assert f"sys.{p}" in names


def test_expire_changelogs_procedure(s, tmp_path):
    s.run("CREATE TABLE c (k BIGINT PRIMARY KEY NOT ENFORCED, v STRING) WITH ('bucket' = '1', "
          "'changelog-producer' = 'input', 'snapshot.num-retained.min' = '1', 'snapshot.num-retained.max' = '1', "
          "'changelog.num-retained.max' = '10')")
    for i in range(6):
        s.run(f"INSERT INTO c VALUES ({i}, 'v{i}')")
    t = Catalog(f"{tmp_path}/wh").get_table("default.c")
    cm = t.store.changelog_manager
    latest = t.latest_snapshot().id
    assert [sn.id for sn in t.snapshots()] == [latest]
    assert cm.list_ids() == list(range(1, latest))
    # retain_max 3 counts from the latest snapshot: changelogs latest-2 .. latest-1 stay
    out = s.execute("CALL sys.expire_changelogs(`table` => 'default.c', retain_max => 3)")
    assert col(out, "result") == [str(latest - 3)]
    assert cm.list_ids() == [latest - 2, latest - 1]
    assert t.changes(latest - 3, latest).num_rows == sum(t.snapshot_changes(t.store.snapshot_or_changelog(i)).num_rows
                                                        for i in range(latest - 2, latest + 1))
    out = s.execute("CALL sys.expire_changelogs('default.c', NULL, NULL, NULL, NULL, true)")
    assert col(out, "result") == ["Delete all separated changelogs success."]
    assert cm.list_ids() == [] and not t.file_io.exists(cm.dir + "/LATEST")
    assert t.remove_orphan_files(older_than_millis=2**62, dry_run=True) == []


def test_drop_partition_procedure(s, tmp_path):
    s.run("CREATE TABLE p (k BIGINT, dt STRING, hr INT) PARTITIONED BY (dt, hr)")
    s.run("INSERT INTO p VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 1), (4, 'c', NULL)")
    s.run("CALL sys.drop_partition('default.p', 'dt=a,hr=1', 'dt=b', 'dt=c,hr=__DEFAULT_PARTITION__')")
    t = Catalog(f"{tmp_path}/wh").get_table("default.p")
    assert t.to_arrow()["k"].to_pylist() == [2]
    assert t.latest_snapshot().commit_kind == "OVERWRITE"
    with pytest.raises(SqlError, match="partition key"):
        s.run("CALL sys.drop_partition('default.p', 'k=1')")
    with pytest.raises(SqlError, match="give the partitions"):
        s.run("CALL sys.drop_partition('default.p')")


def test_compact_manifest_procedure(s, tmp_path):
    s.run("CREATE TABLE m (k BIGINT, dt STRING) PARTITIONED BY (dt)")
    for i in range(4):
        s.run(f"INSERT INTO m VALUES ({i}, 'd{i % 2}')")
    s.run("CALL sys.drop_partition('default.m', 'dt=d0')")
    t = Catalog(f"{tmp_path}/wh").get_table("default.m")
    before = t.to_arrow().sort_by("k")
    mio = t.store.manifest_io
    latest = t.latest_snapshot()
    assert len(mio.read_manifest_list(latest.base_manifest_list) + mio.read_manifest_list(latest.delta_manifest_list)) > 1
    assert col(s.execute("CALL sys.compact_manifest(`table` => 'default.m')"), "result") == ["success"]
    snap = t.latest_snapshot()
    assert snap.commit_kind == "COMPACT" and snap.id == latest.id + 1
    metas = mio.read_manifest_list(snap.base_manifest_list)
    assert len(metas) == 1 and mio.read_manifest_list(snap.delta_manifest_list) == []
    assert all(e.kind == 0 for e in mio.read_manifest(metas[0].file_name))   # only live files left
    assert t.to_arrow().sort_by("k").equals(before)
    assert col(s.execute("CALL sys.compact_manifest('default.m')"), "result") == ["manifests are already compact"]
    with pytest.raises(SqlError, match="not supported"):
        s.run("CALL sys.compact_manifest('default.m', NULL, true)")
