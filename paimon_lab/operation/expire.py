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
from typing import TYPE_CHECKING

from paimon_lab.errors import OptionError, PaimonLabError, SnapshotNotExistError, check_int
from paimon_lab.io.file_io import join
from paimon_lab.core.index_manifest import read_index_manifest
from paimon_lab.core.manifest import ADD, DELETE, FILE_SOURCE_COMPACT
from paimon_lab.core.snapshot import ROLLBACK_MARKER, Snapshot
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.operation.branch import list_branches
from paimon_lab.store.consumer import ConsumerManager
from paimon_lab.utils.clock import now_millis as clock_millis
from paimon_lab.utils.progress import progress

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


@dataclass
class ExpireResult:
    expired_snapshots: list[int]
    deleted_data_files: int
    deleted_changelog_files: int
    deleted_manifests: int


class FileReferences:
    """Everything a set of snapshots (with tags and branches) still needs, by kind."""

    def __init__(self, store: "FileStore"):
        self.store = store
        self.manifest_files: set[str] = set()
        self.data_files: set[tuple] = set()
        self.index_files: set[str] = set()
        self.statistics: set[str] = set()
        self._seen: set[tuple] = set()

    def add_snapshot(self, snap: Snapshot, *, data: bool = True, changelog: bool = True) -> None:
        key = (snap.id, snap.base_manifest_list, snap.delta_manifest_list, data, changelog)
        if key in self._seen:
            return
        self._seen.add(key)
        t = self.store
        mio = t.manifest_io
        if snap.statistics:
            self.statistics.add(snap.statistics)
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
            for e in FileStoreScan(t).live_entries(snap):
                self.data_files.add((e.partition, e.bucket, e.file.file_name))
            if changelog and snap.changelog_manifest_list:
                for meta in mio.read_manifest_list(snap.changelog_manifest_list):
                    for e in mio.read_manifest(meta.file_name):
                        self.data_files.add((e.partition, e.bucket, e.file.file_name))


    def add_changelog(self, changelog: Snapshot) -> None:
        """What a long-lived changelog still reads: its changelog manifests and files, or (no
        changelog producer) the manifests and new files of its delta; lists already gone are skipped."""
        mio = self.store.manifest_io
        lists = [changelog.changelog_manifest_list] if changelog.changelog_manifest_list else \
            [changelog.delta_manifest_list, changelog.base_manifest_list]
        for i, name in enumerate(lists):
            try:
                metas = mio.read_manifest_list(name)
            except (PaimonLabError, OSError):
                continue
            self.manifest_files.add(name)
            for meta in metas:
                self.manifest_files.add(meta.file_name)
                if i == 0:
                    self.data_files.update((e.partition, e.bucket, e.file.file_name)
                                           for e in mio.read_manifest(meta.file_name) if e.kind == ADD)


def changelog_decoupled(core) -> bool:
    """Whether changelogs outlive snapshots ('changelog.*' retain more than 'snapshot.*'), as
    Java's CoreOptions.changelogLifecycleDecoupled."""
    def pick(key: str, fallback: str):
        v = core.get(key)
        return v if v is not None else core.get(fallback)
    return (pick("changelog.num-retained.max", "snapshot.num-retained.max") > core.get("snapshot.num-retained.max")
            or pick("changelog.time-retained", "snapshot.time-retained") > core.get("snapshot.time-retained")
            or pick("changelog.num-retained.min", "snapshot.num-retained.min") > core.get("snapshot.num-retained.min"))


def _protected(store: "FileStore", skip_tags: set[str] = frozenset()) -> FileReferences:
    """Files used by tags (but ``skip_tags``) and by other branches (which share data and manifests)."""

    refs = FileReferences(store)
    for tag in store.tags():
        if tag.name not in skip_tags:
            refs.add_snapshot(tag.snapshot)
    for name in list_branches(store):
        b = store.on_branch(name)
        if b.branch == store.branch:
            continue
        for snap in b.snapshot_manager.snapshots():
            refs.add_snapshot(snap)
        for tag in b.tags():
            refs.add_snapshot(tag.snapshot)
        for changelog in b.changelog_manager.changelogs():   # a branch shares its first snapshot's files
            refs.add_changelog(changelog)
    if store.branch != "main":
        main = store.on_branch("main")
        for snap in main.snapshot_manager.snapshots():
            refs.add_snapshot(snap)
        for tag in main.tags():
            refs.add_snapshot(tag.snapshot)
        for changelog in main.changelog_manager.changelogs():
            refs.add_changelog(changelog)
    return refs


