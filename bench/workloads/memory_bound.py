"""``memory_bound``: paimon-lab writing 10x the rows into a primary-key table with a bounded buffer.

10 * N rows (10,000,000 at the default N = 1,000,000) in ten batches of N rows, all through one
``with t.writer() as w:`` (one commit) into the primary-key table of ``pk_upsert`` (key (id, dt),
bucket 2) with ``'write-buffer-size' = '256 mb'``. The batches are made up front (untimed) with
the data set's generator and distinct keys (batch i holds ids i*N .. i*N + N - 1), stored in an
uncompressed Arrow IPC file, and read back one batch at a time inside the timed operation, so at
any moment the process holds only the batch being written plus the writer's own memory.

Target: peak RSS of the process during the write below 2 GiB (interpreter, libraries and the
current batch included). Verified: the table read back (partition by partition) has every row.
"""

from __future__ import annotations

import json
import os

import pyarrow as pa

from .. import data
from ..systems import PK_OPTIONS, PRIMARY_KEYS
from . import Context, Workload, register

FACTOR = 10
BUFFER = "256 mb"


def _batch(ctx: Context, i: int) -> pa.Table:
    rows = data.generate(ctx.rows, seed=data.SEED + 100 + i)
    return rows.set_column(0, "id", pa.array(rows.column("id").to_numpy() + i * ctx.rows))


@register
class MemoryBound(Workload):
    name = "memory_bound"
    description = (f"paimon-lab writes {FACTOR}x N rows (batches of N) into the primary-key table in one "
                   f"writer with 'write-buffer-size' = '{BUFFER}'; target peak RSS < 2 GiB")
    order = 100
    needs_setup = True
    systems = ("paimon_lab",)
    peak_limit = 2 * 2 ** 30
    max_repeat = 1

    def _input(self, ctx: Context) -> str:
        return os.path.join(ctx.cell_dir, f"batches-{ctx.rows}x{FACTOR}.arrow")

    def setup(self, ctx: Context, system):
        path = self._input(ctx)
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, data.SCHEMA) as writer:
            def pieces():  # write each batch and hash it, one at a time
                for i in range(FACTOR):
                    batch = _batch(ctx, i)
                    writer.write_table(batch, max_chunksize=ctx.rows)
                    yield batch

            expected = data.fingerprint_pieces(pieces())
        with open(path + ".json", "w") as f:
            json.dump({"expected": expected.to_json()}, f)

    def expected(self, ctx: Context) -> data.Fingerprint:
        with open(self._input(ctx) + ".json") as f:
            return data.Fingerprint.from_json(json.load(f)["expected"])

    def prepare(self, ctx: Context, system):
        from paimon_lab import Catalog

        catalog = Catalog(ctx.run_dir)
        catalog.create_database("bench", ignore_if_exists=True)
        table = catalog.create_table("bench.t", data.SCHEMA, primary_keys=PRIMARY_KEYS,
                                     partition_keys=data.PARTITION_KEYS,
                                     options={**PK_OPTIONS, "write-buffer-size": BUFFER})
        return table

    def run(self, ctx: Context, system, table):
        with pa.OSFile(self._input(ctx), "rb") as source:
            reader = pa.ipc.open_file(source)
            with table.writer() as w:
                for i in range(reader.num_record_batches):
                    w.write(pa.Table.from_batches([reader.get_batch(i)]))

    def verify(self, ctx: Context, system, table, result):
        from paimon_lab import Catalog

        t = Catalog(ctx.run_dir).get_table("bench.t")
        dts = [f"2024-01-{d + 1:02d}" for d in range(data.NUM_PARTITIONS)]
        return {system.name: data.fingerprint_pieces(t.to_arrow(filter=f"dt = '{dt}'") for dt in dts)}
