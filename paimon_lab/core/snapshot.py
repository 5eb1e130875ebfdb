"""Snapshots: ``snapshot/snapshot-N`` JSON files and the EARLIEST/LATEST hints.

A snapshot is the unit of visibility: a commit becomes visible exactly when its snapshot file
is created. The hint files only speed up finding the newest or oldest snapshot; they may be
stale or missing, so readers verify them and fall back to listing the directory.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import asdict, dataclass, field
from typing import Iterator

from paimon_lab.errors import CorruptFileError, SnapshotNotExistError
from paimon_lab.io.file_io import FileIO, join
from paimon_lab.utils import html as H

SNAPSHOT_VERSION = 3
BATCH_COMMIT_IDENTIFIER = 0x7FFFFFFFFFFFFFFF
WATERMARK_MIN = -0x8000000000000000

COMMIT_KINDS = ("APPEND", "COMPACT", "OVERWRITE", "ANALYZE")

# JSON name -> attribute, in the order Paimon writes them.
_JSON_FIELDS = [
    ("version", "version"), ("id", "id"), ("schemaId", "schema_id"),
    ("baseManifestList", "base_manifest_list"), ("baseManifestListSize", "base_manifest_list_size"),
    ("deltaManifestList", "delta_manifest_list"), ("deltaManifestListSize", "delta_manifest_list_size"),
    ("changelogManifestList", "changelog_manifest_list"),
    ("changelogManifestListSize", "changelog_manifest_list_size"),
    ("indexManifest", "index_manifest"), ("commitUser", "commit_user"),
    ("commitIdentifier", "commit_identifier"), ("commitKind", "commit_kind"),
    ("timeMillis", "time_millis"), ("logOffsets", "log_offsets"),
    ("totalRecordCount", "total_record_count"), ("deltaRecordCount", "delta_record_count"),
    ("changelogRecordCount", "changelog_record_count"), ("watermark", "watermark"),
    ("statistics", "statistics"), ("properties", "properties"), ("nextRowId", "next_row_id"),
]
_KNOWN = {name for name, _ in _JSON_FIELDS}
_REQUIRED = ("id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser",
             "commitIdentifier", "commitKind", "timeMillis")


@dataclass
class Snapshot:
    """The content of one snapshot file."""

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    total_record_count: int | None = None
    delta_record_count: int | None = None
    changelog_record_count: int | None = None
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    log_offsets: dict | None = field(default_factory=dict)
    watermark: int | None = None
    statistics: str | None = None
    properties: dict | None = None
    next_row_id: int | None = None
    version: int = SNAPSHOT_VERSION
    # JSON fields of newer Paimon versions this one does not know: kept as read, written back
    # (a tag or branch copy of a Java snapshot keeps them).
    extras: dict = field(default_factory=dict, compare=False, repr=False)

    def __repr__(self) -> str:
        return (f"Snapshot(id={self.id}, {self.commit_kind}, schema_id={self.schema_id}, "
                f"time={_utc(self.time_millis)}, total_record_count={self.total_record_count}, "
                f"delta_record_count={self.delta_record_count})")

    def _repr_html_(self) -> str:
        rows = [("commit kind", self.commit_kind), ("time (UTC)", _utc(self.time_millis)),
                ("schema id", self.schema_id), ("total records", self.total_record_count),
                ("delta records", self.delta_record_count), ("changelog records", self.changelog_record_count),
                ("base manifest list", self.base_manifest_list), ("delta manifest list", self.delta_manifest_list),
                ("changelog manifest list", self.changelog_manifest_list or "-"),
                ("index manifest", self.index_manifest or "-"), ("commit user", self.commit_user),
                ("commit identifier", self.commit_identifier)]
        if self.watermark is not None and self.watermark != WATERMARK_MIN:
            rows.append(("watermark", self.watermark))
        return H.box(H.title(f"Snapshot {self.id}", self.commit_kind), H.pairs(rows),
                     H.details("snapshot JSON", H.pre(self.to_json())))

    def to_json(self) -> str:
        values = asdict(self)
        obj = {}
        for json_name, attr in _JSON_FIELDS:
            if values[attr] is not None:
                obj[json_name] = values[attr]
        for name, value in self.extras.items():
            obj.setdefault(name, value)
        return json.dumps(obj, indent=2)

    @staticmethod
    def from_json(text: str, source: str = "snapshot") -> "Snapshot":
        try:
            obj = json.loads(text)
            missing = [k for k in _REQUIRED if k not in obj]
            if missing:
                raise KeyError(f"missing {missing}")
            kwargs = {attr: obj[name] for name, attr in _JSON_FIELDS if name in obj}
            snap = Snapshot(**kwargs, extras={k: v for k, v in obj.items() if k not in _KNOWN})
            if snap.commit_kind not in COMMIT_KINDS:
                raise ValueError(f"unknown commitKind {snap.commit_kind!r}")
            return snap
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptFileError(f"{source} is not a valid Paimon snapshot file: {e}") from None


def _utc(millis: int | None) -> str:
    if millis is None:
        return "?"
    return datetime.datetime.fromtimestamp(millis / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


ROLLBACK_MARKER = "ROLLBACK"   # in snapshot/: a rollback is deleting newer snapshots


class SnapshotFiles:
    """A directory of numbered snapshot-JSON files (``<prefix>N``) with EARLIEST/LATEST hints:
    the table's snapshots, or its long-lived changelogs."""

    dirname, prefix, what = "snapshot", "snapshot-", "snapshot"

    def __init__(self, file_io: FileIO, table_path: str):
        self.io = file_io
        self.table_path = table_path
        self.dir = join(table_path, self.dirname)

    def path(self, snapshot_id: int) -> str:
        return join(self.dir, f"{self.prefix}{snapshot_id}")

    def exists(self, snapshot_id: int) -> bool:
        return self.io.exists(self.path(snapshot_id))

    def read(self, snapshot_id: int) -> Snapshot:
        path = self.path(snapshot_id)
        try:
            text = self.io.read_text(path)
        except FileNotFoundError:
            raise SnapshotNotExistError(f"{self.what.capitalize()} {snapshot_id} does not exist") from None
        except UnicodeDecodeError:
            raise CorruptFileError(f"{path} is not a valid Paimon {self.what} file") from None
        return Snapshot.from_json(text, path)

    def list_ids(self) -> list[int]:
        n = len(self.prefix)
        return sorted(int(name[n:]) for name in self.io.list_names(self.dir)
                      if name.startswith(self.prefix) and name[n:].isdigit())

    def _hint(self, name: str) -> int | None:
        try:
            return int(self.io.read_text(join(self.dir, name)).strip())
        except (FileNotFoundError, ValueError, OSError):
            return None

    def write_hint(self, name: str, snapshot_id: int) -> None:
        try:
            self.io.write_bytes(join(self.dir, name), str(snapshot_id).encode())
        except OSError:
            pass  # hints are advisory

    def earliest_id(self) -> int | None:
        hint = self._hint("EARLIEST")
        if hint is not None and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self.list_ids()
        return ids[0] if ids else None


