"""Partition expiration, as Java's NormalPartitionExpire: drop partitions older than
'partition.expiration-time' in an OVERWRITE snapshot that deletes all their files.

The age of a partition comes from its values ('values-time': 'partition.timestamp-pattern' joins
partition values into a time string, read with 'partition.timestamp-formatter', by default
'yyyy-MM-dd[ HH:mm:ss]'; values that do not parse never expire) or from the creation time of its
newest file ('update-time'). A committer checks at most every 'partition.expiration-check-interval';
like Java's, each process starts its interval at a random point, so a fresh process does not check
on its first commit unless the interval is 0 or 'end-input.check-partition-expire' is set.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from typing import TYPE_CHECKING, Any

from paimon_lab.core.options import date_pattern_regex
from paimon_lab.core.predicate import And, Leaf, Or, bind
from paimon_lab.core.snapshot import BATCH_COMMIT_IDENTIFIER
from paimon_lab.errors import ArgumentError, OptionError
from paimon_lab.operation.commit import FileStoreCommit
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.utils.clock import local_now

if TYPE_CHECKING:
    from paimon_lab.core.options import CoreOptions
    from paimon_lab.store.file_store import FileStore

_DEFAULT = re.compile(r"(\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?")
_EPOCH_DAY = dt.date(1970, 1, 1)
# (table path, branch) -> local time of this process's last check
_last_check: dict[tuple[str, str], dt.datetime] = {}


def java_string(value: Any) -> str | None:
    """What Java's ``toString`` of the partition field's internal value gives."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="minutes" if not value.second and not value.microsecond else "auto")
    if isinstance(value, dt.date):
        return str((value - _EPOCH_DAY).days)   # a DATE is its epoch day inside Java
    return str(value)


def _replace_pattern(pattern: str, keys: list[str], values: list[str]) -> str:
    """'$dt $hour:00:00' -> '2024-01-01 13:00:00'; longer keys win ($dt1 over $dt)."""
    order = sorted(range(len(keys)), key=lambda i: -len(keys[i]))
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "$" and i + 1 < len(pattern):
            for idx in order:
                if pattern.startswith(keys[idx], i + 1):
                    out.append(values[idx])
                    i += 1 + len(keys[idx])
                    break
            else:
                out.append("$")
                i += 1
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def parse_partition_time(text: str, formatter: str | None) -> dt.datetime | None:
    """A partition's time string as a local date-time; None when it does not parse."""
    if formatter is None:
        m = _DEFAULT.fullmatch(text)
        if not m:
            return None
        y, mo, d, h, mi, s, frac = m.groups()
        try:
            return dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0),
                               int((frac or "0").ljust(9, "0")[:6]))
        except ValueError:
            return None
    m = date_pattern_regex(formatter).fullmatch(text)
    if not m:
        return None
    g = m.groupdict()
    if not all(g.get(k) for k in ("year", "month", "day")):
        return None
    try:
        return dt.datetime(int(g["year"]), int(g["month"]), int(g["day"]), int(g.get("hour") or 0),
                           int(g.get("minute") or 0), int(g.get("second") or 0), int(g.get("milli") or 0) * 1000)
    except ValueError:
        return None


