"""Arrow tables kept in a local directory across processes, for derived data of immutable files.

A table's files that never change once written (manifests) are decoded the same way every time;
:class:`ArrowDiskCache` keeps the decoded Arrow table as an IPC file named by a hash of its key, so a
fresh process reads a few megabytes instead of decoding again. The cache is a convenience, never
the truth: a file that is missing, truncated, corrupt (checksum), of another key or of another
layout is a miss (and is removed); a directory that cannot be written is no error. It is bounded:
past ``max_bytes`` the oldest files are removed (a hit writes nothing, not even a time stamp).

The directory is ``$PAIMON_LAB_CACHE_DIR`` (``0``, ``off`` or empty: no disk cache), by default
``$XDG_CACHE_HOME/paimon-lab`` or ``~/.cache/paimon-lab``; each cache takes a subdirectory.
"""

from __future__ import annotations

import hashlib
import os
import struct
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
            entries = [e for e in os.scandir(directory) if e.name.endswith(".arrow")]
            stats = [(e.stat().st_mtime, e.stat().st_size, e.path) for e in entries]
        except OSError:
            return
        total = sum(s for _, s, _ in stats)
        if total <= self.max_bytes:
            return
        for _, size, path in sorted(stats):
            if total <= self.max_bytes * 3 // 4:
                break
            _remove(path)
            total -= size

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
