"""What a writer hands to the commit: the files it wrote for one partition and bucket."""

from __future__ import annotations

from dataclasses import dataclass, field

from paimon_lab.core.manifest import DataFileMeta


@dataclass
class CommitMessage:
    """What a writer produced for one partition and bucket, waiting to be committed: new data
    files and their changelog (an APPEND snapshot), and the files a compaction replaced (before)
    and wrote (after) with the changelog it produced (a COMPACT snapshot)."""

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: list[DataFileMeta] = field(default_factory=list)
    changelog_files: list[DataFileMeta] = field(default_factory=list)
    compact_before: list[DataFileMeta] = field(default_factory=list)
    compact_after: list[DataFileMeta] = field(default_factory=list)
    compact_changelog: list[DataFileMeta] = field(default_factory=list)
    index_changes: list = field(default_factory=list)  # IndexManifestEntry of the APPEND snapshot
    compact_index_changes: list = field(default_factory=list)  # ... of the COMPACT snapshot
    # The snapshot the writer's view of the bucket came from (0: the table was empty; None:
    # unknown). The commit rebases the new files' sequence numbers over what came after it.
    base_snapshot: int | None = None

    @property
    def compacted(self) -> bool:
        """Whether the message carries anything for a COMPACT snapshot."""
        return bool(self.compact_before or self.compact_after or self.compact_changelog or self.compact_index_changes)

    def compact_written(self) -> list[DataFileMeta]:
        """The files the compaction wrote: ``compact_after`` but the upgraded ones, which keep
        the name of a ``compact_before`` file (only their level changed) and are no new file to
        delete when the compaction is dropped."""
        before = {f.file_name for f in self.compact_before}
        return [f for f in self.compact_after if f.file_name not in before]

    def all_written(self) -> list[DataFileMeta]:
        """The files this message wrote (what to delete if it is never committed)."""
        return self.new_files + self.changelog_files + self.compact_written() + self.compact_changelog
