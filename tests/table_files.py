"""Which files of a table are needed: an independent walk from snapshots and tags to files.

Shared by test_crash.py and test_concurrency.py: after ``remove_orphan_files`` nothing outside
:func:`referenced_files` may be left under the table directory.
"""

from __future__ import annotations

import os

from paimon_lab import Table
from paimon_lab.core.index_manifest import read_index_manifest
from paimon_lab.operation.scan import FileStoreScan


def all_files(root: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def referenced_files(t: Table) -> set[str]:
    """Every file some snapshot or tag needs (plus schemas, snapshot files, hints and tags)."""
    root, mio = t.path, t.store.manifest_io
    rel = lambda p: os.path.relpath(p, root)  # noqa: E731
    out = {f"schema/{n}" for n in os.listdir(os.path.join(root, "schema"))}
    ids = t.snapshot_manager.list_ids()
    out |= {f"snapshot/snapshot-{i}" for i in ids}
    out |= {f"snapshot/{h}" for h in ("EARLIEST", "LATEST") if os.path.exists(os.path.join(root, "snapshot", h))}
    tags = t.tags()
    out |= {f"tag/tag-{tg.name}" for tg in tags}
    for snap in [t.snapshot_manager.snapshot(i) for i in ids] + [tg.snapshot for tg in tags]:
        for lst in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list):
            if lst:
                out.add(f"manifest/{lst}")
                for meta in mio.read_manifest_list(lst):
                    out.add(f"manifest/{meta.file_name}")
        if snap.changelog_manifest_list:
            for meta in mio.read_manifest_list(snap.changelog_manifest_list):
                for e in mio.read_manifest(meta.file_name):
                    out.add(rel(os.path.join(t.store.bucket_path(e.partition, e.bucket), e.file.file_name)))
        if snap.index_manifest:
            out.add(f"manifest/{snap.index_manifest}")
            for e in read_index_manifest(t.file_io, os.path.join(root, "manifest", snap.index_manifest)):
                out.add(f"index/{e.index_file.file_name}")
        for e in FileStoreScan(t.store).live_entries(snap):
            directory = t.store.bucket_path(e.partition, e.bucket)
            out.add(rel(os.path.join(directory, e.file.file_name)))
            out |= {rel(os.path.join(directory, x)) for x in e.file.extra_files}
    return out
