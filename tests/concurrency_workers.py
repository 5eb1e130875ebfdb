"""Child processes of test_concurrency.py (spawned): writers and compactors racing on one table.

Each worker waits at a barrier, does its commits, and reports what it committed (or the error
it hit) through a queue, so that the parent can check the table against the union of it all.
"""

from __future__ import annotations

import random
import time
import traceback
import warnings

import pyarrow as pa

from paimon_lab import Table
from paimon_lab.errors import CommitConflictError
from paimon_lab.operation.table_write import write_rows


def append_writer(path: str, worker: int, commits: int, partition: str | None, barrier, queue) -> None:
    """Each commit writes 5 rows with ids unique to (worker, commit)."""
    try:
        t = Table.open(path)
        barrier.wait()
        done = []
        for c in range(commits):
            ids = [worker * 100_000 + c * 10 + i for i in range(5)]
            parts = [partition or f"w{worker}-{i % 2}" for i in range(5)]
            t.write(pa.table({"id": pa.array(ids, pa.int64()), "p": parts,
                              "v": pa.array([worker] * 5, pa.int64())}))
            done.append(ids)
        queue.put(("ok", worker, done))
    except BaseException:
        queue.put(("error", worker, traceback.format_exc()))


def pk_writer(path: str, worker: int, commits: int, keys: list[int], barrier, queue) -> None:
    """Each commit upserts every key of ``keys`` with value worker * 1000 + commit."""
    try:
        t = Table.open(path)
        schema = t.schema.arrow_schema()
        barrier.wait()
        done = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "compaction skipped" when another writer won
            for c in range(commits):
                value = worker * 1000 + c
                t.write(pa.Table.from_pylist([{"k": k, "p": "ab"[k % 2], "v": value} for k in keys], schema=schema))
                done.append(value)
        queue.put(("ok", worker, done))
    except BaseException:
        queue.put(("error", worker, traceback.format_exc()))


def compactor(path: str, worker: int, rounds: int, barrier, queue) -> None:
    """Full compactions back to back; losing to another commit is allowed (CommitConflictError)."""
    try:
        t = Table.open(path)
        barrier.wait()
        outcomes = []
        for _ in range(rounds):
            try:
                outcomes.append("compacted" if t.compact(full=True) is not None else "nothing")
            except CommitConflictError:
                outcomes.append("conflict")
            time.sleep(0.01)
        queue.put(("ok", worker, outcomes))
    except BaseException:
        queue.put(("error", worker, traceback.format_exc()))


def lcw_writer(path: str, worker: int, commits: int, keys: list[int], moving: bool, barrier, queue) -> None:
    """Last committed wins: each commit upserts a random half of the shared ``keys`` with value
    worker * 1000 + commit, as commit user ``w{worker}-c{commit}`` (so that the parent finds its
    snapshot). ``moving``: rows go to a partition that changes with every commit (a
    cross-partition update table moves the keys). A CommitConflictError that outlasts the
    write's own retries is retried here; reports [(commit user, keys, value)] and the count."""
    try:
        t = Table.open(path)
        schema = t.schema.arrow_schema()
        rng = random.Random(worker)
        barrier.wait()
        done, conflicts = [], 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "compaction skipped" when another writer won
            for c in range(commits):
                value = worker * 1000 + c
                chosen = sorted(rng.sample(keys, len(keys) // 2))
                part = (lambda k: "abc"[(k + worker + c) % 3]) if moving else (lambda k: "ab"[k % 2])
                data = pa.Table.from_pylist([{"k": k, "p": part(k), "v": value} for k in chosen], schema=schema)
                user = f"w{worker}-c{c}"
                while True:
                    try:
                        write_rows(t.store.refresh(), data, commit_user=user)
                        break
                    except CommitConflictError:
                        conflicts += 1
                done.append((user, chosen, value))
        queue.put(("ok", worker, (done, conflicts)))
    except BaseException:
        queue.put(("error", worker, traceback.format_exc()))
