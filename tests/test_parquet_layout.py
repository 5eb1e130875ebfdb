"""How data files are laid out: per-column Parquet encodings, and parallel bucket writes that
leave nothing behind when one bucket fails."""

from __future__ import annotations

import os
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_lab.errors import OptionError
from paimon_lab.core.file_format import RollingFileWriter, parquet_encodings


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
    # near-unique columns are PLAIN by default: the only other encoding Java Paimon's reader decodes
    assert "column_encoding" not in kw
    assert parquet_encodings(_rows(5000), dictionary=True) == {"use_dictionary": True}
    off = parquet_encodings(_rows(5000), dictionary=False)
    assert off == {"use_dictionary": []}
    # too few values to judge: dictionary (pyarrow falls back by itself past 1 MB)
    assert parquet_encodings(_rows(10))["use_dictionary"] == _rows(10).column_names
    # 'parquet.delta-encoding': near-unique integers are delta-encoded (not readable by Java <= 1.0)
    assert parquet_encodings(_rows(5000), delta=True)["column_encoding"] == {"id": "DELTA_BINARY_PACKED"}
    assert parquet_encodings(_rows(5000), dictionary=False, delta=True)["column_encoding"] == \
        {"id": "DELTA_BINARY_PACKED", "qty": "DELTA_BINARY_PACKED"}


JAVA_READABLE = {"PLAIN", "RLE", "BIT_PACKED", "RLE_DICTIONARY", "PLAIN_DICTIONARY"}


def test_primary_key_files_use_only_encodings_java_reads(lab_catalog):
    t = lab_catalog.create_table("db.pk", _rows(1).schema, primary_keys=["id", "dt"],
                                 partition_keys=["dt"], options={"bucket": "2"})
    rows = _rows(6000)
    t.write(rows)
    t.write(rows.slice(0, 3000))
    files = _data_files(t.path)
    assert len(files) == 12
    for f in files:
        enc = _encodings(f)
        assert set().union(*enc.values()) <= JAVA_READABLE
        assert "PLAIN" in enc["_KEY_id"] and "RLE_DICTIONARY" not in enc["_KEY_id"]
        assert "RLE_DICTIONARY" in enc["city"] and "RLE_DICTIONARY" not in enc["name"]
        ids = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in pq.read_schema(f)}
        assert ids["_KEY_id"] == 1_073_741_823 and ids["_SEQUENCE_NUMBER"] == 2_147_483_646
        assert ids["_VALUE_KIND"] == 2_147_483_645 and ids["id"] == 0
    assert t.to_arrow().sort_by("id").to_pylist() == rows.sort_by("id").to_pylist()


