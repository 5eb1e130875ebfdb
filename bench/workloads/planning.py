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

Timed: five plans, each from a freshly opened table, the run's time is their median:
paimon-lab ``Catalog(wh).get_table(...).plan()``, pypaimon
``new_read_builder().new_scan().plan().splits()``, delta-rs ``DeltaTable(path)`` and its list of
add actions. Verified: the planned files and the rows they hold equal what was written.

Every timed run is a fresh process, and paimon-lab keeps decoded manifests twice: in the process
(manifest files never change, so ``plan2``.. decode none) and on local disk as Arrow IPC
(``paimon_lab.io.disk_cache``), so a new process reads them back instead of decoding Avro. Three
figures, each a workload with its own target:

* ``planning``: the median of the five plans, so a plan in a process that planned the table
  before (warm);
* ``planning_cold``: one plan per run, the first of its process; paimon-lab's disk cache was
  filled beforehand by another process (an untimed plan in a subprocess at setup): what every
  later process on the machine pays;
* ``planning_first``: one plan per run, the first of its process, paimon-lab's disk cache emptied
  before it: the first plan ever of this table on this machine, every manifest decoded from Avro.

delta-rs has no cache across processes: its ``planning_cold`` and ``planning_first`` are the same
operation (the first plan of a process).
"""

from __future__ import annotations

import json
import os
import shutil

import pyarrow.compute as pc

from .. import crossrun, data
from ..systems import SYSTEMS, LAB
from . import Context, Workload, register
from ._tables import _build_once

PLANS = 5
#: paimon-lab's disk cache of decoded manifests (``paimon_lab.io.disk_cache``)
CACHE_ENV = "PAIMON_LAB_CACHE_DIR"


def plan_once(system_name: str, wh: str) -> list[int]:
    """One plan of ``wh`` by ``system_name`` (in a subprocess: fills paimon-lab's disk cache)."""
    return list(SYSTEMS[system_name]().plan(wh))


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
    targets = {"deltalake": 2.0}
    plans = PLANS  # plans per run (the run's time is their median)
    #: paimon-lab's disk cache per run: "warm" (filled by a subprocess at setup) or "empty"
    disk_cache = "warm"

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

    def _cache_dir(self, ctx: Context) -> str:
        return os.path.join(ctx.run_dir if self.disk_cache == "empty" else ctx.cell_dir, "paimon-lab-cache")

    def setup(self, ctx: Context, system):
        wh = self._table(ctx, system)
        if system.name == LAB and self.disk_cache == "warm":
            os.environ[CACHE_ENV] = self._cache_dir(ctx)
            crossrun.call(system.python(), "bench.workloads.planning:plan_once", system.name, wh)

    def prepare(self, ctx: Context, system):
        wh = self._table(ctx, system)
        directory = self._cache_dir(ctx)
        if self.disk_cache == "empty":
            shutil.rmtree(directory, ignore_errors=True)
        os.environ[CACHE_ENV] = directory  # read by paimon-lab at every lookup
        if system.name == LAB:
            from paimon_lab.core.manifest import MANIFEST_CACHE

            MANIFEST_CACHE.clear()  # the warm-up run's setup may have written the table here
        return wh

    def run(self, ctx: Context, system, warehouse):
        result = None
        for i in range(self.plans):
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
    targets = {}


@register
class PlanningCold(Planning):
    """``planning``'s table, one plan per run: the first plan of a fresh process, paimon-lab's
    disk cache of decoded manifests filled by an earlier process."""

    name = "planning_cold"
    description = ("planning's table, the first plan of a fresh process (paimon-lab's manifest disk cache "
                   "filled by an earlier process)")
    order = 92
    plans = 1


@register
class PlanningFirst(Planning):
    """``planning``'s table, one plan per run: the first plan of a fresh process with paimon-lab's
    disk cache emptied, so every manifest is decoded from Avro (the first plan on a machine)."""

    name = "planning_first"
    description = ("planning's table, the first plan of a fresh process with paimon-lab's manifest disk cache "
                   "empty (every manifest decoded)")
    order = 93
    plans = 1
    disk_cache = "empty"
    targets = {}


@register
class PlanningLargeCold(PlanningLarge):
    """``planning_large``'s table as ``planning_cold`` (opt-in)."""

    name = "planning_large_cold"
    description = "planning_large's table, the first plan of a fresh process, disk cache filled (opt-in)"
    order = 94
    plans = 1


@register
class PlanningLargeFirst(PlanningLarge):
    """``planning_large``'s table as ``planning_first`` (opt-in)."""

    name = "planning_large_first"
    description = "planning_large's table, the first plan of a fresh process, disk cache empty (opt-in)"
    order = 95
    plans = 1
    disk_cache = "empty"
