"""``planning``: plan a full scan of a table with many snapshots and files.

The table: an append table (partition dt, bucket -1, parquet) built by S commits of N/S input
rows each, S = N / 1,000 clamped to 10..1,000 (so 1,000 snapshots and about 10,000 data files,
one per partition per commit, at N = 1,000,000; 20 snapshots and 200 files at ``--quick`` size).
Building it takes a while, so it is built once and cached in the cache directory
(``--cache-dir``, default ``<workdir>/_cache``: reuse ``--workdir`` to keep it across
invocations; delete the directory to rebuild it).

Both Paimon implementations plan the *same* table, written by paimon-lab (a Paimon table is a
Paimon table; writing 1,000 commits through pypaimon would take many minutes). delta-rs plans its
own table built the same way (its log is checkpointed every 100 commits by default).

Timed: five plans, each from a freshly opened table (no metadata cached between them), the run's
time is their median: paimon-lab ``Catalog(wh).get_table(...).plan()``, pypaimon
``new_read_builder().new_scan().plan().splits()``, delta-rs ``DeltaTable(path)`` and its list of
add actions. Verified: the planned files and the rows they hold equal what was written.
"""

from __future__ import annotations

import json
import os

import pyarrow.compute as pc

from .. import crossrun, data
from ..systems import SYSTEMS, LAB
from . import Context, Workload, register
from ._tables import _build_once

PLANS = 5


def shape(rows: int, rows_per_snapshot: int = 1000, max_snapshots: int = 1000) -> tuple[int, int]:
    """(snapshots, rows per commit)."""
    snapshots = min(max_snapshots, max(10, rows // rows_per_snapshot))
    return snapshots, max(1, rows // snapshots)


def build_table(builder_name: str, wh: str, data_path: str, snapshots: int, per_commit: int,
                flushes: int = 1) -> None:
    """The planning table: ``snapshots`` commits of ``per_commit`` input rows by ``builder_name``;
    ``flushes`` > 1 (paimon-lab only): each commit writes its rows in that many flushes, each its
    own file per partition."""
    builder = SYSTEMS[builder_name]()
    rows = data.load(data_path)
    table = builder.create_append_table(wh, data.SCHEMA, data.PARTITION_KEYS)
    files = 0
    step = -(-per_commit // flushes)
    for i in range(snapshots):
        piece = rows.slice(i * per_commit, per_commit)
        target = table if i == 0 else builder.open(wh)
        if flushes == 1:
            builder.write(target, piece)
            files += len(pc.unique(piece.column("dt")))
            continue
        with target.writer() as w:
            for start in range(0, piece.num_rows, step):
                part = piece.slice(start, step)
                w.write(part)
                w.flush()
                files += len(pc.unique(part.column("dt")))
    with open(os.path.join(wh, "_plan.json"), "w") as f:
        json.dump({"snapshots": snapshots, "rows": snapshots * per_commit, "files": files}, f)


@register
class Planning(Workload):
    name = "planning"
    description = ("plan a full scan of an append table with ~N/1000 snapshots (1,000 max) and ~10 files each, "
                   "opened afresh; time = median of 5 plans")
    order = 90
    needs_setup = True
    requires = ("plan",)
    rows_per_snapshot, max_snapshots = 1000, 1000
    flushes = 1  # files per partition per commit

    def _builder(self, system):
        return SYSTEMS[LAB]() if system.table_format == "paimon" else system

    def _table(self, ctx: Context, system) -> str:
        builder = self._builder(system)
        snapshots, per_commit = shape(ctx.rows, self.rows_per_snapshot, self.max_snapshots)

        def build(wh):
            if builder.runs_here():
                build_table(builder.name, wh, ctx.data_path, snapshots, per_commit, self.flushes)
            else:  # pypaimon's worker runs in pypaimon's own venv: paimon-lab builds in its own
                crossrun.call(builder.python(), "bench.workloads.planning:build_table",
                              builder.name, wh, ctx.data_path, snapshots, per_commit, self.flushes)

        key = f"planning-{builder.name}-{snapshots}x{per_commit}" + (f"x{self.flushes}" if self.flushes > 1 else "")
        return _build_once(os.path.join(ctx.cache_dir, key), build)

    def _meta(self, ctx: Context, system) -> dict:
        with open(os.path.join(self._table(ctx, system), "_plan.json")) as f:
            return json.load(f)

    def setup(self, ctx: Context, system):
        self._table(ctx, system)

    def prepare(self, ctx: Context, system):
        return self._table(ctx, system)

    def run(self, ctx: Context, system, warehouse):
        result = None
        for i in range(PLANS):
            with ctx.lap(f"plan{i + 1}"):
                result = system.plan(warehouse)
        return result

    @staticmethod
    def _fp(rows: int, files: int) -> data.Fingerprint:
        return data.Fingerprint(rows, ("planned files",), ("count",), str(files))

    def expected(self, ctx: Context) -> data.Fingerprint:
        # Only known in a worker that can see the table; verify() fills it in.
        return self._expected

    def verify(self, ctx: Context, system, warehouse, result):
        meta = self._meta(ctx, system)
        self._expected = self._fp(meta["rows"], meta["files"])
        files, rows = result
        return {system.name: self._fp(rows, files)}

    def check(self, ctx: Context, system, warehouse, result):
        meta = self._meta(ctx, system)
        files, rows = result
        if (files, rows) != (meta["files"], meta["rows"]):
            return [f"planned {files} files / {rows} rows, expected {meta['files']} / {meta['rows']}"]
        return []


@register
class PlanningLarge(Planning):
    """``planning`` at 10x the files: the same ~N/1,000 commits (1,000 max), each writing its rows
    in 10 flushes, so every commit adds ~100 files: 1,000 snapshots and about 100,000 data files
    at N = 1,000,000. Both Paimon clients plan the paimon-lab-built table; delta-rs is left out
    (its writer has no way to make several files per partition in one commit alike). Opt-in
    (``--only planning_large``): building the table takes minutes (it is cached like
    ``planning``'s)."""

    name = "planning_large"
    description = ("plan a full scan of an append table with ~N/1000 snapshots (1,000 max) and ~100 files each, "
                   "opened afresh; time = median of 5 plans (opt-in)")
    order = 91
    opt_in = True
    flushes = 10
    systems = (LAB, "pypaimon")
