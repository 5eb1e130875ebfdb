"""Crash safety: kill writes, commits, compactions, expirations and rollbacks at random points.

Every trial copies a small template table, runs one operation in a child process and kills it
part-way -- ``os._exit(1)`` at the N-th file-system-changing FileIO call (before it, after it,
or half-way through it, see crash_child.py), or SIGKILL after a random delay. The parent then
re-opens the table and checks:

* it reads a committed state: the snapshot ids are the template's plus a prefix of the ones a
  crash-free run of the operation creates (for expire/rollback: between the template's and the
  crash-free result's), and the latest snapshot reads exactly the recorded contents -- before
  the operation, or its intended result, never something in between;
* ``remove_orphan_files(older_than_millis=now + 1000)`` succeeds, after which every snapshot and
  tag still reads exactly its recorded contents, and every file under the table directory is
  referenced by a snapshot or tag (checked independently of paimon_lab's own bookkeeping);
* an interrupted expiration or rollback can be run again and then ends where a crash-free run
  ends.

Children come from a ``forkserver`` context: the server is a fresh interpreter started like a
spawn child (nothing inherited from the threaded pytest process) that preloads paimon_lab once;
each trial forks from it in ~20 ms instead of ~2 s for a spawn, which is what makes a few
hundred trials affordable.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing as mp
import os
import random
import shutil
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import crash_child
import pyarrow as pa
import pytest
from table_files import all_files, referenced_files

from paimon_lab import Catalog, Table
from paimon_lab.errors import PaimonLabError

SEED = int(os.environ.get("PAIMON_LAB_CRASH_SEED", "20240601"))
TRIALS_PER_OP = int(os.environ.get("PAIMON_LAB_CRASH_TRIALS_PER_OP", "7"))  # FileIO crash points
KILLS_PER_OP = int(os.environ.get("PAIMON_LAB_CRASH_KILLS_PER_OP", "1"))    # SIGKILL after a delay


_CTX = None
PRELOAD = ["paimon_lab", "paimon_lab.table", "paimon_lab.operation.expire", "paimon_lab.operation.row_dml",
           "paimon_lab.operation.append_compact", "paimon_lab.mergetree.writer", "paimon_lab.mergetree.compact_rewriter", "paimon_lab.core.deletion_vector",
           "paimon_lab.core.index_manifest", "pyarrow.parquet", "pyarrow.dataset", "pytest"]


def ctx():
    global _CTX
    if _CTX is None:
        _CTX = mp.get_context("forkserver")
        # (Python 3.11's fork server ignores the parent's sys.path, so crash_child itself cannot be
        # preloaded; it is tiny. paimon_lab and what it imports lazily are what take time.)
        _CTX.set_forkserver_preload(PRELOAD)
    return _CTX


# ----------------------------------------------------------------------------- templates

APPEND = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
PK = pa.schema([("k", pa.int32()), ("p", pa.string()), ("v", pa.int64())])


def _append_rows(ids, v=0):
    return [{"id": i, "p": "ab"[i % 2], "v": v + i} for i in ids]


def _pk_rows(keys, v):
    return [{"k": k, "p": "ab"[k % 2], "v": v} for k in keys]


KIND_OPTIONS = {
    "append": (False, {}),
    "append-dv": (False, {"deletion-vectors.enabled": "true"}),
    "pk": (True, {"bucket": "2"}),
    "pk-dv-lookup": (True, {"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "lookup"}),
    # HASH index files: a bucket's next one copied from the one before (FileIO.copy_append)
    "pk-dynamic": (True, {"bucket": "-1", "dynamic-bucket.target-row-num": "8"}),
}


def build_template(kind: str, warehouse: str) -> str:
    pk, options = KIND_OPTIONS[kind]
    cat = Catalog(warehouse)
    cat.create_database("db")
    if pk:
        t = cat.create_table("db.t", PK, primary_keys=["k", "p"], partition_keys=["p"], options=options)
        rows = lambda r: pa.Table.from_pylist(r, schema=t.schema.arrow_schema())
        t.write(rows(_pk_rows(range(6), 1)))
        t.write(rows(_pk_rows(range(3, 9), 2)))
        t.create_tag("t1")
        t.delete("k = 1")
        t.write(rows(_pk_rows([9, 10], 3)))
    else:
        t = cat.create_table("db.t", APPEND, partition_keys=["p"], options=options)
        rows = lambda r: pa.Table.from_pylist(r, schema=t.schema.arrow_schema())
        t.write(rows(_append_rows(range(6))))
        t.write(rows(_append_rows(range(6, 10))))
        t.create_tag("t1")
        t.delete("id < 2")
        t.write(rows(_append_rows(range(10, 13))))
    t.create_tag("t2")
    return t.path


def ops_for(kind: str) -> list[tuple[str, dict]]:
    if kind.startswith("pk"):
        return [
            ("write", {"rows": _pk_rows(range(2, 7), 5) + _pk_rows([11], 6)}),
            ("write", {"rows": _pk_rows([3, 4], 7), "kinds": ["-D", "+U"]}),
            ("delete", {"filter": "k >= 7"}),
            ("update", {"values": {"v": 99}, "filter": "k < 4"}),
            ("compact", {"full": True}),
            ("expire", {"retain_max": 2}),
            ("rollback", {"snapshot_id": 2}),
        ]
    return [
        ("write", {"rows": _append_rows(range(100, 104))}),
        ("writer", {"batches": [_append_rows([200, 201]), _append_rows([202])]}),
        ("overwrite", {"rows": [{"id": 300, "p": "a", "v": 1}], "partition": {"p": "a"}}),
        ("delete", {"filter": "id >= 8"}),
        ("update", {"values": {"v": 7}, "filter": "id < 5"}),
        ("compact", {"full": True}),
        ("expire", {"retain_max": 2}),
        ("rollback", {"snapshot_id": 2}),
    ]


# ----------------------------------------------------------------------------- reading and recording

def contents(t: Table, **kwargs) -> list:
    return sorted((tuple(r.values()) for r in t.to_arrow(**kwargs).to_pylist()), key=repr)


def record(path: str) -> dict:
    t = Table.open(path)
    return {"snaps": {s.id: contents(t, snapshot_id=s.id) for s in t.snapshots()},
            "tags": {tg.name: (tg.snapshot.id, contents(t, tag=tg.name)) for tg in t.tags()}}


def unreferenced(t: Table) -> set[str]:
    return all_files(t.path) - referenced_files(t)


# ----------------------------------------------------------------------------- running children

def run_child(path: str, op: str, args: dict, n: int, mode: str, report: str | None = None,
              kill_after: float | None = None) -> int:
    c = ctx()
    ready_r, ready_w = c.Pipe(duplex=False) if kill_after is not None else (None, None)
    p = c.Process(target=crash_child.run, args=(path, op, args, n, mode, report, ready_w))
    p.start()
    if kill_after is not None:
        ready_w.close()
        if ready_r.poll(30):
            ready_r.recv()
        time.sleep(kill_after)
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.join(60)
    if p.exitcode is None:  # pragma: no cover - a hung child is a failure of its own
        p.kill()
        p.join()
        raise AssertionError(f"child hung: {op} {args} n={n} mode={mode}")
    return p.exitcode


class Template:
    """A template table, its recorded contents, and crash-free reference runs of each operation."""

    def __init__(self, kind: str, base: str):
        self.kind = kind
        self.base = base
        self.path = build_template(kind, os.path.join(base, "template"))
        self.record = record(self.path)
        self.refs: dict[int, dict] = {}
        self.counter = itertools.count(1)

    def copy(self) -> str:
        dst = os.path.join(self.base, f"trial-{next(self.counter)}")
        shutil.copytree(os.path.dirname(os.path.dirname(self.path)), dst)
        return os.path.join(dst, "db.db", "t")

    def reference(self, i: int, op: str, args: dict) -> dict:
        if i not in self.refs:
            path = self.copy()
            report = path + ".json"
            assert run_child(path, op, args, 0, "before", report) == 0
            with open(report) as f:
                rep = json.load(f)
            self.refs[i] = {"calls": rep["calls"], "seconds": rep["seconds"], **record(path)}
            self.check_clean(Table.open(path), f"reference {op}")
            shutil.rmtree(os.path.dirname(os.path.dirname(path)))
        return self.refs[i]

    @staticmethod
    def check_clean(t: Table, what: str) -> None:
        t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 1000)
        extra = unreferenced(t)
        assert not extra, f"{what}: unreferenced files left after remove_orphan_files: {sorted(extra)}"


# ----------------------------------------------------------------------------- the checks

def verify(tpl: Template, ref: dict, path: str, op: str, args: dict, what: str) -> None:
    old, new = tpl.record, ref
    t = Table.open(path)
    ids = t.snapshot_manager.list_ids()
    old_ids, ref_ids = set(old["snaps"]), set(new["snaps"])
    expected = {**old["snaps"], **new["snaps"]}
    if op in ("expire", "rollback"):
        assert ref_ids <= set(ids) <= old_ids, f"{what}: snapshots {ids}"
    else:
        assert old_ids <= set(ids), f"{what}: lost snapshots: {sorted(old_ids - set(ids))}"
        created = [i for i in ids if i not in old_ids]
        intended = sorted(ref_ids - old_ids)
        assert created == intended[:len(created)], f"{what}: snapshots {ids}, a crash-free run makes {intended}"
    # a committed state: the latest snapshot is the one before the operation or one it commits
    latest = t.latest_snapshot()
    assert latest.id == max(ids), f"{what}: latest {latest.id} but snapshots {ids}"
    if op in ("expire", "rollback"):
        allowed = {max(old_ids), max(ref_ids)}
        assert latest.id in allowed, f"{what}: latest snapshot {latest.id} is neither {sorted(allowed)}"
    assert contents(t) == expected[latest.id], f"{what}: latest snapshot {latest.id} reads other contents"

    t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 1000)
    t = Table.open(path)
    for sid in t.snapshot_manager.list_ids():
        assert contents(t, snapshot_id=sid) == expected[sid], f"{what}: snapshot {sid} after orphan removal"
    tags = {tg.name: tg.snapshot.id for tg in t.tags()}
    for name, (sid, rows) in old["tags"].items():
        if op == "rollback" and sid > args["snapshot_id"] and name not in tags:
            continue  # the rollback deletes tags on newer snapshots
        assert name in tags, f"{what}: tag {name} lost"
        assert contents(t, tag=name) == rows, f"{what}: tag {name} after orphan removal"
    extra = unreferenced(t)
    assert not extra, f"{what}: unreferenced files left after remove_orphan_files: {sorted(extra)}"

    if op in ("expire", "rollback"):
        # the interrupted operation can be completed
        crash_child.run_op(t, op, args)
        t = Table.open(path)
        assert t.snapshot_manager.list_ids() == sorted(ref_ids), f"{what}: re-run of {op}"
        for sid in ref_ids:
            assert contents(t, snapshot_id=sid) == new["snaps"][sid], f"{what}: snapshot {sid} after re-run"


def plan_trials(tpl: Template, rng: random.Random, per_op: int = TRIALS_PER_OP, kills: int = KILLS_PER_OP) -> list[tuple]:
    trials = []
    for i, (op, args) in enumerate(ops_for(tpl.kind)):
        ref = tpl.reference(i, op, args)
        calls = ref["calls"]
        points = list(range(1, len(calls) + 1))
        commits = [n for n in points if calls[n - 1] == "try_create"]  # the snapshot creations
        chosen = set(commits[-2:]) | set(rng.sample(points, min(len(points), per_op)))
        chosen = sorted(chosen)[: max(per_op, len(commits[-2:]))] if len(chosen) > per_op + 2 \
            else sorted(chosen)
        for n in chosen:
            trials.append((i, op, args, n, rng.choice(["before", "after", "torn"]), None))
        for _ in range(kills):
            trials.append((i, op, args, 0, "before", rng.uniform(0, ref["seconds"] * 1.2)))
    return trials


def run_trial(tpl: Template, trial: tuple) -> str:
    i, op, args, n, mode, kill_after = trial
    ref = tpl.refs[i]
    path = tpl.copy()
    what = (f"[{tpl.kind}] {op}#{i} " +
            (f"SIGKILL after {kill_after * 1000:.0f} ms" if kill_after is not None
             else f"crash {mode} call {n} ({ref['calls'][n - 1]})"))
    code = run_child(path, op, args, n, mode, kill_after=kill_after)
    try:
        verify(tpl, ref, path, op, args, what)
    except (AssertionError, PaimonLabError, OSError) as e:
        return f"FAILED {what}: {type(e).__name__}: {str(e)[:400]}"
    finally:
        shutil.rmtree(os.path.dirname(os.path.dirname(path)), ignore_errors=True)
    return f"{what}: exit {code}"


def _run_trials(kind: str, tmp_path, seed: str, per_op: int, kills: int) -> None:
    rng = random.Random(seed)
    tpl = Template(kind, str(tmp_path))
    trials = plan_trials(tpl, rng, per_op, kills)
    # two trials at a time: one child runs while the parent checks the other's table
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda tr: run_trial(tpl, tr), trials))
    failed = [d for d in done if d.startswith("FAILED")]
    assert not failed, f"{len(failed)} of {len(trials)} trials failed:\n" + "\n".join(failed)
    crashed = [d for d in done if not d.endswith("exit 0")]
    assert len(crashed) >= len(trials) * 0.7, "most trials must really crash"
    print(f"{kind}: {len(trials)} trials, {len(crashed)} crashed")


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KIND_OPTIONS))
def test_crash_trials(kind, tmp_path):
    _run_trials(kind, tmp_path, f"{SEED}-{kind}", TRIALS_PER_OP, KILLS_PER_OP)


@pytest.mark.soak
@pytest.mark.parametrize("kind", list(KIND_OPTIONS))
def test_crash_trials_soak(kind, tmp_path):
    """Hundreds of trials per table kind, from another seed: ``pytest -m soak tests/test_crash.py``."""
    _run_trials(kind, tmp_path, f"soak-{SEED}-{kind}", 4 * TRIALS_PER_OP, 4 * KILLS_PER_OP)


# ----------------------------------------------------------------------------- bugs the trials found
# Minimal reproductions of bugs the trials found, kept as regression tests.

class _Crash(BaseException):
    """Stands in for the process dying: nothing in paimon_lab catches a BaseException."""


def _crash_on_delete(monkeypatch, n: int) -> None:
    from paimon_lab.io.file_io import FileIO

    original, calls = FileIO.delete, []

    def delete(self, path):
        calls.append(path)
        if len(calls) == n:
            raise _Crash(path)
        return original(self, path)

    monkeypatch.setattr(FileIO, "delete", delete)


def _four_snapshots(tmp_path) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    for i in range(4):
        t.write(pa.table({"id": pa.array([i], pa.int64())}))
    return t


@pytest.mark.parametrize("n", [2, 4])
def test_interrupted_expiration_leaves_a_clean_table(tmp_path, monkeypatch, n):
    t = _four_snapshots(tmp_path)
    _crash_on_delete(monkeypatch, n)
    with pytest.raises(_Crash):
        t.expire_snapshots(retain_max=1, retain_min=1)
    monkeypatch.undo()
    t = Table.open(t.path)
    for sid in t.snapshot_manager.list_ids():  # a snapshot that still exists can be read
        assert contents(t, snapshot_id=sid) == [(i,) for i in range(sid)]
    t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 1000)
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert t.snapshot_manager.list_ids() == [4]


@pytest.mark.parametrize("n", [2, 5])
def test_interrupted_rollback_is_before_or_after(tmp_path, monkeypatch, n):
    t = _four_snapshots(tmp_path)
    _crash_on_delete(monkeypatch, n)
    with pytest.raises(_Crash):
        t.rollback_to(1)
    monkeypatch.undo()
    t = Table.open(t.path)
    assert t.latest_snapshot().id in (1, 4)  # an intermediate snapshot used to become the latest
    assert contents(t) in ([(0,)], [(0,), (1,), (2,), (3,)])


def test_orphan_removal_collects_temporary_files_of_crashed_commits(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", APPEND, partition_keys=["p"])
    args = {"rows": _append_rows(range(3))}
    probe = os.path.join(str(tmp_path), "probe")
    shutil.copytree(t.path, probe)
    assert run_child(probe, "write", args, 0, "before", probe + ".json") == 0
    with open(probe + ".json") as f:
        calls = json.load(f)["calls"]
    n = calls.index("try_create") + 1  # the creation of snapshot-1
    assert run_child(t.path, "write", args, n, "torn") == 1  # dies half-way through writing snapshot-1
    left = [f for f in os.listdir(os.path.join(t.path, "snapshot")) if f.endswith(".tmp")]
    assert left, "the crash leaves snapshot-1's temporary file"
    t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 1000)
    assert [f for f in os.listdir(os.path.join(t.path, "snapshot")) if f.endswith(".tmp")] == []
