"""A commit's cost follows the commit (issue #19 item 3): local lookup files, the cached HASH index
and the cross-partition key index give the same rows whatever state the local cache is in
(present, missing, stale, corrupt), and a later writer process reuses them instead of reading
the table's data files again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

from paimon_lab.core.hash_index import read_hash_index, write_hash_index
from paimon_lab.mergetree.lookup_files import _SWEEP, OPEN_FILES, table_cache_directory

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "lookup-cache"
    monkeypatch.setenv("PAIMON_LAB_LOOKUP_CACHE_DIR", str(path))
    OPEN_FILES.files.clear()
    OPEN_FILES.bytes = 0
    _SWEEP.update(at=float("-inf"), bytes=0)   # as in a fresh process: the first store sweeps
    return path


def _rows(keys, v, dt="p1"):
    keys = list(keys)
    return pa.table({"k": pa.array(keys, pa.int64()), "dt": [dt] * len(keys), "v": [v + k for k in keys]}, schema=SCHEMA)


def _cache_files(cache_dir):
    return sorted(p for p in cache_dir.rglob("*.arrow"))


def _spoil(cache_dir, how: str) -> None:
    """Put the local cache in state ``how``: 'present' (as left), 'missing', 'corrupt' (garbage
    bytes), 'truncated', 'stale' (a well-formed file that names another source file size)."""
    OPEN_FILES.files.clear()
    OPEN_FILES.bytes = 0
    for p in _cache_files(cache_dir):
        if how == "missing":
            p.unlink()
        elif how == "corrupt":
            p.write_bytes(b"not an arrow file" * 50)
        elif how == "truncated":
            data = p.read_bytes()
            p.write_bytes(data[: len(data) // 2])
        elif how == "stale":
            # read into memory: the file is overwritten below (a memory map of it would be truncated)
            table = pa.ipc.open_file(pa.BufferReader(p.read_bytes())).read_all()
            meta = dict(table.schema.metadata or {})
            for key in list(meta):
                if key != b"paimon_lab.version":
                    meta[key] = b"12345"
            table = table.slice(0, 1).replace_schema_metadata(meta)
            with pa.OSFile(str(p), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
                w.write_table(table)


STATES = ["present", "missing", "corrupt", "truncated", "stale"]


def _model_table(lab, name, **options):
    return lab.create_table(f"db.{name}", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                            options={"bucket": "2", **options})


@pytest.mark.parametrize("state", STATES)
def test_lookup_changelog_is_right_whatever_the_cache_state(lab, cache_dir, state):
    t = _model_table(lab, "lc", **{"changelog-producer": "lookup"})
    t.write(_rows(range(100), 0))
    t.write(_rows(range(50, 150), 1000))          # builds the lookup files of the first commit's files
    assert _cache_files(cache_dir)
    _spoil(cache_dir, state)
    before = t.latest_snapshot().id
    t.write(pa.concat_tables([_rows(range(140, 160), 2000), _rows([3, 4], 0)]), row_kinds=["+U"] * 20 + ["-D"] * 2)
    got = t.changes(before).to_pylist()
    by_kind = {}
    for r in got:
        by_kind.setdefault(r["rowkind"], set()).add((r["k"], r["v"]))
    assert by_kind == {
        "-U": {(k, 1000 + k) for k in range(140, 150)},
        "+U": {(k, 2000 + k) for k in range(140, 150)},
        "+I": {(k, 2000 + k) for k in range(150, 160)},
        "-D": {(3, 3), (4, 4)},
    }
    want = {k: (k if k < 50 else 1000 + k) for k in range(150) if k not in (3, 4)}
    want.update({k: 2000 + k for k in range(140, 160)})
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == want


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "first-row"])
def test_deletion_vectors_are_right_whatever_the_cache_state(lab, cache_dir, state, engine):
    # first-row takes no deletion vectors (Java refuses them) but looks keys up in the same cache
    dv = {} if engine == "first-row" else {"deletion-vectors.enabled": "true"}
    t = _model_table(lab, "dv", **dv, **{"merge-engine": engine})
    t.write(_rows(range(100), 0))
    t.write(_rows(range(50, 150), 1000))
    _spoil(cache_dir, state)
    t.write(_rows(range(140, 160), 2000))
    _spoil(cache_dir, state)
    t.write(_rows(range(10), 3000))
    if engine == "first-row":
        want = {k: (k if k < 100 else 1000 + k) for k in range(150)}
        want.update({k: 2000 + k for k in range(150, 160)})
    else:
        want = {k: (k if k < 50 else 1000 + k) for k in range(150)}
        want.update({k: 2000 + k for k in range(140, 160)})
        want.update({k: 3000 + k for k in range(10)})
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == want
    if state in ("corrupt", "truncated", "stale"):   # the files looked up were rebuilt from the data
        assert any(_valid(p) for p in _cache_files(cache_dir))


def _valid(path) -> bool:
    try:
        pa.ipc.open_file(pa.memory_map(str(path))).read_all().validate(full=True)
        return True
    except pa.ArrowException:
        return False


def _kdv(t):
    return sorted((r["k"], r["dt"], r["v"]) for r in t.to_arrow().to_pylist())


@pytest.mark.parametrize("state", STATES)
def test_cross_partition_update_is_right_whatever_the_key_index_state(lab, cache_dir, state):
    t = lab.create_table("db.xp", SCHEMA, primary_keys=["k"], partition_keys=["dt"],
                         options={"bucket": "-1", "dynamic-bucket.target-row-num": "30"})
    t.write(_rows(range(100), 0, "p1"))
    t.write(_rows(range(90, 110), 100, "p2"))      # moves 90..99 to p2, saves the key index
    model = {k: ("p1", k) for k in range(90)} | {k: ("p2", 100 + k) for k in range(90, 110)}
    for step, (keys, dt) in enumerate([(range(5), "p2"), (range(95, 100), "p1"), (range(200, 205), "p3")]):
        _spoil(cache_dir, state)
        t = lab.get_table("db.xp")
        t.write(_rows(keys, 1000 * (step + 2), dt))
        model.update({k: (dt, 1000 * (step + 2) + k) for k in keys})
        assert _kdv(t) == sorted((k, d, v) for k, (d, v) in model.items())
    t.write(_rows([7], 0, "p1"), row_kinds=["-D"])
    model.pop(7)
    t.write(_rows([7], 5, "p3"))
    model[7] = ("p3", 12)
    assert _kdv(t) == sorted((k, d, v) for k, (d, v) in model.items())


def test_key_index_of_a_rolled_back_snapshot_is_not_used(lab, cache_dir):
    """A rollback makes snapshot ids reusable: a key index saved for the old snapshot 3 must not
    describe the new snapshot 3."""
    t = lab.create_table("db.xr", SCHEMA, primary_keys=["k"], partition_keys=["dt"], options={"bucket": "-1"})
    t.write(_rows(range(10), 0, "p1"))
    t.write(_rows(range(5), 10, "p2"))
    t.write(_rows([1], 20, "p3"))                   # saves the index as of snapshot 2
    t.write(_rows([2], 30, "p1"))                   # ... and of snapshot 3
    t.rollback_to(2)
    t = lab.get_table("db.xr")
    t.write(_rows([3], 40, "p3"))                   # a different snapshot 3
    t = lab.get_table("db.xr")
    t.write(_rows([1, 3], 50, "p1"))                # builds on the new snapshot 3
    assert _kdv(t) == sorted([(0, "p2", 10), (1, "p1", 51), (2, "p2", 12), (3, "p1", 53), (4, "p2", 14)]
                             + [(k, "p1", k) for k in range(5, 10)])


@pytest.mark.parametrize("state", ["missing", "corrupt", "stale"])
def test_dynamic_bucket_keys_stay_in_their_bucket_whatever_the_hash_cache(lab, cache_dir, state):
    t = lab.create_table("db.dyn", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "-1", "dynamic-bucket.target-row-num": "40"})
    t.write(_rows(range(100), 0))
    t.write(_rows(range(100, 120), 0))
    assert not _cache_files(cache_dir)             # a writer keeps the hashes it wrote in memory only
    _spoil(cache_dir, "present")                   # as a new process: ...
    t = lab.get_table("db.dyn")
    t.write(_rows(range(120, 121), 0))             # ... which reads the HASH files and caches them on disk
    assert any(p.name.startswith("hash-") for p in _cache_files(cache_dir))
    _spoil(cache_dir, state)
    t = lab.get_table("db.dyn")
    t.write(_rows(range(0, 120, 3), 500))
    got = t.to_arrow()
    assert got.num_rows == 121                     # no key landed in a second bucket
    assert {r["k"]: r["v"] for r in got.to_pylist()} == {k: (500 + k if k % 3 == 0 and k < 120 else k) for k in range(121)}


def _hash_files(t) -> dict[tuple[bytes, int], np.ndarray]:
    """Each (partition, bucket)'s live HASH index file, as stored (file order)."""
    from paimon_lab.core.index_manifest import HASH_INDEX, index_file_path
    from paimon_lab.store.file_store import live_index_entries

    store = t.store
    return {(e.partition, e.bucket): read_hash_index(store.file_io.read_bytes(index_file_path(store.path, e.index_file)))
            for e in live_index_entries(store, HASH_INDEX)}


