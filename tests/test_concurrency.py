"""Several processes committing to one table at once (multiprocessing spawn).

Append tables (one partition shared by all writers, or one partition each) and primary-key
tables with fixed buckets (plain, and deletion vectors + lookup changelog, whose commits also
compact). Afterwards the table is checked row by row against the union of what every process
committed; for primary-key writers on disjoint keys the last value of each key is known, for
writers sharing keys each key must appear exactly once with one of the written values (which
writer wins is not deterministic). A full compaction racing with the writers may lose with a
CommitConflictError, but no row may be lost and every snapshot stays readable. Finally
``remove_orphan_files`` must leave only referenced files: lost races leave nothing behind.

Last committed wins (README, "Concurrent writers"): processes upserting overlapping keys into
fixed-bucket, dynamic-bucket and cross-partition tables record which keys and value each commit
wrote under its own commit user; the snapshots give the commit order, and every key must end with
the value of the last APPEND snapshot that wrote it, exactly once. Deterministic two-writer cases
(A flushes, B commits, A commits) cover each table kind; ``-m soak`` runs a bigger variant.
"""

from __future__ import annotations

import multiprocessing as mp
import queue as queue_mod
import time

import warnings

import pyarrow as pa
import pytest

import concurrency_workers as W
from paimon_lab import Catalog, Table
from table_files import all_files, referenced_files
from paimon_lab.errors import CommitConflictError
from paimon_lab.operation.table_write import TableWrite, new_store_write

APPEND = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
PK = pa.schema([("k", pa.int32()), ("p", pa.string()), ("v", pa.int64())])
PK_OPTIONS = {
    "plain": {"bucket": "2"},
    "dv-lookup": {"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
}
PK_KINDS = ["plain", "dv-lookup"]


def run_workers(jobs: list[tuple]) -> dict[int, object]:
    """Start every (function, args...) job in its own spawned process, released together by a
    barrier; return {worker: what it reported}. Any error in a worker fails the test."""
    ctx = mp.get_context("spawn")  # no fork: pyarrow thread pools do not survive it
    barrier, results = ctx.Barrier(len(jobs)), ctx.Queue()
    procs = [ctx.Process(target=fn, args=(*args, barrier, results)) for fn, *args in jobs]
    for p in procs:
        p.start()
    out, errors = {}, []
    deadline = time.monotonic() + 240
    while len(out) < len(procs) and time.monotonic() < deadline:
        try:
            status, worker, payload = results.get(timeout=1)
        except queue_mod.Empty:
            # A worker that dies before reporting (e.g. it cannot import) leaves the others
            # waiting at the barrier: say so now rather than at the deadline.
            crashed = [i for i, p in enumerate(procs) if i not in out and p.exitcode not in (None, 0)]
            if crashed:
                errors += [f"worker {i} exited with code {procs[i].exitcode} before reporting" for i in crashed]
                break
            continue
        if status == "error":
            errors.append(f"worker {worker}:\n{payload}")
        out[worker] = payload
    if len(out) < len(procs) and not errors:  # pragma: no cover
        errors.append(f"workers did not report: {sorted(set(range(len(procs))) - set(out))}")
    for p in procs:
        p.join(5 if errors else 60)
        if p.exitcode is None:  # pragma: no cover
            p.kill()
    assert not errors, "\n".join(errors)
    return out


def check_history(t: Table) -> None:
    """Every snapshot reads; orphan removal keeps exactly what snapshots and tags reference."""
    ids = t.snapshot_manager.list_ids()
    assert ids == list(range(1, len(ids) + 1)), f"snapshot ids have gaps: {ids}"
    for sid in ids:
        t.to_arrow(snapshot_id=sid)
    t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 1000)
    extra = all_files(t.path) - referenced_files(t)
    assert not extra, f"unreferenced files: {sorted(extra)}"


def new_table(tmp_path, name, pk_kind=None) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    if pk_kind is None:
        return cat.create_table(f"db.{name}", APPEND, partition_keys=["p"])
    return cat.create_table(f"db.{name}", PK, primary_keys=["k", "p"], partition_keys=["p"],
                            options=PK_OPTIONS[pk_kind])


