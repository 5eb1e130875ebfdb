"""Long-lived changelogs: ``changelog/changelog-N`` files with their own EARLIEST/LATEST hints.

When 'changelog.num-retained.*' or 'changelog.time-retained' retain more than the snapshot
options, expiring snapshot N writes its JSON (a snapshot file's content) to ``changelog-N`` and
keeps the files its changelog reads, until the changelog expires in turn. Java Paimon writes and
reads the same layout.
"""

from __future__ import annotations

from paimon_lab.core.snapshot import Snapshot
from paimon_lab.errors import CorruptFileError, SnapshotNotExistError
from paimon_lab.io.file_io import FileIO, join

PREFIX = "changelog-"


class ChangelogManager:
    """The long-lived changelogs of one table (or branch)."""

    def __init__(self, file_io: FileIO, table_path: str):
        self.io = file_io
        self.dir = join(table_path, "changelog")

    def path(self, snapshot_id: int) -> str:
        return join(self.dir, f"{PREFIX}{snapshot_id}")

    def exists(self, snapshot_id: int) -> bool:
        return self.io.exists(self.path(snapshot_id))

    def changelog(self, snapshot_id: int) -> Snapshot:
        path = self.path(snapshot_id)
        try:
            text = self.io.read_text(path)
        except FileNotFoundError:
            raise SnapshotNotExistError(f"Changelog {snapshot_id} does not exist") from None
        except UnicodeDecodeError:
            raise CorruptFileError(f"{path} is not a valid Paimon changelog file") from None
        return Snapshot.from_json(text, path)

    def list_ids(self) -> list[int]:
        return sorted(int(n[len(PREFIX):]) for n in self.io.list_names(self.dir)
                      if n.startswith(PREFIX) and n[len(PREFIX):].isdigit())

    def _hint(self, name: str) -> int | None:
        try:
            return int(self.io.read_text(join(self.dir, name)).strip())
        except (FileNotFoundError, ValueError, OSError):
            return None

    def latest_id(self) -> int | None:
        hint = self._hint("LATEST")
        if hint is not None and self.exists(hint) and not self.exists(hint + 1):
            return hint
        ids = self.list_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        hint = self._hint("EARLIEST")
        if hint is not None and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self.list_ids()
        return ids[0] if ids else None

    def commit(self, snapshot: Snapshot) -> None:
        """Write ``changelog-N`` (overwriting: a retried expiration writes the same content)."""
        self.io.write_bytes(self.path(snapshot.id), snapshot.to_json().encode())

    def write_hint(self, name: str, snapshot_id: int) -> None:
        try:
            self.io.write_bytes(join(self.dir, name), str(snapshot_id).encode())
        except OSError:
            pass  # hints are advisory

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