def _bucket_key_hashes(t) -> dict[tuple[bytes, int], np.ndarray]:
    """The hash codes of the keys each (partition, bucket) holds, from its data files."""
    from paimon_lab.core.binary_row import hash_codes
    from paimon_lab.operation.split_read import TableRead

    out = {}
    for split in t.plan():
        keys = TableRead(t.store, ["k"]).read([split]).column("k")
        out[(split.partition, split.bucket)] = np.sort(hash_codes([keys], [t.store.schema.fields_of(["k"])[0].type]))
    return out


@pytest.mark.parametrize("copy", [True, False])
def test_dynamic_bucket_hash_files_hold_exactly_their_buckets_keys(lab, cache_dir, monkeypatch, copy):
    """Each bucket's HASH file holds its whole key set, once each, in Java's format: checked
    against the hash codes of the keys in the bucket's data files after every commit. ``copy``:
    a file is the one before it (copied by the kernel) and the new keys' hashes; else the
    whole set from memory."""
    from paimon_lab.io.file_io import FileIO

    if not copy:
        monkeypatch.setattr(FileIO, "copy_append", lambda self, path, source, tail: None)
    t = lab.create_table("db.dh", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "-1", "dynamic-bucket.target-row-num": "25"})
    rng = np.random.default_rng(7)
    files: dict = {}
    for step in range(6):
        keys = np.unique(rng.integers(0, 200, 40))
        batch = pa.concat_tables([_rows(keys[: len(keys) // 2], step, "p1"), _rows(keys[len(keys) // 2:], step, "p2")])
        if step == 3:
            _spoil(cache_dir, "present")            # a new process: reads the files written so far
        lab.get_table("db.dh").write(batch)
        before, files, want = files, _hash_files(t), _bucket_key_hashes(lab.get_table("db.dh"))
        assert files.keys() == want.keys()
        for key, hashes in files.items():
            assert np.sort(hashes).tolist() == want[key].tolist() and len(np.unique(hashes)) == len(hashes)
            old = before.get(key)
            if copy and old is not None and len(hashes) > len(old):
                assert hashes[: len(old)].tolist() == old.tolist()  # the old file, then the new keys
    got = lab.get_table("db.dh").to_arrow()
    assert got.num_rows == len({(r["k"], r["dt"]) for r in got.to_pylist()})


def test_dynamic_bucket_writer_reads_back_none_of_its_own_hash_files(lab, cache_dir, monkeypatch):
    from paimon_lab.operation import dynamic_bucket

    reads = []
    real = dynamic_bucket.read_hash_index
    monkeypatch.setattr(dynamic_bucket, "read_hash_index", lambda data: reads.append(len(data)) or real(data))
    t = lab.create_table("db.dr", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "-1", "dynamic-bucket.target-row-num": "30"})
    t.write(pa.concat_tables([_rows(range(50), 0, "p1"), _rows(range(50), 0, "p2")]))
    for step in range(3):
        lab.get_table("db.dr").write(_rows(range(40 + 5 * step, 60 + 5 * step), step, "p1"))
    assert reads == [] and not _cache_files(cache_dir)
    # p1 holds keys 0..69 in buckets of 30, 30 and 10
    _spoil(cache_dir, "present")                    # a new process reads p1's three files once, and caches them
    lab.get_table("db.dr").write(_rows([1, 100], 9, "p1"))
    assert len(reads) == 3 and len(_cache_files(cache_dir)) == 3
    _spoil(cache_dir, "present")
    lab.get_table("db.dr").write(_rows([2], 9, "p1"))   # only bucket 2's file (key 100) is new to the disk cache
    assert len(reads) == 4
    got = lab.get_table("db.dr").to_arrow()
    assert got.num_rows == 71 + 50 and got.num_rows == len({(r["k"], r["dt"]) for r in got.to_pylist()})


@pytest.mark.parametrize("threads", [False, True])
def test_dynamic_bucket_failed_index_write_leaves_no_file_and_no_state(lab, cache_dir, monkeypatch, threads):
    """HASH files are written (on threads when big) before the writer's state moves on: one
    failing leaves neither the others behind nor hashes the next commit would take as committed."""
    from paimon_lab.io.file_io import FileIO
    from paimon_lab.operation import dynamic_bucket

    monkeypatch.setattr(dynamic_bucket, "_PARALLEL_HASHES", 0 if threads else 1 << 30)

    t = lab.create_table("db.df", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "-1", "dynamic-bucket.target-row-num": "30"})
    t.write(pa.concat_tables([_rows(range(40), 0, p) for p in ("p1", "p2", "p3")]))
    index_dir = os.path.join(t.store.path, "index")
    before = sorted(f for f in os.listdir(index_dir) if f.startswith("index-") and "manifest" not in f)
    real_write, real_copy, calls = FileIO.write_bytes, FileIO.copy_append, []

    def fail_second(path):
        calls.append(path)
        if len(calls) == 2:
            raise OSError("disk full")

    def write(self, path, data):
        if "/index/index-" in path and "manifest" not in path:
            fail_second(path)
        return real_write(self, path, data)

    def copy(self, path, source, tail):
        fail_second(path)
        return real_copy(self, path, source, tail)

    monkeypatch.setattr(FileIO, "write_bytes", write)
    monkeypatch.setattr(FileIO, "copy_append", copy)
    with pytest.raises(OSError, match="disk full"):
        lab.get_table("db.df").write(pa.concat_tables([_rows(range(40, 45), 1, p) for p in ("p1", "p2", "p3")]))
    monkeypatch.setattr(FileIO, "write_bytes", real_write)
    monkeypatch.setattr(FileIO, "copy_append", real_copy)
    assert len(calls) == (3 if threads else 2)
    after = sorted(f for f in os.listdir(index_dir) if f.startswith("index-") and "manifest" not in f)
    assert after == before
    t = lab.get_table("db.df")
    t.write(pa.concat_tables([_rows(range(38, 46), 2, p) for p in ("p1", "p2", "p3")]))
    got = t.to_arrow()
    assert got.num_rows == 3 * 46 and got.num_rows == len({(r["k"], r["dt"]) for r in got.to_pylist()})


def test_dynamic_bucket_reads_java_ordered_hash_files(lab, cache_dir):
    """Java writes a bucket's hashes in its hash set's order: a cold reader sorts them."""
    t = lab.create_table("db.dj", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "-1", "dynamic-bucket.target-row-num": "30"})
    t.write(_rows(range(70), 0))
    from paimon_lab.core.index_manifest import HASH_INDEX, index_file_path
    from paimon_lab.store.file_store import live_index_entries

    for e in live_index_entries(t.store, HASH_INDEX):
        path = index_file_path(t.store.path, e.index_file)
        hashes = read_hash_index(t.store.file_io.read_bytes(path))
        t.store.file_io.write_bytes(path, write_hash_index(hashes[np.random.default_rng(1).permutation(len(hashes))]))
    _spoil(cache_dir, "present")
    lab.get_table("db.dj").write(_rows(range(0, 80, 2), 100))
    got = lab.get_table("db.dj").to_arrow()
    assert got.num_rows == 75                      # no existing key landed in a second bucket
    assert {r["k"]: r["v"] for r in got.to_pylist()} == {k: k for k in range(70)} | {k: 100 + k for k in range(0, 80, 2)}
    for hashes in _hash_files(t).values():         # rewritten buckets are sorted again
        assert len(np.unique(hashes)) == len(hashes)


def test_overwrite_reads_the_index_manifest_once(lab, cache_dir, monkeypatch):
    from paimon_lab.core import index_manifest
    from paimon_lab.store import file_store

    t = _model_table(lab, "ow", **{"deletion-vectors.enabled": "true"})
    t.write(pa.concat_tables([_rows(range(50), 0, "p1"), _rows(range(50), 0, "p2")]))
    t.write(_rows(range(10), 100, "p1"))            # vectors in p1
    reads = []
    real = index_manifest.read_index_manifest

    def counting(file_io, path):
        reads.append(path)
        return real(file_io, path)

    monkeypatch.setattr(index_manifest, "read_index_manifest", counting)
    monkeypatch.setattr(file_store, "read_index_manifest", counting)
    t = lab.get_table("db.ow")
    before = t.latest_snapshot().id
    t.write(_rows(range(5), 7, "p1"), overwrite={"dt": "p1"})
    assert reads and len(reads) == len(set(reads))   # each index manifest read once
    assert len(reads) <= t.latest_snapshot().id - before   # one per commit (the overwrite, its lift)
    assert sorted((r["k"], r["dt"]) for r in t.to_arrow().to_pylist()) == \
        sorted([(k, "p1") for k in range(5)] + [(k, "p2") for k in range(50)])


# ---------------------------------------------------------------------- later writer processes

_WRITER = textwrap.dedent("""
    import json, sys
    from paimon_lab import Catalog
    from paimon_lab.io.file_io import FileIO
    import pyarrow as pa
    read = []
    def counting(real):
        def opened(self, path, *args, **kwargs):
            name = path.rsplit("/", 1)[-1]
            if name.startswith("data-"):
                read.append(name)
            return real(self, path, *args, **kwargs)
        return opened
    FileIO.open_input = counting(FileIO.open_input)
    FileIO.read_bytes = counting(FileIO.read_bytes)
    wh, name, keys, dt = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    t = Catalog(wh).get_table(name)
    t.write(pa.table({"k": pa.array(keys, pa.int64()), "dt": [dt] * len(keys), "v": [1] * len(keys)}))
    print(json.dumps(read))
""")


def _write_in_process(wh, name, keys, dt="p1") -> list[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _WRITER, wh, name, json.dumps(list(keys)), dt],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _data_files(t) -> set[str]:
    """Names of the live data files of the latest snapshot."""
    from paimon_lab.operation.scan import FileStoreScan

    by_bucket = FileStoreScan(t.store).files_by_bucket(t.store.snapshot_manager.latest())
    return {e.file.file_name for entries in by_bucket.values() for e in entries}


@pytest.mark.parametrize("options", [{"changelog-producer": "lookup"}, {"deletion-vectors.enabled": "true"}],
                         ids=["lookup", "dv"])
def test_a_later_writer_process_reads_no_older_data_file(lab, wh, cache_dir, options):
    t = _model_table(lab, "proc", **options)
    t.write(_rows(range(2000), 0))
    t.compact(full=True)
    _spoil(cache_dir, "missing")                     # as on a machine that has not seen the table
    bulk = _data_files(t)
    first = _write_in_process(wh, "db.proc", range(0, 2000, 97))
    assert set(first) & bulk                         # the first writer builds the lookup files
    assert bulk <= _data_files(lab.get_table("db.proc"))
    second = _write_in_process(wh, "db.proc", range(5, 2000, 89))
    # The second finds them on local disk (it may read the first writer's small new files).
    assert not set(second) & bulk
    t = lab.get_table("db.proc")
    assert t.to_arrow().num_rows == 2000


def test_a_later_cross_partition_writer_replays_only_the_new_commit(lab, wh, cache_dir):
    t = lab.create_table("db.xproc", SCHEMA, primary_keys=["k"], partition_keys=["dt"], options={"bucket": "-1"})
    t.write(_rows(range(3000), 0, "p1"))
    bulk = _data_files(t)
    first = _write_in_process(wh, "db.xproc", [1, 2, 3], "p2")
    assert set(first) & bulk                         # the first writer bootstraps from the data
    t = lab.get_table("db.xproc")
    added = _data_files(t) - bulk
    second = _write_in_process(wh, "db.xproc", [2, 4000], "p3")
    assert not set(second) & bulk                    # the second replays the first's commit only
    assert set(second) <= added | (_data_files(lab.get_table("db.xproc")) - bulk)
    assert _kdv(lab.get_table("db.xproc")) == sorted(
        [(k, "p1", k) for k in range(3000) if k not in (1, 2, 3)] + [(1, "p2", 1), (3, "p2", 1), (2, "p3", 1),
                                                                    (4000, "p3", 1)])


# ---------------------------------------------------------------------- lookup.cache-* options

def _lookup_table_with(lab, **options):
    t = lab.create_table("db.opt", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "4", "changelog-producer": "lookup", **options})
    t.write(_rows(range(200), 0))
    t.write(_rows(range(0, 200, 7), 1))
    t.write(_rows(range(0, 200, 5), 2))
    return t


