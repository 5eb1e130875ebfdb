"""``read``: full scan of the table the ``append`` workload's operation produces."""

from __future__ import annotations

from .. import data
from . import Context, Workload, register


@register
class Read(Workload):
    name = "read"
    description = "full scan of a table holding all rows (written once by the same system) into Arrow"
    order = 20
    needs_setup = True
    targets = {"pyarrow": 1.5}
    quick_repeat = 1  # --quick: one timed run after the verified warm-up

    def setup(self, ctx: Context, system):
        table = system.create_append_table(ctx.cell_dir, data.SCHEMA, data.PARTITION_KEYS)
        system.write(table, ctx.data)

    def prepare(self, ctx: Context, system):
        return system.open(ctx.cell_dir)

    def run(self, ctx: Context, system, table):
        return system.read(table)

    def verify(self, ctx: Context, system, table, result):
        return {system.name: data.fingerprint_like(result, ctx.expected)}

    def check(self, ctx: Context, system, table, result):
        if result is None or result.num_rows != ctx.rows:
            got = None if result is None else result.num_rows
            return [f"read {got} rows, expected {ctx.rows}"]
        return []
