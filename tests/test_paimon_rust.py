"""pypaimon-rust (Apache paimon-rust's native core) reads what we write: an append table with
every type (INT96 nanosecond timestamps, integer-backed DECIMALs, field ids) and a primary-key
table with upserts (its merge-on-read of our LSM files). API: ``PaimonCatalog({"warehouse": w})
.get_table("db.t").new_read_builder()``, then ``rb.new_scan().plan().splits()`` and
``rb.new_read().read(splits)`` (a list of RecordBatches)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "java"))
from java_rows import PK_FIELDS, all_types_fields, all_types_rows, lab_fields, pk_rows  # noqa: E402

rust = pytest.importorskip("pypaimon_rust.datafusion")


def _rust_read(warehouse: str, ident: str) -> pa.Table:
    rb = rust.PaimonCatalog({"warehouse": warehouse}).get_table(ident).new_read_builder()
    return pa.Table.from_batches(rb.new_read().read(rb.new_scan().plan().splits()))


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_rust_reads_every_type(lab_catalog, warehouse, fmt):
    t = lab_catalog.create_table("db.t", fields=lab_fields(all_types_fields(fmt)),
                                 options={"bucket": "1", "bucket-key": "id", "file.format": fmt})
    data = all_types_rows(3000, pre_epoch=fmt != "orc")
    t.write(data)
    got = _rust_read(warehouse, "db.t").sort_by("id")
    assert got.schema.types == data.schema.types
    assert [n for n in data.column_names if not got.column(n).equals(data.column(n))] == []


def test_rust_reads_primary_key_table(lab_catalog, warehouse):
    t = lab_catalog.create_table("db.pk", fields=lab_fields(PK_FIELDS), primary_keys=["k", "part"],
                                 partition_keys=["part"], options={"bucket": "2"})
    t.write(pk_rows(np.random.default_rng(0).permutation(5000), 1))
    t.write(pk_rows(np.arange(1000), 2))
    got = _rust_read(warehouse, "db.pk").sort_by("k")
    assert got.equals(t.to_arrow().sort_by("k"))
    assert got.column("name").to_pylist()[:2] == ["name-0-v2", "name-1-v2"]
