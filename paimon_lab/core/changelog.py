"""Long-lived changelogs: ``changelog/changelog-N`` files with their own EARLIEST/LATEST hints.

When 'changelog.num-retained.*' or 'changelog.time-retained' retain more than the snapshot
options, expiring snapshot N writes its JSON (a snapshot file's content) to ``changelog-N`` and
keeps the files its changelog reads, until the changelog expires in turn. Java Paimon writes and
reads the same layout.
"""

from __future__ import annotations

from paimon_lab.core.snapshot import Snapshot, SnapshotFiles
from paimon_lab.errors import SnapshotNotExistError
from paimon_lab.io.file_io import join

PREFIX = "changelog-"


class ChangelogManager(SnapshotFiles):
    """The long-lived changelogs of one table (or branch)."""

    dirname, prefix, what = "changelog", PREFIX, "changelog"

    def changelog(self, snapshot_id: int) -> Snapshot:
        return self.read(snapshot_id)

    def latest_id(self) -> int | None:
        hint = self._hint("LATEST")
        if hint is not None and self.exists(hint) and not self.exists(hint + 1):
            return hint
        ids = self.list_ids()
        return ids[-1] if ids else None

    def commit(self, snapshot: Snapshot) -> None:
        """Write ``changelog-N`` (overwriting: a retried expiration writes the same content)."""
        self.io.write_bytes(self.path(snapshot.id), snapshot.to_json().encode())

    def delete_hints(self) -> None:
        self.io.delete_quietly([join(self.dir, "EARLIEST"), join(self.dir, "LATEST")])

    def changelogs(self) -> list[Snapshot]:
        out = []
        for sid in self.list_ids():
            try:
                out.append(self.changelog(sid))
            except SnapshotNotExistError:
                continue
        return out
