"""Runs workloads across systems, one fresh subprocess per run (setup happens in the warm-up run's)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

from . import crossrun, data, systems
from .machine import REPO_ROOT
from .worker import MARKER
from .workloads import Workload


@dataclass
class Run:
    """One worker process. Times in seconds, memory in bytes."""

    status: str                       # ok | mismatch | error | n/a
    seconds: float | None = None
    rss_before: int | None = None     # resident just before the operation
    peak_rss: int | None = None       # high-water mark during the operation
    maxrss: int | None = None         # the kernel's ru_maxrss for the process (os.wait4)
    cpu_seconds: float | None = None  # CPU time of all threads during the operation
    errors: list[str] = field(default_factory=list)
    fingerprints: dict = field(default_factory=dict)
    laps: dict = field(default_factory=dict)  # step name -> seconds (multi-step workloads)
    total_seconds: float | None = None        # the whole run when it has laps
    setup_seconds: float | None = None        # the untimed setup done in the warm-up's process
    # a system timed inside its own runtime (Java Paimon): the worker's own wall time of the run
    # (with moving rows in and out of the JVM) and the JVM's heap peak
    inside: dict = field(default_factory=dict)

    @property
    def op_delta(self) -> int | None:
        if self.peak_rss is None or self.rss_before is None:
            return None
        return max(0, self.peak_rss - self.rss_before)


@dataclass
class Cell:
    """All measurements of one system on one workload."""

    workload: str
    system: str
    status: str = "ok"                # ok | mismatch | error | n/a | skipped
    reason: str = ""
    setup: Run | None = None
    warmup: Run | None = None
    runs: list[Run] = field(default_factory=list)
    profile: str | None = None        # .pstats file of a profiled extra run (--profile)

    def _median(self, attr: str) -> float | None:
        values = [getattr(r, attr) for r in self.runs if getattr(r, attr) is not None]
        return statistics.median(values) if values else None

    @property
    def measured(self) -> bool:
        return self.status in ("ok", "mismatch") and bool(self.runs)

    @property
    def median_seconds(self) -> float | None:
        return self._median("seconds")

    @property
    def median_cpu_seconds(self) -> float | None:
        return self._median("cpu_seconds")

    @property
    def median_peak_rss(self) -> float | None:
        return self._median("peak_rss")

    @property
    def median_op_delta(self) -> float | None:
        return self._median("op_delta")

    def median_laps(self) -> dict[str, float]:
        """Median time of every step over the timed runs (multi-step workloads)."""
        names = [n for r in self.runs for n in r.laps]
        return {n: statistics.median(r.laps[n] for r in self.runs if n in r.laps) for n in dict.fromkeys(names)}

    def to_json(self) -> dict:
        def run_json(r: Run | None):
            return None if r is None else {**asdict(r), "op_delta": r.op_delta}

        times = [r.seconds for r in self.runs if r.seconds is not None]
        return {
            "workload": self.workload, "system": self.system, "status": self.status, "reason": self.reason,
            "median_seconds": self.median_seconds, "min_seconds": min(times, default=None),
            "max_seconds": max(times, default=None), "median_cpu_seconds": self.median_cpu_seconds,
            "median_peak_rss": self.median_peak_rss,
            "median_op_delta": self.median_op_delta, "median_laps": self.median_laps(),
            "setup": run_json(self.setup), "warmup": run_json(self.warmup),
            "runs": [run_json(r) for r in self.runs], "profile": self.profile,
        }


@dataclass
class Config:
    rows: int
    repeat: int
    verify: bool
    workdir: str
    timeout: float
    keep: bool = False
    profile_dir: str | None = None   # one extra cProfile'd paimon-lab run per workload goes here
    cache_dir: str | None = None     # slow-to-build tables kept across invocations (planning)
    quick: bool = False              # --quick: workloads may cap their timed runs (quick_repeat)


def _spawn(spec: dict, timeout: float, python: str | None = None) -> Run:
    """Run one worker (in ``python``, the system's interpreter; default: this one); collect its
    report and the kernel's peak RSS for it."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([python or sys.executable, "-m", "bench.worker", json.dumps(spec)],
                                cwd=REPO_ROOT, stdout=out, stderr=err, env=crossrun.worker_env())
        deadline = time.monotonic() + timeout
        delay = 0.002
        timed_out = False
        while True:
            # wait4 (not Popen.wait) so we get this one child's resource usage.
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        maxrss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if timed_out:
        return Run("error", maxrss=maxrss, errors=[f"worker timed out after {timeout:.0f}s"])
    report = None
    for line in stdout.splitlines():
        if line.startswith(MARKER):
            report = json.loads(line[len(MARKER):])
    if report is None:
        tail = "\n".join(stderr.strip().splitlines()[-25:])
        return Run("error", maxrss=maxrss,
                   errors=[f"worker exited with code {proc.returncode} without a result:\n{tail}"])
    run = Run(report.get("status", "error"), report.get("seconds"), report.get("rss_before"),
              report.get("peak_rss"), maxrss, report.get("cpu_seconds"), report.get("errors", []),
              report.get("fingerprints", {}), report.get("laps", {}), report.get("total_seconds"),
              report.get("setup_seconds"), report.get("inside") or {})
    if run.peak_rss is None:
        run.peak_rss = maxrss
    return run