def expire_range(store: "FileStore", now_millis: int | None = None, *, retain_max: int | None = None,
                 retain_min: int | None = None, older_than_millis: int | None = None,
                 max_deletes: int | None = None) -> tuple[int, int] | None:
    """[begin, end) of the snapshot ids to expire, or None."""
    retain_max, retain_min = check_int("retain_max", retain_max), check_int("retain_min", retain_min)
    older_than_millis = check_int("older_than_millis", older_than_millis)
    max_deletes = check_int("max_deletes", max_deletes, minimum=0)
    core = store.schema.core
    sm = store.snapshot_manager
    latest, earliest = sm.latest_id(), sm.earliest_id()
    if latest is None or earliest is None:
        return None
    retain_min = retain_min if retain_min is not None else core.get("snapshot.num-retained.min")
    retain_max = retain_max if retain_max is not None else core.get("snapshot.num-retained.max")
    if retain_min < 1:
        raise PaimonLabError("At least one snapshot must be retained (snapshot.num-retained.min >= 1)")
    if retain_max < retain_min:  # as Java's ExpireSnapshotsImpl
        raise OptionError(f"retain_max ({retain_max}) must not be less than retain_min ({retain_min}); "
                          "give retain_min too, or lower 'snapshot.num-retained.min'")
    now = now_millis if now_millis is not None else clock_millis()
    cutoff = older_than_millis if older_than_millis is not None else now - core.get("snapshot.time-retained")
    end_limit = latest - retain_min + 1  # ids below this may go
    consumer_min = min_consumer_snapshot(store)
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


def min_consumer_snapshot(store: "FileStore") -> int | None:

    ids = [c.next_snapshot for c in ConsumerManager(store).list().values()]
    return min(ids) if ids else None


def expire_snapshots(store: "FileStore", **kwargs) -> ExpireResult:
    """Expire the snapshots :func:`expire_range` picks and delete what only they used."""
    rng = expire_range(store, **kwargs)
    result = ExpireResult([], 0, 0, 0) if rng is None else _expire(store, *rng)
    if changelog_decoupled(store.schema.core):
        expire_changelogs(store)
    return result