# ----------------------------------------------------------------------------- append tables

@pytest.mark.slow
@pytest.mark.parametrize("layout", ["same-partition", "own-partitions"])
def test_append_writers(tmp_path, layout):
    t = new_table(tmp_path, "a")
    workers, commits = 4, 5
    part = "shared" if layout == "same-partition" else None
    done = run_workers([(W.append_writer, t.path, w, commits, part) for w in range(workers)])
    expected = sorted(i for w in range(workers) for ids in done[w] for i in ids)
    got = t.to_arrow()
    assert sorted(got["id"].to_pylist()) == expected  # nothing lost, nothing doubled
    by_id = {r["id"]: r for r in got.to_pylist()}
    for w in range(workers):
        for c, ids in enumerate(done[w]):
            for i, k in enumerate(ids):
                assert by_id[k]["v"] == w and by_id[k]["p"] == (part or f"w{w}-{i % 2}")
    snaps = t.snapshots()
    assert len(snaps) == workers * commits
    assert snaps[-1].total_record_count == len(expected)
    # each snapshot adds exactly one writer's commit on top of the previous one
    counts = [t.snapshot(s.id).total_record_count for s in snaps]
    assert counts == [5 * (i + 1) for i in range(len(snaps))]
    check_history(t)


@pytest.mark.slow
def test_append_compaction_races_writers(tmp_path):
    t = new_table(tmp_path, "ac")
    done = run_workers([(W.append_writer, t.path, w, 6, "shared") for w in range(3)] +
                       [(W.compactor, t.path, 3, 8)])
    expected = sorted(i for w in range(3) for ids in done[w] for i in ids)
    assert sorted(t.to_arrow()["id"].to_pylist()) == expected
    assert set(done[3]) <= {"compacted", "nothing", "conflict"}
    t.compact(full=True)  # the table is still compactable afterwards
    assert sorted(t.to_arrow()["id"].to_pylist()) == expected
    check_history(t)


# ----------------------------------------------------------------------------- primary-key tables

@pytest.mark.slow
@pytest.mark.parametrize("kind", PK_KINDS)
def test_pk_writers_disjoint_keys(tmp_path, kind):
    t = new_table(tmp_path, "pk", kind)
    workers, commits = 3, 4
    keys = {w: list(range(w * 10, w * 10 + 8)) for w in range(workers)}
    done = run_workers([(W.pk_writer, t.path, w, commits, keys[w]) for w in range(workers)])
    got = {r["k"]: r for r in t.to_arrow().to_pylist()}
    assert t.to_arrow().num_rows == len(got) == workers * 8
    for w in range(workers):
        for k in keys[w]:
            assert got[k]["v"] == done[w][-1], f"key {k}: {got[k]} but worker {w} last wrote {done[w][-1]}"
    check_history(t)


@pytest.mark.slow
@pytest.mark.parametrize("kind", PK_KINDS)
def test_pk_writers_same_keys(tmp_path, kind):
    t = new_table(tmp_path, "pks", kind)
    workers, commits, keys = 3, 4, list(range(12))
    done = run_workers([(W.pk_writer, t.path, w, commits, keys) for w in range(workers)])
    written = {v for w in range(workers) for v in done[w]}
    rows = t.to_arrow().to_pylist()
    assert sorted(r["k"] for r in rows) == keys, "every key exactly once"
    assert all(r["v"] in written and r["p"] == "ab"[r["k"] % 2] for r in rows)
    # a full compaction does not change what is read
    before = sorted(tuple(r.values()) for r in rows)
    t.compact(full=True)
    assert sorted(tuple(r.values()) for r in t.to_arrow().to_pylist()) == before
    check_history(t)


@pytest.mark.slow
@pytest.mark.parametrize("kind", PK_KINDS)
def test_pk_compaction_races_writers(tmp_path, kind):
    t = new_table(tmp_path, "pkc", kind)
    keys = {w: list(range(w * 10, w * 10 + 8)) for w in range(3)}
    done = run_workers([(W.pk_writer, t.path, w, 5, keys[w]) for w in range(3)] + [(W.compactor, t.path, 3, 8)])
    got = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert t.to_arrow().num_rows == 24
    assert got == {k: done[w][-1] for w in range(3) for k in keys[w]}
    t.compact(full=True)
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == got
    check_history(t)


