"""``time_travel``: read the first snapshot of a table that has had several commits since.

The table: an append table (partition dt, bucket -1) with three commits of N rows each: first
the input rows, then two more commits of the same keys with other values, so the latest snapshot
holds 3N rows and the first exactly the input rows (the expected result). paimon-lab
``to_arrow(snapshot_id=1)``, pypaimon ``table.copy({"scan.snapshot-id": "1"})``, delta-rs
``DeltaTable(path, version=1)`` (version 0 is the empty table created beforehand, like Paimon's
schema-only table), pyiceberg ``scan(snapshot_id=<first>)``. The pyarrow floor keeps no history.
"""

from __future__ import annotations

import os

from .. import data
from . import Context, Workload, register
from ._tables import _build_once, upsert_commits


@register
class TimeTravel(Workload):
    name = "time_travel"
    description = "read snapshot 1 of an append table with 3 commits (N rows each) into Arrow"
    order = 80
    needs_setup = True
    requires = ("read_first",)

    def _table(self, ctx: Context, system) -> str:
        def build(wh):
            table = system.create_append_table(wh, data.SCHEMA, data.PARTITION_KEYS)
            system.write(table, ctx.data)
            for rows in upsert_commits(ctx)[1:]:
                system.write(system.open(wh), rows)

        return _build_once(os.path.join(ctx.shared_dir, f"history-{ctx.rows}"), build)

    def setup(self, ctx: Context, system):
        self._table(ctx, system)

    def prepare(self, ctx: Context, system):
        return system.open(self._table(ctx, system))

    def run(self, ctx: Context, system, table):
        return system.read_first(table)

    def verify(self, ctx: Context, system, table, result):
        return {system.name: data.fingerprint_like(result, ctx.expected)}

    def check(self, ctx: Context, system, table, result):
        if result.num_rows != ctx.rows:
            return [f"read {result.num_rows} rows, expected {ctx.rows}"]
        return []
