"""Arrow tables kept in a local directory across processes, for derived data of immutable files.

A table's files that never change once written (manifests) are decoded the same way every time;
:class:`ArrowDiskCache` keeps the decoded Arrow table as an IPC file named by a hash of its key, so a
fresh process reads a few megabytes instead of decoding again. The cache is a convenience, never
the truth: a file that is missing, truncated, corrupt (checksum), of another key or of another
layout is a miss (and is removed); a directory that cannot be written is no error. It is bounded:
past ``max_bytes`` the least recently used files are removed (:func:`evict`, shared with the
lookup files of :mod:`paimon_lab.mergetree.lookup_files`; a hit refreshes the file's time stamp).

The directory is ``$PAIMON_LAB_CACHE_DIR`` (``0``, ``off`` or empty: nothing kept across
processes), by default ``$XDG_CACHE_HOME/paimon-lab`` or ``~/.cache/paimon-lab``; each cache
takes a subdirectory (``manifests``, ``lookup``).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import struct
import tempfile
import threading
import time
import uuid
import zlib

import pyarrow as pa

ENV = "PAIMON_LAB_CACHE_DIR"
_MAGIC = b"PLC1"
_TRAILER = struct.Struct(">I4s")  # crc32 of the IPC bytes, magic
_KEY = b"paimon_lab.cache_key"


def default_root() -> str:
    """paimon-lab's directory in the user's cache (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "paimon-lab")


def cache_root() -> str | None:
    """The cache directory this process uses now (None: disk caches are off)."""
    value = os.environ.get(ENV)
    if value is not None:
        return None if value.strip().lower() in ("", "0", "off", "false", "no") else value
    return default_root()


_SCRATCH: dict[str, str] = {}
_SCRATCH_LOCK = threading.Lock()


def working_directory(name: str) -> str:
    """``<cache root>/<name>``, for state that needs a local directory even with caches off (then a
    directory of this process's own, removed at exit)."""
    root = cache_root()
    if root is not None:
        return os.path.join(root, name)
    with _SCRATCH_LOCK:
        if name not in _SCRATCH:
            _SCRATCH[name] = tempfile.mkdtemp(prefix=f"paimon-lab-{name}-")
            atexit.register(shutil.rmtree, _SCRATCH[name], True)
        return _SCRATCH[name]


def evict(paths: list[str], max_bytes: int | None, retention_ms: int | None = None,
          forget=lambda path: None) -> int:
    """Remove cache files: those unused (by time stamp) for longer than ``retention_ms``, then the
    least recently used until the rest fit ``max_bytes`` (the newest one always stays). Calls
    ``forget(path)`` for each removed file; returns the bytes kept."""
    entries = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        entries.append((st.st_mtime, st.st_size, path))
    now = time.time()
    total = kept = 0
    for mtime, size, path in sorted(entries, reverse=True):   # newest first
        expired = retention_ms is not None and (now - mtime) * 1000 > retention_ms
        if expired or (max_bytes is not None and total + size > max_bytes and kept):
            forget(path)
            _remove(path)
            continue
        kept += 1
        total += size
    return total


def touch(path: str) -> None:
    """Mark a cache file used now (what :func:`evict` goes by); a read-only cache is no error."""
    try:
        os.utime(path)
    except OSError:
        pass


class ArrowDiskCache:
    """Arrow tables by string key in ``<cache root>/<name>``; ``max_bytes`` bounds the directory."""

    def __init__(self, name: str, max_bytes: int = 512 << 20):
        self.name = name
        self.max_bytes = max_bytes

    def directory(self) -> str | None:
        root = cache_root()
        return None if root is None else os.path.join(root, self.name)

    def _path(self, directory: str, key: str) -> str:
        return os.path.join(directory, hashlib.sha256(key.encode()).hexdigest()[:40] + ".arrow")

    def get(self, key: str) -> pa.Table | None:
        """The table stored under ``key``, or None (absent, unreadable or not valid)."""
        directory = self.directory()
        if directory is None:
            return None
        path = self._path(directory, key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        table = _decode(data, key)
        if table is None:
            _remove(path)
        else:
            touch(path)
        return table

    def put(self, key: str, table: pa.Table) -> None:
        """Store ``table`` under ``key`` (atomically; errors writing are ignored)."""
        directory = self.directory()
        if directory is None:
            return
        sink = pa.BufferOutputStream()
        schema = table.schema.with_metadata({**(table.schema.metadata or {}), _KEY: key.encode()})
        with pa.ipc.new_file(sink, schema) as writer:
            writer.write_table(table.replace_schema_metadata(schema.metadata))
        payload = sink.getvalue().to_pybytes()
        data = payload + _TRAILER.pack(zlib.crc32(payload), _MAGIC)
        path = self._path(directory, key)
        tmp = os.path.join(directory, f".{uuid.uuid4().hex}.tmp")
        try:
            os.makedirs(directory, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError:
            _remove(tmp)
            return
        self._evict(directory)

    def _evict(self, directory: str) -> None:
        try:
            paths = [e.path for e in os.scandir(directory) if e.name.endswith(".arrow")]
        except OSError:
            return
        evict(paths, self.max_bytes)

    def clear(self) -> None:
        """Remove every file of this cache."""
        directory = self.directory()
        if directory is None or not os.path.isdir(directory):
            return
        for e in os.scandir(directory):
            _remove(e.path)


def _decode(data: bytes, key: str) -> pa.Table | None:
    if len(data) < _TRAILER.size:
        return None
    crc, magic = _TRAILER.unpack_from(data, len(data) - _TRAILER.size)
    payload = memoryview(data)[:len(data) - _TRAILER.size]
    if magic != _MAGIC or zlib.crc32(payload) != crc:
        return None
    try:
        table = pa.ipc.open_file(pa.py_buffer(payload)).read_all()
    except (pa.ArrowInvalid, pa.ArrowException, OSError, ValueError):
        return None
    if (table.schema.metadata or {}).get(_KEY) != key.encode():
        return None  # a hash collision, or a file written under another key
    return table.replace_schema_metadata(None)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
