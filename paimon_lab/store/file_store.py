"""The file store under a table: where its files live and how to read its metadata.

A :class:`FileStore` owns the table's file IO, its paths (table root, branch metadata, bucket
directories), the schema, snapshot and tag managers, the current schema with its options and
the objects derived from it (partition codec, manifest IO, key-value layout), and the caches
that must reset when the schema changes. Operations (scan, read, write, commit, compaction,
expiration...) take a FileStore; the user-facing :class:`~paimon_lab.table.Table` wraps one.
"""

from __future__ import annotations

from copy import copy as shallow_copy
from collections import OrderedDict
from typing import Any, Callable, Sequence

from paimon_lab.core.key_value import KeyValueLayout
from paimon_lab.fileindex.data_file import DataFileIndexer, data_file_indexer
from paimon_lab.core.deletion_vector import DELETION_VECTORS_INDEX, read_dv_index
from paimon_lab.core.index_manifest import IndexManifestEntry, index_file_path, read_index_manifest
from paimon_lab.core.manifest import DataFileMeta, ManifestEntry, ManifestIO
from paimon_lab.core.options import CoreOptions
from paimon_lab.core.partition import PartitionCodec
from paimon_lab.core.schema import SchemaManager, TableSchema, with_dynamic_options
from paimon_lab.core.snapshot import Snapshot, SnapshotManager
from paimon_lab.core.changelog import ChangelogManager
from paimon_lab.core.tag import Tag, TagManager
from paimon_lab.core.types import DataField
from paimon_lab.errors import (CorruptFileError, PaimonLabError, SnapshotNotExistError, TableNotExistError,
                               check_int)
from paimon_lab.io.file_io import FileIO, join
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.store.metastore import MetastoreSync

MAIN_BRANCH = "main"


def branch_path(table_path: str, branch: str) -> str:
    """Where a branch keeps its schema, snapshot and tag files."""
    return table_path if branch == MAIN_BRANCH else join(table_path, "branch", f"branch-{branch}")


def needs_lookup(core: CoreOptions) -> bool:
    """Tables whose commits lift level 0 into the upper levels (lookup changelog, deletion vectors,
    first-row, 'force-lookup'): Java's ``needLookup``."""
    return (core.get("changelog-producer") == "lookup" or core.get("deletion-vectors.enabled")
            or core.get("merge-engine") == "first-row" or core.get("force-lookup"))


def batch_scan_skips_level0(core: CoreOptions) -> bool:
    """Batch reads that leave level 0 out, as Java's ``batchScanSkipLevel0``: deletion-vector and
    first-row tables, whose level-0 rows are not merged with the levels above until lifted.
    Lookup-changelog tables without vectors merge level 0 on read like any other table (a Java
    ``write-only`` writer leaves level 0 for a separate compaction job, and those rows count)."""
    return bool(core.get("deletion-vectors.enabled")) or core.get("merge-engine") == "first-row"


class ManifestCache:
    """Manifests never change once written, so their decoded entries can be kept."""

    def __init__(self, capacity: int = 4096):
        self.capacity = capacity
        self.items: OrderedDict[str, list[ManifestEntry]] = OrderedDict()

    def get(self, name: str, load) -> list[ManifestEntry]:
        got = self.items.get(name)
        if got is None:
            got = load(name)
            self.items[name] = got
            if len(self.items) > self.capacity:
                self.items.popitem(last=False)
        else:
            self.items.move_to_end(name)
        return got


