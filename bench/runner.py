"""Runs workloads across systems, one fresh subprocess per setup step and per run."""

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

from . import data, systems
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

    def to_json(self) -> dict:
        def run_json(r: Run | None):
            return None if r is None else {**asdict(r), "op_delta": r.op_delta}

        times = [r.seconds for r in self.runs if r.seconds is not None]
        return {
            "workload": self.workload, "system": self.system, "status": self.status, "reason": self.reason,
            "median_seconds": self.median_seconds, "min_seconds": min(times, default=None),
            "max_seconds": max(times, default=None), "median_cpu_seconds": self.median_cpu_seconds,
            "median_peak_rss": self.median_peak_rss,
            "median_op_delta": self.median_op_delta,
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


def _spawn(spec: dict, timeout: float) -> Run:
    """Run one worker; collect its report and the kernel's peak RSS for it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "bench.worker", json.dumps(spec)],
                                cwd=REPO_ROOT, stdout=out, stderr=err, env=env)
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
              report.get("fingerprints", {}))
    if run.peak_rss is None:
        run.peak_rss = maxrss
    return run


def run_workload(workload: Workload, system_names: list[str], config: Config, data_path: str,
                 expected: data.Fingerprint, log: Callable[[str], None]) -> list[Cell]:
    """Setup, one verified warm-up, then ``config.repeat`` timed runs interleaved across systems."""
    base = os.path.join(config.workdir, workload.name)
    cells = [Cell(workload.name, name) for name in system_names]
    for cell in cells:
        why = systems.SYSTEMS[cell.system].available()
        if why:  # a missing peer is skipped; a missing paimon-lab is a failure
            cell.status, cell.reason = ("error" if cell.system == systems.LAB else "skipped"), why

    def spec(cell: Cell, phase: str, run_name: str, verify: bool = False, profile: str | None = None) -> dict:
        return {"workload": workload.name, "system": cell.system, "phase": phase, "rows": config.rows,
                "data_path": data_path, "expected": expected.to_json(), "verify": verify,
                "cell_dir": os.path.join(base, cell.system, "cell"),
                "run_dir": os.path.join(base, cell.system, run_name), "profile": profile}

    def execute(cell: Cell, phase: str, run_name: str, verify: bool = False, profile: str | None = None) -> Run:
        s = spec(cell, phase, run_name, verify, profile)
        run = _spawn(s, config.timeout)
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
            cpu = f" (cpu {run.cpu_seconds:.3f}s)" if run.cpu_seconds is not None else ""
            log(f"  {workload.name:<8} {label:<16} {run_name:<8} {run.seconds:8.3f}s{cpu}{mem}"
                + ("  MISMATCH: " + "; ".join(run.errors) if run.errors else ""))
        else:
            log(f"  {workload.name:<8} {label:<16} {run_name:<8} {run.status.upper()}: "
                + ("\n".join(run.errors) or "?"))
        return run

    active = lambda: [c for c in cells if c.status in ("ok", "mismatch")]  # noqa: E731
    if workload.needs_setup:
        for cell in active():
            cell.setup = execute(cell, "setup", "setup")
    for cell in active():
        cell.warmup = execute(cell, "run", "warmup", verify=config.verify)
    for i in range(config.repeat):
        for cell in active():
            cell.runs.append(execute(cell, "run", f"run{i + 1}"))
    if config.profile_dir:
        os.makedirs(config.profile_dir, exist_ok=True)
        for cell in active():
            if cell.system == systems.LAB:  # not counted: profiling slows the run down
                path = os.path.abspath(os.path.join(config.profile_dir, f"{workload.name}-{cell.system}.pstats"))
                if execute(cell, "run", "profile", profile=path).status == "ok":
                    cell.profile = path
    if not config.keep:
        shutil.rmtree(base, ignore_errors=True)
    return cells
