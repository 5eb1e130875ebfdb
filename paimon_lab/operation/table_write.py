"""A table write: buffered rows for any table kind, committed once as one or two snapshots.

:func:`new_store_write` picks the writer for the table kind (append or key-value);
:class:`TableWrite` adds what a user's write means on top: overwrite (static or dynamic
partitions), abort on failure, the snapshot id in which the rows became visible, and the
expiration Paimon's committers run after each commit.
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING, Any, Sequence

from paimon_lab.core.schema import check_bucket_mode, is_postpone
from paimon_lab.core.predicate import And, Leaf, Or, Predicate, bind
from paimon_lab.errors import ArgumentError, CommitConflictError, PaimonLabError, SchemaError, check_int
from paimon_lab.operation.append_write import AppendWriter
from paimon_lab.operation.commit import FileStoreCommit, retry_wait
from paimon_lab.operation.compact import compact
from paimon_lab.operation.maintenance import after_commit
from paimon_lab.operation.partition_mark_done import check_mark_done_actions
from paimon_lab.operation.kv_write import KeyValueFileStoreWrite
from paimon_lab.operation.postpone import PostponeBucketWrite
from paimon_lab.store.commit_message import CommitMessage

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


def new_store_write(store: "FileStore", commit_user: str, ignore_previous_files: bool = False,
                    file_uuid: str | None = None) -> "AppendWriter | KeyValueFileStoreWrite":
    """The writer of a table kind; an overwrite ignores the files it is about to replace.
    ``file_uuid``: the uuid part of every file name it writes (default: a fresh one)."""
    check_bucket_mode(store.schema)
    if is_postpone(store.schema):
        return PostponeBucketWrite(store, commit_user, ignore_previous_files, file_uuid=file_uuid)
    if store.schema.primary_keys:
        return KeyValueFileStoreWrite(store, commit_user, ignore_previous_files, file_uuid=file_uuid)
    return AppendWriter(store, commit_user, ignore_previous_files, file_uuid=file_uuid)


def write_rows(store: "FileStore", data: Any, *, overwrite: bool | dict = False,
               row_kinds: Sequence[str] | None = None, commit_user: str | None = None,
               watermark: int | None = None) -> int | None:
    """Write ``data`` as one commit; the id of the snapshot in which its rows are visible.

    A :class:`CommitConflictError` means nothing was committed and the write was planned on a
    view other commits have made stale (dynamic bucket assignment, cross-partition routing,
    deletion vectors): it is redone from scratch on the latest snapshot, up to
    'commit.max-retries' times."""
    watermark = check_int("watermark", watermark)
    retries = store.schema.core.get("commit.max-retries")
    for attempt in range(retries + 1):
        w = TableWrite(store, overwrite, commit_user=commit_user)
        w.watermark = watermark
        try:
            w.write(data, row_kinds=row_kinds)
        except BaseException:
            w.abort()
            raise
        try:
            return w.commit()
        except CommitConflictError:
            if attempt == retries:
                raise
            time.sleep(retry_wait(store.schema.core, attempt))
            store.refresh()
    raise AssertionError("unreachable")  # pragma: no cover


class TableWrite:
    """Buffered writes to one table, committed once."""

    def __init__(self, store: "FileStore", overwrite: bool | dict = False, *, file_uuid: str | None = None,
                 commit_user: str | None = None):
        self.store = store
        self.commit_user = commit_user or store.schema.core.new_commit_user()
        self.overwrite = overwrite
        # None: the table's 'dynamic-partition-overwrite'; False: an overwrite replaces the whole
        # table (or the given partitions), as Spark's static partitionOverwriteMode does.
        self.dynamic_partition_overwrite: bool | None = None
        if store.schema.core.get("partition.end-input-to-done") and store.partition_keys:
            check_mark_done_actions(store)   # not after the commit: a failed mark would look like a failed write
        self._writer = new_store_write(store, self.commit_user, ignore_previous_files=overwrite not in (False, None),
                                       file_uuid=file_uuid)
        self.snapshot_id: int | None = None
        # Epoch millis the written data is complete up to; goes into the snapshot (watermark tags).
        self.watermark: int | None = None
        self._done = False

    def write(self, data: Any, row_kinds: Sequence[str] | None = None) -> None:
        if self._done:
            raise PaimonLabError("This writer has already committed")
        if row_kinds is not None and not self.store.schema.primary_keys:
            raise PaimonLabError("row_kinds only apply to primary-key tables")
        if isinstance(row_kinds, str):
            raise ArgumentError(f"row_kinds is a list with one row kind per row (['+I', '-D', ...]), "
                                f"not str {row_kinds!r}")
        if self.store.schema.primary_keys:
            self._writer.write(data, row_kinds)
        else:
            self._writer.write(data)

    def flush(self) -> None:
        """Write the buffered rows as data files now (they stay invisible until the commit)."""
        self._writer.flush()

    def prepare_commit(self) -> list[CommitMessage]:
        return self._writer.prepare_commit()

    def commit(self) -> int | None:
        if self._done:
            return self.snapshot_id
        store = self.store
        messages: list[CommitMessage] = []
        try:
            static = self._static_overwrite()
            messages = self.prepare_commit()
            overwrite = self._overwrite_target(static, messages)
            if isinstance(static, Predicate):
                self._check_inside(messages, static)
            # FileStoreCommit cleans up after itself once the first snapshot is visible.
            first, second = FileStoreCommit(store, self.commit_user).commit(messages, overwrite=overwrite,
                                                                            watermark=self.watermark)
        except BaseException:
            store.discard(messages)
            self.abort()
            raise
        self._done = True
        # The snapshot in which the written rows are visible: where batch reads skip level 0
        # (deletion vectors, first-row), that is the COMPACT snapshot that lifted them.
        hides_level0 = store.batch_scan_skips_level0
        self.snapshot_id = second if hides_level0 and second is not None else first if first is not None else second
        if first is not None and second is None and any(m.compacted for m in messages):
            self.snapshot_id = self._catch_up_compaction() or self.snapshot_id
        if self.snapshot_id is not None:
            after_commit(store, messages=messages)  # tags, expirations, marking partitions done
        return self.snapshot_id

    def _catch_up_compaction(self, attempts: int = 3) -> int | None:
        """The data is committed but its compaction lost a race with another commit. Where
        readers skip level 0 (deletion vectors, first-row) the new rows would
        stay invisible until some later compaction: compact again on the new latest snapshot."""
        store = self.store
        if not store.batch_scan_skips_level0 or store.schema.core.get("write-only"):
            return None
        for _ in range(attempts):
            try:
                return compact(store.refresh())
            except CommitConflictError:
                continue
        warnings.warn(f"{store.identifier}: the new rows stay in level 0 (invisible to readers of this table kind) "
                      "until the next compaction: it kept losing races with other commits", stacklevel=4)
        return None

    def _static_overwrite(self) -> Predicate | bool | None:
        """The partition spec of the overwrite (True: no spec), or None for a plain write."""
        if self.overwrite is False or self.overwrite is None:
            return None
        if self.overwrite is True or self.overwrite == {}:
            return True
        if not isinstance(self.overwrite, dict):
            raise PaimonLabError("overwrite must be True, False or a dict of partition values")
        keys = self.store.partition_keys
        unknown = [k for k in self.overwrite if k not in keys]
        if unknown:
            raise SchemaError(f"Overwrite names {unknown}, which are not partition keys {keys}")
        return bind(_partition_equals(self.overwrite), self.store.schema.arrow_schema())

    def _overwrite_target(self, static, messages: list[CommitMessage]) -> Predicate | bool | None:
        """What the overwrite replaces. With 'dynamic-partition-overwrite' (the default) and partition
        columns left open, only the partitions the new data lands in are replaced."""
        if static is None:
            return None
        keys = self.store.partition_keys
        fully_static = isinstance(static, Predicate) and set(self.overwrite) >= set(keys)
        dynamic = self.dynamic_partition_overwrite
        if dynamic is None:
            dynamic = self.store.schema.core.get("dynamic-partition-overwrite")
        if not keys or fully_static or not dynamic:
            return static
        codec = self.store.partition_codec
        written = sorted({m.partition for m in messages if m.new_files})
        if not written:
            return None  # nothing written: a dynamic overwrite replaces nothing
        parts = tuple(_partition_equals(codec.to_dict(p)) for p in written)
        return bind(Or(parts), self.store.schema.arrow_schema())

    def _check_inside(self, messages: list[CommitMessage], pred: Predicate) -> None:
        codec = self.store.partition_codec
        for m in messages:
            values = codec.to_dict(m.partition)
            if not pred.may_match({k: (v, v, int(v is None)) for k, v in values.items()}, 1):
                raise SchemaError(f"Data for partition {values} lies outside the overwritten partition "
                                  f"{self.overwrite}")

    def abort(self) -> None:
        self._writer.abort()
        self._done = True


def _partition_equals(values: dict) -> And:
    return And(tuple(Leaf("is_null", k) if v is None else Leaf("=", k, (v,)) for k, v in values.items()))