class FileStore:
    """The files of one table (one branch of it) and the metadata that describes them."""

    def __init__(self, file_io: FileIO, path: str, identifier: str | None = None, branch: str = MAIN_BRANCH):
        self.file_io = file_io
        self.path = path.rstrip("/")
        self.branch = branch
        base = identifier or _identifier_of(self.path)
        self.identifier = base if branch == MAIN_BRANCH else f"{base}$branch_{branch}"
        # Schemas, snapshots and tags are per branch; data files and manifests are shared.
        self.metadata_path = branch_path(self.path, branch)
        self.schema_manager = SchemaManager(file_io, self.metadata_path)
        self.snapshot_manager = SnapshotManager(file_io, self.metadata_path)
        self.tag_manager = TagManager(file_io, self.metadata_path)
        self.changelog_manager = ChangelogManager(file_io, self.metadata_path)
        self.manifest_cache = ManifestCache()
        self._schemas: dict[int, TableSchema] = {}
        self._derived: dict[str, Any] = {}
        self._dv_cache: dict[str, dict] = {}
        self._index_manifests: dict[str, list[IndexManifestEntry]] = {}
        # The catalog's metastore (Hive), told about changes of the main branch.
        self.metastore: MetastoreSync | None = None
        # Options over the schema's own for this object only (Java's Table.copy): never written.
        self.dynamic_options: dict[str, str | None] = {}
        latest = self.schema_manager.latest()
        if latest is None:
            raise TableNotExistError(self.identifier if identifier or branch != MAIN_BRANCH else self.path)
        self.set_schema(latest)

    def on_branch(self, branch: str) -> "FileStore":
        """The same table's store seen through another branch."""
        return FileStore(self.file_io, self.path, self.identifier.split("$")[0], branch)

    def copy(self, options: dict[str, str | None]) -> "FileStore":
        """This store with ``options`` over the table's (None removes one), for this object only,
        validated as Java's ``FileStoreTable.copy`` (:func:`with_dynamic_options`). The copy shares
        the file-name-keyed caches; its schema follows the table's as it changes."""
        other = shallow_copy(self)
        other._schemas = dict(self._schemas)
        other._derived = {}
        other.dynamic_options = {**self.dynamic_options, **options}
        other.set_schema(self._schemas[self.schema.id])   # the schema as stored
        return other

    # ------------------------------------------------------------------ schema
    def set_schema(self, schema: TableSchema) -> None:
        """Make ``schema`` (as stored) the current one; the dynamic options go over its options."""
        self._schemas[schema.id] = schema
        self.schema = with_dynamic_options(schema, self.dynamic_options) if self.dynamic_options else schema
        self._derived.clear()

    def refresh(self) -> "FileStore":
        """Pick up a newer schema written by someone else."""
        latest = self.schema_manager.latest()
        if latest is not None and latest.id != self.schema.id:
            self.set_schema(latest)
        return self

    def reload(self) -> "FileStore":
        """Forget cached schemas (their files were replaced, as by a fast-forward); read the latest."""
        self._schemas.clear()
        self.set_schema(self.schema_manager.latest())
        return self

    def schema_for(self, schema_id: int) -> TableSchema:
        got = self._schemas.get(schema_id)
        if got is None:
            got = self._schemas[schema_id] = self.schema_manager.schema(schema_id)
        return got

    def derived(self, name: str, make: Callable[[TableSchema], Any]) -> Any:
        """A value computed from the current schema, kept until the schema changes."""
        if name not in self._derived:
            self._derived[name] = make(self.schema)
        return self._derived[name]

    @property
    def options(self) -> dict[str, str]:
        return dict(self.schema.options)

    @property
    def primary_keys(self) -> list[str]:
        return list(self.schema.primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.partition_keys)

    @property
    def partition_codec(self) -> PartitionCodec:
        return self.derived("partition_codec", lambda s: PartitionCodec(
            s.partition_fields, s.core.partition_default_name, s.core.get("partition.legacy-name")))

    @property
    def manifest_io(self) -> ManifestIO:
        return self.derived("manifest_io", lambda s: ManifestIO(self.file_io, self.path, s.core.manifest_compression))

    @property
    def file_indexer(self) -> DataFileIndexer | None:
        """Builds the file index of new data files (None without 'file-index.<type>.columns')."""
        return data_file_indexer(self.file_io, self.schema.options, self.schema.fields)

    @property
    def kv_layout(self) -> KeyValueLayout:
        """Key-value layout of a primary-key table's files."""
        return self.derived("kv_layout", KeyValueLayout)

    @property
    def num_levels(self) -> int:
        core = self.schema.core
        return core.get("num-levels") or core.get("num-sorted-run.compaction-trigger") + 1

    @property
    def batch_scan_skips_level0(self) -> bool:
        return bool(self.schema.primary_keys) and batch_scan_skips_level0(self.schema.core)

    def stats_fields(self, file: DataFileMeta) -> list[DataField]:
        """The current-schema fields whose stats a file carries, in stats order."""
        file_schema = self.schema_for(file.schema_id)
        fields = file_schema.fields if file.value_stats_cols is None else file_schema.fields_of(file.value_stats_cols)
        current = {f.id: f for f in self.schema.fields}
        # Stats rows are decoded with the types they were written with, then named as today.
        return [DataField(f.id, current[f.id].name if f.id in current else f"__dropped_{f.id}", f.type)
                for f in fields]

    # ------------------------------------------------------------------ paths and files
    def bucket_path(self, partition: bytes, bucket: int) -> str:
        parts = self.partition_codec.path(self.partition_codec.from_bytes(partition))
        name = "bucket-postpone" if bucket == -2 else f"bucket-{bucket}"  # Java's postpone bucket directory
        return join(self.path, parts, name) if parts else join(self.path, name)

    def index_path(self, file_name: str) -> str:
        return join(self.path, "index", file_name)

    def discard(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the files of uncommitted messages."""
        self.file_io.delete_quietly([join(self.bucket_path(m.partition, m.bucket), f.file_name)
                                     for m in messages for f in m.all_written()])
        self.file_io.delete_quietly([self.index_path(e.index_file.file_name)
                                     for m in messages for e in m.index_changes + m.compact_index_changes
                                     if e.kind == 0])

    # ------------------------------------------------------------------ snapshots
    def snapshot(self, snapshot_id: int | None = None, *, tag: str | None = None,
                 timestamp_millis: int | None = None) -> Snapshot | None:
        """Resolve a time-travel target (default: latest). None for an empty table."""
        if sum(x is not None for x in (snapshot_id, tag, timestamp_millis)) > 1:
            raise PaimonLabError("Give at most one of snapshot_id, tag and timestamp_millis")
        if tag is not None:
            return self.tag_manager.get(tag).snapshot
        if snapshot_id is not None:
            return self.snapshot_manager.snapshot(snapshot_id)
        if timestamp_millis is not None:
            snap = self.snapshot_manager.earlier_or_equal_time(check_int("timestamp_millis", timestamp_millis))
            if snap is None:
                raise SnapshotNotExistError(f"No snapshot was committed at or before {timestamp_millis}")
            return snap
        return self.snapshot_manager.latest()

    def snapshot_or_changelog(self, snapshot_id: int) -> Snapshot:
        """Snapshot N, or the long-lived changelog N once the snapshot has expired."""
        try:
            return self.snapshot_manager.snapshot(snapshot_id)
        except SnapshotNotExistError:
            if self.changelog_manager.exists(snapshot_id):
                return self.changelog_manager.changelog(snapshot_id)
            raise

    def tags(self) -> list[Tag]:
        return self.tag_manager.list()

    def deletion_vectors_at(self, snapshot: "Snapshot | int") -> dict:
        """{(partition, bucket): (index entry, {data file: DeletionVector})} of a snapshot (cached).

        Give the Snapshot itself where you have it: a tag's snapshot file may have expired, and
        a rollback makes snapshot ids reusable. The cache is keyed by the (unique) index manifest."""
        if not isinstance(snapshot, Snapshot):
            snapshot = self.snapshot_manager.snapshot(snapshot)
        if snapshot.index_manifest is None:
            return {}
        got = self._dv_cache.get(snapshot.index_manifest)
        if got is None:
            got = load_deletion_vectors(self, snapshot)
            if len(self._dv_cache) > 16:
                self._dv_cache.clear()
            self._dv_cache[snapshot.index_manifest] = got
        return got

    def index_manifest_entries(self, name: str) -> list[IndexManifestEntry]:
        """The entries of index manifest ``name`` (cached: its name is unique and it never changes),
        so a commit that checks, drops and merges index entries reads it once."""
        got = self._index_manifests.get(name)
        if got is None:
            got = read_index_manifest(self.file_io, join(self.path, "manifest", name))
            if len(self._index_manifests) > 16:
                self._index_manifests.clear()
            self._index_manifests[name] = got
        return list(got)

    def __repr__(self) -> str:
        return f"FileStore({self.identifier!r}, path={self.path!r})"


# ---------------------------------------------------------------------- index files of a snapshot

def live_index_entries(store: FileStore, index_type: str | None = None, snapshot=None) -> list[IndexManifestEntry]:
    """The index files of a snapshot (default latest), optionally of one type."""
    snap = snapshot if snapshot is not None else store.snapshot_manager.latest()
    if snap is None or not snap.index_manifest:
        return []
    entries = store.index_manifest_entries(snap.index_manifest)
    return [e for e in entries if index_type is None or e.index_file.index_type == index_type]


def load_deletion_vectors(store: FileStore, snapshot=None) -> dict[tuple[bytes, int], tuple[IndexManifestEntry, dict]]:
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


def dv_index_entries(store: FileStore, snapshot, partition: bytes, bucket: int) -> list[IndexManifestEntry]:
    """Every live deletion-vector index entry of one bucket (several on bucket-unaware tables)."""
    return [e for e in live_index_entries(store, DELETION_VECTORS_INDEX, snapshot)
            if e.partition == partition and e.bucket == bucket]


def _identifier_of(path: str) -> str:
    """A table's name from its path: ``db.name`` when it lies in a catalog's ``<db>.db`` folder (as
    the catalog names it), else the folder's name."""
    parent, _, name = path.rpartition("/")
    database = parent.rpartition("/")[2]
    return f"{database[:-3]}.{name}" if database.endswith(".db") and len(database) > 3 else name