def _expire(store: "FileStore", begin: int, end: int) -> ExpireResult:
    """Expire snapshots [begin, end). Everything to delete is worked out first; then the snapshot
    files go, oldest first (each step leaves a readable table), then the files only they used, so
    a crash at any point leaves nothing half-visible, only orphans."""
    t, sm, io, mio = store, store.snapshot_manager, store.file_io, store.manifest_io
    retained = sm.snapshot(end)
    core = t.schema.core
    decoupled = changelog_decoupled(core)
    produces = core.get("changelog-producer") != "none"
    keep = _protected(t)
    keep.add_snapshot(retained)
    expiring = []
    for sid in range(begin, end):
        try:
            expiring.append(sm.snapshot(sid))
        except SnapshotNotExistError:
            continue

    doomed: list[str] = []          # paths, in deletion order
    touched_dirs: set[str] = set()
    # 1. data files retired by DELETE entries of snapshots begin+1 .. end
    data_deleted = 0
    for sid in progress(range(begin + 1, end + 1), desc="expiring snapshots", unit="snapshot"):
        try:
            snap = sm.snapshot(sid)
        except SnapshotNotExistError:
            continue
        for meta in mio.read_manifest_list(snap.delta_manifest_list):
            for e in mio.read_manifest(meta.file_name):
                if e.kind != DELETE or (e.partition, e.bucket, e.file.file_name) in keep.data_files:
                    continue
                if decoupled and not produces and e.file.file_source != FILE_SOURCE_COMPACT:
                    continue  # a long-lived changelog reads the files its commit added
                directory = t.bucket_path(e.partition, e.bucket)
                doomed += [join(directory, e.file.file_name)] + [join(directory, x) for x in e.file.extra_files]
                touched_dirs.add(directory)
                data_deleted += 1
    # 2. changelog files of the expired snapshots
    changelog_deleted = 0
    for snap in expiring:
        if decoupled or not snap.changelog_manifest_list:
            continue
        for meta in mio.read_manifest_list(snap.changelog_manifest_list):
            for e in mio.read_manifest(meta.file_name):
                if (e.partition, e.bucket, e.file.file_name) in keep.data_files:
                    continue
                directory = t.bucket_path(e.partition, e.bucket)
                doomed.append(join(directory, e.file.file_name))
                touched_dirs.add(directory)
                changelog_deleted += 1
    # 3. manifests, manifest lists, index manifests, index files and statistics nothing retained uses
    manifests: set[str] = set()
    for snap in expiring:
        names = set()
        if not decoupled or produces:
            names.update((snap.base_manifest_list, snap.delta_manifest_list))
        if not decoupled and snap.changelog_manifest_list:
            names.add(snap.changelog_manifest_list)
        for name in list(names):
            try:
                names.update(m.file_name for m in mio.read_manifest_list(name))
            except PaimonLabError:
                pass
        if snap.index_manifest:
            names.add(snap.index_manifest)
            try:
                doomed += [join(t.path, "index", e.index_file.file_name) for e in
                           read_index_manifest(io, join(t.path, "manifest", snap.index_manifest))
                           if e.index_file.file_name not in keep.index_files]
            except PaimonLabError:
                pass
        manifests.update(n for n in names if n not in keep.manifest_files)
        if snap.statistics and snap.statistics not in keep.statistics:
            doomed.append(join(t.path, "statistics", snap.statistics))
    doomed += [mio.path(n) for n in sorted(manifests)]
    # 4. the snapshot files, oldest first, then the EARLIEST hint: from here on, what follows is
    #    unreferenced
    for snap in expiring:
        if decoupled:   # the snapshot lives on as changelog-N
            t.changelog_manager.commit(snap)
            t.changelog_manager.write_hint("LATEST", snap.id)
        io.delete(sm.path(snap.id))
    sm.write_hint("EARLIEST", end)
    # 5. the files only the expired snapshots used, then directories left empty
    io.delete_quietly(list(dict.fromkeys(doomed)))
    for directory in sorted(touched_dirs, key=len, reverse=True):
        _remove_empty_parents(t, directory)
    return ExpireResult([s.id for s in expiring], data_deleted, changelog_deleted, len(manifests))


def expire_changelogs(store: "FileStore", *, retain_max: int | None = None, retain_min: int | None = None,
                      older_than_millis: int | None = None, max_deletes: int | None = None) -> int:
    """Expire long-lived changelogs beyond 'changelog.num-retained.*' / 'changelog.time-retained'
    (each falling back to its 'snapshot.*' option), as Java's ExpireChangelogImpl: counted from the
    latest snapshot, never the newest changelog, never one a consumer still needs. Returns how many."""
    retain_max, retain_min = check_int("retain_max", retain_max), check_int("retain_min", retain_min)
    older_than_millis = check_int("older_than_millis", older_than_millis)
    max_deletes = check_int("max_deletes", max_deletes, minimum=0)
    core = store.schema.core
    sm, cm = store.snapshot_manager, store.changelog_manager

    def pick(given, key: str, fallback: str):
        if given is not None:
            return given
        v = core.get(key)
        return v if v is not None else core.get(fallback)
    retain_max = pick(retain_max, "changelog.num-retained.max", "snapshot.num-retained.max")
    retain_min = pick(retain_min, "changelog.num-retained.min", "snapshot.num-retained.min")
    max_deletes = max_deletes if max_deletes is not None else core.get("snapshot.expire.limit")
    older = older_than_millis if older_than_millis is not None else \
        clock_millis() - pick(None, "changelog.time-retained", "snapshot.time-retained")
    latest, earliest = sm.latest_id(), sm.earliest_id()
    latest_cl, earliest_cl = cm.latest_id(), cm.earliest_id()
    if latest is None or earliest is None or latest_cl is None or earliest_cl is None:
        return 0
    if retain_max < retain_min:
        raise OptionError(f"retain_max ({retain_max}) must not be less than retain_min ({retain_min})")
    low = max(latest - retain_max + 1, earliest_cl)
    end = latest - retain_min + 1
    consumer_min = min_consumer_snapshot(store)
    if consumer_min is not None:
        end = min(end, consumer_min)
    end = min(end, earliest_cl + max_deletes, latest_cl)
    if end <= earliest_cl:
        return 0
    for sid in range(low, end + 1):
        try:
            if older <= cm.changelog(sid).time_millis:
                return _expire_changelogs(store, earliest_cl, sid)
        except SnapshotNotExistError:
            continue
    return _expire_changelogs(store, earliest_cl, end)