def test_lookup_cache_max_disk_size_bounds_the_local_files(lab, cache_dir):
    _lookup_table_with(lab, **{"lookup.cache-max-disk-size": "1 b"})
    assert len(_cache_files(cache_dir)) == 1         # only the newest one is kept


def test_lookup_cache_without_bounds_keeps_every_file(lab, cache_dir):
    _lookup_table_with(lab)
    assert len(_cache_files(cache_dir)) > 1


def _unused_files_left(lab, cache_dir, **options) -> int:
    t = _lookup_table_with(lab, **options)
    old = 10 ** 9
    for p in _cache_files(cache_dir):
        os.utime(p, (old, old))
    _SWEEP.update(at=float("-inf"))
    t = lab.get_table("db.opt")
    t.write(_rows(range(100, 110), 3))
    t.write(_rows(range(100, 110), 4))               # new lookup files: the sweep drops the unused ones
    left = sum(os.stat(p).st_mtime <= old for p in _cache_files(cache_dir))
    lab.drop_table("db.opt")
    return left


def test_lookup_cache_file_retention_drops_unused_files(lab, cache_dir):
    assert _unused_files_left(lab, cache_dir) == 0   # default: 1 h
    assert _unused_files_left(lab, cache_dir, **{"lookup.cache-file-retention": "100000 d"}) > 0