# ----------------------------------------------------------------------------- bugs the races found

def test_concurrent_deletion_vector_updates_are_not_lost(tmp_path):
    import warnings

    from paimon_lab.operation.commit import FileStoreCommit

    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("k", pa.int32()), ("v", pa.int64())])
    t = cat.create_table("db.t", schema, primary_keys=["k"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true"})
    rows = lambda keys, v: pa.table({"k": pa.array(keys, pa.int32()), "v": pa.array([v] * len(keys), pa.int64())})  # noqa: E731
    t.write(rows([0, 1, 2, 3], 1))
    a, b = Table.open(t.path), Table.open(t.path)
    wa, wb = new_store_write(a.store, "writer-a"), new_store_write(b.store, "writer-b")
    wa.write(rows([0], 2))   # two writers, two processes in real life: each upserts one key
    wb.write(rows([1], 3))
    ma, mb = wa.prepare_commit(), wb.prepare_commit()  # both see the same latest snapshot
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        FileStoreCommit(a.store, "writer-a").commit(ma)
        first, second = FileStoreCommit(b.store, "writer-b").commit(mb)
    # b's vectors were computed without a's: its COMPACT commit must lose (its data commit stays) ...
    assert first is not None and second is None
    assert sorted(r["k"] for r in Table.open(t.path).to_arrow().to_pylist()) == [0, 1, 2, 3]
    Table.open(t.path).compact()  # ... and a compaction on the new latest makes b's row visible
    got = sorted((r["k"], r["v"]) for r in Table.open(t.path).to_arrow().to_pylist())
    assert [k for k, _ in got] == [0, 1, 2, 3], f"every key once: {got}"  # a stale vector update used to show key 0 twice
    assert dict(got) == {0: 2, 1: 3, 2: 1, 3: 1}


# ----------------------------------------------------------------------------- last committed wins

LCW_OPTIONS = {
    "fixed": {"bucket": "2"},
    "fixed-compact": {"bucket": "2", "num-sorted-run.compaction-trigger": "2"},
    "fixed-dv": {"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
    "dynamic": {"bucket": "-1"},
    "cross": {"bucket": "-1"},  # partition key outside the primary key: cross-partition update
}


def lcw_table(tmp_path, kind: str) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    pk = ["k"] if kind == "cross" else ["k", "p"]
    return cat.create_table(f"db.{kind.replace('-', '_')}", PK, primary_keys=pk, partition_keys=["p"],
                            options=LCW_OPTIONS[kind])


def lcw_rows(keys, value: int, shift: int = 0) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "p": "ab"[(k + shift) % 2], "v": value} for k in keys], schema=PK)


def read_kv(t: Table) -> list[tuple]:
    return sorted((r["k"], r["p"], r["v"]) for r in Table.open(t.path).to_arrow().to_pylist())


@pytest.mark.parametrize("existing", [True, False], ids=["existing-keys", "new-keys"])
@pytest.mark.parametrize("kind", list(LCW_OPTIONS))
def test_last_committed_wins_two_writers(tmp_path, kind, existing):
    """A flushes (its sequence numbers are fixed), B upserts the same keys and commits, A commits
    last: A's values, or a CommitConflictError that leaves B's commit alone (and a retry wins)."""
    t = lcw_table(tmp_path, kind)
    keys = list(range(10))
    if existing:
        for v in range(3):  # a few files per bucket: 'fixed-compact' compacts at A's flush
            t.write(lcw_rows(keys, v))
    shift = 1 if kind == "cross" else 0  # A moves every key to the other partition
    a = TableWrite(Table.open(t.path).store, commit_user="writer-a")
    a.write(lcw_rows(keys, 100, shift))
    a.flush()
    Table.open(t.path).write(lcw_rows(keys, 200))
    b_state = read_kv(t)
    assert b_state == sorted((k, "ab"[k % 2], 200) for k in keys)
    conflict = kind == "cross" or (kind == "dynamic" and not existing)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if conflict:
            with pytest.raises(CommitConflictError):
                a.commit()
            assert read_kv(t) == b_state  # the loser committed nothing ...
            Table.open(t.path).write(lcw_rows(keys, 100, shift))  # ... and its redone write wins
        else:
            a.commit()
    assert read_kv(t) == sorted((k, "ab"[(k + shift) % 2], 100) for k in keys)
    t2 = Table.open(t.path)
    t2.compact(full=True)
    assert read_kv(t) == sorted((k, "ab"[(k + shift) % 2], 100) for k in keys)
    check_history(t2)