class PartitionExpire:
    """Finds and drops the expired partitions of one table."""

    def __init__(self, store: FileStore, core: CoreOptions | None = None):
        self.store = store
        self.core = core or store.schema.core
        self.expiration = self.core.get("partition.expiration-time")
        if self.expiration is None:
            raise OptionError("'partition.expiration-time' is not set: nothing tells which partitions expired")
        if not store.partition_keys:
            raise OptionError(f"{store.identifier} has no partitions to expire")
        self.strategy = self.core.get("partition.expiration-strategy")
        self.pattern = self.core.get("partition.timestamp-pattern")
        self.formatter = self.core.get("partition.timestamp-formatter")
        self._values: dict[tuple, dict[str, Any]] = {}

    def expired(self, now: dt.datetime) -> list[dict[str, str]]:
        """The partitions (as name -> Java string) expired at ``now``, sorted, at most
        'partition.expiration-max-num'."""
        store = self.store
        latest = store.snapshot_manager.latest()
        if latest is None:
            return []
        cutoff = now - dt.timedelta(milliseconds=self.expiration)
        codec = store.partition_codec
        keys = [f.name for f in codec.fields]
        newest: dict[bytes, int] = {}
        for e in FileStoreScan(store).live_entries(latest):
            newest[e.partition] = max(newest.get(e.partition, -2**63), e.file.creation_time_millis or 0)
        cutoff_local_ms = int(cutoff.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
        default = codec.default_name
        out: list[tuple[list[str], tuple]] = []
        for part, created in newest.items():
            raw = codec.from_bytes(part)
            values = [java_string(v) for v in raw]
            if self.strategy == "update-time":
                hit = cutoff_local_ms > created
            elif any(v is None for v in values):
                hit = False
            else:
                text = values[0] if self.pattern is None else _replace_pattern(self.pattern, keys, values)
                t = parse_partition_time(text, self.formatter)
                hit = t is not None and cutoff > t
            if hit:
                out.append(([default if v is None else v for v in values], raw))
        out.sort(key=lambda pair: ",".join(pair[0]))
        self._values = {tuple(vs): dict(zip(keys, raw)) for vs, raw in out}
        return [dict(zip(keys, vs)) for vs, _ in out[:self.core.get("partition.expiration-max-num")]]

    def expire(self, now: dt.datetime | None = None, identifier: int = BATCH_COMMIT_IDENTIFIER) -> list[dict[str, str]]:
        """Drop the expired partitions now; returns them."""
        expired = self.expired(now or local_now())
        batch = self.core.get("partition.expiration-batch-size") or 0
        chunks = [expired[i:i + batch] for i in range(0, len(expired), batch)] if 0 < batch < len(expired) \
            else [expired] if expired else []
        for chunk in chunks:
            drop_partitions(self.store, [self._values[tuple(spec.values())] for spec in chunk], identifier)
        return expired


def drop_partitions(store: FileStore, partitions: list[dict[str, Any]], identifier: int = BATCH_COMMIT_IDENTIFIER) -> int | None:
    """Commit an OVERWRITE snapshot that deletes every file of the given partitions (values as
    Python values or text; None or the default partition name for null)."""
    if isinstance(partitions, dict):
        partitions = [partitions]
    if not partitions or not all(isinstance(p, dict) and p for p in partitions):
        raise ArgumentError(f"Give the partitions to drop as dicts of partition values such as "
                            f"[{{'dt': '2024-05-01'}}], not {partitions!r}")
    default = store.partition_codec.default_name
    alternatives = tuple(And(tuple(Leaf("is_null", k) if v is None or v == default else Leaf("=", k, (v,))
                                   for k, v in spec.items())) for spec in partitions)
    first, _ = FileStoreCommit(store).commit([], overwrite=bind(Or(alternatives), store.schema.arrow_schema()),
                                             identifier=identifier)
    return first


def expire_on_commit(store: FileStore, identifier: int = BATCH_COMMIT_IDENTIFIER) -> list[dict[str, str]] | None:
    """Run partition expiration if it is configured and due for this process (see the module doc)."""
    core = store.schema.core
    if core.get("partition.expiration-time") is None or not store.partition_keys:
        return None
    now = local_now()
    interval = dt.timedelta(milliseconds=core.get("partition.expiration-check-interval"))
    key = (store.path, store.branch)
    last = _last_check.get(key)
    if last is None:
        seconds = int(interval.total_seconds())
        last = _last_check[key] = now - dt.timedelta(seconds=random.randrange(seconds) if seconds > 0 else 0)
    end_input = core.get("end-input.check-partition-expire") and identifier == BATCH_COMMIT_IDENTIFIER
    if not (interval.total_seconds() == 0 or now > last + interval or end_input):
        return None
    _last_check[key] = now
    return PartitionExpire(store).expire(now, identifier)
