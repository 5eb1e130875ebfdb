"""Progress bars for long operations (big writes, compaction, expiration), with ``tqdm.auto``: a
widget in Jupyter, a text bar in a terminal, nothing in logs that are not a terminal.

Small work stays silent and costs nothing: below ``min_total`` units no bar is made at all, and
a bar appears only once the work has run for ``delay`` seconds (default 2 s). The engine calls::

    from .progress import progress, progress_bar

    for bucket in progress(buckets, total=len(buckets), desc="compact", unit="bucket"):
        ...
    with progress_bar(total=num_rows, desc="write", unit="row") as bar:
        for batch in batches:
            ...
            bar.update(batch.num_rows)

Users turn bars off or force them with ``PAIMON_LAB_PROGRESS=0`` / ``=1`` in the environment,
or ``paimon_lab.utils.progress.configure(enabled=False)``; ``with paimon_lab.utils.progress.disabled():``
silences one block.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, TypeVar

T = TypeVar("T")

_ENV = "PAIMON_LAB_PROGRESS"
_settings = {"enabled": None, "min_total": 2, "delay": 2.0}
_local = threading.local()


_UNSET: Any = object()


def configure(*, enabled: bool | None = _UNSET, min_total: int | None = None, delay: float | None = None) -> dict:
    """Change the defaults: ``enabled`` (True: always, False: never, None: automatic), the
    smallest ``total`` that gets a bar, and the seconds a bar waits before it shows. Returns the
    settings now in force."""
    if enabled is not _UNSET:
        _settings["enabled"] = enabled
    if min_total is not None:
        _settings["min_total"] = int(min_total)
    if delay is not None:
        _settings["delay"] = float(delay)
    return dict(_settings)


def _mode() -> bool | None:
    """True (force), False (off) or None (automatic)."""
    if getattr(_local, "disabled", 0):
        return False
    if _settings["enabled"] is not None:
        return _settings["enabled"]
    env = os.environ.get(_ENV, "").strip().lower()
    if env in ("0", "false", "off", "no"):
        return False
    if env in ("1", "true", "on", "yes", "force"):
        return True
    return None


def enabled() -> bool:
    """Whether bars may be shown at all (environment, :func:`configure`, :func:`disabled`)."""
    return _mode() is not False


@contextmanager
def disabled() -> Iterator[None]:
    """No progress bars inside this block (in this thread)."""
    _local.disabled = getattr(_local, "disabled", 0) + 1
    try:
        yield
    finally:
        _local.disabled -= 1


def _tqdm_kwargs(total, desc, unit, unit_scale, leave, force: bool, extra: dict) -> dict:
    kw = dict(total=total, desc=desc, unit=unit, unit_scale=unit_scale, leave=leave,
              delay=0 if force else _settings["delay"], dynamic_ncols=True)
    if force:
        kw["disable"] = False
    else:
        kw["disable"] = None  # tqdm: off when the output is not a terminal (logs, CI), on in notebooks
    kw.update(extra)
    return kw


def _have_tqdm() -> bool:
    try:
        import tqdm.auto  # noqa: F401
    except ImportError:  # tqdm is optional: without it there are no bars
        return False
    return True


def _wanted(total: int | None, min_total: int | None) -> bool | None:
    mode = _mode()
    if mode is False:
        return None
    threshold = _settings["min_total"] if min_total is None else min_total
    if mode is None and total is not None and total < threshold:
        return None
    if not _have_tqdm():
        return None
    return bool(mode)


def progress(iterable: Iterable[T], total: int | None = None, desc: str | None = None, *, unit: str = "it",
             unit_scale: bool = False, min_total: int | None = None, leave: bool = False,
             **tqdm_kwargs: Any) -> Iterable[T]:
    """``iterable``, with a progress bar when the work is big enough; otherwise ``iterable``
    itself, untouched. ``total`` defaults to ``len(iterable)`` when it has one."""
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    force = _wanted(total, min_total)
    if force is None:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, **_tqdm_kwargs(total, desc, unit, unit_scale, leave, force, tqdm_kwargs))


class _NoBar:
    """What :func:`progress_bar` yields for small work: every call does nothing."""

    n = 0
    total = None

    def update(self, n: float = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


NO_BAR = _NoBar()


@contextmanager
def progress_bar(total: int | None = None, desc: str | None = None, *, unit: str = "it", unit_scale: bool = False,
                 min_total: int | None = None, leave: bool = False, **tqdm_kwargs: Any) -> Iterator[Any]:
    """A bar to ``update(n)`` by hand (rows written, bytes read, files deleted), closed at the end
    of the block; a do-nothing bar for small work."""
    force = _wanted(total, min_total)
    if force is None:
        yield NO_BAR
        return
    from tqdm.auto import tqdm

    bar = tqdm(**_tqdm_kwargs(total, desc, unit, unit_scale, leave, force, tqdm_kwargs))
    try:
        yield bar
    finally:
        bar.close()


__all__ = ["progress", "progress_bar", "configure", "enabled", "disabled", "NO_BAR"]
