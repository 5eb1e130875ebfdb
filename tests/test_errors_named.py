"""Bad input and damaged tables raise paimon-lab's own errors, naming the file, name or column."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.errors import CorruptFileError, DataValidationError, InvalidIdentifierError

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def cat(tmp_path):
    c = Catalog(str(tmp_path))
    c.create_database("db")
    return c


@pytest.mark.parametrize("name, words", [("a$b", "'\\$' is reserved"), ("a\x00b", "control characters"),
                                         ("x" * 300, "longer than 252 bytes")])
def test_table_names(cat, name, words):
    with pytest.raises(InvalidIdentifierError, match=words):
        cat.create_table(f"db.{name}", SCHEMA)
    t = cat.create_table("db.ok", SCHEMA)
    with pytest.raises(InvalidIdentifierError, match=words):
        cat.rename_table("db.ok", f"db.{name}")
    assert t.to_arrow().num_rows == 0


def test_none_keys_mean_no_keys(cat):
    t = cat.create_table("db.t", SCHEMA, primary_keys=None, partition_keys=None)
    assert t.schema.primary_keys == () or list(t.schema.primary_keys) == []


@pytest.mark.parametrize("data", ["text", None, 5, object()])
def test_write_of_a_non_table(cat, data):
    with pytest.raises(DataValidationError, match="Cannot write"):
        cat.create_table("db.t", SCHEMA).write(data)


def _dv_table(cat, tmp_path):
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}))
    t.write(pa.table({"k": [2], "v": ["b2"]}))
    (index,) = glob.glob(str(tmp_path / "db.db" / "t" / "index" / "index-*"))
    return index


def test_missing_or_damaged_deletion_vectors_name_the_file(cat, tmp_path):
    index = _dv_table(cat, tmp_path)
    data = open(index, "rb").read()
    with open(index, "wb") as f:
        f.write(data[:-2] + bytes([data[-2] ^ 0xFF, data[-1]]))
    with pytest.raises(CorruptFileError, match=f"{os.path.basename(index)}.*CRC32"):
        cat.get_table("db.t").to_arrow()
    os.remove(index)
    with pytest.raises(CorruptFileError, match=f"{os.path.basename(index)} is missing"):
        cat.get_table("db.t").to_arrow()


def test_lost_newest_snapshot_is_corruption_not_an_older_read(cat, tmp_path):
    t = cat.create_table("db.a", SCHEMA)
    for i in range(3):
        t.write(pa.table({"k": [i], "v": ["x"]}))
    os.remove(tmp_path / "db.db" / "a" / "snapshot" / "snapshot-3")
    with pytest.raises(CorruptFileError, match="snapshot-3 is missing.*newest on disk is snapshot-2"):
        cat.get_table("db.a").to_arrow()
    with pytest.raises(CorruptFileError):
        cat.get_table("db.a").write(pa.table({"k": [9], "v": ["y"]}))   # would reuse id 3
    t2 = cat.create_table("db.b", SCHEMA)   # a rollback moves the hint first: no false alarm
    for i in range(3):
        t2.write(pa.table({"k": [i], "v": ["x"]}))
    t2.rollback_to(1)
    assert cat.get_table("db.b").to_arrow().num_rows == 1


def test_rollback_cut_short_is_not_a_lost_snapshot(cat, tmp_path):
    """A rollback that crashed after deleting the newer snapshots but before moving LATEST leaves
    its ROLLBACK marker: the table reads as of the newest snapshot on disk, and the next commit
    clears the marker (so a later loss is reported again)."""
    t = cat.create_table("db.r", SCHEMA)
    for i in range(3):
        t.write(pa.table({"k": [i], "v": ["x"]}))
    snap_dir = tmp_path / "db.db" / "r" / "snapshot"
    (snap_dir / "ROLLBACK").write_text("1")
    os.remove(snap_dir / "snapshot-3")
    os.remove(snap_dir / "snapshot-2")
    t = cat.get_table("db.r")
    assert t.to_arrow().num_rows == 1
    t.write(pa.table({"k": [7], "v": ["y"]}))
    assert not (snap_dir / "ROLLBACK").exists() and (snap_dir / "LATEST").read_text() == "2"
    assert sorted(cat.get_table("db.r").to_arrow()["k"].to_pylist()) == [0, 7]
