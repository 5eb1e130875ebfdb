"""FileIO: every byte paimon-lab reads or writes goes through here.

Paths are plain strings: local paths, ``file://`` URIs, or any URI pyarrow or fsspec knows
(``s3://``, ``gs://``, ``hdfs://``...). The commit point of Paimon is :meth:`FileIO.try_create`:
create a file only if it does not exist yet, atomically, also against committers on other
machines that share nothing but the store:

- local file system: a hard link of a fully written temporary file (never overwrites);
- S3 (and S3-compatible stores that honour it): a PUT with ``If-None-Match: *``
  (:mod:`paimon_lab.io.conditional_put`; under the configured lock too, when there is one);
- any other store (``gs://``, ``hdfs://``, fsspec stores): an exists-check and write under a
  :class:`CommitLock` the caller configured (the JDBC catalog's lock serializes every machine).
  Without one the commit is refused with :class:`~paimon_lab.errors.UnsafeCommitError`, except on
  stores only one machine can reach (fsspec ``memory://``, an explicit local file system), where
  the default ``flock`` serializes every committer there is.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs

from paimon_lab.errors import (
    InvalidIdentifierError,
    PaimonLabError,
    UnsafeCommitError,
    UnsupportedFileSystemError,
)
from paimon_lab.io.conditional_put import S3ConditionalPut


def join(*parts: str) -> str:
    out = parts[0].rstrip("/")
    for p in parts[1:]:
        p = p.strip("/")
        if p:  # an unpartitioned table has an empty partition path
            out = f"{out}/{p}"
    return out


def _local_path(path: str) -> str | None:
    """The local path of ``path`` (a plain path, ``~`` expanded, or a ``file:`` URI: ``file:/x``,
    ``file:///x``, ``file://localhost/x``); None for any other URI."""
    if path[:5].lower() == "file:":
        parsed = urlparse(path)
        if parsed.netloc not in ("", "localhost"):
            raise UnsupportedFileSystemError(f"file: URI '{path}' names host '{parsed.netloc}'; "
                                             "use file:/path or file:///path for a local path")
        return os.path.abspath(parsed.path or "/")
    if "://" not in path:
        return os.path.abspath(os.path.expanduser(path))  # '~/wh' is the home's, not a directory named '~'
    return None


def normalize_path(path: str) -> str:
    """A warehouse or table location as paimon-lab keeps it: local paths (and ``file:`` URIs)
    absolute without a scheme, other URIs as given, without a trailing slash."""
    if not isinstance(path, str) or not path.strip():
        raise UnsupportedFileSystemError(f"A warehouse or table location must be a non-empty string, got {path!r}")
    local = _local_path(path.strip())
    return local if local is not None else path.strip().rstrip("/")


def filesystem_for(uri: str) -> pafs.FileSystem:
    """pyarrow's file system for a URI, else an fsspec one; a clear error naming the scheme when
    neither knows it or its package is not installed."""
    scheme = urlparse(uri).scheme.lower()
    if scheme in ("s3a", "s3n"):  # Hadoop's spellings of s3://
        uri = "s3" + uri[len(scheme):]
    try:
        return pafs.FileSystem.from_uri(uri)[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
        pass
    import fsspec
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    try:
        return PyFileSystem(FSSpecHandler(fsspec.filesystem(scheme)))
    except ImportError as e:
        raise UnsupportedFileSystemError(
            f"The '{scheme}://' file system needs a package that is not installed: {e}") from None
    except ValueError:
        raise UnsupportedFileSystemError(
            f"No file system is known for the '{scheme}://' scheme of '{uri}' (neither pyarrow nor fsspec "
            "has one); use a local path, file:, s3://, s3a://, gs://, hdfs:// or an fsspec protocol") from None


class CommitLock:
    """An inter-process lock around snapshot creation, for stores without atomic create.

    The default is an ``flock`` on a lock file under ``lock_dir`` keyed by the locked path,
    which serializes committers on one machine. Catalogs with a database (JDBC) supply their own.
    """

    def __init__(self, lock_dir: str | None = None):
        self.lock_dir = lock_dir or os.path.join(tempfile.gettempdir(), "paimon-lab-locks")
        os.makedirs(self.lock_dir, exist_ok=True)
        self._local = threading.Lock()

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        name = hashlib.sha1(key.encode()).hexdigest() + ".lock"
        with self._local, open(os.path.join(self.lock_dir, name), "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


class FileIO:
    """File operations for one warehouse or table root."""

    def __init__(self, root: str, filesystem: pafs.FileSystem | None = None, lock: CommitLock | None = None):
        local = _local_path(root)
        self.is_local = filesystem is None and local is not None
        if filesystem is not None:
            self.fs = filesystem
        elif local is not None:
            self.fs = pafs.LocalFileSystem()
        else:
            self.fs = filesystem_for(root)
        # A lock the caller chose (a JDBC catalog's, or one passed in) is trusted to cover every
        # committer; the default flock only covers this machine.
        self.lock_configured = lock is not None
        self.lock = lock or CommitLock()
        self._s3: S3ConditionalPut | None = None

    def _p(self, path: str) -> str:
        local = _local_path(path)
        if local is not None and self.is_local:
            return local
        parsed = urlparse(path)
        return f"{parsed.netloc}{parsed.path}" if parsed.scheme else path

    # ------------------------------------------------------------------ queries
    def exists(self, path: str) -> bool:
        return self.fs.get_file_info(self._p(path)).type != pafs.FileType.NotFound

    def is_dir(self, path: str) -> bool:
        return self.fs.get_file_info(self._p(path)).type == pafs.FileType.Directory

    def size(self, path: str) -> int:
        return self.fs.get_file_info(self._p(path)).size

    def list_dir(self, path: str) -> list[pafs.FileInfo]:
        """Direct children of a directory; empty if it does not exist."""
        sel = pafs.FileSelector(self._p(path), allow_not_found=True, recursive=False)
        return self.fs.get_file_info(sel)

    def list_names(self, path: str) -> list[str]:
        return [info.base_name for info in self.list_dir(path)]

    # ------------------------------------------------------------------ reading
    def read_bytes(self, path: str) -> bytes:
        try:
            with self.fs.open_input_stream(self._p(path)) as f:
                return f.read()
        except FileNotFoundError:
            raise
        except OSError as e:
            if not self.exists(path):
                raise FileNotFoundError(path) from e
            raise

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def open_input(self, path: str):
        return self.fs.open_input_file(self._p(path))

    # ------------------------------------------------------------------ writing
    def mkdirs(self, path: str) -> None:
        self.fs.create_dir(self._p(path), recursive=True)

    def open_output(self, path: str):
        parent = path.rsplit("/", 1)[0]
        if self.is_local:
            os.makedirs(self._p(parent), exist_ok=True)
        elif isinstance(self.fs, pafs.LocalFileSystem):
            self.fs.create_dir(self._p(parent), recursive=True)
        return self.fs.open_output_stream(self._p(path))

    @staticmethod
    def _local_temp(target: str, data: bytes, sync: bool) -> str:
        """Write ``data`` to a hidden temporary file beside ``target``; return its path."""
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = f"{os.path.dirname(target)}/.{os.path.basename(target)}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        return tmp

    def write_bytes(self, path: str, data: bytes | memoryview) -> None:
        """Write (or overwrite) a whole file. Local writes go through a temp file and rename."""
        if self.is_local:
            target = self._p(path)
            os.replace(self._local_temp(target, data, sync=False), target)
            return
        with self.open_output(path) as f:
            f.write(data)

    def copy_append(self, path: str, source: str, tail: bytes | memoryview) -> int | None:
        """Write ``path`` as file ``source``'s bytes followed by ``tail``, the copy made by the
        kernel (``copy_file_range``) so the source is never read into memory; the number of bytes
        copied from ``source``. None, with nothing written, where that is not to be had here (not
        a local disk, a file system or platform without it, no ``source``): write it whole then."""
        if not self.is_local or not hasattr(os, "copy_file_range"):
            return None
        target = self._p(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = f"{os.path.dirname(target)}/.{os.path.basename(target)}.{uuid.uuid4().hex}.tmp"
        try:
            src = os.open(self._p(source), os.O_RDONLY)
            try:
                dst = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                try:
                    copied, size = 0, os.fstat(src).st_size
                    while copied < size:
                        n = os.copy_file_range(src, dst, size - copied)
                        if n == 0:
                            raise OSError(f"{source} ended after {copied} of {size} bytes")
                        copied += n
                    view = memoryview(tail).cast("B")
                    while view:
                        view = view[os.write(dst, view):]
                finally:
                    os.close(dst)
            finally:
                os.close(src)
            os.replace(tmp, target)
            return copied
        except OSError:   # a missing source too: the caller has the bytes to write whole
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return None

    def try_create(self, path: str, data: bytes) -> bool:
        """Atomically create ``path`` with ``data``; False if it already exists. Never overwrites,
        also against committers on other machines (see the module docstring); raises
        :class:`~paimon_lab.errors.UnsafeCommitError` on a store where that cannot be had."""
        if self.is_local:
            target = self._p(path)
            tmp = self._local_temp(target, data, sync=True)
            try:
                os.link(tmp, target)
                return True
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
        conditional = self._conditional_put(path)
        if conditional is not None:
            bucket, key = self._p(path).split("/", 1)
            if not self.lock_configured:
                return conditional.create(bucket, key, data)
            with self.lock.hold(path):  # also keeps out writers that only take the lock (Java)
                return conditional.create(bucket, key, data)
        if not self.lock_configured and not self._single_host_store():
            raise UnsafeCommitError(self._unsafe_message(path))
        with self.lock.hold(path):
            if self.exists(path):
                return False
            with self.open_output(path) as f:
                f.write(data)
            return True

    # ------------------------------------------------------------------ commit safety
    def _conditional_put(self, path: str) -> S3ConditionalPut | None:
        """The S3 conditional create for ``path`` if the store is S3 and honours it; None when
        the commit must go through the lock instead."""
        if not isinstance(self.fs, pafs.S3FileSystem):
            return None
        if self._s3 is None:
            self._s3 = S3ConditionalPut(self.fs)
        bucket, _, key = self._p(path).partition("/")
        try:
            honoured = self._s3.supported(bucket, key.rsplit("/", 1)[0] if "/" in key else "")
        except UnsupportedFileSystemError:  # botocore is missing
            if self.lock_configured:
                return None  # every committer takes the configured lock: safe without it
            raise
        return self._s3 if honoured else None

    def _single_host_store(self) -> bool:
        """A store only this machine reaches, where the default flock covers every committer."""
        if isinstance(self.fs, pafs.LocalFileSystem):
            return True
        handler = getattr(self.fs, "handler", None)
        protocol = getattr(getattr(handler, "fs", None), "protocol", None)
        protocols = {protocol} if isinstance(protocol, str) else set(protocol or ())
        return bool(protocols) and protocols <= {"memory", "file", "local"}

    def _unsafe_message(self, path: str) -> str:
        name = path.rsplit("/", 1)[-1]
        if isinstance(self.fs, pafs.S3FileSystem):
            why = (f"the object store at {self._s3.endpoint if self._s3 else 'this endpoint'} ignores "
                   "If-None-Match (a second conditional PUT of a probe key overwrote it)")
        else:
            scheme = urlparse(path).scheme or type(self.fs).__name__
            why = (f"'{scheme}://' offers no create-if-absent paimon-lab can use (only local disks and "
                   "S3 conditional writes are atomic)")
        return (f"Refusing to create {name}: {why}, and no commit lock is configured, so committers on "
                "two machines could both write it and one commit would be silently lost. Use a JDBC "
                "catalog (its lock in the catalog database serializes committers on every machine), or "
                "pass a lock shared by every writer: Catalog(warehouse, lock=...); "
                "lock=CommitLock() is safe only when every writer runs on this one machine")

    def delete(self, path: str) -> None:
        try:
            self.fs.delete_file(self._p(path))
        except FileNotFoundError:
            pass

    def delete_dir(self, path: str) -> None:
        try:
            self.fs.delete_dir(self._p(path))
        except FileNotFoundError:
            pass

    def delete_quietly(self, paths: list[str]) -> None:
        for p in paths:
            try:
                self.delete(p)
            except OSError:
                pass

    def arrow_path(self, path: str) -> str:
        """The path as the underlying pyarrow file system wants it."""
        return self._p(path)


MAX_NAME_BYTES = 255   # a path segment on common file systems


def check_name(kind: str, name: str) -> str:
    """``name`` if it can name a database or table directory, else InvalidIdentifierError."""

    if not name or not isinstance(name, str) or "/" in name or name.startswith(".") or name != name.strip():
        raise InvalidIdentifierError(f"Invalid {kind} name {name!r}")
    if any(ord(c) < 32 for c in name):
        raise InvalidIdentifierError(f"Invalid {kind} name {name!r}: it contains control characters")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES - 3:   # room for the '.db' suffix
        raise InvalidIdentifierError(f"Invalid {kind} name '{name[:40]}...': longer than {MAX_NAME_BYTES - 3} bytes")
    return name


def check_new_table_name(name: str) -> str:
    """A name a new table may take: not one with '$', which marks system tables and branches."""

    if "$" in name:
        raise InvalidIdentifierError(f"Invalid table name '{name}': '$' is reserved for system tables "
                                     "(t$snapshots) and branches (t$branch_b)")
    return check_name("table", name)


__all__ = ["CommitLock", "FileIO", "PaimonLabError", "check_name", "filesystem_for", "join", "normalize_path"]
