"""Spark's Python workers and paimon_lab: which interpreter they run, and errors made readable.

Spark starts its Python workers (the tasks of the ``paimon`` data source, and the planner
workers that call ``schema()``/``reader()``/``writer()`` on the driver) with the interpreter
named by ``PYSPARK_PYTHON`` when the SparkContext was created, else ``python3`` from ``PATH``:
usually not the virtualenv that runs paimon_lab. :func:`configure_workers` fixes that for a
running session before the data source is registered (the interpreter is captured when a Python
function is registered): on a local master, or a standalone master on loopback (workers on this
machine), it points the workers at ``sys.executable`` and puts the directory paimon_lab is
imported from on their ``PYTHONPATH``, unless the user chose an interpreter themselves. Then
:func:`check_workers` runs one tiny task that imports paimon_lab in a worker and, if that
fails, raises :class:`WorkerEnvironmentError` saying what to set.

:func:`python_error` pulls the Python exception (``Type: message``) out of the JVM exception
text Spark wraps it in, so helpers and ``%%paimon --engine spark`` show it first.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, Any

from paimon_lab.errors import PaimonLabError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_EXEC = "python3"  # PySpark's default when PYSPARK_PYTHON is not set
_checked: dict[int, str] = {}  # id(SparkContext) -> the worker python that imported paimon_lab


class WorkerEnvironmentError(PaimonLabError):
    """Spark's Python workers cannot import paimon_lab (or its dependencies)."""


def package_root() -> str:
    """The directory paimon_lab is imported from (the parent of the package directory)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _master_is_local(master: str) -> bool:
    """Masters whose workers run on this machine: local[*], local-cluster, spark://127.x/localhost."""
    m = (master or "").strip().lower()
    if m.startswith("local"):
        return True
    hosts = re.findall(r"(?:spark://)?([^:,/]+):\d+", m[len("spark://"):] if m.startswith("spark://") else "")
    return bool(m.startswith("spark://") and hosts and all(
        h in ("localhost", "::1", "[::1]") or h.startswith("127.") for h in hosts))


def _user_chose_exec(sc: Any) -> str | None:
    """The worker interpreter the user chose (PYSPARK_PYTHON, spark.pyspark.python), or None."""
    conf = sc.getConf()
    chosen = conf.get("spark.pyspark.python", None) or os.environ.get("PYSPARK_PYTHON")
    if chosen:
        return chosen
    if sc.pythonExec not in (DEFAULT_EXEC, None):
        return sc.pythonExec  # set on the SparkContext by hand
    return None


def configure_workers(spark: "SparkSession") -> str:
    """Point ``spark``'s Python workers at an interpreter that can import paimon_lab; returns it.

    Local masters (and a standalone master on loopback): ``sys.executable``, with paimon_lab's
    directory added to the workers' ``PYTHONPATH``, unless ``PYSPARK_PYTHON`` or
    ``spark.pyspark.python`` names another interpreter (then that one is used, and
    :func:`check_workers` tells whether it works). Other masters: ``spark.pyspark.python`` if set,
    else whatever the cluster runs. Call it before registering Python functions or data sources
    (they capture the interpreter when registered)."""
    sc = spark.sparkContext
    chosen = _user_chose_exec(sc)
    if chosen:
        sc.pythonExec = chosen
    elif _master_is_local(sc.master):
        sc.pythonExec = sys.executable
    if _master_is_local(sc.master) and sc.pythonExec == sys.executable and not _on_default_path(package_root()):
        # This interpreter finds paimon_lab through PYTHONPATH or sys.path edits (a checkout):
        # so shall its workers. Another interpreter's PYTHONPATH is left alone.
        root = package_root()
        paths = [p for p in sc.environment.get("PYTHONPATH", "").split(os.pathsep) if p]
        if root not in paths:
            sc.environment["PYTHONPATH"] = os.pathsep.join(paths + [root])
    return sc.pythonExec


def _on_default_path(directory: str) -> bool:
    """Whether this interpreter finds ``directory`` without PYTHONPATH (its site-packages)."""
    import site

    try:
        sites = list(site.getsitepackages()) + [site.getusersitepackages()]
    except AttributeError:  # pragma: no cover - old virtualenv's site module
        return False
    return os.path.abspath(directory) in {os.path.abspath(p) for p in sites}


