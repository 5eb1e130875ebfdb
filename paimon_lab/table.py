"""A Paimon table: the user's facade over its file store and the operations on it."""

from __future__ import annotations

import datetime as dt
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab import system as system_tables
from paimon_lab.core.options import CoreOptions, validate_options
from paimon_lab.core.predicate import And, Leaf, Predicate, bind, parse_filter
from paimon_lab.core.schema import SchemaChange, SchemaManager, TableSchema, apply_changes
from paimon_lab.core.snapshot import Snapshot, SnapshotManager
from paimon_lab.core.tag import Tag, TagManager
from paimon_lab.errors import ArgumentError, PaimonLabError, SchemaError, SnapshotNotExistError, check_int
from paimon_lab.io.file_io import FileIO, normalize_path
from paimon_lab.mergetree.merge_engine import merge_function_for
from paimon_lab.operation import branch as branches
from paimon_lab.operation import changes as changelog
from paimon_lab.operation import expire, partition_expire, partition_mark_done, row_dml, tag_auto
from paimon_lab.operation.commit import FileStoreCommit
from paimon_lab.operation.compact import compact
from paimon_lab.operation.count import MinMax, metadata_count, metadata_min_max
from paimon_lab.operation.scan import ScanPlan, ScanTarget, plan_splits, scan_target
from paimon_lab.operation.split_read import read_table
from paimon_lab.operation.stream import stream
from paimon_lab.operation.table_write import TableWrite, write_rows
from paimon_lab.operation.write_input import to_arrow_table
from paimon_lab.store.consumer import ConsumerManager
from paimon_lab.store.file_store import MAIN_BRANCH, FileStore

FilterLike = str | Predicate | None


