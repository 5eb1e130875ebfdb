"""The index files of a snapshot: hash indexes and deletion vectors, as the index manifest lists them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paimon_lab.core.deletion_vector import DELETION_VECTORS_INDEX, read_dv_index
from paimon_lab.core.index_manifest import IndexManifestEntry, index_file_path, read_index_manifest
from paimon_lab.errors import CorruptFileError
from paimon_lab.io.file_io import join

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore

def live_index_entries(store: "FileStore", index_type: str | None = None, snapshot=None) -> list[IndexManifestEntry]:
    """The index files of a snapshot (default latest), optionally of one type."""
    snap = snapshot if snapshot is not None else store.snapshot_manager.latest()
    if snap is None or not snap.index_manifest:
        return []
    entries = read_index_manifest(store.file_io, join(store.path, "manifest", snap.index_manifest))
    return [e for e in entries if index_type is None or e.index_file.index_type == index_type]


def load_deletion_vectors(store: "FileStore", snapshot=None) -> dict[tuple[bytes, int], tuple[IndexManifestEntry, dict]]:
    """Per (partition, bucket): the DV index entry and its vectors {data file name: DeletionVector}."""
    out: dict = {}
    for e in live_index_entries(store, DELETION_VECTORS_INDEX, snapshot):
        path = index_file_path(store.path, e.index_file)
        try:
            vectors = read_dv_index(store.file_io.read_bytes(path), e.index_file.dv_range_map())
        except FileNotFoundError:
            raise CorruptFileError(f"Deletion-vector index file {path} is missing") from None
        except CorruptFileError as err:
            raise CorruptFileError(f"Deletion-vector index file {path}: {err}") from None
        if (e.partition, e.bucket) in out:  # bucket-unaware tables may keep several index files
            vectors = {**out[(e.partition, e.bucket)][1], **vectors}
        out[(e.partition, e.bucket)] = (e, vectors)
    return out


def dv_index_entries(store: "FileStore", snapshot, partition: bytes, bucket: int) -> list[IndexManifestEntry]:
    """Every live deletion-vector index entry of one bucket (several on bucket-unaware tables)."""
    return [e for e in live_index_entries(store, DELETION_VECTORS_INDEX, snapshot)
            if e.partition == partition and e.bucket == bucket]
