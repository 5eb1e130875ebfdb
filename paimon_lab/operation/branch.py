"""Branches: ``{table}/branch/branch-NAME`` holds a branch's own schema, snapshot and tag files;
data files and manifests stay shared with the main branch."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from paimon_lab.errors import ArgumentError, PaimonLabError, SnapshotNotExistError, check_int
from paimon_lab.io.file_io import join
from paimon_lab.store.file_store import MAIN_BRANCH, branch_path

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore



class BranchError(PaimonLabError):
    """A branch operation failed."""


def list_branches(store: "FileStore") -> list[str]:
    return sorted(n[len("branch-"):] for n in store.file_io.list_names(join(store.path, "branch"))
                  if n.startswith("branch-"))


def _check_name(name: str) -> None:
    if not isinstance(name, str):
        raise ArgumentError(f"A branch name is a string, not {type(name).__name__} {name!r}")
    if not name or name == MAIN_BRANCH or "/" in name or name.strip() != name or name.isdigit():
        raise BranchError(f"Invalid branch name '{name}'")


def create_branch(store: "FileStore", name: str, *, tag: str | None = None, snapshot_id: int | None = None) -> "FileStore":
    """Create a branch from a tag, a snapshot, or (neither given) as an empty copy of the schema."""
    _check_name(name)
    if tag is not None and snapshot_id is not None:
        raise ArgumentError(f"Create branch '{name}' from a tag or from a snapshot, not both "
                            f"(tag '{tag}', snapshot_id {snapshot_id})")
    snapshot_id = check_int("snapshot_id", snapshot_id)
    io = store.file_io
    root = branch_path(store.path, name)
    if io.exists(join(root, "schema")):
        raise BranchError(f"Branch '{name}' already exists")
    if tag is not None:
        snap = store.tag_manager.get(tag).snapshot
    elif snapshot_id is not None:
        snap = store.snapshot_manager.snapshot(snapshot_id)
    else:
        snap = None
    schema_ids = [s for s in store.schema_manager.list_ids() if snap is None or s <= snap.schema_id]
    if snap is None:
        schema_ids = schema_ids[-1:]
    for sid in schema_ids:
        io.write_bytes(join(root, "schema", f"schema-{sid}"), io.read_bytes(store.schema_manager.path(sid)))
    if snap is not None:
        io.write_bytes(join(root, "snapshot", f"snapshot-{snap.id}"), snap.to_json().encode())
        for hint in ("EARLIEST", "LATEST"):
            io.write_bytes(join(root, "snapshot", hint), str(snap.id).encode())
        if tag is not None:
            io.write_bytes(join(root, "tag", f"tag-{tag}"), io.read_bytes(store.tag_manager.path(tag)))
    return store.on_branch(name)


def delete_branch(store: "FileStore", name: str) -> None:
    _check_name(name)
    root = branch_path(store.path, name)
    if not store.file_io.exists(join(root, "schema")):
        raise BranchError(f"Branch '{name}' does not exist")
    store.file_io.delete_dir(root)


def fast_forward(store: "FileStore", name: str) -> None:
    """Make the main branch what branch ``name`` is, as Java's BranchManager.fastForward: main's
    snapshots from the branch's earliest snapshot on, its schemas from that snapshot's schema on
    and its tags on those snapshots are deleted; then the branch's snapshot, schema and tag files
    (and its snapshot hints) are copied over."""
    _check_name(name)
    if store.branch != MAIN_BRANCH:
        raise BranchError(f"Fast-forward runs on the main branch, not on '{store.branch}'")
    main = store.on_branch(MAIN_BRANCH)
    if name not in list_branches(store):
        raise BranchError(f"Branch '{name}' does not exist")
    branch = store.on_branch(name)
    first = branch.snapshot_manager.earliest_id()
    if first is None:
        raise SnapshotNotExistError(f"Branch '{name}' has no snapshot to fast-forward to")
    first_schema = branch.snapshot_manager.snapshot(first).schema_id
    io = store.file_io
    doomed = [main.snapshot_manager.path(s) for s in main.snapshot_manager.list_ids() if s >= first]
    doomed += [main.schema_manager.path(s) for s in main.schema_manager.list_ids() if s >= first_schema]
    doomed += [main.tag_manager.path(t.name) for t in main.tag_manager.list() if t.snapshot.id >= first]
    io.delete_quietly([join(main.snapshot_manager.dir, "LATEST")] + doomed)
    for source, target in ((branch.snapshot_manager.dir, main.snapshot_manager.dir),
                           (branch.schema_manager.dir, main.schema_manager.dir),
                           (branch.tag_manager.dir, main.tag_manager.dir)):
        for file_name in io.list_names(source):
            if not file_name.startswith("."):
                io.write_bytes(join(target, file_name), io.read_bytes(join(source, file_name)))
    store.reload()


def branch_info(store: "FileStore") -> list[dict]:
    out = []
    for name in list_branches(store):
        b = store.on_branch(name)
        latest = b.snapshot_manager.latest()
        created = json.loads(store.file_io.read_text(b.schema_manager.path(b.schema_manager.list_ids()[0]))).get(
            "timeMillis") if b.schema_manager.list_ids() else None
        out.append({"branch_name": name, "create_time": created, "latest_snapshot_id": latest.id if latest else None})
    return out
