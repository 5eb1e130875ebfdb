"""The ``paimon`` PySpark data source: batch and streaming reads and writes of Paimon tables.

Reads: the driver plans the table's splits (time travel and pushed filters included) and every
split becomes one InputPartition that an executor reads with paimon_lab as Arrow record batches.
Writes: the driver pins the latest snapshot when Spark asks for the writer; every task writes
level-0 data files against it with a sequence-number range of its own (its Spark partition id
picks it) and returns the resulting commit messages; the driver commits them as one snapshot
(then compacts as the table's writers would), or deletes the files if the job failed. Any
number of tasks may write one bucket: see :mod:`paimon_lab.spark.shared` for how that gives
one writer's result. Streams: offsets are snapshot ids; the sink stores Spark's batch id as the
snapshot's commit identifier and skips a batch that is already committed (exactly once).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import pyarrow as pa
from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceReader, DataSourceStreamReader,
                                    InputPartition, WriterCommitMessage)

try:  # PySpark >= 4.1
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover - PySpark 4.0: rows, converted to Arrow here
    from pyspark.sql.datasource import DataSourceStreamWriter as _StreamWriterBase
try:  # newer PySpark: Trigger.AvailableNow for Python streaming sources
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover
    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass

from paimon_lab.catalog import Catalog
from paimon_lab.operation.commit import FileStoreCommit
from paimon_lab.operation.maintenance import after_commit
from paimon_lab.errors import PaimonLabError, SchemaError, TableNotExistError
from paimon_lab.io.file_io import join
from paimon_lab.core.predicate import And, Leaf, Or, Predicate, bind
from paimon_lab.table import Table
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.spark.filters import conjunction, translate
from paimon_lab.spark.types import arrow_schema_for, conform, spark_schema
from paimon_lab.operation.scan import DataSplit
from paimon_lab.core.options import parse_memory
from paimon_lab.operation.split_read import TableRead
from paimon_lab.store.consumer import ConsumerManager
from paimon_lab.core.manifest import FileNamer
from paimon_lab.errors import CommitConflictError
from paimon_lab.errors import SnapshotNotExistError
from paimon_lab.core.options import OPTIONS
from paimon_lab.spark.shared import task_index, task_writer
from paimon_lab.spark.shared import cross_partition
from paimon_lab.spark.shared import merge_hash_index
from paimon_lab.spark.shared import commit_compaction

SHORT_NAME = "paimon"

# PySpark 4.1-4.3 keep the partitions planned by a filter-pushdown pass on the data source object
# that a DataFrame's relation shares, so a later query on the same DataFrame with other (or no)
# filters reuses them and silently misses rows (seen with 4.3.0). Spark's main branch scopes that
# state to the scan, together with DataSourceReader.pushLimit; until a PySpark has that,
# pushdown is opt-in (option filter-pushdown=true, or register(..., filter_pushdown=True)).
FILTER_PUSHDOWN_SAFE = hasattr(DataSourceReader, "pushLimit")
ROW_KIND_COLUMN = "_row_kind"  # paimon_lab.core.key_value.ROW_KIND_COLUMN: per-row kinds on PK writes
DEFAULT_SPLIT_SIZE = 128 * 1024 * 1024
BATCH_ROWS = 65536

# Options this data source reads itself (everything else may be a table option on create).
_OWN_OPTIONS = {
    "path", "table", "warehouse", "snapshot-id", "scan.snapshot-id", "versionasof", "tag", "scan.tag-name",
    "timestamp-millis", "scan.timestamp-millis", "read-optimized", "split.target-size", "scan.mode",
    "rowkind", "consumer-id", "commit-user", "partitionoverwritemode", "primary-keys", "primary-key",
    "partition-keys", "partition-key", "checkpointlocation", "columns", "filter-pushdown",
}


# ---------------------------------------------------------------------------------------- tables

@dataclass(frozen=True)
class TableRef:
    """Where a table lives, small enough to ship to executors: a table path, or a warehouse
    and a ``db.table`` identifier."""

    warehouse: str | None
    identifier: str | None
    path: str | None = None

    def open(self) -> Table:
        if self.path is not None:
            return Table.open(self.path)
        return self.catalog().get_table(self.identifier)

    def catalog(self) -> Catalog:
        if self.warehouse is None:
            raise PaimonLabError("No warehouse: give .option('warehouse', ...) or call "
                                 "paimon_lab.spark.register(spark, warehouse=...)")
        return Catalog(self.warehouse)

    @property
    def name(self) -> str:
        return self.identifier or self.path or "?"


def is_path(name: str) -> bool:
    return "/" in name or "\\" in name or "://" in name


def table_ref(name: str | None, warehouse: str | None) -> TableRef:
    if not name:
        raise PaimonLabError("Name the table: .load('db.table') / .save('db.table'), or a table path")
    if is_path(name):
        return TableRef(warehouse, None, name)
    if warehouse is None:
        raise PaimonLabError(f"Table '{name}' needs a warehouse: give .option('warehouse', ...) or call "
                             "paimon_lab.spark.register(spark, warehouse=...)")
    return TableRef(warehouse, name)


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    """Spark hands options over lower-cased (a case-insensitive dict); keep them that way."""
    return {str(k).lower(): v for k, v in options.items()}


def _opt(options: Mapping[str, str], *names: str) -> str | None:
    for n in names:
        v = options.get(n.lower())
        if v is not None and v != "":
            return v
    return None


def _bool(text: str | None) -> bool:
    return text is not None and text.strip().lower() in ("true", "1", "yes")


# ---------------------------------------------------------------------------------------- reads

class SplitPartition(InputPartition):
    """One Spark task's share of a read: a split of a snapshot, or one snapshot's changes."""

    def __init__(self, kind: str, split: Any = None, snapshot_id: int | None = None):
        self.kind = kind  # "split" (rows of a snapshot) or "changes" (what one snapshot changed)
        self.split = split
        self.snapshot_id = snapshot_id

    def __repr__(self) -> str:
        if self.kind == "split":
            return f"SplitPartition(bucket={self.split.bucket}, files={len(self.split.files)})"
        return f"SplitPartition(changes of snapshot {self.snapshot_id})"


def field_ids(table: Table, columns: list[str]) -> dict[str, int]:
    return {f.name: f.id for f in table.schema.fields if f.name in set(columns)}


def _open_checked(ref: TableRef, ids: dict[str, int]) -> Table:
    """The table, as long as the columns a query planned still mean the same fields (added
    columns and widened types are fine: the reader casts to the planned types)."""
    table = ref.open()
    now = field_ids(table, list(ids))
    changed = [n for n, i in ids.items() if now.get(n) != i]
    if changed:
        raise SchemaError(f"Columns {changed} of {ref.name} were dropped, renamed or replaced since the query "
                          "was planned; load the table again")
    return table


def _batches(rows: pa.Table, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    if rows.num_rows == 0:
        return
    yield from conform(rows, target).combine_chunks().to_batches(max_chunksize=BATCH_ROWS)


def _chunk_files(split, target_size: int) -> list:
    """Append tables: a bucket's files are independent, so big buckets become several tasks."""

    groups, current, size = [], [], 0
    for f in split.files:
        if current and size + f.file_size > target_size:
            groups.append(current)
            current, size = [], 0
        current.append(f)
        size += f.file_size
    if current:
        groups.append(current)
    return [DataSplit(split.partition, split.bucket, g, split.snapshot_id, split.snapshot) for g in groups]


