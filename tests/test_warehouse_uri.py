"""Warehouse and table locations as Paimon users write them: plain paths, file: URIs, fsspec
protocols, and a clear error for a scheme no installed file system serves."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from paimon_lab import Catalog, Table, sql
from paimon_lab.errors import PaimonLabError, UnsupportedFileSystemError

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.mark.parametrize("form", ["file:{}", "file://{}", "file://localhost{}", "{}", "{}/"])
def test_local_forms_name_the_same_directory(tmp_path, form):
    target = tmp_path / "wh"
    c = Catalog(form.format(target))
    assert c.warehouse == str(target)
    c.create_database("db")
    c.create_table("db.t", SCHEMA).write(pa.table({"id": [1, 2]}))
    assert (target / "db.db" / "t" / "snapshot" / "snapshot-1").exists()
    assert Table.open(f"file:{target}/db.db/t").to_arrow().num_rows == 2


def test_home_relative_warehouse_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    c = Catalog("~/wh")
    assert c.warehouse == str(tmp_path / "home" / "wh")
    c.create_database("db")
    assert (tmp_path / "home" / "wh" / "db.db").is_dir() and not (tmp_path / "~").exists()


def test_sql_catalog_takes_file_uri(tmp_path):
    s = sql.Session()
    s.run(f"CREATE CATALOG p WITH ('type'='paimon', 'warehouse'='file:{tmp_path}/wh'); USE CATALOG p")
    s.run("CREATE DATABASE db; CREATE TABLE db.t (id BIGINT); INSERT INTO db.t VALUES (7)")
    assert (tmp_path / "wh" / "db.db" / "t").is_dir()
    assert not os.path.exists("file:")  # not taken as a relative directory
    assert s.run("SELECT id FROM db.t").to_pylist() == [{"id": 7}]


def test_fsspec_protocol_warehouse():
    c = Catalog("memory://paimon-lab-test-wh")
    c.create_database("db", ignore_if_exists=True)
    t = c.create_table("db.t", SCHEMA)
    t.write(pa.table({"id": [1, 2, 3]}))
    t.write(pa.table({"id": [4]}))
    assert sorted(t.to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
    assert [s.id for s in t.snapshots()] == [1, 2]


@pytest.mark.parametrize("uri, words", [("nosuch://bucket/wh", "'nosuch://'"),
                                        ("file://otherhost/tmp/wh", "otherhost")])
def test_unknown_scheme_is_named(uri, words):
    with pytest.raises(UnsupportedFileSystemError, match=words):
        Catalog(uri)


def test_missing_fsspec_package_is_named(monkeypatch):
    import fsspec

    def missing(protocol, **kw):
        raise ImportError(f"Install {protocol}fs to access it")

    monkeypatch.setattr(fsspec, "filesystem", missing)
    with pytest.raises(UnsupportedFileSystemError, match="'oss://'.*not installed"):
        Catalog("oss://bucket/wh")
    assert issubclass(UnsupportedFileSystemError, PaimonLabError)
