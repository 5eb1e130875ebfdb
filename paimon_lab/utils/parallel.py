"""Independent per-bucket work on a few threads.

Parquet encoding and decoding, Arrow compute kernels and numpy sorts release the GIL, so buckets
written or read on threads use every core. Every task is waited for before an error is raised:
a caller that cleans up after a failure must not race a task still writing a file.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

from paimon_lab.utils.progress import progress

T = TypeVar("T")
R = TypeVar("R")

#: threads per call: the cores, at least 2 (I/O overlaps with decoding) and at most 4
WORKERS = max(2, min(4, os.cpu_count() or 1))


def thread_map(fn: Callable[[T], R], items: Iterable[T], desc: str | None = None, unit: str = "it") -> list[R]:
    """``[fn(item) for item in items]`` on up to :data:`WORKERS` threads, results in order; the
    first exception is raised once every task has finished. ``desc`` shows a progress bar for
    long runs."""
    items = list(items)
    if len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(WORKERS, len(items))) as pool:
        futures = [pool.submit(fn, item) for item in items]
        results, error = [], None
        for future in (progress(futures, desc=desc, unit=unit) if desc else futures):
            try:
                results.append(future.result())
            except BaseException as e:  # noqa: BLE001 - re-raised below, after the others finish
                error = error or e
    if error is not None:
        raise error
    return results


__all__ = ["WORKERS", "thread_map"]
