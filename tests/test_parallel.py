"""utils.parallel.thread_map: persistent pools, one per nesting depth."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time

import pytest

from paimon_lab.utils import parallel
from paimon_lab.utils.parallel import MAX_DEPTH, WORKERS, thread_map

TIMEOUT = 60


def _in_thread(fn):
    """fn() in a daemon thread, failing the test instead of hanging when it deadlocks."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive(), "thread_map deadlocked"
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_results_in_order_whatever_finishes_first():
    def slow_first(i):
        time.sleep(0.002 * (20 - i))
        return i * i

    assert thread_map(slow_first, range(20)) == [i * i for i in range(20)]
    assert thread_map(slow_first, iter(range(3))) == [400 * 0 + 0, 1, 4]
    assert thread_map(slow_first, []) == []
    assert thread_map(lambda x: x + 1, [41]) == [42]


def test_nested_three_deep_does_not_deadlock():
    # Every pool's workers all block in a nested call at the same time: with one shared pool
    # (or any pool a task also waits on) this never finishes.
    n = WORKERS * 2
    barrier = threading.Barrier(WORKERS, timeout=TIMEOUT)

    def leaf(i):
        return i

    def middle(i):
        return sum(thread_map(leaf, range(n))) + i

    def outer(i):
        if i < WORKERS:
            barrier.wait()   # all depth-0 workers are inside outer before any nests
        return thread_map(middle, range(n))

    expected = [[sum(range(n)) + j for j in range(n)] for _ in range(n)]
    assert _in_thread(lambda: thread_map(outer, range(n))) == expected


def test_nesting_deeper_than_the_pools_runs_inline():
    seen: set[str] = set()

    def nest(level):
        seen.add(threading.current_thread().name)
        if level == MAX_DEPTH + 2:
            return 1
        return sum(thread_map(nest, [level + 1] * 2))

    assert _in_thread(lambda: nest(0)) == 2 ** (MAX_DEPTH + 2)
    pooled = {name for name in seen if name.startswith("paimon-lab-")}
    assert {name.split("-")[2] for name in pooled} == {str(d) for d in range(MAX_DEPTH)}


def test_threads_are_reused_daemons():
    thread_map(lambda x: x, range(WORKERS * 3))
    before = {t.ident for t in threading.enumerate() if t.name.startswith("paimon-lab-0-")}
    for _ in range(20):
        thread_map(lambda x: x, range(WORKERS * 3))
    workers = [t for t in threading.enumerate() if t.name.startswith("paimon-lab-0-")]
    assert {t.ident for t in workers} == before
    assert 0 < len(workers) <= WORKERS
    assert all(t.daemon for t in workers)


def test_first_exception_after_every_task_finished():
    finished = []
    lock = threading.Lock()

    def task(i):
        if i == 0:
            time.sleep(0.05)
            raise ValueError("first item")
        if i == 1:
            raise KeyError("second item, raised sooner")
        time.sleep(0.2)
        with lock:
            finished.append(i)
        return i

    with pytest.raises(ValueError, match="first item"):
        thread_map(task, range(2 + WORKERS * 2))
    assert sorted(finished) == list(range(2, 2 + WORKERS * 2))
    # the pool still works after a failure
    assert thread_map(lambda x: -x, range(5)) == [0, -1, -2, -3, -4]


def test_nested_exception_reaches_the_outer_caller():
    def outer(i):
        return thread_map(lambda j: 1 // (j - 2), range(4)) if i == 1 else [i]

    with pytest.raises(ZeroDivisionError):
        _in_thread(lambda: thread_map(outer, range(3)))


def _child(conn):
    try:
        conn.send(thread_map(lambda x: thread_map(lambda y: x * y, range(3)), range(4)))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        conn.send(repr(e))
    conn.close()


@pytest.mark.skipif(sys.platform == "win32" or not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_uses_thread_map():
    # the parent's pools have threads (and may hold their lock); the child has none of them
    thread_map(lambda x: thread_map(lambda y: y, range(3)), range(4))
    assert parallel._pools[0] is not None and parallel._pools[0].threads > 0
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(child,))
    p.start()
    child.close()
    assert parent.poll(TIMEOUT), "thread_map in a forked child hung"
    got = parent.recv()
    p.join(TIMEOUT)
    assert got == [[x * y for y in range(3)] for x in range(4)]
    assert p.exitcode == 0


@pytest.mark.skipif(sys.platform == "win32" or not hasattr(os, "fork"), reason="needs fork")
def test_child_forked_from_a_worker_uses_thread_map():
    ctx = multiprocessing.get_context("fork")

    def fork_here(_):
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_child, args=(child,))
        p.start()
        child.close()
        got = parent.recv() if parent.poll(TIMEOUT) else "hung"
        p.join(TIMEOUT)
        return got, p.exitcode

    for got, code in _in_thread(lambda: thread_map(fork_here, range(2))):
        assert got == [[x * y for y in range(3)] for x in range(4)] and code == 0
