"""The JDBC commit lock: a row of ``paimon_distributed_locks`` while someone commits to a table."""

from __future__ import annotations

import hashlib
import random
import time
import uuid
import warnings
from contextlib import contextmanager
from typing import Callable, Iterator, Mapping

from paimon_lab.errors import JdbcCatalogError, LockTimeoutError, OptionError
from paimon_lab.io.file_io import CommitLock
from paimon_lab.core.options import option_seconds
from paimon_lab.catalog.identifier import table_of_warehouse_path
from paimon_lab.catalog.jdbc_connection import JdbcConnection

DEFAULT_CATALOG_KEY = "jdbc"
LOCKS = "paimon_distributed_locks"

# Options (names as in Java Paimon where it has them).
OPT_LOCK_ENABLED = "lock.enabled"
OPT_ACQUIRE_TIMEOUT = "lock-acquire-timeout"      # Java default 8 min
OPT_CHECK_MAX_SLEEP = "lock-check-max-sleep"      # Java default 8 s; ours 1 s (see JdbcCommitLock)
OPT_EXPIRE_TIME = "lock-expire-time"              # paimon-lab only: the lease of a lock row
OPT_KEY_MAX_LENGTH = "lock-key-max-length"        # Java default 255


def create_lock_table(db: JdbcConnection, key_max_length: int = 255) -> None:
    db.create_table(
        f"CREATE TABLE IF NOT EXISTS {LOCKS} ("
        f"lock_id VARCHAR({int(key_max_length)}) NOT NULL, "
        "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL, "
        "expire_time_seconds BIGINT DEFAULT 0 NOT NULL, "
        "lock_owner VARCHAR(36), "
        "PRIMARY KEY (lock_id))")
    if "lock_owner" not in db.table_columns(LOCKS):  # created by an older Java Paimon
        try:
            db.execute(f"ALTER TABLE {LOCKS} ADD COLUMN lock_owner VARCHAR(36)")
        except JdbcCatalogError:
            if "lock_owner" not in db.table_columns(LOCKS):
                raise


