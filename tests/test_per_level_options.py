"""'file.format.per.level' and 'file.compression.per.level': a primary-key table's writes and
compactions pick the format and compression of a file by the level it is written at (as Java's
KeyValueFileWriterFactory); reads go by each file's extension."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_lab import Catalog
from paimon_lab.errors import OptionError, SchemaError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(ids, tag):
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _table(tmp_path, pk=("id",), **options):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table("db.t", SCHEMA, primary_keys=list(pk) if pk else None,
                            options={"bucket": "1", **options})


def _by_level(t):
    return sorted((int(r.level), r.file_name.rsplit(".", 1)[1]) for r in t.levels().itertuples())


def _files(t, prefix):
    return sorted(glob.glob(os.path.join(t.path, "bucket-*", prefix + "*")))


def _codec(t, file_name):
    (path,) = glob.glob(os.path.join(t.path, "bucket-*", file_name))
    return pq.ParquetFile(path).metadata.row_group(0).column(0).compression


def test_format_per_level_picks_the_format_of_written_and_compacted_files(tmp_path):
    t = _table(tmp_path, **{"file.format.per.level": "0:avro,5:orc"})
    t.write(_rows(range(10), "a"))
    t.write(_rows(range(5, 15), "b"))
    assert _by_level(t) == [(0, "avro"), (0, "avro")]
    assert sorted(t.to_arrow()["id"].to_pylist()) == list(range(15))
    t.compact(full=True)
    assert _by_level(t) == [(5, "orc")]
    got = t.to_arrow().sort_by("id")
    assert got["v"].to_pylist() == [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5, 15)]
    t.write(_rows([1], "c"))   # levels without an entry: 'file.format'
    assert _by_level(t) == [(0, "avro"), (5, "orc")]
    t.compact(full=True)
    assert _by_level(t) == [(5, "orc")]
    assert t.to_arrow().sort_by("id")["v"][1].as_py() == "c1"


def test_format_per_level_also_names_changelog_files(tmp_path):
    t = _table(tmp_path, **{"file.format.per.level": "0:avro", "changelog-producer": "input"})
    t.write(_rows(range(3), "a"))
    assert [p.rsplit(".", 1)[1] for p in _files(t, "changelog-")] == ["avro"]
    assert sorted(t.snapshot_changes(t.snapshots()[-1])["id"].to_pylist()) == [0, 1, 2]


def test_compression_per_level(tmp_path):
    t = _table(tmp_path, **{"file.compression.per.level": "0:snappy"})
    t.write(_rows(range(10), "a"))
    (level0,) = t.levels()["file_name"]
    assert _codec(t, level0) == "SNAPPY"
    t.write(_rows(range(5), "b"))
    t.compact(full=True)   # two overlapping files: rewritten at the top level
    (top,) = t.levels()["file_name"]
    assert _codec(t, top) == "ZSTD"     # 'file.compression' (default zstd) elsewhere
    assert sorted(t.to_arrow()["id"].to_pylist()) == list(range(10))


def test_parquet_compression_wins_over_compression_per_level(tmp_path):
    t = _table(tmp_path, **{"file.compression.per.level": "0:snappy", "parquet.compression": "gzip"})
    t.write(_rows(range(10), "a"))
    (level0,) = t.levels()["file_name"]
    assert _codec(t, level0) == "GZIP"


def test_append_tables_keep_file_format(tmp_path):
    # Java's append writer takes 'file.format' only
    t = _table(tmp_path, pk=None, **{"file.format.per.level": "0:avro", "bucket": "-1"})
    t.write(_rows(range(3), "a"))
    assert [p.rsplit(".", 1)[1] for p in _files(t, "data-")] == ["parquet"]


@pytest.mark.parametrize("value", ["0=avro", "a:avro", "0:csv", "0:avro,1"])
def test_malformed_per_level_maps_are_refused(tmp_path, value):
    with pytest.raises(OptionError, match="file.format.per.level"):
        _table(tmp_path, **{"file.format.per.level": value})
    with pytest.raises(OptionError, match="file.compression.per.level"):
        _table(tmp_path, **{"file.compression.per.level": "0:xz"})


def test_avro_level_refuses_types_avro_cannot_hold(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("ns"))])
    with pytest.raises(SchemaError, match="Avro"):
        cat.create_table("db.t", schema, primary_keys=["id"], options={"file.format.per.level": "0:avro"})
