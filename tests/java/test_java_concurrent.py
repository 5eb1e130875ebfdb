"""paimon-lab and Java Paimon committing to the same table at the same time (issue #17, item 3).

Each round runs a Java write (or a Java full compaction) in a background JVM while paimon-lab
keeps committing small batches until that JVM exits, so commits of both engines race for the
same next snapshot ids; then a round in which paimon-lab compacts fully while Java writes. The
two sides own disjoint keys (the order of two concurrent upserts of one key is not defined) but
share every bucket; each side upserts, deletes and re-inserts its keys. After every round
paimon-lab reads a Python model exactly (no row lost, duplicated or resurrected), and Java reads
it at the end.

Who wins a snapshot id on a local filesystem: paimon-lab creates ``snapshot-N`` with ``link(2)``
of a complete temp file, which fails if the name exists (FileIO.try_create). Java's
``LocalFileIO.rename`` (0.9 and 1.0) checks ``exists()`` and then ``rename(2)``s its temp file
under a lock that is only JVM-wide. So a snapshot Java committed first is never overwritten by
us, and Java never overwrites one we committed before its ``exists()`` check; the one interleaving
not excluded is our ``link`` landing between Java's ``exists()`` and its ``rename`` (a window of
microseconds), where Java's rename replaces our snapshot file. Java's own writers have the same
window among themselves. Only a lock both sides hold would close it, and there is none to share
with Java 0.9/1.0: their JdbcCatalog locks (``lock.enabled``) only on MySQL, which paimon-lab's
JDBC catalog does not support, and on SQLite, where Java fails on its own ("SQLITE_BUSY: database
is locked" at its first commit, even with no other client); a Hive catalog's lock is the
metastore's, which paimon-lab does not take.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from decimal import Decimal
from functools import partial

import pyarrow as pa
import pytest

from .java_rows import arrow_schema, lab_fields

FIELDS = [("k", "BIGINT NOT NULL"), ("part", "INT NOT NULL"), ("v", "STRING"), ("amount", "DECIMAL(10, 2)"),
          ("at", "TIMESTAMP(6)")]
ROUNDS = 1  # three phases: Java writes, Java compacts, paimon-lab compacts
VERSIONS = ("0.9", "1.0") if os.environ.get("PAIMON_JAVA_ORACLE_FULL") else ("0.9",)


class Side:
    """One writer's keys: ``owner`` 0 (paimon-lab: even keys) or 1 (Java: odd keys)."""

    def __init__(self, owner: int):
        self.owner, self.next, self.live, self.dead = owner, 0, [], []

    def batch(self, tag: str, new: int, updates: int, deletes: int) -> tuple[list[dict], list[str]]:
        new_keys = [2 * (self.next + i) + self.owner for i in range(new)]
        self.next += new
        if self.dead:  # re-insert a key deleted in an earlier batch
            new_keys.append(self.dead.pop(0))
        upd, rest = self.live[:updates], self.live[updates:]
        gone = rest[:deletes] if len(rest) > deletes else []
        self.live = rest[len(gone):] + upd + new_keys
        self.dead += gone
        ks = new_keys + upd
        rows = [_row(k, tag) for k in ks] + [_row(k, "gone") for k in gone]
        return rows, ["+U"] * len(ks) + ["-D"] * len(gone)


def _row(k: int, tag: str) -> dict:
    return {"k": k, "part": (k // 2) % 2, "v": None if k % 7 == 0 else f"v{k}-{tag}",
            "amount": Decimal(k * 100 + len(tag)).scaleb(-2), "at": dt.datetime(2024, 1, 1, 0, 0, 0, k)}


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=arrow_schema(FIELDS))


class Model:
    def __init__(self):
        self.rows: dict[int, dict] = {}

    def apply(self, rows: list[dict], kinds: list[str]) -> None:
        for r, kind in zip(rows, kinds):
            if kind == "-D":
                self.rows.pop(r["k"], None)
            else:
                self.rows[r["k"]] = r

    def expected(self, jo) -> list[dict]:
        return jo.sort_rows(jo.canonical(_table(list(self.rows.values()))), "k")


def _in_background(fn) -> tuple[threading.Thread, list]:
    errors: list = []

    def run():
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 -- reported by the test thread
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


@pytest.mark.compat("mixed writers", "pk: concurrent commits (writes, compactions)", "at the same time")
@pytest.mark.parametrize("version", VERSIONS, ids=[f"java{v}" for v in VERSIONS])
def test_concurrent_commits(jo, oracle, lab, wh, version):
    oracle(version)
    # write-only: neither side compacts on its own (a compaction deleting files the other side's
    # concurrent compaction also deletes is a conflict Java gives up on), only in the rounds that say so
    lab.create_table("db.t", fields=lab_fields(FIELDS), primary_keys=["k", "part"], partition_keys=["part"],
                     options={"bucket": "2", "write-only": "true"})
    ours, theirs, model = Side(0), Side(1), Model()
    ours_commits = 0
    for r in range(ROUNDS):
        for phase in ("java-writes", "java-compacts", "lab-compacts"):
            java_rows = java_kinds = None
            latest = lab.get_table("db.t").latest_snapshot()
            start = latest.id if latest else 0
            if phase == "java-compacts":
                thread, errors = _in_background(partial(jo.compact, wh, "db.t", options={"write-only": "false"},
                                                        version=version))
            else:
                java_rows, java_kinds = theirs.batch(f"j{r}{phase[0]}", new=30, updates=10, deletes=5)
                thread, errors = _in_background(partial(jo.write, wh, "db.t", _table(java_rows),
                                                        row_kinds=java_kinds, version=version))
            t = lab.get_table("db.t")
            if phase == "lab-compacts":
                assert t.compact(full=True) is not None
            n = 0
            while True:  # our last commit starts after the JVM exited
                alive = thread.is_alive()
                rows, kinds = ours.batch(f"l{r}{n}", new=4, updates=2, deletes=1)
                t.write(_table(rows), row_kinds=kinds)
                model.apply(rows, kinds)
                n += 1
                if not alive:
                    break
                time.sleep(0.2)  # a few dozen commits while the JVM runs, not hundreds
            thread.join()
            assert errors == [], f"Java in round {r} ({phase})"
            ours_commits += n
            if java_rows is not None:
                model.apply(java_rows, java_kinds)
            # Java's commit landed between ours: the two really ran at the same time
            new = [s for s in lab.get_table("db.t").snapshots() if s.id > start]
            java_at = [i for i, s in enumerate(new) if (s.commit_kind == "COMPACT" if phase == "java-compacts"
                                                        else s.delta_record_count == len(java_rows))]
            assert len(java_at) == 1 and 0 < java_at[0] < len(new) - 1, (phase, [s.commit_kind for s in new])
            got = jo.sort_rows(jo.canonical(lab.get_table("db.t").to_arrow()), "k")
            assert got == model.expected(jo), f"paimon-lab after round {r} ({phase})"
    snaps = lab.get_table("db.t").snapshots()
    kinds = [s.commit_kind for s in snaps]
    assert kinds.count("COMPACT") == 2 * ROUNDS
    assert kinds.count("APPEND") == ours_commits + 2 * ROUNDS
    assert jo.sort_rows(jo.read(wh, "db.t", version=version), "k") == model.expected(jo), "Java at the end"
