"""One call into another interpreter: ``python -m bench.crossrun '<json>'``.

Some systems live in virtual environments of their own (pypaimon 2.1.0 pins pyarrow<20 and
pandas<3, see :func:`bench.systems.pypaimon_python`), so a worker sometimes needs a step done by
a system that cannot be imported in its own process: reading a table back for verification, or
building a table with paimon-lab for pypaimon's planning workload. :func:`call` runs
``module:function(*args)`` of this checkout's bench package in ``python`` and returns its JSON
result; tables travel as Arrow IPC files (readable by every pyarrow version involved).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import traceback

from .machine import REPO_ROOT

MARKER = "@@bench-crossrun@@ "


def bench_python() -> str:
    """The harness's interpreter (paimon-lab and most peers): the one that started the run."""
    return os.environ.get("PAIMON_LAB_BENCH_PYTHON") or sys.executable


def worker_env() -> dict:
    """Environment of a process of this checkout's bench package, whatever its interpreter."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env["PAIMON_LAB_BENCH_PYTHON"] = bench_python()
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


def call(python: str, func: str, *args, timeout: float = 3600):
    """``func`` ("bench.module:name") called with JSON-able ``args`` in ``python``."""
    proc = subprocess.run([python, "-m", "bench.crossrun", json.dumps({"func": func, "args": list(args)})],
                          cwd=REPO_ROOT, env=worker_env(), capture_output=True, text=True, timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            reply = json.loads(line[len(MARKER):])
            if "error" in reply:
                raise RuntimeError(f"{func} in {python} failed:\n{reply['error']}")
            return reply["value"]
    tail = "\n".join(proc.stderr.strip().splitlines()[-25:])
    raise RuntimeError(f"{func} in {python} exited with code {proc.returncode} without a result:\n{tail}")


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    try:
        module, name = spec["func"].split(":")
        reply = {"value": getattr(importlib.import_module(module), name)(*spec["args"])}
    except BaseException:  # report everything to the caller
        reply = {"error": traceback.format_exc()}
    sys.stdout.write(MARKER + json.dumps(reply) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
