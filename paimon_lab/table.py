"""A Paimon table: its files, its snapshots, and the public read/write API."""

from __future__ import annotations

import uuid
import warnings
from contextlib import contextmanager
from functools import cached_property
from typing import Any, Iterator, Sequence

import pandas as pd
import pyarrow as pa

from .commit import FileStoreCommit
from .errors import PaimonLabError, SchemaError, SnapshotNotExistError, TableNotExistError
from .fs import FileIO, join, normalize_path
from .manifest import DataFileMeta, ManifestIO
from .partition import PartitionCodec
from .predicate import And, Leaf, Or, Predicate, bind, parse_filter
from .read import TableRead
from .scan import DataSplit, FileStoreScan, ManifestCache
from .schema import SchemaChange, SchemaManager, TableSchema
from .snapshot import Snapshot, SnapshotManager
from .tag import Tag, TagManager
from .branch import MAIN_BRANCH, branch_path
from .types import DataField
from .write import AppendWriter, CommitMessage

FilterLike = str | Predicate | None


class Table:
    """A Paimon table at ``path``. Get one from :class:`~paimon_lab.Catalog` or :meth:`Table.open`."""

    def __init__(self, file_io: FileIO, path: str, identifier: str | None = None, branch: str = MAIN_BRANCH):
        self.file_io = file_io
        self.path = path.rstrip("/")
        self.branch = branch
        base = identifier or self.path.rsplit("/", 1)[-1]
        self.identifier = base if branch == MAIN_BRANCH else f"{base}$branch_{branch}"
        # Schemas, snapshots and tags are per branch; data files and manifests are shared.
        self.metadata_path = branch_path(self.path, branch)
        self.schema_manager = SchemaManager(file_io, self.metadata_path)
        self.snapshot_manager = SnapshotManager(file_io, self.metadata_path)
        self.tag_manager = TagManager(file_io, self.metadata_path)
        self.manifest_cache = ManifestCache()
        self._schemas: dict[int, TableSchema] = {}
        latest = self.schema_manager.latest()
        if latest is None:
            raise TableNotExistError(self.identifier)
        self._set_schema(latest)

    @staticmethod
    def open(path: str, *, branch: str = MAIN_BRANCH, **kwargs: Any) -> "Table":
        """Open a table directly by its path (local path or URI)."""
        path = normalize_path(path)
        return Table(FileIO(path, **kwargs), path, branch=branch)

    def on_branch(self, branch: str) -> "Table":
        """The same table seen through another branch."""
        return Table(self.file_io, self.path, self.identifier.split("$")[0], branch)

    def _set_schema(self, schema: TableSchema) -> None:
        self._schemas[schema.id] = schema
        self.schema = schema
        for cached in ("partition_codec", "manifest_io", "kv_layout", "merge_function"):
            self.__dict__.pop(cached, None)

    def refresh(self) -> "Table":
        """Pick up a newer schema written by someone else."""
        latest = self.schema_manager.latest()
        if latest is not None and latest.id != self.schema.id:
            self._set_schema(latest)
        return self

    # ------------------------------------------------------------------ layout helpers
    @property
    def options(self) -> dict[str, str]:
        return dict(self.schema.options)

    @property
    def primary_keys(self) -> list[str]:
        return list(self.schema.primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.partition_keys)

    @cached_property
    def partition_codec(self) -> PartitionCodec:
        core = self.schema.core
        return PartitionCodec(self.schema.partition_fields, core.partition_default_name,
                              core.get("partition.legacy-name"))

    @cached_property
    def manifest_io(self) -> ManifestIO:
        return ManifestIO(self.file_io, self.path, self.schema.core.manifest_compression)

    @cached_property
    def kv_layout(self):
        """Key-value layout of a primary-key table's files."""
        from .mergetree.kv import KeyValueLayout

        return KeyValueLayout(self.schema)

    @cached_property
    def merge_function(self):
        from .mergetree.merge_engine import merge_function_for

        return merge_function_for(self.schema)

    def deletion_vectors_at(self, snapshot: "Snapshot | int") -> dict:
        """{(partition, bucket): (index entry, {data file: DeletionVector})} of a snapshot (cached).

        Give the Snapshot itself where you have it: a tag's snapshot file may have expired, and
        a rollback makes snapshot ids reusable. The cache is keyed by the (unique) index manifest."""
        if not isinstance(snapshot, Snapshot):
            snapshot = self.snapshot_manager.snapshot(snapshot)
        if snapshot.index_manifest is None:
            return {}
        cache = self.__dict__.setdefault("_dv_cache", {})
        got = cache.get(snapshot.index_manifest)
        if got is None:
            from .bucket import load_deletion_vectors

            got = load_deletion_vectors(self, snapshot)
            if len(cache) > 16:
                cache.clear()
            cache[snapshot.index_manifest] = got
        return got

    def deletion_vectors(self, snapshot_id: int | None = None) -> pd.DataFrame:
        """Per data file with deletions: partition, bucket, file name, cardinality and the deleted
        row positions (a sorted numpy array)."""
        snap = self.snapshot(snapshot_id)
        rows = []
        if snap is not None:
            for (part, bucket), (_, vectors) in self.deletion_vectors_at(snap).items():
                for name, dv in vectors.items():
                    rows.append((self.partition_codec.to_dict(part), bucket, name, dv.cardinality, dv.to_numpy()))
        return pd.DataFrame(rows, columns=["partition", "bucket", "file_name", "cardinality", "positions"])

    def schema_for(self, schema_id: int) -> TableSchema:
        got = self._schemas.get(schema_id)
        if got is None:
            got = self._schemas[schema_id] = self.schema_manager.schema(schema_id)
        return got

    def stats_fields(self, file: DataFileMeta) -> list[DataField]:
        """The current-schema fields whose stats a file carries, in stats order."""
        file_schema = self.schema_for(file.schema_id)
        fields = file_schema.fields if file.value_stats_cols is None else file_schema.fields_of(file.value_stats_cols)
        current = {f.id: f for f in self.schema.fields}
        # Stats rows are decoded with the types they were written with, then named as today.
        return [DataField(f.id, current[f.id].name if f.id in current else f"__dropped_{f.id}", f.type)
                for f in fields]

    def bucket_path(self, partition: bytes, bucket: int) -> str:
        parts = self.partition_codec.path(self.partition_codec.from_bytes(partition))
        return join(self.path, parts, f"bucket-{bucket}") if parts else join(self.path, f"bucket-{bucket}")

    def discard(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the files of uncommitted messages."""
        self.file_io.delete_quietly([join(self.bucket_path(m.partition, m.bucket), f.file_name)
                                     for m in messages for f in m.all_written()])
        self.file_io.delete_quietly([join(self.path, "index", e.index_file.file_name)
                                     for m in messages for e in m.index_changes + m.compact_index_changes
                                     if e.kind == 0])

    def store_scan(self) -> FileStoreScan:
        return FileStoreScan(self)

    def alter(self, *changes: "SchemaChange") -> TableSchema:
        """Evolve the schema (add/drop/rename/widen columns, comments, options) as a new schema file.

        Old data files keep their schema id and are read through field ids: renamed columns keep
        their data, dropped ones vanish, added ones read as null, widened ones are cast.
        """
        from .schema import apply_changes

        for _ in range(10):
            latest = self.schema_manager.latest()
            new = apply_changes(latest, changes)
            if new.primary_keys:
                from .mergetree.merge_engine import merge_function_for

                merge_function_for(new)
            if self.schema_manager.create(new):
                self._set_schema(new)
                return new
        raise PaimonLabError(f"Could not alter {self.identifier}: the schema kept changing underneath")

    # ------------------------------------------------------------------ writing
    def _new_writer(self, commit_user: str, ignore_previous_files: bool = False, file_uuid: str | None = None):
        """A writer for this table; an overwrite ignores the files it is about to replace.
        ``file_uuid``: the uuid part of every file name it writes (default: a fresh one)."""
        if self.schema.primary_keys:
            from .mergetree.writer import KeyValueFileStoreWrite

            return KeyValueFileStoreWrite(self, commit_user, ignore_previous_files, file_uuid=file_uuid)
        return AppendWriter(self, commit_user, ignore_previous_files, file_uuid=file_uuid)

    def write(self, data: Any, *, overwrite: bool | dict = False, row_kinds: Sequence[str] | None = None) -> int | None:
        """Write data (pyarrow Table/RecordBatch or pandas DataFrame) as exactly one commit.

        ``overwrite=True`` replaces the table's contents; a dict such as ``{"dt": "2024-01-01"}``
        replaces only the matching partitions. For primary-key tables, ``row_kinds`` gives each
        row's kind ('+I', '-U', '+U', '-D'; also accepted as a ``_row_kind`` column); plain rows
        are inserts (upserts). Returns the id of the first snapshot in which the written rows are
        visible (None if nothing to write): a write that triggers compaction commits an APPEND and
        then a COMPACT snapshot, and on deletion-vector and first-row tables, whose batch reads skip
        level 0, only the COMPACT one shows the rows.
        """
        with self.writer(overwrite=overwrite) as w:
            w.write(data, row_kinds=row_kinds)
        return w.snapshot_id

    def delete(self, filter: FilterLike = None) -> int | None:
        """DELETE the rows matching ``filter`` (all rows if None). Primary-key tables get -D
        records; append tables rewrite the affected files (or mark deletion vectors)."""
        from .dml import delete_rows

        self.refresh()
        return delete_rows(self, self._predicate(filter))

    def update(self, values: dict[str, Any], filter: FilterLike = None) -> int | None:
        """UPDATE ... SET column = value WHERE filter. Values are literals or callables taking the
        matching rows (an Arrow table) and returning the new column."""
        from .dml import update_rows

        self.refresh()
        return update_rows(self, values, self._predicate(filter))

    def merge_into(self, source: Any, on: Sequence[str] | str, *, matched_update: Any = None,
                   matched_delete: bool = False, not_matched_insert: bool = False,
                   matched_condition: FilterLike = None) -> int | None:
        """MERGE INTO this table USING ``source`` ON the ``on`` columns: update or delete matched
        rows, insert the others. One commit."""
        from .dml import merge_into
        from .write import to_arrow_table

        self.refresh()
        on = [on] if isinstance(on, str) else list(on)
        if isinstance(source, pa.Table) and set(source.column_names) != set(self.schema.field_names):
            src = source
        else:
            src = to_arrow_table(source, self.schema)
        return merge_into(self, src, on, matched_update=matched_update, matched_delete=matched_delete,
                          not_matched_insert=not_matched_insert,
                          matched_condition=self._predicate(matched_condition))

    def compact(self, *, full: bool = False, partition: dict | None = None) -> int | None:
        """Compact the table (all buckets, or one partition's): primary-key tables merge their LSM
        trees (``full=True``: each bucket into its top level); append tables rewrite small files
        into larger ones (``full=True``: every bucket with more than one file).
        Returns the COMPACT snapshot id, or None if there was nothing to do.
        """
        self.refresh()
        pred = None
        if partition:
            pred = bind(And(tuple(Leaf("=", k, (v,)) for k, v in partition.items())), self.schema.arrow_schema())
        if not self.schema.primary_keys:
            return self._compact_append(full, pred)
        store = self._new_writer(str(uuid.uuid4()))
        messages: list[CommitMessage] = []
        try:
            store.compact(full, pred)
            messages = [m for m in (w.prepare_commit(False) for w in store.writers.values()) if m.compacted]
            for m in messages:
                if m.new_files or m.changelog_files:
                    raise PaimonLabError("compaction produced new data files")  # pragma: no cover
            if not messages:
                return None
            _, compact_id = FileStoreCommit(self, store.commit_user).commit(messages)
        except BaseException:
            self.discard(messages)
            raise
        return compact_id

    @contextmanager
    def writer(self, *, overwrite: bool | dict = False) -> Iterator["TableWriter"]:
        """Collect many writes and commit them once when the block ends; abort on error."""
        self.refresh()
        w = TableWriter(self, overwrite)
        try:
            yield w
        except BaseException:
            w.abort()
            raise
        w.commit()

    # ------------------------------------------------------------------ reading
    def snapshot(self, snapshot_id: int | None = None, *, tag: str | None = None,
                 timestamp_millis: int | None = None) -> Snapshot | None:
        """Resolve a time-travel target (default: latest). None for an empty table."""
        chosen = [x is not None for x in (snapshot_id, tag, timestamp_millis)]
        if sum(chosen) > 1:
            raise PaimonLabError("Give at most one of snapshot_id, tag and timestamp_millis")
        if tag is not None:
            return self.tag_manager.get(tag).snapshot
        if snapshot_id is not None:
            return self.snapshot_manager.snapshot(snapshot_id)
        if timestamp_millis is not None:
            snap = self.snapshot_manager.earlier_or_equal_time(timestamp_millis)
            if snap is None:
                raise SnapshotNotExistError(f"No snapshot was committed at or before {timestamp_millis}")
            return snap
        return self.snapshot_manager.latest()

    def _predicate(self, filter: FilterLike) -> Predicate | None:
        if filter is None:
            return None
        arrow = self.schema.arrow_schema()
        if isinstance(filter, str):
            return parse_filter(filter, arrow)
        if isinstance(filter, Predicate):
            return bind(filter, arrow)
        raise PaimonLabError(f"filter must be a SQL string or a Predicate, not {type(filter).__name__}")

    def plan(self, *, filter: FilterLike = None, snapshot_id: int | None = None, tag: str | None = None,
             timestamp_millis: int | None = None, read_optimized: bool = False) -> list[DataSplit]:
        """The splits (files per partition and bucket) a read of this table would touch."""
        snap = self.snapshot(snapshot_id, tag=tag, timestamp_millis=timestamp_millis)
        if snap is None:
            return []
        return self._splits(snap, self._predicate(filter), read_optimized)

    def _splits(self, snap: Snapshot, pred: Predicate | None, read_optimized: bool) -> list[DataSplit]:
        splits = self.store_scan().plan(snap, pred)
        if read_optimized and self.schema.primary_keys:
            top = self.kv_layout_num_levels() - 1
            splits = [DataSplit(s.partition, s.bucket, [f for f in s.files if f.level == top], s.snapshot_id, s.snapshot)
                      for s in splits]
            splits = [s for s in splits if s.files]
        return splits

    def kv_layout_num_levels(self) -> int:
        core = self.schema.core
        return core.get("num-levels") or core.get("num-sorted-run.compaction-trigger") + 1

    def to_arrow(self, *, columns: Sequence[str] | None = None, filter: FilterLike = None,
                 snapshot_id: int | None = None, tag: str | None = None,
                 timestamp_millis: int | None = None, limit: int | None = None,
                 read_optimized: bool = False) -> pa.Table:
        """Read the table (latest, or as of a snapshot, tag or time) as an Arrow table.

        ``read_optimized`` reads only the fully compacted top level of a primary-key table
        (Paimon's ``$ro`` view): no merging, but data not yet compacted is not seen.
        """
        if columns is not None:
            for c in columns:
                if c not in self.schema.field_names:
                    raise SchemaError(f"Column '{c}' does not exist; columns are {self.schema.field_names}")
        pred = self._predicate(filter)
        snap = self.snapshot(snapshot_id, tag=tag, timestamp_millis=timestamp_millis)
        reader = TableRead(self, columns, pred, limit)
        if snap is None:
            return reader.output_schema.empty_table()
        return reader.read(self._splits(snap, pred, read_optimized))

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:
        """Like :meth:`to_arrow`, as a pandas DataFrame."""
        return self.to_arrow(**kwargs).to_pandas()

    def _compact_append(self, full: bool, pred: Predicate | None) -> int | None:
        from .append_compact import AppendCompactor

        latest = self.snapshot_manager.latest()
        if latest is None:
            return None
        groups: dict[tuple[bytes, int], list] = {}
        total: dict[tuple[bytes, int], int] = {}
        for e in self.store_scan().read_entries(latest, pred):
            groups.setdefault((e.partition, e.bucket), []).append(e.file)
            total[(e.partition, e.bucket)] = e.total_buckets
        compactor = AppendCompactor(self)
        messages: list[CommitMessage] = []
        try:
            from .progress import progress

            for (part, bucket), files in progress(list(groups.items()), desc="compacting buckets", unit="bucket"):
                msg = compactor.compact(part, bucket, total[(part, bucket)], files, full, latest)
                if msg is not None:
                    messages.append(msg)
            if not messages:
                return None
            _, compact_id = FileStoreCommit(self).commit(messages)
        except BaseException:
            self.discard(messages)
            raise
        return compact_id

    def levels(self, snapshot_id: int | None = None) -> pd.DataFrame:
        """The LSM layout of a snapshot: one row per data file with its partition, bucket, level,
        row count, size, min/max key, sequence range and deleted-row count."""
        snap = self.snapshot(snapshot_id)
        columns = ["partition", "bucket", "level", "file_name", "row_count", "file_size", "min_key",
                   "max_key", "min_sequence_number", "max_sequence_number", "deleted_rows", "schema_id"]
        if snap is None:
            return pd.DataFrame(columns=columns)
        key_types = self.kv_layout.key_types if self.schema.primary_keys else []
        from . import binary_row

        dvs = self.deletion_vectors_at(snap) if self.schema.core.get("deletion-vectors.enabled") else {}
        rows = []
        for e in self.store_scan().live_entries(snap):
            f = e.file
            dv = dvs.get((e.partition, e.bucket), (None, {}))[1].get(f.file_name)
            rows.append((self.partition_codec.to_dict(e.partition), e.bucket, f.level, f.file_name, f.row_count,
                         f.file_size,
                         tuple(binary_row.deserialize(f.min_key, key_types)) if key_types else None,
                         tuple(binary_row.deserialize(f.max_key, key_types)) if key_types else None,
                         f.min_sequence_number, f.max_sequence_number,
                         dv.cardinality if dv is not None else (f.delete_row_count or 0), f.schema_id))
        df = pd.DataFrame(rows, columns=columns)
        order = df["partition"].map(lambda d: tuple(str(v) for v in d.values()))
        return df.assign(_o=order).sort_values(["_o", "bucket", "level", "min_sequence_number"]) \
            .drop(columns="_o").reset_index(drop=True)

    def changes(self, start_snapshot: int, end_snapshot: int | None = None, *,
                columns: Sequence[str] | None = None) -> pa.Table:
        """The rows that changed after ``start_snapshot`` up to ``end_snapshot`` (default latest),
        with a ``rowkind`` column ('+I', '-U', '+U', '-D') first, like Paimon's audit_log.

        With a changelog producer the changelog files are read; otherwise the delta files of
        APPEND snapshots (for primary-key tables, each commit's merged input records).
        """
        end = end_snapshot if end_snapshot is not None else self.snapshot_manager.latest_id()
        names = list(columns) if columns is not None else self.schema.field_names
        parts = []
        if end is not None:
            for sid in range(start_snapshot + 1, end + 1):
                parts.append(self.snapshot_changes(self.snapshot_manager.snapshot(sid), names))
        return pa.concat_tables(parts) if parts else self._changes_schema(names).empty_table()

    def _changes_schema(self, names: list[str]) -> pa.Schema:
        return pa.schema([pa.field("rowkind", pa.string(), nullable=False)] +
                         [self.schema.arrow_schema().field(c) for c in names])

    def snapshot_changes(self, snap: Snapshot, columns: Sequence[str] | None = None) -> pa.Table:
        """What one snapshot changed, as rows with a ``rowkind`` column (see :meth:`changes`).
        COMPACT snapshots change nothing unless they carry changelog; OVERWRITE ones are skipped
        unless 'streaming-read-overwrite' is set (then their new rows count as +I)."""
        from .manifest import ADD

        names = list(columns) if columns is not None else self.schema.field_names
        out_schema = self._changes_schema(names)
        use_changelog = bool(self.schema.primary_keys) and self.schema.core.get("changelog-producer") != "none"
        if use_changelog:
            list_name = snap.changelog_manifest_list
        elif snap.commit_kind == "APPEND" or (
                snap.commit_kind == "OVERWRITE" and self.schema.core.get("streaming-read-overwrite")):
            list_name = snap.delta_manifest_list
        else:
            list_name = None
        if not list_name:
            return out_schema.empty_table()
        entries = [e for m in self.manifest_io.read_manifest_list(list_name)
                   for e in self.manifest_io.read_manifest(m.file_name) if e.kind == ADD]
        parts = [self._changed_rows(e, names)
                 for e in sorted(entries, key=lambda e: (e.partition, e.bucket, e.file.min_sequence_number))]
        return pa.concat_tables(parts).cast(out_schema) if parts else out_schema.empty_table()

    def stream(self, **kwargs: Any):
        """Follow the table's commits: see :func:`paimon_lab.stream.stream`."""
        from .stream import stream

        return stream(self, **kwargs)

    def _changed_rows(self, entry, names: list[str]) -> pa.Table:
        from .mergetree.kv import KIND_NAMES, VALUE_KIND

        if self.schema.primary_keys:
            from .mergetree.compact import BucketFiles

            kv = BucketFiles(self, self.kv_layout, entry.partition, entry.bucket).read([entry.file])
            kinds = kv.column(VALUE_KIND)
            labels = pa.array(list(KIND_NAMES.values()), pa.string())
            kind_text = labels.take(kinds.cast(pa.int32()))
            rows = kv.select(names)
        else:
            rows = TableRead(self, names).read([DataSplit(entry.partition, entry.bucket, [entry.file], 0)])
            kind_text = pa.array(["+I"] * rows.num_rows, pa.string())
        return rows.add_column(0, "rowkind", kind_text)

    # ------------------------------------------------------------------ snapshots and tags
    def snapshots(self) -> list[Snapshot]:
        """All snapshots still present, oldest first."""
        return list(self.snapshot_manager.snapshots())

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def create_tag(self, name: str, snapshot_id: int | None = None) -> Tag:
        """Tag a snapshot (default: the latest) so time travel to it keeps working."""
        snap = self.snapshot(snapshot_id) if snapshot_id is not None else self.snapshot_manager.latest()
        if snap is None:
            raise SnapshotNotExistError(f"Table {self.identifier} has no snapshot to tag")
        return self.tag_manager.create(name, snap)

    def delete_tag(self, name: str) -> None:
        self.tag_manager.delete(name)

    def tags(self) -> list[Tag]:
        return self.tag_manager.list()

    def system(self, name: str, **kwargs: Any) -> pa.Table:
        """A system table of this table ('snapshots', 'files', 'audit_log', ...) as Arrow."""
        from .system_tables import system_table

        return system_table(self, name, **kwargs)

    def analyze(self, columns: Sequence[str] | None = None) -> int | None:
        """ANALYZE TABLE: write table and column statistics; returns the ANALYZE snapshot id."""
        from .system_tables import analyze

        return analyze(self, columns)

    # ------------------------------------------------------------------ lifecycle
    def expire_snapshots(self, *, retain_max: int | None = None, retain_min: int | None = None,
                         older_than_millis: int | None = None, max_deletes: int | None = None):
        """Expire old snapshots (defaults from 'snapshot.num-retained.*', 'snapshot.time-retained')
        and delete the files only they used. Returns an ExpireResult."""
        from .expire import expire_snapshots

        return expire_snapshots(self, retain_max=retain_max, retain_min=retain_min,
                                older_than_millis=older_than_millis, max_deletes=max_deletes)

    def rollback_to(self, snapshot_id: int | None = None, *, tag: str | None = None) -> Snapshot:
        """Roll the table back to a snapshot or tag; later snapshots and their files are deleted."""
        from .expire import rollback_to

        return rollback_to(self, snapshot_id, tag)

    def remove_orphan_files(self, older_than_millis: int | None = None, *, dry_run: bool = False) -> list[str]:
        """Delete unreferenced files older than the given time (default: one day ago); returns
        their paths (``dry_run``: only list them)."""
        from .expire import remove_orphan_files

        return remove_orphan_files(self, older_than_millis, dry_run=dry_run)

    def create_branch(self, name: str, *, tag: str | None = None, snapshot_id: int | None = None) -> "Table":
        """Create a branch from a tag or snapshot (or empty); returns the branch as a Table."""
        from .branch import create_branch

        return create_branch(self, name, tag=tag, snapshot_id=snapshot_id)

    def delete_branch(self, name: str) -> None:
        from .branch import delete_branch

        delete_branch(self, name)

    def branches(self) -> list[str]:
        from .branch import list_branches

        return list_branches(self)

    def fast_forward(self, branch: str) -> None:
        """Make main identical to ``branch``."""
        from .branch import fast_forward

        fast_forward(self, branch)

    def consumers(self) -> dict:
        from .consumer import ConsumerManager

        return ConsumerManager(self).list()

    def __repr__(self) -> str:
        return f"Table({self.identifier!r}, path={self.path!r})"


class TableWriter:
    """Buffered writes to one table, committed once. Use through :meth:`Table.writer`."""

    def __init__(self, table: Table, overwrite: bool | dict = False, *, file_uuid: str | None = None):
        self.table = table
        self.commit_user = str(uuid.uuid4())
        self.overwrite = overwrite
        # None: the table's 'dynamic-partition-overwrite'; False: an overwrite replaces the whole
        # table (or the given partitions), as Spark's static partitionOverwriteMode does.
        self.dynamic_partition_overwrite: bool | None = None
        self._writer = table._new_writer(self.commit_user, ignore_previous_files=overwrite not in (False, None),
                                         file_uuid=file_uuid)
        self.snapshot_id: int | None = None
        self._done = False

    def write(self, data: Any, row_kinds: Sequence[str] | None = None) -> None:
        if self._done:
            raise PaimonLabError("This writer has already committed")
        if row_kinds is not None and not self.table.schema.primary_keys:
            raise PaimonLabError("row_kinds only apply to primary-key tables")
        if self.table.schema.primary_keys:
            self._writer.write(data, row_kinds)
        else:
            self._writer.write(data)

    def prepare_commit(self) -> list[CommitMessage]:
        return self._writer.prepare_commit()

    def commit(self) -> int | None:
        if self._done:
            return self.snapshot_id
        messages: list[CommitMessage] = []
        try:
            static = self._static_overwrite()
            messages = self.prepare_commit()
            overwrite = self._overwrite_target(static, messages)
            if isinstance(static, Predicate):
                self._check_inside(messages, static)
            # FileStoreCommit cleans up after itself once the first snapshot is visible.
            first, second = FileStoreCommit(self.table, self.commit_user).commit(messages, overwrite=overwrite)
        except BaseException:
            self.table.discard(messages)
            self.abort()
            raise
        self._done = True
        from .mergetree.writer import batch_scan_skips_level0

        hides_level0 = bool(self.table.schema.primary_keys) and batch_scan_skips_level0(self.table.schema.core)
        # The snapshot in which the written rows are visible: where batch reads skip level 0
        # (deletion vectors, first-row), that is the COMPACT snapshot that lifted them.
        self.snapshot_id = second if hides_level0 and second is not None else first if first is not None else second
        if first is not None and second is None and any(m.compacted for m in messages):
            self.snapshot_id = self._catch_up_compaction() or self.snapshot_id
        if self.snapshot_id is not None and not self.table.schema.core.get("write-only"):
            self.table.expire_snapshots()  # as Paimon's committers do after each commit
        return self.snapshot_id

    def _catch_up_compaction(self, attempts: int = 3) -> int | None:
        """The data is committed but its compaction lost a race with another commit. Where
        readers skip level 0 (deletion vectors, first-row) the new rows would
        stay invisible until some later compaction: compact again on the new latest snapshot."""
        from .errors import CommitConflictError
        from .mergetree.writer import batch_scan_skips_level0

        t = self.table
        if not t.schema.primary_keys or not batch_scan_skips_level0(t.schema.core) or t.schema.core.get("write-only"):
            return None
        for _ in range(attempts):
            try:
                return t.compact()
            except CommitConflictError:
                continue
        warnings.warn(f"{t.identifier}: the new rows stay in level 0 (invisible to readers of this table kind) "
                      "until the next compaction: it kept losing races with other commits", stacklevel=3)
        return None

    def _static_overwrite(self) -> Predicate | bool | None:
        """The partition spec of the overwrite (True: no spec), or None for a plain write."""
        if self.overwrite is False or self.overwrite is None:
            return None
        if self.overwrite is True or self.overwrite == {}:
            return True
        if not isinstance(self.overwrite, dict):
            raise PaimonLabError("overwrite must be True, False or a dict of partition values")
        unknown = [k for k in self.overwrite if k not in self.table.partition_keys]
        if unknown:
            raise SchemaError(f"Overwrite names {unknown}, which are not partition keys {self.table.partition_keys}")
        pred = And(tuple(Leaf("is_null", k) if v is None else Leaf("=", k, (v,)) for k, v in self.overwrite.items()))
        return bind(pred, self.table.schema.arrow_schema())

    def _overwrite_target(self, static, messages: list[CommitMessage]) -> Predicate | bool | None:
        """What the overwrite replaces. With 'dynamic-partition-overwrite' (the default) and partition
        columns left open, only the partitions the new data lands in are replaced."""
        if static is None:
            return None
        keys = self.table.partition_keys
        fully_static = isinstance(static, Predicate) and set(self.overwrite) >= set(keys)
        dynamic = self.dynamic_partition_overwrite
        if dynamic is None:
            dynamic = self.table.schema.core.get("dynamic-partition-overwrite")
        if not keys or fully_static or not dynamic:
            return static
        codec = self.table.partition_codec
        written = sorted({m.partition for m in messages if m.new_files})
        if not written:
            return None  # nothing written: a dynamic overwrite replaces nothing
        parts = tuple(And(tuple(Leaf("is_null", k) if v is None else Leaf("=", k, (v,))
                                for k, v in codec.to_dict(p).items())) for p in written)
        return bind(Or(parts), self.table.schema.arrow_schema())

    def _check_inside(self, messages: list[CommitMessage], pred: Predicate) -> None:
        codec = self.table.partition_codec
        for m in messages:
            values = codec.to_dict(m.partition)
            if not pred.may_match({k: (v, v, int(v is None)) for k, v in values.items()}, 1):
                raise SchemaError(f"Data for partition {values} lies outside the overwritten partition "
                                  f"{self.overwrite}")

    def abort(self) -> None:
        self._writer.abort()
        self._done = True
