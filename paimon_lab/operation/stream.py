"""Streaming and incremental reads: follow a table snapshot by snapshot.

``stream(table, ...)`` yields one :class:`StreamBatch` per snapshot that changed rows: the delta
of APPEND snapshots, or the changelog when the table has a changelog producer. The scan modes
are Paimon's ('scan.mode'): ``latest-full`` (the default: the whole latest snapshot first, then
changes), ``latest`` (only what is committed from now on), ``full`` (alias of latest-full),
``from-snapshot`` / ``from-snapshot-full``, ``from-timestamp``, and ``incremental`` (the changes
between two snapshots or tags, then stop). With ``consumer_id`` the position is stored in
``consumer/consumer-ID`` after every batch, and a restarted stream resumes there; expiration
keeps the snapshots it still needs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.schema import with_dynamic_options
from paimon_lab.store.consumer import ConsumerManager
from paimon_lab.errors import ArgumentError, OptionError, PaimonLabError, SnapshotNotExistError
from paimon_lab.operation.changes import changes
from paimon_lab.operation.scan import machine_zone_millis, timestamp_range
from paimon_lab.operation.split_read import read_table
from paimon_lab.operation.changes import postponed_rows, snapshot_changes

if TYPE_CHECKING:
    from paimon_lab.core.schema import TableSchema
    from paimon_lab.store.file_store import FileStore

_START_OPTIONS = ("scan.snapshot-id", "scan.timestamp-millis", "scan.timestamp", "scan.tag-name", "scan.watermark",
                  "scan.version", "scan.file-creation-time-millis", "incremental-between",
                  "incremental-between-timestamp")
MODES = ("latest-full", "full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp", "incremental")


@dataclass
class StreamBatch:
    snapshot_id: int
    commit_kind: str
    rows: pa.Table  # with a leading 'rowkind' column

    @property
    def num_rows(self) -> int:
        return self.rows.num_rows


def _resolve(store: "FileStore", ref) -> int:
    if isinstance(ref, str) and not ref.isdigit():
        return store.tag_manager.get(ref).snapshot.id
    return int(ref)


def _table_startup(store: "FileStore", schema) -> tuple[str, int | None, int | None, tuple | None]:
    """(mode, snapshot id, timestamp, incremental range) from the 'scan.*' options of ``schema``
    (the table's, with the stream's own start over them), as a Java streaming read starts:
    'default' follows the options set."""
    core = schema.core
    mode, between = core.get("scan.mode"), core.get("incremental-between")
    sid, ts, tag = core.get("scan.snapshot-id"), core.get("scan.timestamp-millis"), core.get("scan.tag-name")
    if core.get("scan.watermark") is not None:
        raise OptionError("'scan.watermark' starts batch reads only; a stream cannot start from a watermark (as Java)")
    if ts is None and core.get("scan.timestamp") is not None:
        ts = machine_zone_millis(core.get("scan.timestamp"))
    if tag is not None:
        sid = store.tag_manager.get(tag).snapshot.id
    if between is not None:
        return "incremental", None, None, tuple(p.strip() for p in between.split(","))
    if core.get("incremental-between-timestamp") is not None:
        return "incremental", None, None, timestamp_range(store, core.get("incremental-between-timestamp"))
    if mode == "default":
        mode = "from-snapshot" if sid is not None else "from-timestamp" if ts is not None else "latest-full"
    if mode == "compacted-full":
        raise PaimonLabError("scan.mode 'compacted-full' is a batch mode; a stream cannot start with it")
    return mode, sid, ts, None


def _check_start(store: "FileStore", mode, snapshot_id, timestamp_millis, incremental_between,
                 consumer_id) -> "TableSchema":
    """Refuse a start the table's options contradict, as Java validates a streaming source's table
    copied with the job's options (e.g. a snapshot id with the table's 'scan.timestamp-millis').
    An explicit ``mode`` replaces the table's start: its start options are dropped from the copy.
    Returns the table's schema with the start's options."""
    given = {"scan.mode": mode, "scan.snapshot-id": snapshot_id, "scan.timestamp-millis": timestamp_millis,
             "incremental-between": None if incremental_between is None else
             ",".join(str(x) for x in incremental_between), "consumer-id": consumer_id}
    dynamic: dict[str, str | None] = {k: None for k in _START_OPTIONS if mode is not None}
    dynamic |= {k: str(v) for k, v in given.items() if v is not None}
    return with_dynamic_options(store.schema, dynamic)


def stream(store: "FileStore", *, mode: str | None = None, snapshot_id: int | None = None,
           timestamp_millis: int | None = None, incremental_between: tuple | None = None,
           consumer_id: str | None = None, columns: Sequence[str] | None = None,
           timeout: float | None = None, poll_interval: float = 0.2) -> Iterator[StreamBatch]:
    """Yield the table's changes snapshot by snapshot (see the module docs).

    Without ``mode`` the stream starts as the table's 'scan.*' options, with ``snapshot_id`` /
    ``timestamp_millis`` / ``incremental_between`` over them, say (default ``latest-full``), as
    Java's merged options; a start the merged options contradict is refused (OptionError). ``timeout`` (seconds) ends the stream when no new snapshot arrives for that
    long; None waits forever, 0 stops as soon as the stream has caught up.
    """
    if mode is not None and mode not in MODES:
        raise PaimonLabError(f"Unknown scan mode '{mode}'; use one of {', '.join(MODES)}")
    merged = _check_start(store, mode, snapshot_id, timestamp_millis, incremental_between, consumer_id)
    if mode is None:
        mode, sid, ts, between = _table_startup(store, merged)
        snapshot_id = snapshot_id if snapshot_id is not None else sid
        timestamp_millis = timestamp_millis if timestamp_millis is not None else ts
        incremental_between = incremental_between if incremental_between is not None else between
    if mode not in MODES:
        raise PaimonLabError(f"Unknown scan mode '{mode}'; use one of {', '.join(MODES)}")
    for name, value in (("timeout", timeout), ("poll_interval", poll_interval)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise ArgumentError(f"{name} is a number of seconds (>= 0), not {type(value).__name__} {value!r}")
    if consumer_id is not None and (not isinstance(consumer_id, str) or not consumer_id.strip()):
        raise ArgumentError(f"consumer_id is a non-empty string, not {type(consumer_id).__name__} {consumer_id!r}")
    sm = store.snapshot_manager
    if consumer_id is None:
        consumer_id = store.schema.core.get("consumer-id")  # Java's table option of the same name
    consumers = ConsumerManager(store) if consumer_id else None
    names = list(columns) if columns is not None else store.schema.field_names
    next_id: int | None = None
    if mode == "incremental":
        if incremental_between is None:
            raise PaimonLabError("mode 'incremental' needs incremental_between=(start, end)")
        start, end = (_resolve(store, x) for x in incremental_between)
        rows = changes(store, start, end, columns=names)
        yield StreamBatch(end, "INCREMENTAL", rows)
        return
    resumed = consumers.get(consumer_id) if consumers else None
    if resumed is not None:
        next_id = resumed.next_snapshot
    elif mode in ("latest-full", "full", "from-snapshot-full"):
        snap = sm.latest() if mode != "from-snapshot-full" else sm.snapshot(_required(snapshot_id, mode))
        if snap is not None:
            full = read_table(store, columns=names, snapshot_id=snap.id)
            full = full.add_column(0, "rowkind", pa.array(["+I"] * full.num_rows, pa.string()))
            postponed = postponed_rows(store, snap, names)
            if postponed.num_rows:
                full = pa.concat_tables([full.cast(postponed.schema), postponed])
            yield StreamBatch(snap.id, snap.commit_kind, full)
            next_id = snap.id + 1
            _record(consumers, consumer_id, next_id)
    elif mode == "latest":
        latest = sm.latest_id()
        next_id = (latest or 0) + 1
    elif mode == "from-snapshot":
        next_id = _required(snapshot_id, mode)
    elif mode == "from-timestamp":
        snap = sm.earlier_or_equal_time(_required(timestamp_millis, mode))
        next_id = snap.id + 1 if snap is not None else (sm.earliest_id() or 1)
    if next_id is None:
        next_id = sm.earliest_id() or 1
    idle_since = time.monotonic()
    while True:
        latest = sm.latest_id()
        if latest is not None and next_id <= latest:
            try:
                snap = store.snapshot_or_changelog(next_id)
            except SnapshotNotExistError:
                earliest = sm.earliest_id()
                if earliest is not None and next_id < earliest:
                    raise SnapshotNotExistError(
                        f"Snapshot {next_id} the stream needs has expired (earliest is {earliest}); "
                        "use a consumer id so expiration keeps it") from None
                raise
            rows = snapshot_changes(store, snap, names)
            next_id += 1
            if rows.num_rows:
                yield StreamBatch(snap.id, snap.commit_kind, rows)
            _record(consumers, consumer_id, next_id)
            idle_since = time.monotonic()
            continue
        if timeout is not None and time.monotonic() - idle_since >= timeout:
            return
        time.sleep(poll_interval)


def _required(value, mode: str):
    if value is None:
        raise PaimonLabError(f"scan mode '{mode}' needs its starting point")
    return value


def _record(consumers, consumer_id, next_id) -> None:
    if consumers is not None:
        consumers.record(consumer_id, next_id)


__all__ = ["stream", "StreamBatch", "MODES", "pc"]