class PaimonReader(DataSourceReader):
    """Batch reads: one partition per split (see :class:`PaimonFilteringReader` for pushdown)."""

    def __init__(self, ref: TableRef, schema, ids: dict[str, int], options: Mapping[str, str], arrow: pa.Schema):
        self.ref = ref
        self.schema = schema
        self.ids = ids
        self.table_arrow = arrow
        self.columns = list(schema.fieldNames())
        self.target = arrow_schema_for(schema)
        self.predicate: Predicate | None = None
        self.snapshot_id = _opt(options, "snapshot-id", "scan.snapshot-id", "versionAsOf")
        self.tag = _opt(options, "tag", "scan.tag-name")
        self.timestamp = _opt(options, "timestamp-millis", "scan.timestamp-millis")
        self.read_optimized = _bool(_opt(options, "read-optimized"))
        size = _opt(options, "split.target-size")

        self.split_size = parse_memory(size) if size else DEFAULT_SPLIT_SIZE

    def partitions(self) -> list[InputPartition]:
        table = _open_checked(self.ref, self.ids)
        kw: dict[str, Any] = {}
        if self.snapshot_id is not None:
            sid = self.snapshot_id
            if sid.isdigit():
                kw["snapshot_id"] = int(sid)
            else:
                kw["tag"] = sid  # VERSION AS OF 'tag'
        if self.tag is not None:
            kw["tag"] = self.tag
        if self.timestamp is not None:
            kw["timestamp_millis"] = int(self.timestamp)
        splits = table.plan(filter=self.predicate, read_optimized=self.read_optimized, **kw)
        out: list[InputPartition] = []
        for s in splits:
            if table.schema.primary_keys:
                out.append(SplitPartition("split", s))
            else:
                out.extend(SplitPartition("split", c) for c in _chunk_files(s, self.split_size))
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, SplitPartition):
            return iter(())  # an empty table's placeholder partition

        table = _open_checked(self.ref, self.ids)
        rows = TableRead(table.store, self.columns, self.predicate).read([partition.split])
        return _batches(rows, self.target)


