"""Independent per-bucket work on a few threads.

Parquet encoding and decoding, Arrow compute kernels and numpy sorts release the GIL, so buckets
written or read on threads use every core. Every task is waited for before an error is raised:
a caller that cleans up after a failure must not race a task still writing a file.

The threads live as long as the process (starting them on every call cost a small read several
milliseconds under load): one pool per nesting depth. A call from an ordinary thread runs its
tasks on the depth-0 pool, a call made inside a depth-``d`` task on the depth-``d + 1`` pool, so
a task never waits on a pool whose workers may all be waiting on it (calls nested deeper than
:data:`MAX_DEPTH` run their tasks in the calling thread). Workers are daemon threads started on
demand; a forked child starts its own.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TypeVar

from paimon_lab.utils.progress import progress

T = TypeVar("T")
R = TypeVar("R")

#: threads per pool: the cores, at least 2 (I/O overlaps with decoding) and at most 4
WORKERS = max(2, min(4, os.cpu_count() or 1))
#: pools (nesting depths) kept; deeper calls run serially in their thread
MAX_DEPTH = 4

_local = threading.local()   # .depth: the pool depth a thread_map call from this thread uses


class _Pool:
    """Up to :data:`WORKERS` daemon threads taking tasks from one queue."""

    def __init__(self, depth: int):
        self.depth = depth
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.threads = 0   # started
        self.idle = 0      # waiting for a task
        self.pending = 0   # submitted, not yet taken

    def submit(self, fn: Callable[[T], R], item: T) -> Future:
        future: Future = Future()
        with self.lock:
            self.pending += 1
            if self.pending > self.idle and self.threads < WORKERS:
                self.threads += 1
                threading.Thread(target=self._work, name=f"paimon-lab-{self.depth}-{self.threads}",
                                 daemon=True).start()
        self.tasks.put((future, fn, item))
        return future

    def _work(self) -> None:
        _local.depth = self.depth + 1
        while True:
            with self.lock:
                self.idle += 1
            future, fn, item = self.tasks.get()
            with self.lock:
                self.idle -= 1
                self.pending -= 1
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(item))
                except BaseException as e:  # noqa: BLE001 - handed to the caller
                    future.set_exception(e)
            del future, fn, item  # no reference to the last task's result while idle


_pools: list[_Pool | None] = [None] * MAX_DEPTH
_pools_lock = threading.Lock()


def _pool(depth: int) -> _Pool:
    pool = _pools[depth]
    if pool is None:
        with _pools_lock:
            pool = _pools[depth]
            if pool is None:
                pool = _pools[depth] = _Pool(depth)
    return pool


def _after_fork() -> None:
    """A forked child has none of its parent's worker threads: it starts pools of its own."""
    global _pools_lock
    _pools[:] = [None] * MAX_DEPTH
    _pools_lock = threading.Lock()
    _local.depth = 0  # forked from a worker: no pool of the child waits on this thread


os.register_at_fork(after_in_child=_after_fork)


def thread_map(fn: Callable[[T], R], items: Iterable[T], desc: str | None = None, unit: str = "it") -> list[R]:
    """``[fn(item) for item in items]`` on up to :data:`WORKERS` threads, results in order; the
    first exception is raised once every task has finished. ``desc`` shows a progress bar for
    long runs. Safe to call from inside a task of another ``thread_map``."""
    items = list(items)
    depth = getattr(_local, "depth", 0)
    if len(items) <= 1 or depth >= MAX_DEPTH:
        return [fn(item) for item in items]
    pool = _pool(depth)
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


__all__ = ["MAX_DEPTH", "WORKERS", "thread_map"]
