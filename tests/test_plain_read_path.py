"""The plain (no-merge) read path: whole Parquet files through the file reader, reads nested in
thread_map tasks, and a data file that lacks a column its schema names."""

from __future__ import annotations

import glob
import os
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paimon_lab.errors import CorruptFileError
from paimon_lab.utils.parallel import WORKERS, thread_map

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.decimal128(15, 2)),
                    ("day", pa.date32()), ("dt", pa.string())])


def _rows(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    return pa.table({"id": ids, "name": [f"n{i % 97}" if i % 11 else None for i in range(n)],
                     "amount": pa.array([None if i % 13 == 0 else Decimal(i * 3) / 100 for i in range(n)],
                                       pa.decimal128(15, 2)),
                     "day": pa.array((ids % 400).astype(np.int32)).cast(pa.date32()),
                     "dt": [f"d{i % 5}" for i in range(n)]}, schema=SCHEMA)


def _sorted(t: pa.Table) -> list[dict]:
    return t.sort_by("id").to_pylist()


@pytest.fixture
def tables(lab):
    rows = _rows(3000)
    append = lab.create_table("db.append", SCHEMA, partition_keys=["dt"])
    pk = lab.create_table("db.pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    for part in (rows.slice(0, 1000), rows.slice(1000, 1000), rows.slice(2000)):  # several files per partition
        append.write(part)
        pk.write(part)
    pk.compact(full=True)
    return rows, append, pk


def test_plain_reads_return_exactly_the_rows(tables):
    rows, append, pk = tables
    for t in (append, pk):
        got = t.to_arrow()
        assert [(f.name, f.type) for f in got.schema] == [(f.name, f.type) for f in SCHEMA]
        assert _sorted(t.to_arrow()) == _sorted(rows)
        got = t.to_arrow(columns=["amount", "id"])
        assert got.column_names == ["amount", "id"] and _sorted(got) == _sorted(rows.select(["amount", "id"]))
        got = t.to_arrow(filter="id >= 2500 AND dt = 'd3'")
        want = rows.filter((pc.field("id") >= 2500) & (pc.field("dt") == "d3"))
        assert _sorted(got) == _sorted(want)
        assert t.to_arrow(limit=7).num_rows == 7


def test_reads_inside_thread_map_tasks(tables):
    # every read nests its own thread_map (buckets, files) one level down: no deadlock, right rows
    rows, append, pk = tables
    results = thread_map(lambda t: thread_map(lambda _: t.to_arrow(), range(WORKERS + 1)), [append, pk] * WORKERS)
    for per_table in results:
        for got in per_table:
            assert _sorted(got) == _sorted(rows)


def test_a_data_file_without_a_schema_column_is_a_clear_error(lab, wh):
    t = lab.create_table("db.broken", SCHEMA)
    t.write(_rows(50))
    path = glob.glob(os.path.join(wh, "db.db", "broken", "bucket-0", "*.parquet"))[0]
    pq.write_table(pq.read_table(path).drop_columns(["amount"]), path)
    with pytest.raises(CorruptFileError, match="amount"):
        t.to_arrow()
    assert t.to_arrow(columns=["id", "name"]).num_rows == 50
