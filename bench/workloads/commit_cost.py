"""``commit_cost_*``: a 100-row upsert into a big table costs what the commit writes, not what the table holds.

Four table kinds whose commits must find the older versions or locations of the keys they
write (issue #19 item 3):

* ``lookup``: ``changelog-producer = lookup`` (key (id, dt), partition dt, 2 buckets): each commit
  lifts its level-0 rows and diffs them against the keys' older versions;
* ``dv``: ``deletion-vectors.enabled`` (same key and buckets): each commit marks the keys' older
  rows deleted;
* ``dynamic``: ``bucket = -1`` with key (id, dt): each key is routed through the HASH index;
* ``xpart``: ``bucket = -1`` with key id and partition dt (cross-partition update): each key is
  routed to the partition and bucket it already lives in (about half of the rows move to another
  partition, which deletes them from the old one).

Each kind is measured on a table of N rows (``commit_cost_<kind>``) and of 10 N rows
(``commit_cost_<kind>_10x``), whose target is to stay within 1.5x of the first. The tables are
built once (bulk-loaded in one commit, then fully compacted) and cached in the cache directory,
as ``planning``'s; the local lookup files live in ``<cache dir>/lookup-files``. Before the timed
laps an untimed upsert brings the local state (lookup files, key index) up to date, as a writer
that committed before would find it. Timed: five commits, each of 100 rows (90 existing keys
with new values, 10 new keys) from a freshly opened table; the run's time is their median.
Verified: a read of the last commit's ids returns exactly its rows. Opt-in: run only when
named with ``--only``.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import data
from ..systems import LAB
from . import Context, Workload, register
from ._tables import _build_once

COMMITS = 5
ROWS_PER_COMMIT = 100
NEW_PER_COMMIT = 10
CHUNK = 1_000_000
SAMPLE = 20_000

KINDS = {
    "lookup": (["id", "dt"], {"bucket": "2", "changelog-producer": "lookup"}),
    "dv": (["id", "dt"], {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "dynamic": (["id", "dt"], {"bucket": "-1"}),
    "xpart": (["id"], {"bucket": "-1"}),
}


def build_table(wh: str, kind: str, rows: int) -> None:
    """The ``kind`` table of ``rows`` rows (ids 0..rows-1, in one commit, then fully compacted),
    with a sample of its (id, dt) pairs in ``_keys.arrow``."""
    from paimon_lab import Catalog

    pk, options = KINDS[kind]
    catalog = Catalog(wh)
    catalog.create_database("bench", ignore_if_exists=True)
    table = catalog.create_table("bench.t", data.SCHEMA, primary_keys=pk, partition_keys=data.PARTITION_KEYS,
                                 options={"file.format": "parquet", "file.compression": "zstd",
                                          "file.compression.zstd-level": "1", **options})
    samples = []
    with table.writer() as w:
        for start in range(0, rows, CHUNK):
            chunk = data.generate(min(CHUNK, rows - start), data.SEED + start // CHUNK)
            chunk = chunk.set_column(0, "id", pc.add(chunk.column("id"), start))
            w.write(chunk)
            samples.append(chunk.select(["id", "dt"]).slice(0, SAMPLE // max(1, -(-rows // CHUNK))))
    table.compact(full=True)
    data.save(pa.concat_tables(samples), os.path.join(wh, "_keys.arrow"))


def commit_rows(keys: pa.Table, kind: str, fresh_start: int, rng: np.random.Generator) -> pa.Table:
    """100 rows: 90 existing keys with new values (``xpart``: about half moved to another
    partition), 10 new keys from ``fresh_start``."""
    old = keys.take(pa.array(rng.choice(keys.num_rows, ROWS_PER_COMMIT - NEW_PER_COMMIT, replace=False)))
    ids = pa.concat_arrays([old.column("id").combine_chunks(),
                            pa.array(np.arange(fresh_start, fresh_start + NEW_PER_COMMIT), pa.int64())])
    dates = [f"2024-01-{d + 1:02d}" for d in range(data.NUM_PARTITIONS)]
    dt = old.column("dt").to_pylist() + [dates[i] for i in rng.integers(0, len(dates), NEW_PER_COMMIT)]
    if kind == "xpart":
        dt = [dates[int(rng.integers(0, len(dates)))] if rng.random() < 0.5 else d for d in dt]
    n = len(ids)
    names = [f"c-{int(x)}" for x in rng.integers(0, 10 ** 9, n)]
    return pa.Table.from_arrays([ids, pa.array(names), pa.array(rng.standard_normal(n)), pa.array(dt)],
                                schema=data.SCHEMA)


class _CommitCost(Workload):
    kind = "?"
    scale = 1
    order = 95
    needs_setup = True
    systems = (LAB,)
    max_repeat = 3
    opt_in = True   # 8 workloads with big tables to build: run when named (--only commit_cost_...)

    def _size(self, ctx: Context) -> int:
        return ctx.rows * self.scale

    def _table(self, ctx: Context) -> str:
        rows = self._size(ctx)
        return _build_once(os.path.join(ctx.cache_dir, f"commit-cost-{self.kind}-{rows}"),
                           lambda wh: build_table(wh, self.kind, rows))

    @staticmethod
    def _local_state(ctx: Context) -> None:
        os.environ["PAIMON_LAB_LOOKUP_CACHE_DIR"] = os.path.join(ctx.cache_dir, "lookup-files")

    def _open(self, wh: str):
        from paimon_lab import Catalog

        return Catalog(wh).get_table("bench.t")

    def setup(self, ctx: Context, system):
        self._local_state(ctx)
        self._table(ctx)

    def prepare(self, ctx: Context, system):
        self._local_state(ctx)
        wh = self._table(ctx)
        keys = data.load(os.path.join(wh, "_keys.arrow"))
        rng = np.random.default_rng()
        # new keys never collide with earlier runs' (ids above any run's, drawn at random)
        fresh = self._size(ctx) + int(rng.integers(1, 2 ** 40)) * 1000
        batches = [commit_rows(keys, self.kind, fresh + i * NEW_PER_COMMIT, rng) for i in range(COMMITS + 1)]
        self._open(wh).write(batches[0])   # untimed: brings the local state up to date
        return wh, batches[1:]

    def run(self, ctx: Context, system, state):
        wh, batches = state
        for i, rows in enumerate(batches):
            with ctx.lap(f"commit{i + 1}"):
                self._open(wh).write(rows)

    def _read_back(self, state) -> tuple[pa.Table, pa.Table]:
        wh, batches = state
        last = batches[-1]
        ids = ", ".join(str(i) for i in last.column("id").to_pylist())
        got = self._open(wh).to_arrow(filter=f"id IN ({ids})")
        order = [("id", "ascending"), ("dt", "ascending")]
        return got.cast(last.schema).sort_by(order), last.sort_by(order)

    def expected(self, ctx: Context) -> data.Fingerprint:
        return self._expected

    def verify(self, ctx: Context, system, state, result):
        got, want = self._read_back(state)
        self._expected = data.fingerprint(want)
        return {system.name: data.fingerprint(got)}

    def check(self, ctx: Context, system, state, result):
        got, want = self._read_back(state)
        return [] if got.equals(want) else [f"read back {got.num_rows} rows differing from the last commit's"]


for _kind in KINDS:
    for _scale in (1, 10):
        suffix = "" if _scale == 1 else "_10x"
        register(type(f"CommitCost_{_kind}{suffix}", (_CommitCost,), {
            "kind": _kind, "scale": _scale, "name": f"commit_cost_{_kind}{suffix}",
            "description": f"100-row upserts into a {_kind} table of {'10 N' if _scale > 1 else 'N'} rows "
                           "(median of 5 commits, each from a freshly opened table)",
            "workload_targets": {f"commit_cost_{_kind}": 1.5} if _scale > 1 else {},
        }))