def expire_all_changelogs(store: "FileStore") -> int:
    """Delete every long-lived changelog (CALL sys.expire_changelogs(..., delete_all => true))."""
    sm, cm = store.snapshot_manager, store.changelog_manager
    earliest, latest_cl, earliest_cl = sm.earliest_id(), cm.latest_id(), cm.earliest_id()
    if earliest is None or latest_cl is None or earliest_cl is None:
        return 0
    if latest_cl >= earliest:
        raise PaimonLabError(f"The latest changelog ({latest_cl}) is not older than the earliest snapshot "
                             f"({earliest}); check the table")
    n = _expire_changelogs(store, earliest_cl, latest_cl + 1, end_is_changelog=False)
    cm.delete_hints()
    return n


def _expire_changelogs(store: "FileStore", begin: int, end: int, *, end_is_changelog: bool = True) -> int:
    """Delete changelogs [begin, end) and the files only they used: their changelog files (or,
    without a changelog producer, the files their commit compacted away) and manifests that
    changelog ``end``, the earliest snapshot, tags and branches do not use."""
    t, sm, cm, mio = store, store.snapshot_manager, store.changelog_manager, store.manifest_io
    keep = _protected(t)
    try:
        anchors = [cm.changelog(end)] if end_is_changelog else []
    except SnapshotNotExistError:
        return 0   # as Java: the changelog to keep is gone; expire_changelogs(delete_all) cleans up
    earliest = sm.earliest_id()
    if earliest is not None:
        anchors.append(sm.snapshot(earliest))
        # what the earliest snapshot reads stays, whatever a changelog's delta says
        keep.data_files.update((e.partition, e.bucket, e.file.file_name)
                               for e in FileStoreScan(t).live_entries(anchors[-1]))
    for anchor in anchors:   # the base and delta manifests they still use (where still present)
        for name in (anchor.base_manifest_list, anchor.delta_manifest_list):
            try:
                metas = mio.read_manifest_list(name)
            except (PaimonLabError, OSError):
                continue
            keep.manifest_files.add(name)
            keep.manifest_files.update(m.file_name for m in metas)
    doomed: list[str] = []
    touched: set[str] = set()
    count = 0
    for sid in range(begin, end):
        try:
            changelog = cm.changelog(sid)
        except SnapshotNotExistError:
            continue
        if changelog.changelog_manifest_list:
            lists, kind = [changelog.changelog_manifest_list], ADD
        else:
            lists, kind = [changelog.delta_manifest_list, changelog.base_manifest_list], DELETE
        names: set[str] = set()
        for i, name in enumerate(lists):
            entries: list = []
            try:
                metas = mio.read_manifest_list(name)
            except (PaimonLabError, OSError):
                continue
            names.add(name)
            for meta in metas:
                names.add(meta.file_name)
                if i:
                    continue
                entries += mio.read_manifest(meta.file_name)
            if i == 0:
                # a DELETE re-ADDed in the same list is an upgrade (same file, new level): the
                # file lives on, as Java's getDataFileToDelete
                added = {(e.partition, e.bucket, e.file.file_name) for e in entries if e.kind == ADD}
                for e in entries:
                    key = (e.partition, e.bucket, e.file.file_name)
                    if e.kind == kind and key not in keep.data_files and (kind == ADD or key not in added):
                        directory = t.bucket_path(e.partition, e.bucket)
                        doomed += [join(directory, e.file.file_name)] + \
                            [join(directory, x) for x in e.file.extra_files]
                        touched.add(directory)
        doomed += [mio.path(n) for n in sorted(names - keep.manifest_files)]
        t.file_io.delete(cm.path(sid))
        count += 1
    if end_is_changelog:
        cm.write_hint("EARLIEST", end)
    t.file_io.delete_quietly(list(dict.fromkeys(doomed)))
    for directory in sorted(touched, key=len, reverse=True):
        _remove_empty_parents(t, directory)
    return count


