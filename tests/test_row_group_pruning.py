"""Point filters skip Parquet row groups by their statistics inside a file (append and
primary-key reads): measured as the bytes the process reads (``rchar`` in /proc/self/io)."""

from __future__ import annotations

import glob
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs /proc/self/io (Linux)")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64())])
ROWS = 600_000  # three row groups of at most 256K rows in one file


def _bytes_read() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar"))


@pytest.mark.parametrize("primary_keys", [None, ["id"]], ids=["append", "pk"])
def test_point_filter_reads_one_row_group(lab, primary_keys):
    t = lab.create_table("db.t", SCHEMA, primary_keys=primary_keys,
                         options={"bucket": "1"} if primary_keys else {})
    t.write(pa.table({"id": np.arange(ROWS), "v": np.random.default_rng(1).normal(size=ROWS)}, schema=SCHEMA))
    (path,) = [p for p in glob.glob(os.path.join(t.path, "bucket-0", "*")) if p.endswith(".parquet")]
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    t.to_arrow(filter="id = 1")  # first-call costs (metadata, manifests) out of the measurement
    before = _bytes_read()
    got = t.to_arrow(filter="id = 599000")
    filtered = _bytes_read() - before
    before = _bytes_read()
    assert t.to_arrow().num_rows == ROWS
    full = _bytes_read() - before
    assert got.column("id").to_pylist() == [599000]
    assert filtered < full / 3, (filtered, full)