def _probe(_: Any) -> Any:
    import sys as _sys

    try:
        import paimon_lab.spark.datasource  # noqa: F401

        return ("ok", _sys.executable, "")
    except BaseException as e:  # noqa: BLE001 - reported to the driver
        return ("error", _sys.executable, f"{type(e).__name__}: {e}")


def advice(worker_python: str | None = None) -> str:
    here = sys.executable
    return (f"Fix: create the session with PYSPARK_PYTHON={here} exported, or "
            f".config('spark.pyspark.python', '{here}') (the Python that runs paimon_lab), or call "
            f"paimon_lab.spark.register(spark) before anything else registers Python code. On a cluster "
            f"whose workers run another Python{f' ({worker_python})' if worker_python else ''}: install "
            "paimon_lab (and pyarrow, numpy) into that Python, or point spark.pyspark.python at a Python "
            "on the workers that has them, or ship the package: spark.sparkContext.addPyFile('paimon_lab.zip') "
            "or .config('spark.executorEnv.PYTHONPATH', '<dir holding paimon_lab on the workers>').")


def check_workers(spark: "SparkSession", *, force: bool = False) -> str:
    """Run one task that imports paimon_lab in a Python worker (once per SparkContext); returns
    the worker's ``sys.executable`` or raises :class:`WorkerEnvironmentError` with what to set."""
    sc = spark.sparkContext
    key = id(sc._jsc) if getattr(sc, "_jsc", None) is not None else id(sc)
    if not force and key in _checked:
        return _checked[key]
    try:
        status, exe, error = sc.parallelize([0], 1).map(_probe).collect()[0]
    except Exception as e:  # the worker did not even start (no such interpreter, no pyspark there)
        raise WorkerEnvironmentError(
            f"Spark's Python workers ({sc.pythonExec}) cannot run paimon_lab: {python_error(e)}\n"
            + advice(sc.pythonExec)) from None
    if status != "ok":
        raise WorkerEnvironmentError(
            f"Spark's Python workers ({exe}) cannot import paimon_lab: {error}\n" + advice(exe))
    _checked[key] = exe
    return exe


_PY_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure)):\s?(.*)$")
_JVM_PREFIX = re.compile(r"^(?:org|java|scala|py4j|pyspark)\.[\w.$]+(?:Exception|Error):")


def python_error(exc: BaseException | str) -> str:
    """``Type: message`` of the Python exception inside a Spark/JVM exception, or the first line.

    PySpark reports a Python worker's failure as a JVM exception whose text holds the Python
    traceback somewhere inside ("Traceback (most recent call last): ... ValueError: boom"),
    followed by JVM stack frames; the last ``Type: message`` line of the first Python traceback
    is what the user needs. Exceptions that are not wrapped give their own first line."""
    if isinstance(exc, BaseException):
        text = str(exc) or type(exc).__name__
        own = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
    else:
        text, own = exc, exc.splitlines()[0] if exc else ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "Traceback (most recent call last)" not in line:
            continue
        found = None
        for follow in lines[i + 1:]:
            s = follow.strip()
            if s.startswith("Traceback (most recent call last)") or s.startswith("at ") or _JVM_PREFIX.match(s):
                if found:
                    break
                continue
            m = _PY_ERROR.match(s)
            if m and not follow.startswith(" "):
                found = f"{m.group(1).rsplit('.', 1)[-1]}: {m.group(2)}".rstrip()
        if found:
            return found
    if isinstance(exc, BaseException) and type(exc).__module__.startswith("paimon_lab"):
        return own
    # A message like "[PYTHON_DATA_SOURCE_ERROR] ... ModuleNotFoundError: No module named 'x'"
    for line in lines:
        m = re.search(r"\b([A-Z]\w*(?:Error|Exception)): (.+)$", line)
        if m and not _JVM_PREFIX.match(line.strip()):
            return f"{m.group(1)}: {m.group(2)}".rstrip()
    return own


def reraise_readable(exc: BaseException, what: str = "") -> PaimonLabError:
    """A PaimonLabError whose first line is the Python error inside ``exc`` (its full text kept
    as the cause)."""
    first = python_error(exc)
    err = PaimonLabError(f"{what}{first}" if what else first)
    err.__cause__ = exc
    return err


__all__ = ["configure_workers", "check_workers", "python_error", "WorkerEnvironmentError", "advice",
           "package_root"]
