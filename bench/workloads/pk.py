"""Primary-key workloads: upsert commits, merge-on-read, full compaction, deleting keys.

The table: ``id BIGINT, name STRING, value DOUBLE, dt STRING``, primary key ``(id, dt)``,
partitioned by ``dt``, ``'bucket' = '2'`` (fixed buckets need the partition inside the key; ``id``
alone is unique in the data, so this is still a table keyed by ``id``). Three commits upsert the
same N keys with new ``name`` and ``value`` columns (:func:`._tables.upsert_commits`), so after
them every key has three versions on disk (merge-on-read has to pick the newest) and the
expected content is exactly the last commit's rows.
"""

from __future__ import annotations

import os

import numpy as np

from .. import data
from ..systems import LAB
from . import Context, Workload, register
from ._tables import (
    NUM_COMMITS,
    _build_once,
    adopt_pk_table,
    commit_batches,
    fresh_copy,
    pk_final,
    pk_final_fingerprint,
    read_back_all,
    shared_pk_table,
    upsert_commits,
)


class _PkWorkload(Workload):
    max_repeat = 3  # pypaimon needs about a minute per 1,000,000-row commit
    # --scale 1000000,10000000,100000000: time per row flat within 1.5x, peak RSS < 2 GiB at every
    # size (above 1,000,000 rows input and output are streamed, see Context.streamed)
    scale_flatness = 1.5
    scale_peak_limit = 2 * 2 ** 30

    def expected(self, ctx: Context) -> data.Fingerprint:
        return pk_final_fingerprint(ctx)

    def check(self, ctx: Context, system, state, result):
        rows = getattr(result, "num_rows", getattr(result, "rows", None))
        if rows is not None and rows != ctx.rows:
            return [f"read {rows} rows, expected {ctx.rows}"]
        return []


@register
class PkUpsert(_PkWorkload):
    name = "pk_upsert"
    description = ("three upsert commits of the same N keys into a fresh primary-key table "
                   "(key (id, dt), bucket 2); time = median of the 3 commits")
    order = 30
    requires = ("upsert",)
    max_repeat = 2  # a pypaimon run is three commits of about a minute each at 1,000,000 rows
    # paimon-lab's median commit / peer's: >= 30x faster than pypaimon, within 2x of the
    # pyarrow sort+write floor, no slower than a delta-rs MERGE.
    targets = {"pypaimon": 1 / 30, "pyarrow": 2.0, "deltalake": 1.0}

    def prepare(self, ctx: Context, system):
        table = system.create_pk_table(ctx.run_dir, data.SCHEMA, data.PARTITION_KEYS)
        return table, None if ctx.streamed else upsert_commits(ctx)

    def run(self, ctx: Context, system, state):
        table, commits = state
        if ctx.streamed:  # batches made on the fly (outside the laps) into one writer per commit
            for k in range(NUM_COMMITS):
                with ctx.lap(f"commit{k + 1}"):
                    system.upsert_batches(table, ctx.paused_iter(commit_batches(ctx, k)))
            return
        for k, rows in enumerate(commits, 1):
            with ctx.lap(f"commit{k}"):
                system.upsert(table, rows)

    def check(self, ctx, system, state, result):
        return []

    def verify(self, ctx: Context, system, state, result):
        # Read back by the writer and, in the warm-up, for Paimon tables by the other Paimon
        # implementation too.
        out = read_back_all(system, ctx.run_dir, self.expected(ctx), ctx)
        # The verified table is exactly what pk_read & co. need: offer it to them (saves pypaimon
        # three more minute-long commits at 1,000,000 rows). Iceberg tables are not relocatable.
        if system.table_format != "iceberg" and all(not self.expected(ctx).diff(fp) for fp in out.values()):
            adopt_pk_table(ctx, system, ctx.run_dir)
        return out


