"""Tags: named, never-expiring snapshots stored as ``tag/tag-NAME``.

A tag file holds the tagged snapshot's JSON plus ``tagCreateTime`` (a LocalDateTime written as
``[year, month, day, hour, minute(, second(, nano))]``) and optionally ``tagTimeRetained`` (a
Duration in seconds with nine decimals), as Java's Jackson writes them.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from paimon_lab.errors import TagError, TagNotExistError
from paimon_lab.io.file_io import FileIO, join
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.utils.clock import local_now


@dataclass
class Tag:
    name: str
    snapshot: Snapshot
    create_time: dt.datetime | None = None
    time_retained_seconds: float | None = None


def _time_to_json(t: dt.datetime) -> list[int]:
    """Jackson's LocalDateTime array: seconds only when not zero, nanos only when not zero."""
    out = [t.year, t.month, t.day, t.hour, t.minute]
    if t.second or t.microsecond:
        out.append(t.second)
    if t.microsecond:
        out.append(t.microsecond * 1000)
    return out


def _tag_json(snapshot: Snapshot, created: dt.datetime, retained_seconds: float | None) -> bytes:
    """The tag file: the snapshot's JSON, ``tagCreateTime`` and ``tagTimeRetained`` (a Duration
    as Jackson writes it: seconds with nine decimals)."""
    obj = json.loads(snapshot.to_json())
    obj["tagCreateTime"] = _time_to_json(created)
    marker = "\u0000retained\u0000"
    if retained_seconds is not None:
        obj["tagTimeRetained"] = marker
    text = json.dumps(obj, indent=2)
    if retained_seconds is not None:
        nanos = round(retained_seconds * 1_000_000_000)
        text = text.replace(json.dumps(marker), f"{nanos // 1_000_000_000}.{nanos % 1_000_000_000:09d}")
    return text.encode()


def _time_from_json(v) -> dt.datetime | None:
    if isinstance(v, list) and len(v) >= 5:
        parts = list(v) + [0] * (7 - len(v))
        return dt.datetime(*parts[:6], parts[6] // 1000)
    if isinstance(v, str):
        return dt.datetime.fromisoformat(v)
    return None


class TagManager:
    def __init__(self, file_io: FileIO, table_path: str):
        self.io = file_io
        self.dir = join(table_path, "tag")

    def path(self, name: str) -> str:
        return join(self.dir, f"tag-{name}")

    def exists(self, name: str) -> bool:
        return self.io.exists(self.path(name))

    def create(self, name: str, snapshot: Snapshot, time_retained_seconds: float | None = None, *,
               ignore_if_exists: bool = False) -> Tag:
        """Write ``tag/tag-NAME``: the snapshot plus its creation time (the clock's local time, as
        Java's ``LocalDateTime.now()``) and how long it is retained."""
        if not isinstance(name, str):
            raise TagError(f"A tag name is a string, not {type(name).__name__} {name!r}")
        if time_retained_seconds is not None and not time_retained_seconds > 0:
            raise TagError(f"A tag's time retained must be positive, got {time_retained_seconds!r} seconds")
        if not name or "/" in name or name.strip() != name:
            raise TagError(f"Invalid tag name '{name}': it must be non-empty, without surrounding spaces and have no '/'")
        if ignore_if_exists and self.exists(name):
            return self.get(name)
        now = local_now()
        if not self.io.try_create(self.path(name), _tag_json(snapshot, now, time_retained_seconds)):
            raise TagError(f"Tag '{name}' already exists")
        return Tag(name, snapshot, now, time_retained_seconds)

    def replace(self, name: str, snapshot: Snapshot, time_retained_seconds: float | None = None) -> Tag:
        """Point an existing tag at another snapshot (a new creation time, as Java's replaceTag)."""
        if not self.exists(name):
            raise TagNotExistError(name)
        now = local_now()
        self.io.write_bytes(self.path(name), _tag_json(snapshot, now, time_retained_seconds))
        return Tag(name, snapshot, now, time_retained_seconds)

    def rename(self, name: str, new_name: str) -> None:
        """Give a tag another name (its file is copied, then the old one deleted)."""
        if not self.exists(name):
            raise TagNotExistError(name)
        if not new_name or "/" in new_name or new_name.strip() != new_name:
            raise TagError(f"Invalid tag name '{new_name}': it must be non-empty, without surrounding spaces and have no '/'")
        if not self.io.try_create(self.path(new_name), self.io.read_bytes(self.path(name))):
            raise TagError(f"Tag '{new_name}' already exists")
        self.io.delete(self.path(name))

    def get(self, name: str) -> Tag:
        path = self.path(name)
        try:
            text = self.io.read_text(path)
        except FileNotFoundError:
            raise TagNotExistError(name) from None
        obj = json.loads(text) if text.strip() else {}
        created = _time_from_json(obj.pop("tagCreateTime", None))
        retained = obj.pop("tagTimeRetained", None)
        retained = float(retained) if isinstance(retained, (int, float)) else None
        return Tag(name, Snapshot.from_json(json.dumps(obj), path), created, retained)

    def delete(self, name: str) -> None:
        if not self.exists(name):
            raise TagNotExistError(name)
        self.io.delete(self.path(name))

    def names(self) -> list[str]:
        return [n[4:] for n in self.io.list_names(self.dir) if n.startswith("tag-")]

    def list(self) -> list[Tag]:
        names = self.names()
        tags = [self.get(n) for n in names]
        return sorted(tags, key=lambda t: (t.snapshot.id, t.name))