class SnapshotManager(SnapshotFiles):
    """Finds and reads the snapshots of one table (or branch)."""

    def __init__(self, file_io: FileIO, table_path: str):
        super().__init__(file_io, table_path)
        self._rollback_cut_short = False

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.read(snapshot_id)

    def latest_id(self) -> int | None:
        """The newest snapshot id. A LATEST hint naming a snapshot newer than every file on disk
        means that snapshot was lost (a commit is never undone but by a rollback, which leaves a
        ROLLBACK marker while it deletes): :class:`CorruptFileError` rather than a silent read of
        an older one."""
        hint = self._hint("LATEST")
        if hint is not None and self.exists(hint):
            while self.exists(hint + 1):
                hint += 1
            return hint
        ids = self.list_ids()
        if hint is not None and (not ids or ids[-1] < hint) and self.io.exists(join(self.dir, ROLLBACK_MARKER)):
            self._rollback_cut_short = True   # the next commit's hint makes the state whole again
        elif hint is not None and (not ids or ids[-1] < hint):
            newest = f"snapshot-{ids[-1]}" if ids else "no snapshot"
            raise CorruptFileError(f"{self.path(hint)} is missing: the LATEST hint names it, but the newest "
                                   f"on disk is {newest}; restore the file (or roll back to a snapshot on disk)")
        return ids[-1] if ids else None

    def latest(self) -> Snapshot | None:
        sid = self.latest_id()
        return self.snapshot(sid) if sid is not None else None

    def snapshots(self) -> Iterator[Snapshot]:
        for sid in self.list_ids():
            try:
                yield self.snapshot(sid)
            except SnapshotNotExistError:
                continue  # expired while listing

    def earlier_or_equal_time(self, timestamp_millis: int) -> Snapshot | None:
        """The newest snapshot committed at or before ``timestamp_millis``."""
        ids = self.list_ids()
        lo, hi, found = 0, len(ids) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            snap = self.snapshot(ids[mid])
            if snap.time_millis <= timestamp_millis:
                found, lo = snap, mid + 1
            else:
                hi = mid - 1
        return found

    def begin_rollback(self, target_id: int) -> None:
        """Mark a rollback under way (see :meth:`latest_id`); :meth:`end_rollback` removes it."""
        self.io.write_bytes(join(self.dir, ROLLBACK_MARKER), str(target_id).encode())

    def end_rollback(self) -> None:
        self.io.delete(join(self.dir, ROLLBACK_MARKER))

    def commit(self, snapshot: Snapshot) -> bool:
        """Create snapshot-N atomically; False if N already exists. Updates the hints after."""
        if not self.io.try_create(self.path(snapshot.id), snapshot.to_json().encode()):
            return False
        self.write_hint("LATEST", snapshot.id)
        if self._rollback_cut_short:
            self.end_rollback()
            self._rollback_cut_short = False
        if snapshot.id == 1 or self._hint("EARLIEST") is None:
            earliest = self.earliest_id()
            if earliest is not None:
                self.write_hint("EARLIEST", earliest)
        return True