def _remove_empty_parents(store: "FileStore", directory: str) -> None:
    io = store.file_io
    root = store.path.rstrip("/")
    while directory.rstrip("/") != root and directory.startswith(root):
        try:
            if io.list_dir(directory):
                return
            io.delete_dir(directory)
        except OSError:
            return
        directory = directory.rsplit("/", 1)[0]


def delete_tag(store: "FileStore", name: str) -> None:
    """Delete a tag, and, when its snapshot has expired, the files only the tag kept (as Java's
    TagDeletion): everything not used by the remaining snapshots, tags, branches and changelogs."""
    t, sm = store, store.snapshot_manager
    tag = t.tag_manager.get(name)
    t.tag_manager.delete(name)
    snap = tag.snapshot
    if sm.exists(snap.id):
        return
    keep = _protected(t)
    earliest = sm.earliest_id()
    for sid in sm.list_ids():
        try:   # files live in any later snapshot are live in the earliest one; manifests of all
            keep.add_snapshot(sm.snapshot(sid), data=sid == earliest)
        except SnapshotNotExistError:
            continue
    for changelog in t.changelog_manager.changelogs():
        keep.add_changelog(changelog)
    mine = FileReferences(t)
    try:
        mine.add_snapshot(snap, changelog=False)
    except (PaimonLabError, OSError):
        return   # its manifests are gone already: what is left is for remove_orphan_files
    doomed = [join(t.bucket_path(part, bucket), n) for (part, bucket, n) in mine.data_files
              if (part, bucket, n) not in keep.data_files]
    doomed += [join(t.path, "index", n) for n in mine.index_files if n not in keep.index_files]
    doomed += [join(t.path, "statistics", n) for n in mine.statistics if n not in keep.statistics]
    doomed += [t.manifest_io.path(n) for n in mine.manifest_files if n not in keep.manifest_files]
    t.file_io.delete_quietly(doomed)


def rollback_to(store: "FileStore", snapshot_id: int | None = None, tag: str | None = None) -> Snapshot:
    """Make a snapshot (or a tag's snapshot) the latest again: newer snapshots, the files only they
    added, and tags on them are deleted. A tag whose snapshot expired is restored from the tag.

    Crash-safe: what to delete is worked out first; the newer snapshot files then go oldest
    first, so the latest snapshot stays the old latest until its own file goes (the one step that
    makes the rollback visible); tags and files go after that."""
    t, sm, io = store, store.snapshot_manager, store.file_io
    if (snapshot_id is None) == (tag is None):
        raise PaimonLabError("Give exactly one of snapshot_id and tag to roll back to")
    if tag is not None:
        target = t.tag_manager.get(tag).snapshot
        if not sm.exists(target.id):
            io.write_bytes(sm.path(target.id), target.to_json().encode())
    else:
        target = sm.snapshot(snapshot_id)
    doomed_tags = [tg for tg in t.tags() if tg.snapshot.id > target.id]
    keep = _protected(t, skip_tags={tg.name for tg in doomed_tags})
    keep.add_snapshot(target)
    newer = [sm.snapshot(s) for s in sm.list_ids() if s > target.id]
    newer_files = FileReferences(t)
    for snap in newer + [tg.snapshot for tg in doomed_tags]:
        try:
            newer_files.add_snapshot(snap)
            for meta in t.manifest_io.read_manifest_list(snap.delta_manifest_list):
                # files added and compacted away again before the latest are live nowhere
                newer_files.data_files.update((e.partition, e.bucket, e.file.file_name)
                                              for e in t.manifest_io.read_manifest(meta.file_name) if e.kind == ADD)
        except PaimonLabError:
            pass  # an unreadable newer snapshot: what it alone used becomes an orphan
    # Long-lived changelogs newer than the target hold the rolled-back commits' changes: they go
    # too (Java's RollbackHelper.cleanLongLivedChangelogs), with the files only they read.
    cm = t.changelog_manager
    stale = []
    for changelog in cm.changelogs():
        if changelog.id > target.id:
            stale.append(changelog.id)
            newer_files.add_changelog(changelog)
        else:
            keep.add_changelog(changelog)
    doomed = [join(t.bucket_path(part, bucket), name) for (part, bucket, name) in newer_files.data_files
              if (part, bucket, name) not in keep.data_files]
    doomed += [join(t.path, "index", n) for n in newer_files.index_files if n not in keep.index_files]
    doomed += [join(t.path, "statistics", n) for n in newer_files.statistics if n not in keep.statistics]
    doomed += [t.manifest_io.path(n) for n in newer_files.manifest_files if n not in keep.manifest_files]
    # Oldest first, so readers see the old latest until the last step; the ROLLBACK marker tells
    # them that a LATEST hint naming a deleted snapshot is a rollback cut short, not a lost commit.
    sm.begin_rollback(target.id)
    for snap in sorted(newer, key=lambda s: s.id):
        io.delete(sm.path(snap.id))
    sm.write_hint("LATEST", target.id)
    if stale:
        io.delete_quietly([cm.path(i) for i in stale])
        left = cm.list_ids()
        if left:
            cm.write_hint("LATEST", left[-1])
        else:
            cm.delete_hints()
    sm.end_rollback()
    for tg in doomed_tags:
        t.tag_manager.delete(tg.name)
    io.delete_quietly(doomed)
    return target