def run_workload(workload: Workload, system_names: list[str], config: Config, data_path: str,
                 expected: data.Fingerprint, log: Callable[[str], None]) -> list[Cell]:
    """Setup, one warm-up, then ``config.repeat`` timed runs interleaved across systems; every run is
    verified (``config.verify``), the warm-up's output also by the other readers of its format."""
    base = os.path.join(config.workdir, workload.name)
    began = time.monotonic()
    if workload.systems is not None:  # a workload for some systems only (e.g. paimon-lab's memory bound)
        system_names = [n for n in system_names if n in workload.systems]
    else:  # systems such as Spark Parquet take part only where a workload names them
        system_names = [n for n in system_names if not systems.SYSTEMS[n].dedicated]
    cells = [Cell(workload.name, name) for name in system_names]
    not_here = workload.unavailable()  # e.g. no Java for the Spark workload: n/a for everyone
    for cell in cells:
        cls = systems.SYSTEMS[cell.system]
        why = cls.available()
        lacking = [reason for op in workload.requires if (reason := cls.lacks(op))]
        if not_here:
            cell.status, cell.reason = "n/a", not_here
        elif lacking and not why:
            cell.status, cell.reason = "n/a", lacking[0]
        elif why:  # a missing peer is skipped; a missing paimon-lab is a failure
            cell.status, cell.reason = ("error" if cell.system == systems.LAB else "skipped"), why

    def spec(cell: Cell, phase: str, run_name: str, verify: bool = False, profile: str | None = None) -> dict:
        return {"workload": workload.name, "system": cell.system, "phase": phase, "rows": config.rows,
                "data_path": data_path, "expected": expected.to_json(), "verify": verify,
                "cell_dir": os.path.join(base, cell.system, "cell"),
                "run_dir": os.path.join(base, cell.system, run_name), "profile": profile,
                "cross_check": run_name == "warmup",
                "shared_dir": os.path.join(config.workdir, "_shared", cell.system),
                "cache_dir": config.cache_dir or os.path.join(config.workdir, "_cache")}

    def execute(cell: Cell, phase: str, run_name: str, verify: bool = False, profile: str | None = None,
                setup_first: bool = False) -> Run:
        s = spec(cell, phase, run_name, verify, profile)
        s["setup_first"] = setup_first
        run = _spawn(s, config.timeout, systems.SYSTEMS[cell.system].python())
        if run.setup_seconds is not None:
            cell.setup = Run("ok", run.setup_seconds)
            log(f"  {workload.name:<12} {systems.SYSTEMS[cell.system].label:<16} {'setup':<8} "
                f"{run.setup_seconds:8.3f}s (in the warm-up's process)")
        shutil.rmtree(s["run_dir"], ignore_errors=True)
        if run.status == "n/a":
            cell.status, cell.reason = "n/a", "; ".join(run.errors)
        elif run.status == "error":
            cell.status, cell.reason = "error", run.errors[0] if run.errors else "unknown error"
        elif run.status == "mismatch" and cell.status == "ok":
            cell.status, cell.reason = "mismatch", "; ".join(run.errors)
        label = systems.SYSTEMS[cell.system].label
        if run.status in ("ok", "mismatch") and run.seconds is not None:
            mem = f", peak {run.peak_rss / 2**20:.0f} MiB" if phase != "setup" and run.peak_rss else ""
            if run.inside.get("heap_peak"):
                mem += f" (JVM heap peak {run.inside['heap_peak'] / 2**20:.0f} MiB)"
            cpu = f" (cpu {run.cpu_seconds:.3f}s)" if run.cpu_seconds is not None else ""
            if run.laps:
                mem += "  [" + ", ".join(f"{k} {v:.3f}s" for k, v in run.laps.items()) + "]"
            log(f"  {workload.name:<12} {label:<16} {run_name:<8} {run.seconds:8.3f}s{cpu}{mem}"
                + ("  MISMATCH: " + "; ".join(run.errors) if run.errors else ""))
        else:
            log(f"  {workload.name:<12} {label:<16} {run_name:<8} {run.status.upper()}: "
                + ("\n".join(run.errors) or "?"))
        return run

    active = lambda: [c for c in cells if c.status in ("ok", "mismatch")]  # noqa: E731
    # Setup (untimed) happens in the warm-up run's process, before its priming: the warm-up is
    # discarded anyway, and every timed run still starts from a fresh interpreter.
    for cell in active():
        cell.warmup = execute(cell, "run", "warmup", verify=config.verify, setup_first=workload.needs_setup)
    repeat = min(config.repeat, workload.max_repeat) if workload.max_repeat else config.repeat
    if config.quick and workload.quick_repeat is not None:
        repeat = min(repeat, workload.quick_repeat)
    for i in range(repeat):
        for cell in active():
            cell.runs.append(execute(cell, "run", f"run{i + 1}", verify=config.verify))
    if repeat == 0:  # --quick with quick_repeat = 0: the (verified) warm-up is the one measurement
        for cell in active():
            if cell.warmup is not None and cell.warmup.seconds is not None:
                cell.runs.append(cell.warmup)
    if config.profile_dir:
        os.makedirs(config.profile_dir, exist_ok=True)
        for cell in active():
            if cell.system == systems.LAB:  # not counted: profiling slows the run down
                path = os.path.abspath(os.path.join(config.profile_dir, f"{workload.name}-{cell.system}.pstats"))
                if execute(cell, "run", "profile", profile=path).status == "ok":
                    cell.profile = path
    if not config.keep:
        shutil.rmtree(base, ignore_errors=True)
    log(f"  ({workload.name}: {time.monotonic() - began:.1f}s)")
    return cells