class PaimonFilteringReader(PaimonReader):
    """Batch reads with Spark's filters pushed into planning (pruning) and reading (exact).

    Used with option ``filter-pushdown=true`` (the default only where it is safe, see
    :data:`FILTER_PUSHDOWN_SAFE`). PySpark refuses readers that implement ``pushFilters`` unless
    ``spark.sql.python.filterPushdown.enabled`` is true; :func:`paimon_lab.spark.register` sets it."""

    def pushFilters(self, filters: list) -> Iterator:
        pushed, remaining = translate(list(filters), self.table_arrow)
        self.predicate = conjunction(pushed)
        ids = {id(f) for f in remaining}
        # Hand back exactly the filter objects Spark gave (it matches them by reference).
        return iter([f for f in filters if id(f) in ids])


class PaimonStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reads. An offset ``{"snapshot": N}`` means "snapshots up to N are read";
    ``{"snapshot": -1}`` means the full table is still to be read first (scan modes
    ``latest-full``/``full``, the default, and ``from-snapshot-full``)."""

    def __init__(self, ref: TableRef, schema, ids: dict[str, int], options: Mapping[str, str]):
        self.ref = ref
        self.schema = schema
        self.rowkind = _bool(_opt(options, "rowkind"))
        self.columns = [n for n in schema.fieldNames() if not (self.rowkind and n == "rowkind")]
        self.ids = {n: ids[n] for n in self.columns}
        self.target = arrow_schema_for(schema)
        self.mode = _opt(options, "scan.mode") or "default"
        self.start_snapshot = _opt(options, "scan.snapshot-id", "snapshot-id")
        self.start_tag = _opt(options, "scan.tag-name", "tag")
        self.start_time = _opt(options, "scan.timestamp-millis", "timestamp-millis")
        self.consumer_id = _opt(options, "consumer-id")
        self.available_now: int | None = None

    def _table(self) -> Table:
        return _open_checked(self.ref, self.ids)

    def initialOffset(self) -> dict:
        table = self._table()
        sm = table.snapshot_manager
        # options the job does not give come from the table's own, as Java's streaming reads take them
        own = table.options
        if self.mode == "default":
            self.mode = own.get("scan.mode", "default")
        self.start_snapshot = self.start_snapshot or own.get("scan.snapshot-id")
        self.start_tag = self.start_tag or own.get("scan.tag-name")
        self.start_time = self.start_time or own.get("scan.timestamp-millis")
        self.consumer_id = self.consumer_id or own.get("consumer-id")
        if self.consumer_id:
            got = ConsumerManager(table.store).get(self.consumer_id)
            if got is not None:
                return {"snapshot": got.next_snapshot - 1}
        mode = self.mode
        if mode == "default":
            mode = ("from-snapshot" if self.start_snapshot or self.start_tag else
                    "from-timestamp" if self.start_time else "latest-full")
        if mode in ("latest-full", "full"):
            return {"snapshot": -1}
        if mode == "latest":
            return {"snapshot": sm.latest_id() or 0}
        if mode in ("from-snapshot", "from-snapshot-full"):
            if self.start_tag:
                start = table.tag_manager.get(self.start_tag).snapshot.id
            elif self.start_snapshot:
                start = int(self.start_snapshot)
            else:
                raise PaimonLabError(f"scan.mode '{mode}' needs scan.snapshot-id or scan.tag-name")
            return {"snapshot": -1, "full_at": start} if mode == "from-snapshot-full" else {"snapshot": start - 1}
        if mode == "from-timestamp":
            if not self.start_time:
                raise PaimonLabError("scan.mode 'from-timestamp' needs scan.timestamp-millis")
            snap = sm.earlier_or_equal_time(int(self.start_time))
            return {"snapshot": snap.id if snap is not None else 0}
        raise PaimonLabError(f"Unknown scan.mode '{mode}' for a streaming read; use latest-full, full, latest, "
                             "from-snapshot, from-snapshot-full or from-timestamp")

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = self._table().snapshot_manager.latest_id() or 0

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        latest = self._table().snapshot_manager.latest_id()
        if latest is not None and self.available_now is not None:
            latest = min(latest, self.available_now)
        if start is None:  # the pre-4.2 signature: no start offset given
            return {"snapshot": latest if latest is not None else -1}
        if latest is None:
            return start  # empty table: nothing yet
        if start["snapshot"] < 0:  # the full read is still due, at full_at or at the latest snapshot
            return start if latest < start.get("full_at", 0) else {"snapshot": latest}
        return start if latest <= start["snapshot"] else {"snapshot": latest}

    def reportLatestOffset(self) -> dict | None:
        latest = self._table().snapshot_manager.latest_id()
        return {"snapshot": latest} if latest is not None else None

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        table = self._table()
        first, last = start["snapshot"], end["snapshot"]
        out: list[InputPartition] = []
        if first < 0:
            if last < 0:
                return []
            full_at = start.get("full_at", last)
            out += [SplitPartition("split", s) for s in table.plan(snapshot_id=full_at)]
            first = full_at
        out += [SplitPartition("changes", snapshot_id=sid) for sid in range(first + 1, last + 1)]
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:

        table = self._table()
        if partition.kind == "split":
            rows = TableRead(table.store, self.columns).read([partition.split])
            if self.rowkind:
                rows = rows.add_column(0, "rowkind", pa.array(["+I"] * rows.num_rows, pa.string()))
        else:
            snap = table.snapshot_manager.snapshot(partition.snapshot_id)
            rows = table.snapshot_changes(snap, self.columns)
            if not self.rowkind:
                import pyarrow.compute as pc

                kinds = rows.column("rowkind")
                rows = rows.filter(pc.or_(pc.equal(kinds, "+I"), pc.equal(kinds, "+U"))).drop_columns(["rowkind"])
        return _batches(rows, self.target)

    def commit(self, end: dict) -> None:
        if end.get("snapshot", -1) < 0:
            return
        table = self._table()
        consumer = self.consumer_id or table.options.get("consumer-id")   # also after a restart
        if consumer:
            ConsumerManager(table.store).record(consumer, end["snapshot"] + 1)


# ---------------------------------------------------------------------------------------- writes

@dataclass
class PaimonCommitMessage(WriterCommitMessage):
    """What one write task produced: paimon_lab commit messages, not yet committed."""

    task: str
    messages: list[CommitMessage] = field(default_factory=list)
    hashes: dict = field(default_factory=dict)  # dynamic bucket: (partition, bucket) -> new key hashes
    snapshot_id: int | None = None              # the snapshot the task wrote against
    staged: str | None = None                   # cross-partition tables: the task's rows, in Arrow IPC
    task_index: int = 0                         # the Spark partition id (orders staged rows)


def _job_id() -> str:
    """12 hex digits naming one Spark write job: the start of every file uuid its tasks use."""
    return uuid.uuid4().hex[:12]


def _task_file_uuid(job: str) -> str:
    return str(uuid.UUID(job + uuid.uuid4().hex[12:]))


def _job_files_marker(job: str) -> str:
    return f"-{job[:8]}-{job[8:12]}-"


def remove_job_files(table: Table, job: str) -> list[str]:
    """Delete every data, changelog and index file a failed job's tasks wrote, also those of
    tasks Spark killed before they could clean up (found by the job id in their names)."""
    io, marker, found = table.file_io, _job_files_marker(job), []
    metadata = {"snapshot", "schema", "tag", "branch", "consumer", "manifest", "statistics"}

    def walk(directory: str, top: bool) -> None:
        for info in io.list_dir(directory):
            name = info.base_name
            if info.type.name == "Directory":
                if not (top and name in metadata):
                    walk(f"{directory}/{name}", False)
            elif marker in name:
                found.append(f"{directory}/{name}")

    walk(table.path, True)
    io.delete_quietly(found)
    return found


def _write_task(ref: TableRef, overwrite: bool, batches: Iterator[pa.RecordBatch], job: str | None = None,
                snapshot_id: int | None = None, pinned: bool = False) -> PaimonCommitMessage:
    """One Spark task's share of a write (see :mod:`paimon_lab.spark.shared`): files written
    against the snapshot the driver pinned (``pinned``; streams: the latest), with this task's
    own sequence-number range, not committed."""

    table = ref.open()
    sm = table.snapshot_manager
    snapshot = (sm.snapshot(snapshot_id) if snapshot_id is not None else None) if pinned else sm.latest()
    writer = task_writer(table.store, str(uuid.uuid4()), snapshot, task_index(), overwrite=overwrite,
                         file_uuid=_task_file_uuid(job) if job else None)
    try:
        for batch in batches:
            if batch.num_rows:
                writer.write(batch)
        messages = writer.prepare_commit()
        hashes = writer.added_hashes()
    except BaseException:
        writer.abort()  # deletes whatever this task had written
        raise
    return PaimonCommitMessage(uuid.uuid4().hex, messages, hashes, snapshot.id if snapshot else None)


def _stage_task(table: Table, batches: Iterator[pa.RecordBatch], job: str) -> PaimonCommitMessage:
    """A task's rows for a cross-partition-update table, kept as an Arrow IPC file beside the
    table (named with the job id, so a failed job's sweep removes it) for the commit to write."""

    path = join(table.path, f"spark-staging-{_task_file_uuid(job)}.arrow")
    writer = sink = None
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            if writer is None:
                sink = table.file_io.open_output(path)
                writer = pa.ipc.new_stream(sink, batch.schema)
            writer.write_batch(batch)
        if writer is not None:
            writer.close()
            sink.close()
    except BaseException:
        if sink is not None:
            sink.close()
        table.file_io.delete(path)
        raise
    return PaimonCommitMessage(uuid.uuid4().hex, staged=path if writer is not None else None,
                               task_index=task_index())


def _commit_staged(table: Table, tasks: list[PaimonCommitMessage], overwrite: bool, dynamic: bool) -> int | None:
    """Write the staged rows of a cross-partition-update table as one writer would (every key
    routed to its partition through the table's key index), in task then row order: one commit."""
    staged = sorted((t.task_index, t.staged) for t in tasks if t.staged)
    try:
        with table.writer(overwrite=bool(overwrite)) as w:
            w.dynamic_partition_overwrite = dynamic   # Spark's partitionOverwriteMode decides, not the table option
            for _, path in staged:
                with table.file_io.open_input(path) as f:
                    for batch in pa.ipc.open_stream(f):
                        w.write(batch)
        return w.snapshot_id
    finally:
        table.file_io.delete_quietly([p for _, p in staged])


def _messages(commit_messages: list) -> tuple[list[CommitMessage], list[PaimonCommitMessage]]:
    tasks = [m for m in commit_messages if isinstance(m, PaimonCommitMessage)]
    return [m for t in tasks for m in t.messages], tasks


def check_single_writer(table: Table, tasks: list[PaimonCommitMessage]) -> None:
    """Refuse a commit in which several tasks wrote a cross-partition-update table (dynamic
    bucket, primary key without all partition keys): a key's partition must be decided by one
    writer. :func:`paimon_lab.spark.write_table` writes such tables from one task."""

    if not cross_partition(table.store):
        return
    writers = [t for t in tasks if t.messages]
    if len(writers) > 1:
        raise PaimonLabError(
            f"{len(writers)} Spark tasks wrote {table.identifier}, a cross-partition-update table (its primary "
            f"key {list(table.schema.primary_keys)} lacks partition keys): every key must be routed by one writer. "
            "Use paimon_lab.spark.write_table(df, ...) (one task) or df.coalesce(1).write...")


def _partition_predicate(table: Table, messages: list[CommitMessage]) -> Predicate | None:
    """The partitions the new files land in (dynamic partition overwrite), or None if none."""
    codec = table.store.partition_codec
    written = sorted({m.partition for m in messages if m.new_files})
    if not written:
        return None
    parts = tuple(And(tuple(Leaf("is_null", k) if v is None else Leaf("=", k, (v,))
                            for k, v in codec.to_dict(p).items())) for p in written)
    return bind(Or(parts), table.schema.arrow_schema())


def commit_messages(table: Table, commit_user: str, tasks: list[PaimonCommitMessage], *,
                    overwrite: bool = False, dynamic: bool = False, identifier: int | None = None,
                    job: str | None = None) -> int | None:
    """Commit what the tasks wrote as one APPEND (or OVERWRITE) snapshot, plus a COMPACT one
    with the compaction the buckets' writers would have done (see :mod:`.shared`); on failure
    delete the files. Returns the id of the snapshot with the data (None: nothing committed)."""

    messages = [m for t in tasks for m in t.messages]
    try:
        check_single_writer(table, tasks)
        pinned = {t.snapshot_id for t in tasks if t.messages or t.hashes} - {None}
        snap = table.snapshot_manager.snapshot(min(pinned)) if pinned else None
        namer = FileNamer("index-")
        if job:
            namer.uuid = _task_file_uuid(job)
        messages += merge_hash_index(table.store, snap, [t.hashes for t in tasks if t.hashes], namer)
        target: Predicate | bool | None = None
        if overwrite:
            target = _partition_predicate(table, messages) if (dynamic and table.partition_keys) else True
        kw = {} if identifier is None else {"identifier": identifier}
        if target is None and not messages:
            return None
        first, second = FileStoreCommit(table.store, commit_user).commit(messages, overwrite=target, **kw)
    except BaseException:
        table.store.discard(messages)
        raise
    sid = first if first is not None else second
    _compact_after_commit(table, commit_user, {(m.partition, m.bucket) for m in messages if m.new_files}, kw)
    if sid is not None:
        after_commit(table.store, messages=messages, **kw)  # tags, expirations, marking partitions done
    return sid


def _compact_after_commit(table: Table, commit_user: str, touched: set, kw: dict) -> None:
    """The COMPACT snapshot of a shared write; a lost race leaves the data committed and warns
    (as TableWriter's catch-up does)."""
    import warnings

    for _ in range(3):
        table.refresh()
        compacted: list[CommitMessage] = []
        try:
            compacted = commit_compaction(table.store, commit_user, touched)
            if compacted:
                FileStoreCommit(table.store, commit_user).commit(compacted, **kw)
            return
        except CommitConflictError:
            table.store.discard(compacted)
            continue
        except BaseException:
            table.store.discard(compacted)
            raise
    warnings.warn(f"{table.identifier}: the written buckets were not compacted (other commits kept winning); "
                  "run paimon_lab.spark.compact or Table.compact", stacklevel=2)


class PaimonWriter(DataSourceArrowWriter):
    """Batch writes (``mode('append')`` / ``mode('overwrite')``) as one atomic commit."""

    def __init__(self, ref: TableRef, overwrite: bool, dynamic: bool, snapshot_id: int | None = None):
        self.ref = ref
        self.overwrite = overwrite
        self.dynamic = dynamic
        self.commit_user = ref.open().store.schema.core.new_commit_user()
        self.job = _job_id()
        self.snapshot_id = snapshot_id  # pinned on the driver: every task writes against it

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:

        table = self.ref.open()
        if cross_partition(table.store):
            return _stage_task(table, iterator, self.job)
        return _write_task(self.ref, self.overwrite, iterator, self.job, self.snapshot_id, pinned=True)

    def commit(self, messages: list) -> None:
        _, tasks = _messages(messages)
        table = self.ref.open()
        if any(t.staged for t in tasks):
            _commit_staged(table, tasks, self.overwrite, self.dynamic)
            return
        commit_messages(table, self.commit_user, tasks, overwrite=self.overwrite, dynamic=self.dynamic,
                        job=self.job)

    def abort(self, messages: list) -> None:
        msgs, _ = _messages(messages)
        table = self.ref.open()
        table.store.discard(msgs)
        # Tasks Spark is still killing (spark.python.task.killTimeout: 2 s) may write files after
        # this: sweep until two sweeps in a row find nothing, for at least 3 s (at most 10).
        quiet = 0
        for i in range(10):
            quiet = 0 if remove_job_files(table, self.job) else quiet + 1
            if quiet >= 2 and i >= 3:
                break
            time.sleep(1.0)


def last_committed_batch(table: Table, commit_user: str) -> int | None:
    """The commit identifier of ``commit_user``'s newest snapshot (newest first, so this stops at
    the first snapshot of that user), or None if it never committed (or it expired)."""
    sm = table.snapshot_manager
    sid, earliest = sm.latest_id(), sm.earliest_id()
    if sid is None:
        return None

    while earliest is not None and sid >= earliest:
        try:
            snap = sm.snapshot(sid)
        except SnapshotNotExistError:
            break  # expired under us
        if snap.commit_user == commit_user:
            return snap.commit_identifier
        sid -= 1
    return None


class PaimonStreamWriter(_StreamWriterBase):
    """Streaming sink: one snapshot per micro-batch, committed under a fixed commit user with
    Spark's batch id as commit identifier; a batch that is already committed (a restart that
    replays it) is skipped and its files deleted."""

    def __init__(self, ref: TableRef, overwrite: bool, commit_user: str, columns: list[str]):
        self.ref = ref
        self.overwrite = overwrite
        self.commit_user = commit_user
        self.columns = columns

    def write(self, iterator: Iterator) -> PaimonCommitMessage:
        return _write_task(self.ref, self.overwrite, _as_batches(iterator, self.columns))

    def commit(self, messages: list, batchId: int) -> None:
        table = self.ref.open()
        msgs, tasks = _messages(messages)
        done = last_committed_batch(table, self.commit_user)
        if done is not None and batchId <= done:
            table.store.discard(msgs)  # replayed after a restart: already in the table
            return
        commit_messages(table, self.commit_user, tasks, overwrite=self.overwrite, identifier=batchId)

    def abort(self, messages: list, batchId: int) -> None:
        msgs, _ = _messages(messages)
        self.ref.open().store.discard(msgs)


def _as_batches(iterator: Iterator, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """Arrow batches from an iterator of batches (PySpark >= 4.1) or of Rows (4.0)."""
    rows: list = []
    for item in iterator:
        if isinstance(item, pa.RecordBatch):
            yield item
            continue
        rows.append(item)
        if len(rows) >= BATCH_ROWS:
            yield pa.RecordBatch.from_pylist([r.asDict(recursive=True) for r in rows])
            rows = []
    if rows:
        yield pa.RecordBatch.from_pylist([r.asDict(recursive=True) for r in rows])


# ---------------------------------------------------------------------------------------- source

class PaimonDataSource(DataSource):
    """``spark.read.format("paimon")``. Give the table as ``.load("db.t")`` / ``.save("db.t")`` with
    ``.option("warehouse", ...)`` (or :func:`paimon_lab.spark.register` with a warehouse), or as
    a table path. See :mod:`paimon_lab.spark` for the options."""

    default_warehouse: str | None = None
    default_pushdown: bool = False  # see FILTER_PUSHDOWN_SAFE

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    # -- helpers
    @property
    def opts(self) -> dict[str, str]:
        return _lower(self.options)

    def _ref(self) -> TableRef:
        warehouse = _opt(self.opts, "warehouse") or self.default_warehouse
        return table_ref(_opt(self.opts, "path", "table"), warehouse)

    def _table(self) -> Table:
        return self._ref().open()

    # -- reads
    def schema(self):
        """The table's columns (only those named by the ``columns`` option, if given), with a
        leading ``rowkind`` column for change streams read with ``rowkind=true``."""
        full = spark_schema(self._table().schema, rowkind=_bool(_opt(self.opts, "rowkind")))
        wanted = _opt(self.opts, "columns")
        if not wanted:
            return full
        from pyspark.sql.types import StructType

        names = [c.strip() for c in wanted.split(",") if c.strip()]
        unknown = [n for n in names if n not in full.fieldNames()]
        if unknown:
            raise SchemaError(f"Columns {unknown} are not in the table; columns are {full.fieldNames()}")
        keep = set(names) | ({"rowkind"} if "rowkind" in full.fieldNames() else set())
        return StructType([f for f in full.fields if f.name in keep])

    def reader(self, schema) -> PaimonReader:
        table = self._table()
        choice = (_opt(self.opts, "filter-pushdown") or "").lower()
        pushdown = self.default_pushdown if choice in ("", "auto") else _bool(choice)
        cls = PaimonFilteringReader if pushdown else PaimonReader
        return cls(self._ref(), schema, self._ids(table, schema), self.opts, table.schema.arrow_schema())

    def streamReader(self, schema) -> PaimonStreamReader:
        return PaimonStreamReader(self._ref(), schema, self._ids(self._table(), schema), self.opts)

    def _ids(self, table: Table, schema) -> dict[str, int]:
        ids = field_ids(table, schema.fieldNames())
        unknown = [n for n in schema.fieldNames() if n not in ids and n != "rowkind"]
        if unknown:
            raise SchemaError(f"Columns {unknown} are not in {table.identifier}; columns are "
                              f"{table.schema.field_names}")
        return ids

    # -- writes
    def _writable(self, schema) -> Table:
        ref = self._ref()
        try:
            table = ref.open()
        except TableNotExistError:
            table = create_table(ref, schema, self.opts)
        names = set(table.schema.field_names)
        extra = [n for n in schema.fieldNames() if n not in names
                 and not (n == ROW_KIND_COLUMN and table.schema.primary_keys)]
        missing = [n for n in table.schema.field_names if n not in schema.fieldNames()]
        if extra or missing:
            raise SchemaError(f"DataFrame columns {schema.fieldNames()} do not match table {ref.name} "
                              f"columns {table.schema.field_names} (extra: {extra}, missing: {missing})")
        return table

    def writer(self, schema, overwrite: bool) -> PaimonWriter:
        table = self._writable(schema)
        dynamic = (_opt(self.opts, "partitionOverwriteMode") or "static").lower() == "dynamic"
        return PaimonWriter(self._ref(), bool(overwrite), dynamic, table.snapshot_manager.latest_id())

    def streamWriter(self, schema, overwrite: bool) -> PaimonStreamWriter:
        table = self._writable(schema)
        user = _opt(self.opts, "commit-user") or f"spark-streaming-{table.identifier}"
        return PaimonStreamWriter(self._ref(), bool(overwrite), user, list(schema.fieldNames()))


def create_table(ref: TableRef, schema, options: Mapping[str, str]) -> Table:
    """Create a missing table from a Spark schema: ``primary-keys`` and ``partition-keys`` options
    (comma separated) and any Paimon table option (``bucket``, ``file.format``, ...)."""

    options = _lower(options)
    if ref.identifier is None:
        raise TableNotExistError(ref.name)
    arrow = arrow_schema_for(schema)
    pk = [c.strip() for c in (_opt(options, "primary-keys", "primary-key") or "").split(",") if c.strip()]
    parts = [c.strip() for c in (_opt(options, "partition-keys", "partition-key") or "").split(",") if c.strip()]
    if pk:
        arrow = pa.schema([f.with_nullable(False) if f.name in pk else f for f in arrow])
    table_options = {k: v for k, v in options.items()
                     if k not in _OWN_OPTIONS and k in OPTIONS and not k.startswith("scan.")}
    catalog = ref.catalog()
    db = ref.identifier.split(".")[0] if "." in ref.identifier else "default"
    catalog.create_database(db, ignore_if_exists=True)
    return catalog.create_table(ref.identifier, arrow, primary_keys=pk, partition_keys=parts,
                                options=table_options, ignore_if_exists=True)


def with_defaults(warehouse: str | None = None, filter_pushdown: bool | None = None) -> type[PaimonDataSource]:
    """The data source class to register: :class:`PaimonDataSource`, or a subclass with another
    default warehouse / filter pushdown (a class made here, so Spark pickles it by value)."""
    pushdown = FILTER_PUSHDOWN_SAFE if filter_pushdown is None else bool(filter_pushdown)
    if not warehouse and pushdown == PaimonDataSource.default_pushdown:
        return PaimonDataSource
    return type("PaimonDataSourceConfigured", (PaimonDataSource,),
                {"default_warehouse": warehouse, "default_pushdown": pushdown, "__module__": __name__,
                 "__qualname__": "PaimonDataSourceConfigured"})


__all__ = ["PaimonDataSource", "PaimonReader", "PaimonFilteringReader", "PaimonStreamReader", "PaimonWriter", "PaimonStreamWriter",
           "PaimonCommitMessage", "TableRef", "table_ref", "with_defaults", "commit_messages",
           "last_committed_batch", "check_single_writer", "create_table", "SHORT_NAME", "FILTER_PUSHDOWN_SAFE"]
