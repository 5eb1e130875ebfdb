"""Decoded manifests kept on local disk (``paimon_lab.io.disk_cache``): a plan reads the same files
with the cache off, filling it, reading from it, and over cache files that are corrupt, truncated,
or of another manifest; the cache is bounded and never an error."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import make_rows
from test_manifest_columns import ENTRIES

from paimon_lab.core.manifest import (
    MANIFEST_CACHE,
    MANIFEST_DISK_CACHE,
    ManifestIO,
    SimpleStats,
)
from paimon_lab.io.disk_cache import ENV, ArrowDiskCache
from paimon_lab.io.file_io import FileIO


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv(ENV, str(path))
    MANIFEST_CACHE.clear()
    yield path / "manifests"
    MANIFEST_CACHE.clear()


def _files(directory) -> list[str]:
    return sorted(os.path.join(directory, n) for n in os.listdir(directory)) if os.path.isdir(directory) else []


def _plan(table, **kw):
    MANIFEST_CACHE.clear()  # as a fresh process
    return [(s.partition, s.bucket, s.files) for s in table.plan(**kw)]


@pytest.fixture
def table(lab, sample_schema):
    t = lab.create_table("db.t", sample_schema, partition_keys=["dt"], options={"bucket": "-1"})
    for i in range(6):
        t.write(make_rows(30, start=i * 30))
    t.delete("id < 40")  # rewrites files: DELETE entries in the manifests
    t.compact(full=True)
    t.write(make_rows(10, start=1000))
    return t


def test_plans_equal_with_and_without_the_disk_cache(table, cache_dir, monkeypatch):
    filters = [None, "id < 100", "dt = 'b'", "id >= 170 AND dt = 'a'"]
    monkeypatch.setenv(ENV, "off")
    expected = [_plan(table, filter=f) for f in filters]
    assert not _files(cache_dir)
    monkeypatch.setenv(ENV, str(cache_dir.parent))
    assert [_plan(table, filter=f) for f in filters] == expected  # fills the cache
    files = _files(cache_dir)
    assert files
    assert [_plan(table, filter=f) for f in filters] == expected  # every manifest from the cache
    assert _files(cache_dir) == files
    assert table.to_arrow().sort_by("id") == _read_without_cache(table, monkeypatch)


def _read_without_cache(table, monkeypatch):
    monkeypatch.setenv(ENV, "off")
    MANIFEST_CACHE.clear()
    return table.to_arrow().sort_by("id")


@pytest.mark.parametrize("damage", ["flip", "truncate", "swap", "empty"])
def test_damaged_cache_files_are_misses(table, cache_dir, damage):
    expected = _plan(table)
    files = _files(cache_dir)
    sizes = {f: os.path.getsize(f) for f in files}
    for i, f in enumerate(files):
        data = bytearray(Path(f).read_bytes())
        if damage == "flip":
            data[len(data) // 2] ^= 0xFF  # same size, one byte changed
        elif damage == "truncate":
            data = data[:len(data) // 2]
        elif damage == "swap":  # another manifest's (valid) decoded file under this name
            data = bytearray(Path(files[(i + 1) % len(files)]).read_bytes())
        else:
            data = bytearray()
        Path(f).write_bytes(data)
    assert _plan(table) == expected
    if damage != "swap" or len(files) > 1:
        # every damaged file was dropped and written again from the manifest
        assert {f: os.path.getsize(f) for f in _files(cache_dir)} == sizes
    assert _plan(table) == expected


def test_entries_through_the_disk_cache_keep_every_field(tmp_path, cache_dir):
    mio = ManifestIO(FileIO(str(tmp_path)), str(tmp_path))
    mio.write_manifest("manifest-x-0", ENTRIES, 0, SimpleStats(b"", b"", ()))
    MANIFEST_CACHE.clear()
    assert mio.read_manifest("manifest-x-0") == ENTRIES  # decoded, and stored on disk
    assert len(_files(cache_dir)) == 1
    MANIFEST_CACHE.clear()
    cols = mio.read_manifest_columns("manifest-x-0")  # from disk
    assert cols.entries() == ENTRIES
    assert [hash(e) for e in cols.entries()] == [hash(e) for e in ENTRIES]


def test_disk_cache_is_bounded_and_never_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path / "c"))
    table = pa.table({"x": list(range(1000))})
    cache = ArrowDiskCache("t", max_bytes=30_000)
    for i in range(10):
        cache.put(f"k{i}", table)
    directory = tmp_path / "c" / "t"
    assert sum(os.path.getsize(f) for f in _files(directory)) <= 30_000
    assert cache.get("k9") == table and cache.get("k0") is None
    cache.clear()
    assert cache.get("k9") is None
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(ENV, str(blocker))
    cache.put("k", table)  # cannot be written: ignored
    assert cache.get("k") is None
    monkeypatch.setenv(ENV, "0")
    assert MANIFEST_DISK_CACHE.directory() is None


def test_least_recently_used_files_go_first(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path / "c"))
    table = pa.table({"x": list(range(1000))})
    cache = ArrowDiskCache("t", max_bytes=1 << 30)
    for i in range(3):
        cache.put(f"k{i}", table)
    files = sorted(_files(tmp_path / "c" / "t"), key=os.path.getmtime)
    for age, f in enumerate(reversed(files)):      # k0 oldest ... k2 newest, a second apart
        os.utime(f, (1_000_000 - age, 1_000_000 - age))
    assert cache.get("k0") == table                   # a hit makes k0 the most recently used
    cache.max_bytes = 2 * max(os.path.getsize(f) for f in files)
    cache.put("k3", table)
    assert cache.get("k0") == table and cache.get("k3") == table
    assert cache.get("k1") is None and cache.get("k2") is None


def test_one_switch_for_every_local_cache(tmp_path, monkeypatch):
    from paimon_lab.mergetree import lookup_files

    monkeypatch.delenv("PAIMON_LAB_LOOKUP_CACHE_DIR", raising=False)
    monkeypatch.setenv(ENV, str(tmp_path / "c"))
    assert lookup_files.cache_root() == str(tmp_path / "c" / "lookup")
    monkeypatch.setenv(ENV, "off")                 # nothing kept across processes: a directory of our own
    scratch = lookup_files.cache_root()
    assert os.path.isdir(scratch) and not scratch.startswith(str(tmp_path))
    assert lookup_files.cache_root() == scratch
    monkeypatch.setenv("PAIMON_LAB_LOOKUP_CACHE_DIR", str(tmp_path / "l"))
    assert lookup_files.cache_root() == str(tmp_path / "l")