class Table:
    """A Paimon table at ``path``. Get one from :class:`~paimon_lab.Catalog` or :meth:`Table.open`.

    The table's files and metadata are its :attr:`store` (a
    :class:`~paimon_lab.store.file_store.FileStore`); reads, writes and maintenance run as
    operations on that store."""

    def __init__(self, file_io: FileIO, path: str, identifier: str | None = None, branch: str = MAIN_BRANCH):
        self.store = FileStore(file_io, path, identifier, branch)

    @classmethod
    def of(cls, store: FileStore) -> "Table":
        """The table facade over an existing store."""
        table = cls.__new__(cls)
        table.store = store
        return table

    @staticmethod
    def open(path: str, *, branch: str = MAIN_BRANCH, **kwargs: Any) -> "Table":
        """Open a table directly by its path (local path or URI)."""
        path = normalize_path(path)
        return Table(FileIO(path, **kwargs), path, branch=branch)

    def on_branch(self, branch: str) -> "Table":
        """The same table seen through another branch."""
        return Table.of(self.store.on_branch(branch))

    def copy(self, options: dict[str, Any]) -> "Table":
        """This table with dynamic ``options`` over its own, as Java's ``Table.copy`` (Flink's
        ``/*+ OPTIONS(...) */`` hints): they apply to what this object reads and writes
        ('write-only', 'target-file-size', 'snapshot.num-retained.max', 'scan.snapshot-id', ...)
        and are never written to the schema. Options fixed at creation and 'bucket' are refused, and
        the merged options must pass the schema validation (OptionError naming the problem)."""
        text = {k: None if v is None else str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
        return Table.of(self.store.copy(text))

    def refresh(self) -> "Table":
        """Pick up a newer schema written by someone else."""
        self.store.refresh()
        return self

    # ------------------------------------------------------------------ what the table is
    @property
    def file_io(self) -> FileIO:
        return self.store.file_io

    @property
    def path(self) -> str:
        return self.store.path

    @property
    def branch(self) -> str:
        return self.store.branch

    @property
    def identifier(self) -> str:
        return self.store.identifier

    @property
    def schema(self) -> TableSchema:
        return self.store.schema

    @property
    def schema_manager(self) -> SchemaManager:
        return self.store.schema_manager

    @property
    def snapshot_manager(self) -> SnapshotManager:
        return self.store.snapshot_manager

    @property
    def tag_manager(self) -> TagManager:
        return self.store.tag_manager

    @property
    def options(self) -> dict[str, str]:
        return self.store.options

    @property
    def primary_keys(self) -> list[str]:
        return self.store.primary_keys

    @property
    def partition_keys(self) -> list[str]:
        return self.store.partition_keys

    def alter(self, *changes: SchemaChange) -> TableSchema:
        """Evolve the schema (add/drop/rename/widen columns, comments, options) as a new schema file.

        Old data files keep their schema id and are read through field ids: renamed columns keep
        their data, dropped ones vanish, added ones read as null, widened ones are cast.
        """
        for change in changes:
            if not isinstance(change, SchemaChange):
                raise ArgumentError(f"alter() takes SchemaChange objects (SchemaChange.set_option('k', 'v'), "
                                    f"SchemaChange.add_column(...)), not {type(change).__name__} {change!r}")
        for _ in range(10):
            new = apply_changes(self.store.schema_manager.latest(), changes)
            if new.primary_keys:
                merge_function_for(new)  # refuse options the merge engine cannot honour
            if self.store.schema_manager.create(new):
                self.store.set_schema(new)
                if self.store.metastore is not None and self.store.branch == MAIN_BRANCH:
                    self.store.metastore.schema_changed(self.store, new)
                return new
        raise PaimonLabError(f"Could not alter {self.identifier}: the schema kept changing underneath")

    # ------------------------------------------------------------------ writing
    def write(self, data: Any, *, overwrite: bool | dict = False, row_kinds: Sequence[str] | None = None,
              watermark: int | None = None) -> int | None:
        """Write data (pyarrow Table/RecordBatch or pandas DataFrame) as exactly one commit.

        Columns may come in any order; nullable ones may be left out (written as NULL, or as the
        field's default value where the schema has one); a missing NOT NULL column is an error.

        ``overwrite=True`` replaces the table's contents; a dict such as ``{"dt": "2024-01-01"}``
        replaces only the matching partitions. For primary-key tables, ``row_kinds`` gives each
        row's kind ('+I', '-U', '+U', '-D'; also accepted as a ``_row_kind`` column); plain rows
        are inserts (upserts). Returns the id of the first snapshot in which the written rows are
        visible (None if nothing to write): a write that triggers compaction commits an APPEND and
        then a COMPACT snapshot, and on deletion-vector and first-row tables, whose batch reads skip
        level 0, only the COMPACT one shows the rows. A write that loses a race with another
        writer's commit (CommitConflictError) is redone on the latest snapshot. ``watermark``
        (epoch millis) is recorded in the snapshot (Paimon keeps the highest one seen).
        """
        self.refresh()
        return write_rows(self.store, data, overwrite=overwrite, row_kinds=row_kinds, watermark=watermark)

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

    def delete(self, filter: FilterLike = None) -> int | None:
        """DELETE the rows matching ``filter`` (all rows if None). Primary-key tables get -D
        records; append tables rewrite the affected files (or mark deletion vectors)."""
        self.refresh()
        return row_dml.delete_rows(self.store, self._predicate(filter))

    def update(self, values: dict[str, Any], filter: FilterLike = None) -> int | None:
        """UPDATE ... SET column = value WHERE filter. Values are literals or callables taking the
        matching rows (an Arrow table) and returning the new column."""
        self.refresh()
        return row_dml.update_rows(self.store, values, self._predicate(filter))

    def merge_into(self, source: Any, on: Sequence[str] | str, *, matched_update: Any = None,
                   matched_delete: bool = False, not_matched_insert: bool = False,
                   matched_condition: FilterLike = None) -> int | None:
        """MERGE INTO this table USING ``source`` ON the ``on`` columns: update or delete matched
        rows, insert the others. One commit."""
        if matched_update is None and not matched_delete and not not_matched_insert:
            raise ArgumentError("merge_into() needs an action: matched_update, matched_delete or not_matched_insert")
        self.refresh()
        on = [on] if isinstance(on, str) else list(on)
        if isinstance(source, pa.Table) and set(source.column_names) != set(self.schema.field_names):
            src = source
        else:
            src = to_arrow_table(source, self.schema)
        return row_dml.merge_into(self.store, src, on, matched_update=matched_update, matched_delete=matched_delete,
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
        if partition is not None and not isinstance(partition, dict):
            raise ArgumentError(f"partition is a dict of partition values such as {{'dt': '2024-05-01'}}, "
                                f"not {type(partition).__name__} {partition!r}")
        if partition:
            pred = bind(And(tuple(Leaf("=", k, (v,)) for k, v in partition.items())), self.schema.arrow_schema())
        return compact(self.store, full, pred)

    # ------------------------------------------------------------------ reading
    def snapshot(self, snapshot_id: int | None = None, *, tag: str | None = None,
                 timestamp_millis: int | None = None) -> Snapshot | None:
        """Resolve a time-travel target (default: latest). None for an empty table."""
        return self.store.snapshot(snapshot_id, tag=tag, timestamp_millis=timestamp_millis)

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
             timestamp_millis: int | None = None, read_optimized: bool = False) -> ScanPlan:
        """The splits (files per partition and bucket) a read of this table would touch: a list of
        DataSplits that notebooks show as a table."""
        target = scan_target(self.store, snapshot_id, tag, timestamp_millis)
        if target.incremental is not None:
            raise PaimonLabError("plan() of a table with 'incremental-between' set: use changes()")
        snap = self._snapshot_of(target)
        if snap is None:
            return ScanPlan(store=self.store)
        pred = self._predicate(filter)
        return ScanPlan(plan_splits(self.store, snap, pred, read_optimized), self.store, snap.id, pred)

    def count(self, *, filter: FilterLike = None, snapshot_id: int | None = None, tag: str | None = None,
              timestamp_millis: int | None = None) -> int:
        """The number of rows :meth:`to_arrow` would return. Answered from the manifests' row
        counts, without opening a data file, when the filter is on partition columns only and no
        rows need merging (see :mod:`paimon_lab.operation.count`); else by reading one column."""
        column = (self.schema.primary_keys or self.schema.field_names)[0]
        target = scan_target(self.store, snapshot_id, tag, timestamp_millis)
        if target.incremental is not None:
            return self._incremental(target.incremental, [column], filter, None).num_rows
        snap = self._snapshot_of(target)
        if snap is None:
            return 0
        predicate = self._predicate(filter)
        got = metadata_count(self.store, snap, predicate)
        if got is not None:
            return got
        return self._read_at(target, snap, [column], predicate).num_rows

    def min_max(self, columns: str | Sequence[str], *, filter: FilterLike = None, snapshot_id: int | None = None,
                tag: str | None = None, timestamp_millis: int | None = None) -> dict[str, MinMax]:
        """{column: MinMax(min, max)} over the rows :meth:`to_arrow` would return (NULLs skipped;
        both None when no value). Answered from the files' statistics, without opening a data
        file, where :mod:`paimon_lab.operation.count` says they are exact; else by reading."""
        names = [columns] if isinstance(columns, str) else list(columns)
        for c in names:
            if c not in self.schema.field_names:
                raise SchemaError(f"Column '{c}' does not exist; columns are {self.schema.field_names}")
        target = scan_target(self.store, snapshot_id, tag, timestamp_millis)
        if target.incremental is not None:
            rows = self._incremental(target.incremental, names, filter, None)
        else:
            snap = self._snapshot_of(target)
            if snap is None:
                return {c: MinMax(None, None) for c in names}
            predicate = self._predicate(filter)
            got = metadata_min_max(self.store, snap, names, predicate)
            if got is not None:
                return got
            rows = self._read_at(target, snap, names, predicate)
        out = {}
        for c in names:
            mm = pc.min_max(rows.column(c))
            out[c] = MinMax(mm["min"].as_py(), mm["max"].as_py())
        return out

    def to_arrow(self, *, columns: Sequence[str] | None = None, filter: FilterLike = None,
                 snapshot_id: int | None = None, tag: str | None = None,
                 timestamp_millis: int | None = None, limit: int | None = None,
                 read_optimized: bool = False) -> pa.Table:
        """Read the table (latest, or as of a snapshot, tag or time) as an Arrow table.

        ``read_optimized`` reads only the fully compacted top level of a primary-key table
        (Paimon's ``$ro`` view): no merging, but data not yet compacted is not seen. Without a
        snapshot, tag or time, the table's own ``scan.*`` / ``incremental-between`` options apply.
        """
        if isinstance(columns, str):
            columns = [columns]
        if columns is not None:
            for c in columns:
                if c not in self.schema.field_names:
                    raise SchemaError(f"Column '{c}' does not exist; columns are {self.schema.field_names}")
        limit = check_int("limit", limit, minimum=0)
        target = scan_target(self.store, snapshot_id, tag, timestamp_millis)
        if target.incremental is not None:
            return self._incremental(target.incremental, columns, filter, limit)
        return read_table(self.store, columns, self._predicate(filter), snapshot_id=target.snapshot_id,
                          tag=target.tag, timestamp_millis=target.timestamp_millis, limit=limit,
                          read_optimized=read_optimized)

    def _snapshot_of(self, target: ScanTarget) -> Snapshot | None:
        return self.snapshot(target.snapshot_id, tag=target.tag, timestamp_millis=target.timestamp_millis)

    def _read_at(self, target: ScanTarget, snap: Snapshot, columns: list[str], predicate) -> pa.Table:
        """Columns of the rows at ``snap``, the snapshot ``target`` resolved to (a tag is read as
        the tag: its data files may be gone from the snapshot)."""
        return read_table(self.store, columns, predicate, snapshot_id=snap.id if target.tag is None else None,
                          tag=target.tag, timestamp_millis=None)

    def _incremental(self, between: tuple[int, int], columns, filter: FilterLike, limit: int | None) -> pa.Table:
        """The rows added or updated after ``between[0]`` up to ``between[1]`` (Java's batch read
        with 'incremental-between')."""
        pred = self._predicate(filter)
        needed = None if columns is None else list(dict.fromkeys([*columns, *(pred.columns() if pred else [])]))
        changes = self.incremental_changes(between[0], between[1], columns=needed)
        kept = changes.filter(pc.is_in(changes.column("rowkind"), pa.array(["+I", "+U"]))).drop_columns(["rowkind"])
        if pred is not None:
            kept = kept.filter(pred.evaluate(kept))
        if columns is not None:
            kept = kept.select(list(columns))
        return kept if limit is None else kept.slice(0, limit)

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:
        """Like :meth:`to_arrow`, as a pandas DataFrame."""
        return self.to_arrow(**kwargs).to_pandas()

    def changes(self, start_snapshot: int, end_snapshot: int | None = None, *,
                columns: Sequence[str] | None = None) -> pa.Table:
        """The rows that changed after ``start_snapshot`` up to ``end_snapshot`` (default latest),
        with a ``rowkind`` column ('+I', '-U', '+U', '-D') first, like Paimon's audit_log.

        With a changelog producer the changelog files are read; otherwise the delta files of
        APPEND snapshots (for primary-key tables, each commit's merged input records).
        """
        return changelog.changes(self.store, check_int("start_snapshot", start_snapshot),
                                 check_int("end_snapshot", end_snapshot), columns)

    def incremental_changes(self, start: int | str, end: int | str, *, columns: Sequence[str] | None = None,
                            mode: str | None = None) -> pa.Table:
        """What a batch read with 'incremental-between' = 'start,end' reads, with a ``rowkind``
        column first (retractions kept; a table read drops them).

        Between two snapshot ids: the files committed after ``start`` up to ``end``, merged by key
        on primary-key tables (one row per key changed). ``mode`` is 'incremental-between-scan-mode'
        (default: the table's option, 'auto'): 'delta' reads the data files, 'changelog' the
        changelog files, 'auto' changelog with a changelog producer, 'diff' compares the data of
        the two snapshots. Between two tag names: the diff of the tags' snapshots, as in Java."""
        if isinstance(start, str) and isinstance(end, str) and not (start.isdigit() and end.isdigit()):
            tm = self.store.tag_manager
            return changelog.snapshot_diff(self.store, tm.get(start).snapshot, tm.get(end).snapshot, columns)
        if mode is None:
            mode = self.store.schema.core.get("incremental-between-scan-mode")
        return changelog.incremental_changes(self.store, check_int("start", start), check_int("end", end),
                                             columns, mode)

    def snapshot_changes(self, snap: Snapshot, columns: Sequence[str] | None = None) -> pa.Table:
        """What one snapshot changed, as rows with a ``rowkind`` column (see :meth:`changes`)."""
        return changelog.snapshot_changes(self.store, snap, columns)

    def stream(self, **kwargs: Any):
        """Follow the table's commits: see :func:`paimon_lab.operation.stream.stream`."""
        return stream(self.store, **kwargs)

    # ------------------------------------------------------------------ inspection
    def levels(self, snapshot_id: int | None = None) -> pd.DataFrame:
        """The LSM layout of a snapshot: one row per data file with its partition, bucket, level,
        row count, size, min/max key, sequence range and deleted-row count."""
        return system_tables.lsm_levels(self.store, self.snapshot(snapshot_id))

    def deletion_vectors(self, snapshot_id: int | None = None) -> pd.DataFrame:
        """Per data file with deletions: partition, bucket, file name, cardinality and the deleted
        row positions (a sorted numpy array)."""
        return system_tables.deletion_vector_rows(self.store, self.snapshot(snapshot_id))

    def system(self, name: str, **kwargs: Any) -> pa.Table:
        """A system table of this table ('snapshots', 'files', 'audit_log', ...) as Arrow."""
        return system_tables.system_table(self.store, name, **kwargs)

    def analyze(self, columns: Sequence[str] | None = None) -> int | None:
        """ANALYZE TABLE: write table and column statistics; returns the ANALYZE snapshot id."""
        return system_tables.analyze(self.store, columns)

    # ------------------------------------------------------------------ snapshots, tags, branches
    def snapshots(self) -> list[Snapshot]:
        """All snapshots still present, oldest first."""
        return list(self.store.snapshot_manager.snapshots())

    def latest_snapshot(self) -> Snapshot | None:
        return self.store.snapshot_manager.latest()

    def create_tag(self, name: str, snapshot_id: int | None = None, *,
                   time_retained_seconds: float | None = None) -> Tag:
        """Tag a snapshot (default: the latest) so time travel to it keeps working. The tag is
        deleted by a commit once ``time_retained_seconds`` (default: 'tag.default-time-retained')
        have passed."""
        snap = self.snapshot(snapshot_id) if snapshot_id is not None else self.latest_snapshot()
        if snap is None:
            raise SnapshotNotExistError(f"Table {self.identifier} has no snapshot to tag")
        if time_retained_seconds is None and self.schema.core.get("tag.default-time-retained") is not None:
            time_retained_seconds = self.schema.core.get("tag.default-time-retained") / 1000
        return self.store.tag_manager.create(name, snap, time_retained_seconds)

    def delete_tag(self, name: str) -> None:
        """Delete a tag and, if its snapshot has expired, the files only it kept."""
        expire.delete_tag(self.store, name)

    def expire_tags(self, older_than: dt.datetime | None = None) -> list[str]:
        """Delete tags past their time retained (and, given ``older_than``, a naive local time,
        tags created before it); returns their names."""
        return tag_auto.expire_tags(self.store, older_than)

    def expire_partitions(self, **options: str) -> list[dict[str, str]]:
        """Drop the partitions expired now by the table's 'partition.*' options, overridden by
        ``options`` (e.g. ``**{"partition.expiration-time": "7 d"}``), in an OVERWRITE snapshot;
        returns them."""
        self.refresh()
        core = CoreOptions({**self.options, **validate_options(options)}, bool(self.primary_keys))
        return partition_expire.PartitionExpire(self.store, core).expire()

    def drop_partitions(self, partitions: Sequence[dict[str, Any]]) -> int | None:
        """Delete every file of the given partitions in one OVERWRITE snapshot; its id."""
        self.refresh()
        return partition_expire.drop_partitions(self.store, partitions)

    def mark_partitions_done(self, partitions: Sequence[dict[str, Any]]) -> list[str]:
        """Mark partitions done by 'partition.mark-done-action' (a ``_SUCCESS`` file in each);
        their relative paths."""
        return partition_mark_done.mark_partitions_done(self.store, list(partitions))

    def tags(self) -> list[Tag]:
        return self.store.tags()

    def expire_snapshots(self, *, retain_max: int | None = None, retain_min: int | None = None,
                         older_than_millis: int | None = None, max_deletes: int | None = None):
        """Expire old snapshots (defaults from 'snapshot.num-retained.*', 'snapshot.time-retained')
        and delete the files only they used. Returns an ExpireResult."""
        return expire.expire_snapshots(self.store, retain_max=retain_max, retain_min=retain_min,
                                       older_than_millis=older_than_millis, max_deletes=max_deletes)

    def compact_manifests(self) -> int | None:
        """Rewrite the data manifests fully merged as a COMPACT snapshot (None: already compact)."""
        self.refresh()
        return FileStoreCommit(self.store).compact_manifests()

    def expire_changelogs(self, *, retain_max: int | None = None, retain_min: int | None = None,
                          older_than_millis: int | None = None, max_deletes: int | None = None,
                          delete_all: bool = False) -> int:
        """Expire long-lived changelogs (defaults from 'changelog.num-retained.*' and
        'changelog.time-retained'), or all of them; returns how many went."""
        if delete_all:
            return expire.expire_all_changelogs(self.store)
        return expire.expire_changelogs(self.store, retain_max=retain_max, retain_min=retain_min,
                                        older_than_millis=older_than_millis, max_deletes=max_deletes)

    def rollback_to(self, snapshot_id: int | None = None, *, tag: str | None = None) -> Snapshot:
        """Roll the table back to a snapshot or tag; later snapshots and their files are deleted."""
        return expire.rollback_to(self.store, snapshot_id, tag)

    def remove_orphan_files(self, older_than_millis: int | None = None, *, dry_run: bool = False) -> list[str]:
        """Delete unreferenced files older than the given time (default: one day ago); returns
        their paths (``dry_run``: only list them)."""
        return expire.remove_orphan_files(self.store, older_than_millis, dry_run=dry_run)

    def create_branch(self, name: str, *, tag: str | None = None, snapshot_id: int | None = None) -> "Table":
        """Create a branch from a tag or snapshot (or empty); returns the branch as a Table."""
        return Table.of(branches.create_branch(self.store, name, tag=tag, snapshot_id=snapshot_id))

    def delete_branch(self, name: str) -> None:
        branches.delete_branch(self.store, name)

    def branches(self) -> list[str]:
        return branches.list_branches(self.store)

    def fast_forward(self, branch: str) -> None:
        """Make main identical to ``branch``."""
        branches.fast_forward(self.store, branch)

    def consumers(self) -> dict:
        return ConsumerManager(self.store).list()

    def __repr__(self) -> str:
        return f"Table({self.identifier!r}, path={self.path!r})"

    def _repr_html_(self) -> str:
        return system_tables.table_html(self.store)


class TableWriter(TableWrite):
    """Buffered writes to one table, committed once. Use through :meth:`Table.writer`."""

    def __init__(self, table: Table, overwrite: bool | dict = False, *, file_uuid: str | None = None):
        super().__init__(table.store, overwrite, file_uuid=file_uuid)
        self.table = table
