"""The wall clock that commits, tag creation and expiration read: replaceable (tests, replays).

``now_millis()`` is epoch milliseconds; :func:`use_clock` swaps in another source for the
duration of a ``with`` block (every thread sees it)."""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable, Iterator

_clock: Callable[[], int] | None = None


def now_millis() -> int:
    """Epoch milliseconds from the current clock."""
    return _clock() if _clock is not None else int(time.time() * 1000)


def local_now() -> dt.datetime:
    """The clock's time as a naive local date-time (Java's ``LocalDateTime.now()``)."""
    return dt.datetime.fromtimestamp(now_millis() / 1000)



def local_wall_millis(epoch_millis: int) -> int:
    """The machine's local wall clock at ``epoch_millis``, as milliseconds of a zone-less timestamp
    (Java's ``LocalDateTime.ofInstant(..., ZoneId.systemDefault())`` shown as a TIMESTAMP)."""
    seconds, millis = divmod(int(epoch_millis), 1000)
    offset = dt.datetime.fromtimestamp(seconds, dt.timezone.utc).astimezone().utcoffset()
    return seconds * 1000 + millis + int(offset.total_seconds()) * 1000

@contextlib.contextmanager
def use_clock(source: Callable[[], int] | int) -> Iterator[None]:
    """Read the time from ``source`` (a callable returning epoch millis, or a fixed value) inside
    the block."""
    global _clock
    previous = _clock
    _clock = source if callable(source) else (lambda: int(source))
    try:
        yield
    finally:
        _clock = previous
