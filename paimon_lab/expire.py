"""Snapshot expiration, rollback and orphan-file removal: the operations that delete files.

Expiration (seed 004): choose the snapshots to expire from ``snapshot.num-retained.min/max``,
``snapshot.time-retained`` and the consumers' positions; delete the data files that DELETE
entries of the later snapshots retired (unless a tag or branch still uses them); delete the
expired snapshots' changelog files, manifests and manifest lists that nothing retained uses;
then the snapshot files themselves, rewriting EARLIEST; then any directory left empty.
Every deletion is of a file that no retained snapshot, tag or branch references, so a crash
half-way leaves a readable table and only orphans (which :func:`remove_orphan_files` collects).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from .errors import PaimonLabError, SnapshotNotExistError
from .fs import join
from .index_manifest import read_index_manifest
from .manifest import ADD, DELETE, ManifestEntry
from .snapshot import Snapshot

if TYPE_CHECKING:
    from .table import Table


@dataclass
class ExpireResult:
    expired_snapshots: list[int]
    deleted_data_files: int
    deleted_changelog_files: int
    deleted_manifests: int


def _manifest_lists(snap: Snapshot) -> list[str]:
    return [n for n in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list) if n]


class FileReferences:
    """Everything a set of snapshots (with tags and branches) still needs, by kind."""

    def __init__(self, table: "Table"):
        self.table = table
        self.manifest_files: set[str] = set()
        self.data_files: set[tuple] = set()
        self.index_files: set[str] = set()
        self._seen: set[tuple] = set()

    def add_snapshot(self, snap: Snapshot, *, data: bool = True, changelog: bool = True) -> None:
        key = (snap.id, snap.base_manifest_list, snap.delta_manifest_list, data, changelog)
        if key in self._seen:
            return
        self._seen.add(key)
        t = self.table
        mio = t.manifest_io
        lists = [snap.base_manifest_list, snap.delta_manifest_list]
        if changelog and snap.changelog_manifest_list:
            lists.append(snap.changelog_manifest_list)
        for name in lists:
            self.manifest_files.add(name)
            for meta in mio.read_manifest_list(name):
                self.manifest_files.add(meta.file_name)
        if snap.index_manifest:
            self.manifest_files.add(snap.index_manifest)
            for e in read_index_manifest(t.file_io, join(t.path, "manifest", snap.index_manifest)):
                self.index_files.add(e.index_file.file_name)
        if data:
            for e in t.store_scan().live_entries(snap):
                self.data_files.add((e.partition, e.bucket, e.file.file_name))
            if changelog and snap.changelog_manifest_list:
                for meta in mio.read_manifest_list(snap.changelog_manifest_list):
                    for e in mio.read_manifest(meta.file_name):
                        self.data_files.add((e.partition, e.bucket, e.file.file_name))


def _protected(table: "Table", below: int | None = None) -> FileReferences:
    """Files used by tags and by other branches (which share data and manifests)."""
    from .branch import list_branches

    refs = FileReferences(table)
    for tag in table.tags():
        refs.add_snapshot(tag.snapshot)
    for name in list_branches(table):
        b = table.on_branch(name)
        if b.branch == table.branch:
            continue
        for snap in b.snapshots():
            refs.add_snapshot(snap)
        for tag in b.tags():
            refs.add_snapshot(tag.snapshot)
    if table.branch != "main":
        main = table.on_branch("main")
        for snap in main.snapshots():
            refs.add_snapshot(snap)
        for tag in main.tags():
            refs.add_snapshot(tag.snapshot)
    return refs


def expire_range(table: "Table", now_millis: int | None = None, *, retain_max: int | None = None,
                 retain_min: int | None = None, older_than_millis: int | None = None,
                 max_deletes: int | None = None) -> tuple[int, int] | None:
    """[begin, end) of the snapshot ids to expire, or None."""
    core = table.schema.core
    sm = table.snapshot_manager
    latest, earliest = sm.latest_id(), sm.earliest_id()
    if latest is None or earliest is None:
        return None
    retain_min = retain_min if retain_min is not None else core.get("snapshot.num-retained.min")
    retain_max = retain_max if retain_max is not None else core.get("snapshot.num-retained.max")
    if retain_min < 1:
        raise PaimonLabError("At least one snapshot must be retained (snapshot.num-retained.min >= 1)")
    retain_max = max(retain_max, retain_min)
    now = now_millis if now_millis is not None else int(time.time() * 1000)
    cutoff = older_than_millis if older_than_millis is not None else now - core.get("snapshot.time-retained")
    end_limit = latest - retain_min + 1  # ids below this may go
    consumer_min = min_consumer_snapshot(table)
    if consumer_min is not None:
        end_limit = min(end_limit, consumer_min)
    begin = earliest
    end = max(begin, min(latest - retain_max + 1, end_limit))  # beyond retain_max: always expire
    while end < end_limit:
        try:
            snap = sm.snapshot(end)
        except SnapshotNotExistError:
            end += 1
            continue
        if snap.time_millis >= cutoff:
            break
        end += 1
    limit = max_deletes if max_deletes is not None else core.get("snapshot.expire.limit")
    end = min(end, begin + limit)
    return (begin, end) if end > begin else None


def min_consumer_snapshot(table: "Table") -> int | None:
    from .consumer import ConsumerManager

    ids = [c.next_snapshot for c in ConsumerManager(table).list().values()]
    return min(ids) if ids else None


def expire_snapshots(table: "Table", **kwargs) -> ExpireResult:
    """Expire the snapshots :func:`expire_range` picks and delete what only they used."""
    rng = expire_range(table, **kwargs)
    if rng is None:
        return ExpireResult([], 0, 0, 0)
    begin, end = rng
    return _expire(table, begin, end)


def _expire(table: "Table", begin: int, end: int) -> ExpireResult:
    t, sm, io, mio = table, table.snapshot_manager, table.file_io, table.manifest_io
    retained = sm.snapshot(end)
    keep = _protected(t)
    keep.add_snapshot(retained)
    expiring = []
    for sid in range(begin, end):
        try:
            expiring.append(sm.snapshot(sid))
        except SnapshotNotExistError:
            continue
    # 1. data files retired by DELETE entries of snapshots begin+1 .. end
    data_deleted = 0
    touched_dirs: set[str] = set()
    from .progress import progress

    for sid in progress(range(begin + 1, end + 1), desc="expiring snapshots", unit="snapshot"):
        try:
            snap = sm.snapshot(sid)
        except SnapshotNotExistError:
            continue
        for meta in mio.read_manifest_list(snap.delta_manifest_list):
            for e in mio.read_manifest(meta.file_name):
                if e.kind != DELETE or (e.partition, e.bucket, e.file.file_name) in keep.data_files:
                    continue
                directory = t.bucket_path(e.partition, e.bucket)
                io.delete_quietly([join(directory, e.file.file_name)] +
                                  [join(directory, x) for x in e.file.extra_files])
                touched_dirs.add(directory)
                data_deleted += 1
    # 2. changelog files of the expired snapshots
    changelog_deleted = 0
    for snap in expiring:
        if not snap.changelog_manifest_list:
            continue
        for meta in mio.read_manifest_list(snap.changelog_manifest_list):
            for e in mio.read_manifest(meta.file_name):
                if (e.partition, e.bucket, e.file.file_name) in keep.data_files:
                    continue
                directory = t.bucket_path(e.partition, e.bucket)
                io.delete_quietly([join(directory, e.file.file_name)])
                touched_dirs.add(directory)
                changelog_deleted += 1
    # 3. manifests, manifest lists, index manifests and index files nothing retained uses
    manifests_deleted = 0
    for snap in expiring:
        names = set(_manifest_lists(snap))
        for name in list(names):
            try:
                names.update(m.file_name for m in mio.read_manifest_list(name))
            except PaimonLabError:
                pass
        index_files = []
        if snap.index_manifest:
            names.add(snap.index_manifest)
            try:
                index_files = [e.index_file.file_name for e in
                               read_index_manifest(io, join(t.path, "manifest", snap.index_manifest))]
            except PaimonLabError:
                pass
        doomed = [n for n in names if n not in keep.manifest_files]
        io.delete_quietly([mio.path(n) for n in doomed])
        io.delete_quietly([join(t.path, "index", n) for n in index_files if n not in keep.index_files])
        manifests_deleted += len(doomed)
    # 4. the snapshot files, oldest first, then the EARLIEST hint
    for snap in expiring:
        io.delete(sm.path(snap.id))
    sm.write_hint("EARLIEST", end)
    # 5. directories left empty
    for directory in sorted(touched_dirs, key=len, reverse=True):
        _remove_empty_parents(t, directory)
    return ExpireResult([s.id for s in expiring], data_deleted, changelog_deleted, manifests_deleted)


def _remove_empty_parents(table: "Table", directory: str) -> None:
    io = table.file_io
    root = table.path.rstrip("/")
    while directory.rstrip("/") != root and directory.startswith(root):
        try:
            if io.list_dir(directory):
                return
            io.delete_dir(directory)
        except OSError:
            return
        directory = directory.rsplit("/", 1)[0]


def rollback_to(table: "Table", snapshot_id: int | None = None, tag: str | None = None) -> Snapshot:
    """Make a snapshot (or a tag's snapshot) the latest again: newer snapshots, the files only they
    added, and tags on them are deleted. A tag whose snapshot expired is restored from the tag."""
    t, sm, io = table, table.snapshot_manager, table.file_io
    if (snapshot_id is None) == (tag is None):
        raise PaimonLabError("Give exactly one of snapshot_id and tag to roll back to")
    if tag is not None:
        target = t.tag_manager.get(tag).snapshot
        if not sm.exists(target.id):
            io.write_bytes(sm.path(target.id), target.to_json().encode())
    else:
        target = sm.snapshot(snapshot_id)
    for tg in t.tags():
        if tg.snapshot.id > target.id:
            t.tag_manager.delete(tg.name)
    keep = _protected(t)
    keep.add_snapshot(target)
    newer = [sm.snapshot(s) for s in sm.list_ids() if s > target.id]
    # Hints first: readers must not be sent to a snapshot about to vanish.
    sm.write_hint("LATEST", target.id)
    for snap in sorted(newer, key=lambda s: -s.id):
        entries: Iterable[ManifestEntry] = []
        try:
            entries = [e for m in t.manifest_io.read_manifest_list(snap.delta_manifest_list)
                       for e in t.manifest_io.read_manifest(m.file_name)]
            if snap.changelog_manifest_list:
                entries += [e for m in t.manifest_io.read_manifest_list(snap.changelog_manifest_list)
                            for e in t.manifest_io.read_manifest(m.file_name)]
        except PaimonLabError:
            pass
        io.delete(sm.path(snap.id))
        for e in entries:
            if e.kind == ADD and (e.partition, e.bucket, e.file.file_name) not in keep.data_files:
                io.delete_quietly([join(t.bucket_path(e.partition, e.bucket), e.file.file_name)])
        names = set(_manifest_lists(snap))
        for name in list(names):
            try:
                names.update(m.file_name for m in t.manifest_io.read_manifest_list(name))
            except PaimonLabError:
                pass
        if snap.index_manifest and snap.index_manifest != target.index_manifest:
            names.add(snap.index_manifest)
            try:
                io.delete_quietly([join(t.path, "index", e.index_file.file_name) for e in
                                   read_index_manifest(io, join(t.path, "manifest", snap.index_manifest))
                                   if e.index_file.file_name not in keep.index_files])
            except PaimonLabError:
                pass
        io.delete_quietly([t.manifest_io.path(n) for n in names if n not in keep.manifest_files])
    return target


def remove_orphan_files(table: "Table", older_than_millis: int | None = None) -> list[str]:
    """Delete files under the table that no snapshot, tag or branch references and that are older
    than ``older_than_millis`` (default: a day ago, so in-flight commits are never touched)."""
    from .branch import list_branches

    t, io = table, table.file_io
    cutoff = older_than_millis if older_than_millis is not None else int(time.time() * 1000) - 86_400_000
    refs = FileReferences(t)
    tables = [t.on_branch("main")] + [t.on_branch(b) for b in list_branches(t)]
    for tb in tables:
        for snap in tb.snapshots():
            refs.add_snapshot(snap)
        for tag in tb.tags():
            refs.add_snapshot(tag.snapshot)
    live_data = {name for (_, _, name) in refs.data_files}
    removed = []
    skip_dirs = {"schema", "snapshot", "tag", "branch", "consumer", "statistics"}

    def walk(directory: str, top: bool) -> None:
        for info in io.list_dir(directory):
            name = info.base_name
            if info.type.name == "Directory":
                if top and name in skip_dirs:
                    continue
                walk(join(directory, name), False)
                continue
            parent = directory.rsplit("/", 1)[-1]
            if name.startswith("."):
                kind_ok = name.endswith(".tmp")  # a writer's temporary file, left by a crash
            elif directory == join(t.path, "manifest"):
                kind_ok = name not in refs.manifest_files
            elif directory == join(t.path, "index"):
                kind_ok = name not in refs.index_files
            elif parent.startswith("bucket-"):
                kind_ok = name not in live_data
            else:
                kind_ok = False
            mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
            if kind_ok and mtime < cutoff:
                io.delete(join(directory, name))
                removed.append(join(directory, name))

    walk(t.path, True)
    return removed