@register
class PkRead(_PkWorkload):
    name = "pk_read"
    description = "merge-on-read full scan of the primary-key table after the 3 overlapping upsert commits"
    order = 40
    needs_setup = True
    targets = {"pypaimon": 1 / 20, "deltalake": 1.0}

    def setup(self, ctx: Context, system):
        shared_pk_table(ctx, system)

    def prepare(self, ctx: Context, system):
        return system.open(shared_pk_table(ctx, system))

    def run(self, ctx: Context, system, table):
        if ctx.streamed:  # partition by partition, each fingerprinted (outside the lap) and dropped
            acc = data.Accumulator()
            with ctx.lap("scan"):
                for part in system.read_partitions(table, "dt", data.DATES):
                    with ctx.paused():
                        acc.add(part)
                    del part
            return acc.result()
        return system.read(table)

    def verify(self, ctx: Context, system, table, result):
        if isinstance(result, data.Fingerprint):
            return {system.name: result}
        return {system.name: data.fingerprint_like(result, self.expected(ctx))}


@register
class PkCompact(_PkWorkload):
    name = "pk_compact"
    description = "full compaction of the primary-key table after the 3 upsert commits (a fresh copy per run)"
    order = 50
    needs_setup = True
    requires = ("compact",)
    workload_targets = {"pk_upsert": 3.0}  # full compaction < 3x one upsert commit

    def setup(self, ctx: Context, system):
        shared_pk_table(ctx, system)

    def prepare(self, ctx: Context, system):
        wh = fresh_copy(ctx, system, shared_pk_table(ctx, system), ctx.run_dir)
        return system.open(wh)

    def run(self, ctx: Context, system, table):
        system.compact(table)

    def verify(self, ctx: Context, system, table, result):
        return read_back_all(system, ctx.run_dir, self.expected(ctx), ctx)


@register
class PkCompactFresh(_PkWorkload):
    """Full compaction right after one commit: every bucket holds one fresh level-0 file that
    overlaps nothing, so (as in Java) each is moved to the top level by rewriting its metadata
    only, no data file is read or written."""

    name = "pk_compact_fresh"
    description = ("full compaction of a primary-key table holding one commit (one level-0 file per bucket: "
                   "upgraded by metadata); a fresh copy per run")
    order = 55
    needs_setup = True
    requires = ("compact",)
    systems = (LAB,)

    def expected(self, ctx: Context) -> data.Fingerprint:
        return data.fingerprint(upsert_commits(ctx)[0])

    def _table(self, ctx: Context, system) -> str:
        def build(wh):
            table = system.create_pk_table(wh, data.SCHEMA, data.PARTITION_KEYS)
            system.upsert(table, upsert_commits(ctx)[0])

        return _build_once(os.path.join(ctx.shared_dir, f"pk1-{ctx.rows}"), build)

    def setup(self, ctx: Context, system):
        self._table(ctx, system)

    def prepare(self, ctx: Context, system):
        return system.open(fresh_copy(ctx, system, self._table(ctx, system), ctx.run_dir))

    def run(self, ctx: Context, system, table):
        system.compact(table)

    def verify(self, ctx: Context, system, table, result):
        return read_back_all(system, ctx.run_dir, self.expected(ctx), ctx)


def deleted_keys(ctx: Context) -> list[int]:
    """1% of the keys (at least one), a fixed random sample."""
    rng = np.random.default_rng(data.SEED + 7)
    count = max(1, ctx.rows // 100)
    return sorted(int(x) for x in rng.choice(ctx.rows, size=count, replace=False))


@register
class PkDelete(_PkWorkload):
    name = "pk_delete"
    description = "delete 1% of the keys (id IN (...)) from the primary-key table after the 3 commits (fresh copy per run)"
    order = 70
    needs_setup = True
    requires = ("delete_keys",)

    def expected(self, ctx: Context) -> data.Fingerprint:
        import pyarrow as pa
        import pyarrow.compute as pc

        final = pk_final(ctx)
        keep = pc.invert(pc.is_in(final.column("id"), value_set=pa.array(deleted_keys(ctx), pa.int64())))
        return data.fingerprint(final.filter(keep))

    def setup(self, ctx: Context, system):
        shared_pk_table(ctx, system)

    def prepare(self, ctx: Context, system):
        wh = fresh_copy(ctx, system, shared_pk_table(ctx, system), ctx.run_dir)
        return system.open(wh), deleted_keys(ctx)

    def run(self, ctx: Context, system, state):
        table, keys = state
        system.delete_keys(table, "id", keys)

    def check(self, ctx, system, state, result):
        return []

    def verify(self, ctx: Context, system, state, result):
        return read_back_all(system, ctx.run_dir, self.expected(ctx), ctx)
