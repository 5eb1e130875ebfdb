"""Streaming and incremental reads."""

import threading
import time

import pyarrow as pa
import pytest

from paimon_lab import SchemaChange
from paimon_lab.errors import PaimonLabError, SnapshotNotExistError
from conftest import make_rows


def ids(batch):
    return sorted(batch.rows["id"].to_pylist())


def test_latest_full_then_new_commits(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    t.write(make_rows(3))
    it = t.stream(timeout=0)
    first = next(it)
    assert first.snapshot_id == 1 and ids(first) == [0, 1, 2]
    assert set(first.rows["rowkind"].to_pylist()) == {"+I"}
    assert list(it) == []
    t.write(make_rows(2, start=10))
    t.write(make_rows(1, start=20))
    batches = list(t.stream(mode="from-snapshot", snapshot_id=2, timeout=0))
    assert [(b.snapshot_id, ids(b)) for b in batches] == [(2, [10, 11]), (3, [20])]


def test_latest_mode_waits_for_commits_from_another_thread(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    t.write(make_rows(3))
    other = catalog.get_table("db.t")

    def writer():
        time.sleep(0.3)
        other.write(make_rows(2, start=100))
        time.sleep(0.3)
        other.write(make_rows(1, start=200))

    th = threading.Thread(target=writer)
    th.start()
    got = []
    for batch in t.stream(mode="latest", timeout=2.0, poll_interval=0.05):
        got.append(ids(batch))
        if len(got) == 2:
            break
    th.join()
    assert got == [[100, 101], [200]]


def test_consumer_resumes_and_protects_snapshots(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    t.write(make_rows(2))
    t.write(make_rows(2, start=10))
    seen = [b.snapshot_id for b in t.stream(mode="from-snapshot", snapshot_id=1, consumer_id="c1", timeout=0)]
    assert seen == [1, 2] and t.consumers()["c1"].next_snapshot == 3
    t.write(make_rows(1, start=50))
    t.write(make_rows(1, start=60))
    t.expire_snapshots(retain_max=1, retain_min=1)  # the consumer still needs 3 and 4
    assert t.snapshot_manager.list_ids() == [3, 4]
    again = [(b.snapshot_id, ids(b)) for b in t.stream(consumer_id="c1", timeout=0)]
    assert again == [(3, [50]), (4, [60])]


def test_expired_start_is_a_clear_error(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    for i in range(3):
        t.write(make_rows(1, start=i))
    t.expire_snapshots(retain_max=1, retain_min=1)
    with pytest.raises(SnapshotNotExistError, match="has expired"):
        list(t.stream(mode="from-snapshot", snapshot_id=1, timeout=0))


def test_incremental_between_snapshots_and_tags(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    for i in range(4):
        t.write(make_rows(1, start=i))
    t.create_tag("t1", 1)
    (batch,) = list(t.stream(mode="incremental", incremental_between=("t1", 3)))
    assert ids(batch) == [1, 2]
    with pytest.raises(PaimonLabError, match="Unknown scan mode"):
        next(t.stream(mode="sideways"))


def test_from_timestamp(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    t.write(make_rows(1))
    time.sleep(0.01)
    ts = int(time.time() * 1000)
    time.sleep(0.01)
    t.write(make_rows(1, start=5))
    assert [ids(b) for b in t.stream(mode="from-timestamp", timestamp_millis=ts, timeout=0)] == [[5]]


def test_pk_stream_uses_changelog(catalog):
    schema = pa.schema([("k", pa.int32()), ("v", pa.string())])
    t = catalog.create_table("db.p", schema, primary_keys=["k"],
                             options={"bucket": "1", "changelog-producer": "lookup"})
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    t.write(pa.table({"k": pa.array([1], pa.int32()), "v": ["c"]}))
    rows = [(r["rowkind"], r["k"], r["v"]) for b in t.stream(mode="from-snapshot", snapshot_id=1, timeout=0)
            for r in b.rows.to_pylist()]
    assert rows == [("+I", 1, "a"), ("+I", 2, "b"), ("-U", 1, "a"), ("+U", 1, "c")]


def test_stream_starts_as_the_tables_scan_options_say(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema)
    for i in range(3):
        t.write(make_rows(1, start=10 * i))
    t.create_tag("second", snapshot_id=2)
    assert [b.snapshot_id for b in t.stream(timeout=0)] == [3]            # latest-full by default
    t.alter(SchemaChange.set_option("scan.snapshot-id", "2"))
    assert [(b.snapshot_id, ids(b)) for b in t.stream(timeout=0)] == [(2, [10]), (3, [20])]
    t.alter(SchemaChange.remove_option("scan.snapshot-id"), SchemaChange.set_option("scan.tag-name", "second"))
    assert [(b.snapshot_id, ids(b)) for b in t.stream(timeout=0)] == [(2, [10]), (3, [20])]   # from the tag
    t.alter(SchemaChange.remove_option("scan.tag-name"), SchemaChange.set_option("scan.snapshot-id", "2"),
            SchemaChange.set_option("scan.mode", "from-snapshot-full"))
    first = next(t.stream(timeout=0))
    assert first.snapshot_id == 2 and ids(first) == [0, 10]               # the snapshot, in full
    # an explicit mode still wins over the table's options
    assert [(b.snapshot_id, ids(b)) for b in t.stream(mode="latest-full", timeout=0)] == [(3, [0, 10, 20])]
