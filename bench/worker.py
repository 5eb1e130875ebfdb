"""One measurement in a fresh process: ``python -m bench.worker '<json spec>'``.

The parent (:mod:`bench.runner`) starts one worker per setup step and per run, so every
measurement starts from a clean interpreter and its peak memory is its own. The worker prints
one line ``@@bench-result@@ {json}`` with its findings; the parent adds the kernel's
``ru_maxrss`` for the process from ``os.wait4``.

Time: wall-clock seconds of the operation (``perf_counter``) and, as a cross-check that is less
sensitive to other load on the machine, the CPU seconds of all the process's threads.

Memory, measured around the timed operation only:

* ``rss_before``: resident set size just before the operation (interpreter, libraries, input);
* ``peak_rss``: the high-water mark during the operation. On Linux the worker resets the
  kernel's high-water mark (``echo 5 > /proc/self/clear_refs``) right before the operation and
  reads ``VmHWM`` right after it; elsewhere it falls back to ``ru_maxrss`` (an upper bound that
  also covers setup).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import shutil
import sys
import time
import traceback

MARKER = "@@bench-result@@ "


def _status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_bytes() -> int | None:
    kib = _status_kib("VmRSS")
    return None if kib is None else kib * 1024


def maxrss_bytes() -> int:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024  # Linux reports KiB, macOS bytes


def reset_peak() -> bool:
    """Reset the kernel's peak-RSS counter for this process (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_bytes(was_reset: bool) -> int:
    if was_reset:
        kib = _status_kib("VmHWM")
        if kib is not None:
            return kib * 1024
    return maxrss_bytes()


# --- the process tree (workloads with ``process_tree``: Spark's JVM and Python workers) ---------

def _tree() -> list[int]:
    """This process and all its descendants (from /proc/<pid>/stat parent ids)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def tree_cpu_seconds() -> float:
    """User + system CPU time of the process tree, including its reaped children (cutime, cstime)."""
    ticks = 0
    for pid in _tree():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _tree_status_kib(key: str) -> int:
    total = 0
    for pid in _tree():
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith(key + ":")), 0)
        except OSError:
            pass
    return total


def tree_reset_peak() -> bool:
    """Reset the peak-RSS counter of every process in the tree (True if all could be reset)."""
    ok = True
    for pid in _tree():
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            ok = False
    return ok


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    out: dict = {"status": "ok", "errors": []}
    try:
        out.update(_work(spec))
    except NotImplementedError as e:
        out = {"status": "n/a", "errors": [str(e) or "not implemented by this system"]}
    except BaseException:  # report everything, including assertion errors, to the parent
        out = {"status": "error", "errors": [traceback.format_exc()]}
    if out.get("errors") and out["status"] == "ok":
        out["status"] = "mismatch"
    sys.stdout.write(MARKER + json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


def _work(spec: dict) -> dict:
    from . import systems
    from .data import Fingerprint
    from .workloads import Context, get

    workload = get(spec["workload"])
    system = systems.get(spec["system"])
    ctx = Context(rows=spec["rows"], data_path=spec["data_path"],
                  expected=Fingerprint.from_json(spec["expected"]),
                  cell_dir=spec["cell_dir"], run_dir=spec["run_dir"],
                  shared_dir=spec.get("shared_dir") or os.path.join(spec["cell_dir"], "_shared"),
                  cache_dir=spec.get("cache_dir") or os.path.join(spec["cell_dir"], "_cache"),
                  cross_check=bool(spec.get("cross_check")))
    os.makedirs(ctx.cell_dir, exist_ok=True)
    os.makedirs(ctx.run_dir, exist_ok=True)

    if spec["phase"] == "setup":
        start = time.perf_counter()
        workload.setup(ctx, system)
        return {"seconds": time.perf_counter() - start}

    setup_seconds = None
    if spec.get("setup_first"):  # the warm-up run does the untimed setup first (one process fewer)
        start = time.perf_counter()
        workload.setup(ctx, system)
        setup_seconds = time.perf_counter() - start
        gc.collect()

    prime_dir = os.path.join(ctx.run_dir, "_prime")
    system.prime(prime_dir)
    shutil.rmtree(prime_dir, ignore_errors=True)
    state = workload.prepare(ctx, system)

    profiler = None
    if spec.get("profile"):
        import cProfile

        profiler = cProfile.Profile()
    gc.collect()
    # With process_tree (Spark): CPU time and memory of this process and its descendants (the
    # JVM, its Python workers); the peak is the sum of their high-water marks (an upper bound of
    # the tree's peak: they need not peak at the same moment).
    tree = workload.process_tree and os.path.isdir("/proc/self")
    cpu_clock = tree_cpu_seconds if tree else time.process_time
    rss_before = _tree_status_kib("VmRSS") * 1024 if tree else rss_bytes()
    was_reset = tree_reset_peak() if tree else reset_peak()
    if profiler is not None:
        profiler.enable()
    # A system that times itself inside its own runtime (Java Paimon's JVM) replaces these clocks.
    inside = system.inside()
    if inside is not None:
        ctx.clock = lambda: inside.seconds
    cpu_start = cpu_clock()
    start = time.perf_counter()
    result = workload.run(ctx, system, state)
    seconds = time.perf_counter() - start
    cpu_seconds = cpu_clock() - cpu_start
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(spec["profile"])
    peak = _tree_status_kib("VmHWM") * 1024 if tree else peak_bytes(was_reset)
    extra = {}
    if inside is not None:
        extra = {"worker_seconds": seconds, "heap_peak": inside.heap_peak}
        seconds, cpu_seconds = inside.seconds, inside.cpu_seconds
        rss_before, peak, was_reset = inside.rss_before, inside.peak_rss, inside.peak_is_op_only

    out = {"seconds": seconds, "cpu_seconds": cpu_seconds, "rss_before": rss_before, "peak_rss": peak,
           "peak_is_op_only": was_reset, "setup_seconds": setup_seconds, "inside": extra}
    if ctx.laps:  # a multi-step run: its time is the summary of its timed steps
        out["laps"] = dict(ctx.laps)
        out["total_seconds"] = seconds
        out["seconds"] = workload.run_seconds(ctx.laps)
        if seconds > 0:  # CPU time is only measured for the whole run: scale it to the summary
            out["cpu_seconds"] = cpu_seconds * out["seconds"] / seconds
    # Every run's result is checked and fingerprinted here, after the clock stopped and the peak
    # was read, so verification costs neither time nor memory in the figures.
    errors = list(workload.check(ctx, system, state, result))
    if spec.get("verify"):
        got = workload.verify(ctx, system, state, result)
        expected = workload.expected(ctx)
        out["fingerprints"] = {reader: fp.to_json() for reader, fp in got.items()}
        out["expected"] = expected.to_json()
        if not got:
            errors.append("verification produced no fingerprint")
        for reader, fp in got.items():
            errors += [f"read back by {reader}: {d}" for d in expected.diff(fp)]
    out["errors"] = errors
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