def test_lookup_cache_max_memory_size_bounds_the_open_files(lab, cache_dir):
    _lookup_table_with(lab, **{"lookup.cache-max-memory-size": "1 b"})
    assert len(OPEN_FILES.files) == 1
    OPEN_FILES.files.clear()
    OPEN_FILES.bytes = 0
    lab.drop_table("db.opt")
    _lookup_table_with(lab)
    assert len(OPEN_FILES.files) > 1


def test_compaction_output_is_primed_into_the_lookup_files(lab, cache_dir):
    """The files a lift writes are stored as lookup files from the rows in memory: equal to what
    decoding the data file gives."""
    from paimon_lab.mergetree.compact_rewriter import BucketFiles
    from paimon_lab.mergetree.lookup_files import LookupFiles

    t = _model_table(lab, "prime", **{"changelog-producer": "lookup"})
    t.write(_rows(range(300), 0))
    t.write(_rows(range(0, 300, 3), 7))
    store = t.store
    primed = {p.name[:-len(".arrow")]: pa.ipc.open_file(pa.memory_map(str(p))).read_all() for p in _cache_files(cache_dir)}
    entries = _files_by_bucket_entries(t)
    assert entries and all(e.file.file_name in primed for e in entries if e.file.level > 0)
    _spoil(cache_dir, "missing")
    from paimon_lab.core.key_value import KeyValueLayout

    layout = KeyValueLayout(store.schema)
    lookup = LookupFiles(store, layout)
    for e in entries:
        if e.file.level == 0:
            continue
        built = lookup.sorted_rows(BucketFiles(store, layout, e.partition, e.bucket), e.file)
        assert built.replace_schema_metadata(None).equals(primed[e.file.file_name].replace_schema_metadata(None))


