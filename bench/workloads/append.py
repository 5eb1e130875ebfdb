"""``append``: one commit of all rows into a fresh append table (partitioned by dt, bucket -1)."""

from __future__ import annotations

from .. import data
from . import Context, Workload, register
from ._tables import read_back_all


@register
class Append(Workload):
    name = "append"
    description = "write all rows as one commit into a fresh append table (partition dt, bucket -1, parquet zstd-1)"
    order = 10
    targets = {"pyarrow": 1.5}
    quick_repeat = 1  # --quick: one timed run after the verified warm-up

    def prepare(self, ctx: Context, system):
        ctx.data  # load the input before the clock starts
        return system.create_append_table(ctx.run_dir, data.SCHEMA, data.PARTITION_KEYS)

    def run(self, ctx: Context, system, table):
        system.write(table, ctx.data)

    def verify(self, ctx: Context, system, table, result):
        # Read the table back with the writer's own reader and, for Paimon tables, with every
        # other available Paimon implementation too: a table one of them wrote must read the
        # same in the other (this is what makes paimon-lab's files real Paimon tables).
        return read_back_all(system, ctx.run_dir, ctx.expected, ctx)
