"""IPython magics: ``%%paimon`` (a cell of SQL statements) and ``%paimon`` (one line).

    %load_ext paimon_lab
    %%paimon
    CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = '/tmp/wh');
    USE CATALOG paimon;
    SELECT * FROM t

The last query's result is displayed and returned (so ``_`` holds it) as a pandas DataFrame;
``--arrow`` returns the pyarrow.Table instead, ``--out NAME`` also binds it to ``NAME`` in the
user namespace, ``--quiet`` returns nothing. ``--engine spark`` hands the cell to
``paimon_lab.spark``. Errors show one short message instead of a traceback.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from paimon_lab.errors import PaimonLabError
from paimon_lab import sql as sql_module
from paimon_lab.sql.lexer import split_statements


class PaimonMagicError(Exception):
    """An error shown by IPython as one line (no traceback)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def _render_traceback_(self) -> list[str]:
        return [self.message]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="%%paimon", add_help=False)
    p.add_argument("--out", "-o", default=None)
    p.add_argument("--engine", "-e", default="paimon", choices=["paimon", "lab", "spark"])
    p.add_argument("--arrow", action="store_true")
    p.add_argument("--quiet", "-q", action="store_true")
    p.add_argument("--catalog", default=None)
    return p


def _split_options(line: str) -> tuple[list[str], str]:
    """Leading --options of a line; the rest is SQL (for the line magic)."""
    try:
        words = shlex.split(line, posix=True)
    except ValueError:
        return [], line
    opts: list[str] = []
    i = 0
    takes_value = {"--out", "-o", "--engine", "-e", "--catalog"}
    while i < len(words) and words[i].startswith("-"):
        opts.append(words[i])
        if words[i] in takes_value and i + 1 < len(words):
            opts.append(words[i + 1])
            i += 1
        i += 1
    if not opts:
        return [], line
    # cut the option text off the original line to keep the SQL's own quoting
    rest = line
    for w in opts:
        idx = rest.find(w)
        if idx >= 0:
            rest = rest[idx + len(w):]
    return opts, rest.strip()


def run_magic(shell, line: str, cell: str | None) -> Any:
    opts, inline_sql = _split_options(line or "")
    try:
        args = _parser().parse_args(opts)
    except SystemExit:
        raise PaimonMagicError("Usage: %%paimon [--out NAME] [--arrow] [--quiet] [--engine paimon|spark] "
                               "[--catalog WAREHOUSE]") from None
    text = cell if cell is not None else inline_sql
    if cell is not None and inline_sql:
        raise PaimonMagicError(f"Unexpected text after the %%paimon options: {inline_sql!r}")
    if not text or not text.strip():
        return None
    if args.engine == "spark":
        result = _run_spark(text, args.arrow)
    else:
        try:
            session = sql_module._session_for(args.catalog)
            result = session.run(text)
        except PaimonLabError as e:
            raise PaimonMagicError(f"{type(e).__name__}: {e}") from None
    if result is None:
        return None
    if not args.arrow and hasattr(result, "to_pandas"):
        result = result.to_pandas()
    if args.out:
        shell.user_ns[args.out] = result
    if args.quiet:
        return None
    return result


def _run_spark(text: str, arrow: bool = False) -> Any:
    """Run the statements with Spark through ``paimon_lab.spark.sql`` (the warehouse of the current
    SQL session's Paimon catalog, if any).

    The Spark session: the active one, or a new local one. Either way ``paimon_lab.spark``
    points Spark's Python workers at this interpreter before registering the data source (no
    ``PYSPARK_PYTHON`` to export) and checks once that a worker imports paimon_lab. Errors show
    the Python exception's own ``Type: message`` first, not Spark's JVM text around it."""
    try:
        from paimon_lab import spark as paimon_spark
        from paimon_lab.spark.env import WorkerEnvironmentError, python_error
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise PaimonMagicError(f"--engine spark needs PySpark and paimon_lab.spark, which cannot be imported here "
                               f"({e})") from None
    session = sql_module.default_session()
    entry = session.catalogs.get(session.current.catalog)
    warehouse = entry.catalog.warehouse if getattr(entry, "kind", None) == "paimon" else None
    result = None
    try:
        spark_session = SparkSession.getActiveSession() or _new_spark_session()
        for _, statement in split_statements(text):
            result = paimon_spark.sql(spark_session, statement, warehouse)
        if result is not None and hasattr(result, "toArrow"):
            # through Arrow: PySpark's own toPandas warns about (and mishandles) pandas 3
            result = result.toArrow()
            if not arrow:
                result = result.to_pandas()
    except WorkerEnvironmentError as e:  # several lines: what failed, and what to set
        raise PaimonMagicError(f"{type(e).__name__}: {e}") from None
    except PaimonLabError as e:
        if type(e).__name__ == "SparkJobError":  # its message starts with the task's Python error
            raise PaimonMagicError(str(e)) from None
        raise PaimonMagicError(f"{type(e).__name__}: {python_error(e) if _wraps_spark(e) else e}") from None
    except Exception as e:  # Spark's AnalysisException, a task's error inside a JVM trace, ...
        raise PaimonMagicError(python_error(e)) from None
    if result is None or isinstance(result, int):
        return None
    return result


def _wraps_spark(e: BaseException) -> bool:
    return "Traceback (most recent call last)" in str(e)


def _new_spark_session():
    """A local Spark session for ``--engine spark`` (loopback only, no UI) whose Python workers
    run this interpreter."""
    import sys

    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[*]").appName("paimon-lab")
            .config("spark.pyspark.python", sys.executable)
            .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate())


def load_ipython_extension(ip) -> None:
    """Register ``%paimon`` and ``%%paimon`` (``%load_ext paimon_lab`` / ``paimon_lab.magic``)."""

    def paimon(line: str, cell: str | None = None):
        return run_magic(ip, line, cell)

    paimon.__doc__ = __doc__
    ip.register_magic_function(paimon, magic_kind="line_cell", magic_name="paimon")


def unload_ipython_extension(ip) -> None:  # pragma: no cover - IPython keeps magics until restart
    pass