def remove_orphan_files(store: "FileStore", older_than_millis: int | None = None, *, dry_run: bool = False) -> list[str]:
    """Delete files under the table that no snapshot, tag or branch references and that are older
    than ``older_than_millis`` (default: a day ago, so in-flight commits are never touched).
    In metadata directories (snapshot, schema, tag, consumer, branch) only the temporary files
    of crashed writes qualify. Returns the paths (with ``dry_run``: that would be deleted)."""

    t, io = store, store.file_io
    older_than_millis = check_int("older_than_millis", older_than_millis)
    cutoff = older_than_millis if older_than_millis is not None else int(time.time() * 1000) - 86_400_000
    refs = FileReferences(t)
    tables = [t.on_branch("main")] + [t.on_branch(b) for b in list_branches(t)]
    for tb in tables:
        for snap in tb.snapshot_manager.snapshots():
            refs.add_snapshot(snap)
        for tag in tb.tags():
            refs.add_snapshot(tag.snapshot)
        for changelog in tb.changelog_manager.changelogs():
            refs.add_changelog(changelog)
    live_data = {name for (_, _, name) in refs.data_files}
    removed = []
    metadata_dirs = {"schema", "snapshot", "tag", "branch", "consumer", "changelog"}

    def walk(directory: str, top: bool, metadata: bool) -> None:
        for info in io.list_dir(directory):
            name = info.base_name
            if info.type.name == "Directory":
                walk(join(directory, name), False, metadata or (top and name in metadata_dirs))
                continue
            parent = directory.rsplit("/", 1)[-1]
            if name.startswith("."):
                kind_ok = name.endswith(".tmp")  # a writer's temporary file, left by a crash
            elif metadata:
                kind_ok = False
            elif directory == join(t.path, "manifest"):
                kind_ok = name not in refs.manifest_files
            elif directory == join(t.path, "index"):
                kind_ok = name not in refs.index_files
            elif directory == join(t.path, "statistics"):
                kind_ok = name not in refs.statistics
            elif parent.startswith("bucket-"):
                kind_ok = name not in live_data
            else:
                kind_ok = False
            mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
            if kind_ok and mtime < cutoff:
                if not dry_run:
                    io.delete(join(directory, name))
                removed.append(join(directory, name))

    walk(t.path, True, False)
    for tb in tables:   # a rollback cut short: make LATEST whole again and drop its marker
        sm = tb.snapshot_manager
        marker = join(sm.dir, ROLLBACK_MARKER)
        info = io.fs.get_file_info(io.arrow_path(marker))
        if info.type.name == "File" and (info.mtime_ns or 0) // 1_000_000 < cutoff:
            if not dry_run:
                latest = sm.latest_id()
                if latest is not None:
                    sm.write_hint("LATEST", latest)
                sm.end_rollback()
            removed.append(marker)
    return removed