def _files_by_bucket_entries(t):
    from paimon_lab.operation.scan import FileStoreScan

    by_bucket = FileStoreScan(t.store).files_by_bucket(t.store.snapshot_manager.latest())
    return [e for entries in by_bucket.values() for e in entries]


def test_cache_directory_is_per_table_path_and_schema(lab, cache_dir):
    a = _model_table(lab, "a")
    b = _model_table(lab, "b")
    assert table_cache_directory(a.store) != table_cache_directory(b.store)
    assert str(table_cache_directory(a.store)).startswith(str(cache_dir))


@pytest.mark.parametrize("max_runs", [2, 8])
def test_dynamic_bucket_hash_runs_stay_few_and_right(lab, cache_dir, monkeypatch, max_runs):
    """Each commit adds its new keys to a bucket's in-memory hashes as one more sorted run, merged
    into one past ``_MAX_RUNS``: many commits later, every key is still found in its bucket."""
    from paimon_lab.operation import dynamic_bucket

    monkeypatch.setattr(dynamic_bucket, "_MAX_RUNS", max_runs)
    t = lab.create_table("db.dm", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "-1", "dynamic-bucket.target-row-num": "45"})
    t.write(_rows(range(0, 60, 2), 0))              # bucket 0: 30 keys
    model = {k: k for k in range(0, 60, 2)}
    rng = np.random.default_rng(3)
    most = 0
    for step in range(1, 13):
        keys = sorted(set(rng.choice(sorted(model), 3, replace=False).tolist()) | {2 * step - 1, 200 + step})
        lab.get_table("db.dm").write(_rows(keys, 1000 * step))
        model.update({k: 1000 * step + k for k in keys})
        runs = [e for p, e in OPEN_FILES.files.items() if "hash-" in p]
        most = max([most] + [table.column(0).num_chunks for table, _ in runs])
        for table, _ in runs:
            for chunk in table.column(0).chunks:
                h = chunk.to_numpy()
                assert np.all(h[1:] > h[:-1])
    assert most == max_runs                        # runs were kept apart, and never more of them
    got = lab.get_table("db.dm").to_arrow()
    assert {r["k"]: r["v"] for r in got.to_pylist()} == model and got.num_rows == len(model)
    files, want = _hash_files(t), _bucket_key_hashes(t)
    assert files.keys() == want.keys() and all(np.sort(h).tolist() == want[k].tolist() for k, h in files.items())


def test_copy_append(tmp_path):
    """A file made of another's bytes (copied by the kernel) and a tail; None where that cannot be had."""
    import fsspec
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    from paimon_lab.io.file_io import FileIO

    io = FileIO(str(tmp_path))
    io.write_bytes(str(tmp_path / "a"), b"x" * 100_003)
    tail = write_hash_index(np.array([1, -2], np.int32))
    assert io.copy_append(str(tmp_path / "sub" / "b"), str(tmp_path / "a"), memoryview(tail)) == 100_003
    assert (tmp_path / "sub" / "b").read_bytes() == b"x" * 100_003 + tail
    assert io.copy_append(str(tmp_path / "c"), str(tmp_path / "missing"), tail) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "sub"]          # no temporary file left
    memory = PyFileSystem(FSSpecHandler(fsspec.filesystem("memory")))
    assert FileIO("memory://wh", filesystem=memory).copy_append("memory://wh/b", "memory://wh/a", tail) is None
