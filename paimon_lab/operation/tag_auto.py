"""Tags made and removed by commits, as Java's TagAutoCreation, TagBatchCreation and TagTimeExpire.

'tag.automatic-creation' = process-time names tags after the commit time of snapshots, watermark
after their watermark: once the time of a snapshot passes the end of the period after the last
auto tag (plus 'tag.creation-delay'), that snapshot is tagged with the previous period's name
('2024-01-01' for daily, '2024-01-01 13' for hourly). Only the newest auto tag is read to resume.
'batch' tags the latest snapshot after every batch write as 'batch-write-yyyy-MM-dd'.
Tags past 'tag.num-retained-max' (auto tags only) or their time retained are deleted.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING

from paimon_lab.core.options import zone_of
from paimon_lab.core.snapshot import WATERMARK_MIN, Snapshot
from paimon_lab.errors import ArgumentError, OptionError, SnapshotNotExistError
from paimon_lab.operation.expire import delete_tag
from paimon_lab.utils.clock import local_now

if TYPE_CHECKING:
    from paimon_lab.core.options import CoreOptions
    from paimon_lab.store.file_store import FileStore

_EPOCH = dt.datetime(1970, 1, 1)
# name format -> (strftime, regex of exactly that shape)
_FORMATS = {
    "day": ("%Y-%m-%d", r"\d{4}-\d{2}-\d{2}"),
    "day_nodash": ("%Y%m%d", r"\d{8}"),
    "hour": ("%Y-%m-%d %H", r"\d{4}-\d{2}-\d{2} \d{2}"),
    "hour_nodash": ("%Y%m%d %H", r"\d{8} \d{2}"),
    "hour_compact": ("%Y%m%d%H", r"\d{10}"),
    "minute": ("%Y%m%d%H%M", r"\d{12}"),
}


class TagPeriodHandler:
    """Names and times of the periods auto tags stand for."""

    def __init__(self, period: dt.timedelta, fmt: str, daily: bool = False):
        self.period = period
        self.strftime, regex = _FORMATS[fmt]
        self.regex = re.compile(regex)
        self.daily = daily

    @staticmethod
    def of(core: CoreOptions) -> TagPeriodHandler:
        custom = core.get("tag.creation-period-duration")
        if custom is not None:
            return TagPeriodHandler(dt.timedelta(milliseconds=custom), "minute")
        period, formatter = core.get("tag.creation-period"), core.get("tag.period-formatter")
        if period == "daily":
            return TagPeriodHandler(dt.timedelta(days=1), "day" if formatter == "with_dashes" else "day_nodash",
                                    daily=True)
        if period == "hourly":
            fmt = {"with_dashes": "hour", "without_dashes": "hour_nodash"}.get(formatter, "hour_compact")
            return TagPeriodHandler(dt.timedelta(hours=1), fmt)
        return TagPeriodHandler(dt.timedelta(hours=2), "hour")

    def tag_to_time(self, name: str) -> dt.datetime | None:
        """The period start a tag name stands for; None when it is not an auto tag's name."""
        if self.daily:
            name = name.split(" ")[0]  # as Java: '2024-01-01 anything' reads as a daily tag
        if not self.regex.fullmatch(name):
            return None
        try:
            return dt.datetime.strptime(name, self.strftime)
        except ValueError:
            return None

    def time_to_tag(self, time: dt.datetime) -> str:
        return time.strftime(self.strftime)

    def previous_tag_time(self, time: dt.datetime) -> dt.datetime:
        """The start of the period before the one ``time`` falls in."""
        ms = (time - _EPOCH) // dt.timedelta(milliseconds=1)
        period_ms = self.period // dt.timedelta(milliseconds=1)
        return _EPOCH + dt.timedelta(milliseconds=(ms // period_ms) * period_ms) - self.period


def _local_time(millis: int, zone: dt.tzinfo | None) -> dt.datetime:
    if zone is None:
        return dt.datetime.fromtimestamp(millis / 1000)
    return dt.datetime.fromtimestamp(millis / 1000, zone).replace(tzinfo=None)


def process_zone(core: CoreOptions) -> dt.tzinfo | None:
    name = core.get("sink.process-time-zone")
    return zone_of(name) if name else None


def snapshot_time(core: CoreOptions, snap: Snapshot) -> dt.datetime | None:
    """The time auto tag creation reads from a snapshot (None: a watermark-less snapshot)."""
    if core.get("tag.automatic-creation") == "watermark":
        if snap.watermark is None or snap.watermark == WATERMARK_MIN:
            return None
        return _local_time(snap.watermark, zone_of(core.get("sink.watermark-time-zone")))
    return _local_time(snap.time_millis, process_zone(core))


def _retained_seconds(core: CoreOptions) -> float | None:
    ms = core.get("tag.default-time-retained")
    return None if ms is None else ms / 1000


def auto_create_tags(store: FileStore) -> list[str]:
    """Tag the snapshots since the newest auto tag whose time closes a period; returns the new names."""
    core = store.schema.core
    if core.get("tag.automatic-creation") not in ("process-time", "watermark"):
        return []
    handler = TagPeriodHandler.of(core)
    delay = dt.timedelta(milliseconds=core.get("tag.creation-delay"))
    if delay >= handler.period:
        raise OptionError(f"'tag.creation-delay' ({delay}) must be shorter than the tag period ({handler.period})")
    sm, tm = store.snapshot_manager, store.tag_manager
    auto = sorted(((t, n) for n in tm.names() if (t := handler.tag_to_time(n)) is not None), reverse=True)
    if auto:
        next_snapshot = tm.get(auto[0][1]).snapshot.id + 1
        next_tag = auto[0][0] + handler.period
    else:
        next_snapshot, next_tag = sm.earliest_id() or 1, None
    completion = core.get("tag.automatic-completion")
    latest = sm.latest_id()
    if next_tag is not None and latest is not None and latest >= next_snapshot:
        newest = snapshot_time(core, sm.snapshot(latest))
        if newest is not None and newest - delay < next_tag + handler.period:
            return []   # commit times and watermarks only grow: nothing since the last tag closes a period
    created = []
    while latest is not None and next_snapshot <= latest:
        try:
            snap = sm.snapshot(next_snapshot)
        except SnapshotNotExistError:
            earliest = sm.earliest_id()
            if earliest is not None and earliest > next_snapshot:
                next_snapshot = earliest
                continue
            next_snapshot += 1
            continue
        next_snapshot += 1
        time = snapshot_time(core, snap)
        if time is None or (next_tag is not None and time - delay < next_tag + handler.period):
            continue
        this_tag = next_tag if completion and next_tag is not None else handler.previous_tag_time(time)
        name = handler.time_to_tag(this_tag)
        store.tag_manager.create(name, snap, _retained_seconds(core), ignore_if_exists=True)
        created.append(name)
        next_tag = this_tag + handler.period
        _trim_auto_tags(store, handler)
    return created


def _trim_auto_tags(store: FileStore, handler: TagPeriodHandler) -> None:
    """Delete the oldest auto tags beyond 'tag.num-retained-max'."""
    keep = store.schema.core.get("tag.num-retained-max")
    if keep is None:
        return
    tags = [t for t in store.tag_manager.list() if handler.tag_to_time(t.name) is not None]
    for tag in tags[:max(0, len(tags) - keep)]:
        delete_tag(store, tag.name)


def create_batch_tag(store: FileStore) -> str | None:
    """'tag.automatic-creation' = batch: (re)tag the latest snapshot after a batch write, then
    keep at most 'tag.num-retained-max' tags (of any kind, oldest snapshot first)."""
    core = store.schema.core
    snap = store.snapshot_manager.latest()
    if snap is None:
        return None
    name = core.get("tag.batch.customized-name") or \
        "batch-write-" + _local_time(snap.time_millis, process_zone(core)).strftime("%Y-%m-%d")
    if store.tag_manager.exists(name):
        delete_tag(store, name)
    store.tag_manager.create(name, snap, _retained_seconds(core))
    keep = core.get("tag.num-retained-max")
    if keep is not None:
        tags = sorted(store.tag_manager.list(),
                      key=lambda t: (t.snapshot.id, t.create_time or dt.datetime.min, t.name))
        for tag in tags[:max(0, len(tags) - keep)]:
            delete_tag(store, tag.name)
    return name


def expire_tags(store: FileStore, older_than: dt.datetime | None = None) -> list[str]:
    """Delete tags whose time retained has passed (and, with ``older_than``, those created before
    it; a tag without a creation time counts from its file's modification time). Returns their names."""
    if older_than is not None and not isinstance(older_than, dt.datetime):
        raise ArgumentError(f"older_than is a datetime (a naive local time), not {type(older_than).__name__} "
                            f"{older_than!r}")
    tm = store.tag_manager
    now = local_now()
    mtimes: dict[str, dt.datetime] = {}
    if older_than is not None:
        for info in store.file_io.list_dir(tm.dir):
            if info.base_name.startswith("tag-") and info.mtime is not None:
                mtimes[info.base_name[4:]] = info.mtime.astimezone().replace(tzinfo=None)
    expired = []
    for tag in tm.list():
        created, retained = tag.create_time, tag.time_retained_seconds
        if created is None or retained is None:
            if older_than is None:
                continue
            created = created or mtimes.get(tag.name)
            if created is None:
                continue
        reached = retained is not None and now > created + dt.timedelta(seconds=retained)
        if reached or (older_than is not None and older_than > created):
            delete_tag(store, tag.name)
            expired.append(tag.name)
    return expired


def snapshot_for_timestamp(store: FileStore, millis: int) -> Snapshot:
    """The earliest snapshot (or tagged snapshot, if earlier) committed at or after ``millis``."""
    return _first_after(store, millis, lambda s: s.time_millis, "commit-time")


def snapshot_for_watermark(store: FileStore, watermark: int) -> Snapshot:
    """The earliest snapshot (or tagged snapshot) whose watermark is at or after ``watermark``."""
    return _first_after(store, watermark, lambda s: s.watermark, "watermark")


def _first_after(store: FileStore, value: int, key, what: str) -> Snapshot:
    found = None
    for snap in store.snapshot_manager.snapshots():
        v = key(snap)
        if v is not None and v >= value:
            found = snap
            break
    for tag in store.tag_manager.list():
        v = key(tag.snapshot)
        if v is not None and value <= v:
            if found is None or key(found) is None or v < key(found):
                found = tag.snapshot
            break
    if found is None:
        raise SnapshotNotExistError(f"Could not find any snapshot whose {what} is at or after {value}")
    return found