class JdbcCommitLock(CommitLock):
    """A commit lock held as a row of ``paimon_distributed_locks``, for every process and
    machine that uses the same catalog database.

    ``hold(key)`` inserts the row ``lock_id`` (INSERT fails while another holder's row is
    there), retrying with exponential backoff (up to ``check_max_sleep`` seconds between tries)
    until ``acquire_timeout`` seconds have passed, and deletes its own row when done. A row
    older than ``expire_seconds`` (by the database clock) is taken to belong to a crashed holder
    and is removed by the next one who wants the lock. The lock id of a path under the warehouse
    is ``{catalog_key}.{database}.{table}``, as in Java Paimon, so Java writers that lock the
    same table through the same catalog database are serialized with us.

    Our critical section is creating one small metadata file, so the defaults are shorter
    than Java's: at most 1 s between tries, a 60 s lease, 8 min to give up.
    """

    def __init__(self, connection: JdbcConnection | str, catalog_key: str = DEFAULT_CATALOG_KEY, *,
                 warehouse: str | None = None, acquire_timeout: float = 480.0, check_max_sleep: float = 1.0,
                 expire_seconds: int = 60, key_max_length: int = 255,
                 table_of: Callable[[str], tuple[str, str] | None] | None = None):
        # No super().__init__(): this lock needs no lock directory.
        self.db = connection if isinstance(connection, JdbcConnection) else JdbcConnection(connection)
        self.catalog_key = catalog_key
        self.warehouse = warehouse.rstrip("/") if warehouse else None
        self.acquire_timeout = float(acquire_timeout)
        self.check_max_sleep = max(0.001, float(check_max_sleep))
        self.expire_seconds = max(1, int(round(expire_seconds)))
        self.key_max_length = int(key_max_length)
        self._table_of = table_of
        create_lock_table(self.db, self.key_max_length)

    # -- lock ids
    def _default_table_of(self, path: str) -> tuple[str, str] | None:
        return table_of_warehouse_path(self.warehouse, path)

    def lock_id(self, key: str) -> str:
        """The lock row for a path: one per table (or one per path outside any table)."""
        table = (self._table_of or self._default_table_of)(key)
        if table is not None:
            out = f"{self.catalog_key}.{table[0]}.{table[1]}"
        else:
            out = f"{self.catalog_key}.path-{hashlib.sha1(key.encode()).hexdigest()}"
        if len(out) > self.key_max_length:
            digest = hashlib.sha1(out.encode()).hexdigest()[:16]
            out = out[: self.key_max_length - 17] + "-" + digest
        return out

    # -- primitives
    def try_acquire(self, lock_id: str, owner: str) -> bool:
        """One attempt: clear an expired row, then insert ours. True if we hold the lock."""
        self.db.execute(f"DELETE FROM {LOCKS} WHERE lock_id = ? AND {self.db.lock_expired_condition()}", (lock_id,))
        return self.db.insert(f"INSERT INTO {LOCKS} (lock_id, expire_time_seconds, lock_owner) VALUES (?, ?, ?)",
                              (lock_id, self.expire_seconds, owner))

    def release(self, lock_id: str, owner: str) -> bool:
        """Delete our row; False if it was not ours any more (it expired and was taken)."""
        return self.db.execute(f"DELETE FROM {LOCKS} WHERE lock_id = ? AND lock_owner = ?", (lock_id, owner)) > 0

    def holder(self, lock_id: str) -> str | None:
        rows = self.db.query(f"SELECT lock_owner FROM {LOCKS} WHERE lock_id = ?", (lock_id,))
        return rows[0][0] if rows else None

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        lock_id = self.lock_id(key)
        owner = str(uuid.uuid4())
        start = time.monotonic()
        pause = 0.005
        while not self.try_acquire(lock_id, owner):
            waited = time.monotonic() - start
            if waited >= self.acquire_timeout:
                raise LockTimeoutError(
                    f"Could not acquire the commit lock '{lock_id}' in {self.db.describe} within "
                    f"{self.acquire_timeout:g} s (held by {self.holder(lock_id) or 'nobody now'}); "
                    f"raise '{OPT_ACQUIRE_TIMEOUT}' or remove a stale row from {LOCKS}")
            time.sleep(min(pause * random.uniform(0.5, 1.0), self.acquire_timeout - waited))
            pause = min(pause * 2, self.check_max_sleep)
        acquired = time.monotonic()
        try:
            yield
        finally:
            held = time.monotonic() - acquired
            try:
                still_ours = self.release(lock_id, owner)
            except JdbcCatalogError as e:
                warnings.warn(f"Could not release the commit lock '{lock_id}' ({e}); "
                              f"it expires after {self.expire_seconds} s", stacklevel=3)
                still_ours = True
            if not still_ours or held > self.expire_seconds:
                warnings.warn(f"The commit lock '{lock_id}' was held for {held:.1f} s, longer than its "
                              f"{self.expire_seconds} s lease; raise '{OPT_EXPIRE_TIME}'", stacklevel=3)

    def __repr__(self) -> str:
        return f"JdbcCommitLock({self.db.describe!r}, catalog_key={self.catalog_key!r})"


def commit_lock_from_options(db: JdbcConnection, catalog_key: str, warehouse: str, options: Mapping[str, str],
                             table_of: Callable[[str], tuple[str, str] | None] | None = None) -> CommitLock | None:
    """The commit lock a JDBC catalog's options ask for: a :class:`JdbcCommitLock`, or with
    ``lock.enabled=false`` none (the FileIO's own: conditional writes on S3, a machine-local
    flock on local disks, refused commits on stores that have neither)."""
    if options.get(OPT_LOCK_ENABLED, "true").strip().lower() == "false":
        return None
    try:
        key_max = int(options.get(OPT_KEY_MAX_LENGTH, "255"))
    except ValueError:
        raise OptionError(f"Option '{OPT_KEY_MAX_LENGTH}' must be an integer") from None
    return JdbcCommitLock(
        db, catalog_key, warehouse=warehouse,
        acquire_timeout=option_seconds(options, OPT_ACQUIRE_TIMEOUT, 480.0),
        check_max_sleep=option_seconds(options, OPT_CHECK_MAX_SLEEP, 1.0),
        expire_seconds=int(option_seconds(options, OPT_EXPIRE_TIME, 60.0)),
        key_max_length=key_max, table_of=table_of)


__all__ = ["JdbcCommitLock", "commit_lock_from_options", "create_lock_table", "LOCKS"]
