"""A description of the machine and software a benchmark ran on (printed and saved with results)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = ("pyarrow", "numpy", "pandas", "pypaimon", "pypaimon-rust", "java-paimon", "deltalake", "pyiceberg",
             "pyspark", "paimon-lab")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 ** 2, 1)
    except OSError:
        pass
    return None


def _lib_version(name: str) -> str:
    if name == "pypaimon":  # in a virtual environment of its own (see bench.systems.pypaimon_python)
        from .systems import PyPaimon

        return PyPaimon.version() + ("" if PyPaimon.runs_here() else f" ({PyPaimon.python()})")
    if name == "java-paimon":  # the shared Java oracle's bundle (see bench.javapaimon)
        from .javapaimon import JavaPaimon

        return JavaPaimon.version()
    try:
        return version(name)
    except PackageNotFoundError:
        pass
    if name == "paimon-lab":  # run from a checkout without being installed
        try:
            sys.path.insert(0, str(REPO_ROOT))
            import paimon_lab

            return paimon_lab.__version__ + " (source tree)"
        except Exception:
            return "missing"
        finally:
            sys.path.remove(str(REPO_ROOT))
    return "missing"


def _git_revision() -> str | None:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "paimon_lab"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if not rev:
        return None
    return rev + (" + uncommitted paimon_lab changes" if dirty else "")


def describe() -> dict:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "nproc": usable,
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "ram_gib": _ram_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "libraries": {name: _lib_version(name) for name in LIBRARIES},
        "git": _git_revision(),
        "load_average": _load(),
    }


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def summary(info: dict) -> str:
    libs = ", ".join(f"{k} {v}" for k, v in info["libraries"].items())
    lines = [f"Machine: {info['nproc']} CPUs ({info['cpu_model']}), {info['ram_gib']} GiB RAM, {info['os']}",
             f"Software: Python {info['python']}, {libs}"]
    if info.get("git"):
        lines.append(f"Revision: {info['git']}")
    if info.get("load_average") is not None:
        lines.append("Load average before the run (1/5/15 min): "
                     + " / ".join(f"{x:.2f}" for x in info["load_average"])
                     + "  (other load on the machine makes timings noisy)")
    return "\n".join(lines)
