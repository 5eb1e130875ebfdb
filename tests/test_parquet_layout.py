"""How data files are laid out: per-column Parquet encodings, and parallel bucket writes that
leave nothing behind when one bucket fails."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_lab.errors import OptionError
from paimon_lab.format import RollingFileWriter, parquet_encodings


def _rows(n: int, parts=("a", "b", "c")) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({
        "id": pa.array(rng.permutation(n), pa.int64()),
        "name": pa.array([f"name-{i}" for i in rng.permutation(n)]),      # all distinct
        "city": pa.array(rng.choice(["oslo", "rome", "lima"], n)),         # three values
        "qty": pa.array(rng.integers(0, 5, n), pa.int32()),                # five values
        "price": pa.array(rng.standard_normal(n)),                         # all distinct
        "dt": pa.array([parts[i % len(parts)] for i in range(n)]),
    })


def _encodings(path: str) -> dict[str, set[str]]:
    md = pq.ParquetFile(path).metadata
    out: dict[str, set[str]] = {}
    for g in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(g).column(c)
            out.setdefault(col.path_in_schema, set()).update(col.encodings)
    return out


def _data_files(table_path: str) -> list[str]:
    return [os.path.join(d, f) for d, _, fs in os.walk(table_path) for f in fs if f.startswith("data-")]


def test_encoding_policy_from_a_sample():
    kw = parquet_encodings(_rows(5000))
    assert sorted(kw["use_dictionary"]) == ["city", "dt", "qty"]
    # near-unique integers are delta-encoded; near-unique strings and doubles stay PLAIN
    assert kw["column_encoding"] == {"id": "DELTA_BINARY_PACKED"}
    assert parquet_encodings(_rows(5000), dictionary=True) == {"use_dictionary": True}
    off = parquet_encodings(_rows(5000), dictionary=False)
    assert off["use_dictionary"] == []
    assert off["column_encoding"] == {"id": "DELTA_BINARY_PACKED", "qty": "DELTA_BINARY_PACKED"}
    # too few values to judge: dictionary (pyarrow falls back by itself past 1 MB)
    assert parquet_encodings(_rows(10))["use_dictionary"] == _rows(10).column_names


def test_primary_key_files_delta_encode_keys_and_sequence_numbers(lab_catalog, py_catalog):
    t = lab_catalog.create_table("db.pk", _rows(1).schema, primary_keys=["id", "dt"],
                                 partition_keys=["dt"], options={"bucket": "2"})
    rows = _rows(6000)
    t.write(rows)
    t.write(rows.slice(0, 3000))
    files = _data_files(t.path)
    assert len(files) == 12
    for f in files:
        enc = _encodings(f)
        assert "DELTA_BINARY_PACKED" in enc["_KEY_id"] and "DELTA_BINARY_PACKED" in enc["_SEQUENCE_NUMBER"]
        assert "RLE_DICTIONARY" in enc["city"] and "RLE_DICTIONARY" not in enc["name"]
    expected = rows.sort_by("id").to_pylist()
    assert t.to_arrow().sort_by("id").to_pylist() == expected
    # the Python reference client reads them (pyarrow decodes every Parquet encoding)
    pt = py_catalog.get_table("db.pk")
    rb = pt.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert got.select(rows.column_names).sort_by("id").to_pylist() == expected


def test_dictionary_option_forces_dictionaries(lab_catalog):
    t = lab_catalog.create_table("db.t", _rows(1).schema, options={"parquet.enable.dictionary": "true"})
    t.write(_rows(3000))
    (f,) = _data_files(t.path)
    assert all("RLE_DICTIONARY" in e for e in _encodings(f).values())
    with pytest.raises(OptionError, match="parquet.enable.dictionary"):
        lab_catalog.create_table("db.bad", _rows(1).schema, options={"parquet.enable.dictionary": "maybe"})


@pytest.mark.parametrize("kind", ["append", "primary-key"])
def test_a_failing_bucket_leaves_no_files(lab_catalog, monkeypatch, kind):
    """Buckets are written on threads; when one fails, the others' finished files are deleted
    too and nothing is committed."""
    pk = {"primary_keys": ["id", "dt"], "options": {"bucket": "2"}} if kind == "primary-key" else {}
    t = lab_catalog.create_table("db.t", _rows(1).schema, partition_keys=["dt"], **pk)
    real = RollingFileWriter.write

    def write(self, table):
        if self.next_path().split("/")[-3] == "dt=b":
            raise OSError("disk full")
        return real(self, table)

    monkeypatch.setattr(RollingFileWriter, "write", write)
    with pytest.raises(OSError, match="disk full"):
        t.write(_rows(3000))
    monkeypatch.undo()
    assert _data_files(t.path) == []
    assert t.snapshots() == []
    t.write(_rows(300))
    assert t.to_arrow().num_rows == 300


@pytest.mark.parametrize("kind", ["append", "primary-key"])
def test_each_bucket_names_its_files(lab_catalog, kind):
    """Buckets written on parallel threads still get reproducible names: as in Java, each
    bucket's writer has its own uuid (sharing the writer's first 12 hex digits, a Spark job's
    marker) and counts from 0."""
    pk = {"primary_keys": ["id", "dt"], "options": {"bucket": "2"}} if kind == "primary-key" else {}
    t = lab_catalog.create_table("db.t", _rows(1).schema, partition_keys=["dt"], **pk)
    t.write(_rows(3000))
    names = [os.path.basename(f) for f in _data_files(t.path)]
    assert len(names) == (6 if pk else 3)
    assert all(n.endswith("-0.parquet") for n in names)
    uuids = {n[len("data-"):-len("-0.parquet")] for n in names}
    assert len(uuids) == len(names) and len({u[:13] for u in uuids}) == 1