@pytest.mark.parametrize("a_seq, b_seq", [(10, 5), (5, 10)])
def test_sequence_field_decides_between_writers(tmp_path, a_seq, b_seq):
    """With 'sequence.field' the user's field decides, whatever the commit order."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("k", pa.int32()), ("s", pa.int64()), ("v", pa.int64())])
    t = cat.create_table("db.s", schema, primary_keys=["k"], options={"bucket": "2", "sequence.field": "s"})
    rows = lambda s, v: pa.table({"k": pa.array(range(6), pa.int32()), "s": pa.array([s] * 6, pa.int64()),  # noqa: E731
                                  "v": pa.array([v] * 6, pa.int64())})
    t.write(rows(0, 0))
    a = TableWrite(Table.open(t.path).store)
    a.write(rows(a_seq, 1))
    a.flush()
    Table.open(t.path).write(rows(b_seq, 2))
    a.commit()
    want = 1 if a_seq > b_seq else 2
    assert {r["k"]: r["v"] for r in Table.open(t.path).to_arrow().to_pylist()} == {k: want for k in range(6)}


def check_last_committed(t: Table, done: dict, moving: bool) -> int:
    """The table holds, for every key written, the row of the last committed snapshot that wrote
    it, exactly once. Returns the number of keys checked."""
    order = {s.commit_user: s.id for s in t.snapshots() if s.commit_kind == "APPEND"}
    last: dict[int, tuple[int, str, int]] = {}  # key -> (snapshot id, partition, value)
    for w, (commits, _) in done.items():
        for c, (user, keys, value) in enumerate(commits):
            assert user in order, f"{user} reported a commit but no APPEND snapshot is its"
            for k in keys:
                p = "abc"[(k + w + c) % 3] if moving else "ab"[k % 2]
                if k not in last or order[user] > last[k][0]:
                    last[k] = (order[user], p, value)
    got = read_kv(t)
    assert len(got) == len({k for k, _, _ in got}), f"duplicate keys: {got}"
    want = sorted((k, p, v) for k, (_, p, v) in last.items())
    assert got == want, [(g, w) for g, w in zip(got, want) if g != w][:10]
    return len(want)


def run_lcw(tmp_path, kind: str, workers: int, commits: int, nkeys: int) -> None:
    t = lcw_table(tmp_path, kind)
    moving = kind == "cross"
    keys = list(range(nkeys))
    done = run_workers([(W.lcw_writer, t.path, w, commits, keys, moving) for w in range(workers)])
    if t.store.batch_scan_skips_level0:
        t.compact()  # rows whose catch-up compaction lost every race stay in level 0 until then
    checked = check_last_committed(t, done, moving)
    assert checked == len({k for c, _ in done.values() for _, ks, _ in c for k in ks})
    t.compact(full=True)  # a full compaction keeps the same answer
    check_last_committed(t, done, moving)
    check_history(t)
    conflicts = sum(n for _, n in done.values())
    print(f"{kind}: {workers} processes x {commits} commits, {checked} keys checked, "
          f"{len(t.snapshot_manager.list_ids())} snapshots, {conflicts} conflicts left to the workers")


@pytest.mark.parametrize("kind", ["fixed", "dynamic", "cross"])
def test_last_committed_wins_processes(tmp_path, kind):
    run_lcw(tmp_path, kind, workers=3, commits=4, nkeys=12)


@pytest.mark.soak
@pytest.mark.parametrize("kind", ["fixed", "fixed-compact", "fixed-dv", "dynamic", "cross"])
def test_last_committed_wins_processes_soak(tmp_path, kind):
    run_lcw(tmp_path, kind, workers=4, commits=12, nkeys=40)