def test_delta_encoding_option(lab_catalog):
    """'parquet.delta-encoding' = 'true': the sorted _KEY_* and _SEQUENCE_NUMBER columns shrink
    to a few bits per value (files Java Paimon <= 1.0 cannot read)."""
    t = lab_catalog.create_table("db.pk", _rows(1).schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2", "parquet.delta-encoding": "true"})
    rows = _rows(6000)
    t.write(rows)
    for f in _data_files(t.path):
        enc = _encodings(f)
        assert "DELTA_BINARY_PACKED" in enc["_KEY_id"] and "DELTA_BINARY_PACKED" in enc["_SEQUENCE_NUMBER"]
        assert "RLE_DICTIONARY" in enc["city"] and "RLE_DICTIONARY" not in enc["name"]
    assert t.to_arrow().sort_by("id").to_pylist() == rows.sort_by("id").to_pylist()
    with pytest.raises(OptionError, match="parquet.delta-encoding"):
        lab_catalog.create_table("db.bad", _rows(1).schema, options={"parquet.delta-encoding": "yes"})


def test_java_physical_types(lab_catalog):
    """Short DECIMALs as INT32/INT64, TIMESTAMP(0..6) as INT64 millis/micros and TIMESTAMP(7..9)
    as INT96 (each column as Java writes it, in one file), nested ROW fields with field ids; and
    we read it all back."""
    from paimon_lab.core.types import DataField, parse_type

    spec = [("id", "INT"), ("d9", "DECIMAL(9, 2)"), ("d18", "DECIMAL(18, 2)"), ("d38", "DECIMAL(38, 2)"),
            ("ts0", "TIMESTAMP(0)"), ("ts3", "TIMESTAMP(3)"), ("ts6", "TIMESTAMP(6)"), ("ts9", "TIMESTAMP(9)"),
            ("l9", "TIMESTAMP(9) WITH LOCAL TIME ZONE"), ("r", "ROW<a TIMESTAMP(9), b ARRAY<TIMESTAMP(9)>>")]
    fields = [DataField(i, n, parse_type(s)) for i, (n, s) in enumerate(spec)]
    t = lab_catalog.create_table("db.t", fields=fields)
    n = 500
    ns = np.arange(n, dtype=np.int64) * 86_400_000_000_123 - 10 * 86_400_000_000_000  # before and after 1970
    schema = pa.schema([f.to_arrow() for f in fields])
    data = pa.table({
        "id": pa.array(range(n), pa.int32()),
        "d9": pa.array([Decimal(i).scaleb(-2) for i in range(n)], pa.decimal128(9, 2)),
        "d18": pa.array([Decimal(i * 10**12 + 7).scaleb(-2) for i in range(n)], pa.decimal128(18, 2)),
        "d38": pa.array([Decimal(-i * 10**30).scaleb(-2) for i in range(n)], pa.decimal128(38, 2)),
        "ts0": pa.array(ns // 10**9).cast(pa.timestamp("s")),
        "ts3": pa.array(ns // 10**6).cast(pa.timestamp("ms")),
        "ts6": pa.array(ns // 10**3).cast(pa.timestamp("us")),
        "ts9": pa.array(ns).cast(pa.timestamp("ns")),
        "l9": pa.array(ns).cast(pa.timestamp("ns", "UTC")),
        "r": pa.StructArray.from_arrays(
            [pa.array(ns).cast(pa.timestamp("ns")),
             pa.ListArray.from_arrays(pa.array(np.arange(0, 2 * n + 1, 2), pa.int32()),
                                      pa.array(np.repeat(ns, 2), mask=np.tile([False, True], n)).cast(pa.timestamp("ns")))],
            fields=list(schema.field("r").type), mask=pa.array(np.arange(n) % 3 == 0)),
    }, schema=schema)
    t.write(data)
    (f,) = _data_files(t.path)
    meta = pq.ParquetFile(f).metadata
    physical = {meta.schema.column(i).path: meta.schema.column(i).physical_type for i in range(meta.num_columns)}
    assert physical == {"id": "INT32", "d9": "INT32", "d18": "INT64", "d38": "FIXED_LEN_BYTE_ARRAY",
                        "ts0": "INT64", "ts3": "INT64", "ts6": "INT64", "ts9": "INT96", "l9": "INT96",
                        "r.a": "INT96", "r.b.list.element": "INT96"}
    assert int(pq.read_schema(f).field("r").type.field("b").metadata[b"PARQUET:field_id"]) == 11
    got = t.to_arrow()
    assert got.schema == data.schema
    assert got.sort_by("id").equals(data)
    # and a filter on a nanosecond column, pushed down into the INT96 file
    from paimon_lab.core.predicate import Leaf

    at = pa.scalar(int(ns[250]), pa.timestamp("ns")).as_py()
    assert t.to_arrow(filter=Leaf(">=", "ts9", (at,))).column("id").to_pylist() == list(range(250, n))


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


def test_nested_nanosecond_timestamps_from_sliced_input_with_null_lists(tmp_path):
    """INT96 storage of TIMESTAMP(9) inside ARRAY/MAP/ROW keeps every value when the written data
    is a slice and holds null lists (older pyarrow writers refuse null lists with contents)."""
    from paimon_lab import Catalog
    from paimon_lab.core.types import DataField, parse_type

    c = Catalog(str(tmp_path))
    c.create_database("db")
    fields = [DataField(0, "id", parse_type("INT")), DataField(1, "a", parse_type("ARRAY<TIMESTAMP(9)>")),
              DataField(2, "m", parse_type("MAP<STRING, TIMESTAMP(9)>")),
              DataField(3, "r", parse_type("ROW<x TIMESTAMP(9), y INT>"))]
    t = c.create_table("db.t", fields=fields)
    data = pa.table({"id": [1, 2, 3, 4], "a": [[1, 2], None, [], [3]], "m": [[("k", 5)], None, [], [("z", 9)]],
                     "r": [{"x": 1, "y": 2}, None, {"x": None, "y": 1}, {"x": 7, "y": 0}]},
                    schema=t.schema.arrow_schema())
    t.write(data.slice(1))
    t.write(data.slice(0, 1))
    assert t.to_arrow().sort_by("id").equals(data.sort_by("id"))


def test_page_indexes_as_parquet_mr_writes_them(lab_catalog):
    """Column and offset indexes on every column chunk, as Java Paimon's parquet-mr writer does by
    default (tests/java reads these files back)."""
    a = lab_catalog.create_table("db.a", _rows(1).schema, partition_keys=["dt"])
    a.write(_rows(3000))
    p = lab_catalog.create_table("db.p", _rows(1).schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "1"})
    p.write(_rows(3000))
    for path in _data_files(a.path) + _data_files(p.path):
        md = pq.ParquetFile(path).metadata
        chunks = [md.row_group(g).column(c) for g in range(md.num_row_groups) for c in range(md.num_columns)]
        assert chunks and all(c.has_column_index and c.has_offset_index for c in chunks), path
