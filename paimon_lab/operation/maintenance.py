"""What a committer does after each commit, in Java's order (TableCommitImpl.maintain): auto-create
and time-expire tags, expire partitions, expire snapshots (and long-lived changelogs), then the
batch tag of 'tag.automatic-creation' = batch (nothing of this with 'write-only'); last, marking a
batch write's partitions done ('partition.end-input-to-done')."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from paimon_lab.core.snapshot import BATCH_COMMIT_IDENTIFIER
from paimon_lab.operation import partition_expire, tag_auto
from paimon_lab.operation.partition_mark_done import mark_done_at_end_input
from paimon_lab.operation.expire import expire_snapshots

if TYPE_CHECKING:
    from paimon_lab.store.commit_message import CommitMessage
    from paimon_lab.store.file_store import FileStore


def after_commit(store: FileStore, identifier: int = BATCH_COMMIT_IDENTIFIER,
                 messages: Sequence[CommitMessage] | None = None) -> None:
    """``messages``: what a write committed; a batch write's (``identifier`` the batch one, Java's
    end of input) has its partitions marked done with 'partition.end-input-to-done'."""
    core = store.schema.core
    if not core.get("write-only"):
        tag_auto.auto_create_tags(store)
        if core.get("tag.time-expire-enabled"):
            tag_auto.expire_tags(store)
        partition_expire.expire_on_commit(store, identifier)
        expire_snapshots(store)
        if core.get("tag.automatic-creation") == "batch" and identifier == BATCH_COMMIT_IDENTIFIER:
            tag_auto.create_batch_tag(store)
    if messages is not None:   # last, as Java's commit listeners
        mark_done_at_end_input(store, messages, end_input=identifier == BATCH_COMMIT_IDENTIFIER)
