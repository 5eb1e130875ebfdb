"""Compaction of a whole table (or one partition): primary-key tables merge their LSM trees,
append tables rewrite small files into larger ones; the result is one COMPACT snapshot."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from paimon_lab.core.predicate import Predicate
from paimon_lab.core.schema import is_postpone
from paimon_lab.errors import PaimonLabError
from paimon_lab.operation.append_compact import AppendCompactor
from paimon_lab.operation.commit import FileStoreCommit
from paimon_lab.operation.kv_write import KeyValueFileStoreWrite
from paimon_lab.operation.postpone import compact_postponed
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.utils.progress import progress

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


def compact(store: "FileStore", full: bool = False, partition_filter: Predicate | None = None) -> int | None:
    """Compact every bucket (or those of the matching partitions); ``full``: primary-key buckets
    into their top level, append buckets with more than one file. The COMPACT snapshot id, or
    None if there was nothing to do."""
    if not store.schema.primary_keys:
        return _compact_append(store, full, partition_filter)
    if is_postpone(store.schema):
        return compact_postponed(store, full, partition_filter)
    write = KeyValueFileStoreWrite(store, str(uuid.uuid4()))
    messages: list[CommitMessage] = []
    try:
        write.compact(full, partition_filter)
        messages = [m for m in (w.prepare_commit(False) for w in write.writers.values()) if m.compacted]
        for m in messages:
            if m.new_files or m.changelog_files:
                raise PaimonLabError("compaction produced new data files")  # pragma: no cover
        if not messages:
            return None
        _, compact_id = FileStoreCommit(store, write.commit_user).commit(messages)
    except BaseException:
        store.discard(messages)
        raise
    return compact_id


def _compact_append(store: "FileStore", full: bool, pred: Predicate | None) -> int | None:
    latest = store.snapshot_manager.latest()
    if latest is None:
        return None
    groups: dict[tuple[bytes, int], list] = {}
    total: dict[tuple[bytes, int], int] = {}
    for e in FileStoreScan(store).read_entries(latest, pred):
        groups.setdefault((e.partition, e.bucket), []).append(e.file)
        total[(e.partition, e.bucket)] = e.total_buckets
    compactor = AppendCompactor(store)
    messages: list[CommitMessage] = []
    try:
        for (part, bucket), files in progress(list(groups.items()), desc="compacting buckets", unit="bucket"):
            msg = compactor.compact(part, bucket, total[(part, bucket)], files, full, latest)
            if msg is not None:
                messages.append(msg)
        if not messages:
            return None
        _, compact_id = FileStoreCommit(store).commit(messages)
    except BaseException:
        store.discard(messages)
        raise
    return compact_id
