"""IPython magics: ``%%paimon`` (a cell of SQL statements) and ``%paimon`` (one line).

    %load_ext paimon_lab
    %%paimon
    CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = '/tmp/wh');
    USE CATALOG paimon;
    SELECT * FROM t

The last query's result is displayed and returned (so ``_`` holds it) as a pandas DataFrame of
at most ``displaylimit`` rows; a larger result shows its first rows and says "showing N of M
rows" (only those rows become pandas). ``--out NAME`` (or ``%%paimon NAME <<``) binds the whole
result to NAME; a cell without a query binds what its statements did. DDL and DML statements
say what they did as they run ("inserted 3 rows into c.db.t — snapshot 2"). ``{name}`` puts a
notebook variable into the SQL as a quoted literal; ``{{name}}`` as raw SQL text.
``--engine spark`` hands the cell to ``paimon_lab.spark``. Errors show one short message
instead of a traceback.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections import ChainMap
from typing import Any, Callable

import pyarrow as pa
from IPython.core.magic import Magics, line_cell_magic, magics_class, needs_local_scope, no_var_expand
from traitlets import Bool, Int

from paimon_lab import sql as sql_module
from paimon_lab.errors import PaimonLabError
from paimon_lab.sql.common import display_text
from paimon_lab.sql.feedback import ScriptError, StatementResult
from paimon_lab.sql.lexer import split_statements
from paimon_lab.sql.params import interpolate
from paimon_lab.utils.html import Text

DISPLAYLIMIT = 10  # jupysql's SqlMagic.displaylimit default


class PaimonMagicError(Exception):
    """An error shown by IPython as one line (no traceback)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def _render_traceback_(self) -> list[str]:
        return [self.message]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="%paimon", add_help=False, formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%%%%paimon [options] [NAME <<]  (the SQL in the cell)  |  %%paimon [options] [NAME <<] SQL",
        epilog=_EPILOG)
    p.add_argument("-h", "--help", action="store_true", help="show this help and return")
    p.add_argument("-o", "--out", metavar="NAME", default=None,
                   help="bind the whole result (not cut to displaylimit) to NAME in the notebook; a cell "
                        "without a query binds one row per statement (kind, target, rows, snapshot_id, "
                        "message). 'NAME <<' before the SQL does the same")
    p.add_argument("--arrow", action="store_true", help="return a pyarrow.Table instead of a pandas DataFrame")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="return and display nothing, and print no per-statement feedback")
    p.add_argument("-e", "--engine", default="paimon", choices=["paimon", "lab", "spark"],
                   help="run on paimon-lab's SQL engine (default) or on Spark SQL through paimon_lab.spark")
    p.add_argument("--catalog", metavar="WAREHOUSE", default=None,
                   help="run in the session of this warehouse path instead of the default session")
    return p


_EPILOG = """\
variables:
  {name}     the value of notebook variable `name` as a SQL literal: a str is quoted (quotes escaped),
             numbers, bools, None, date/datetime/time, Decimal and bytes become literals, a list or
             tuple becomes (v1, v2, ...) for IN. Safe for any value.
  {{name}}   str(name) pasted as raw SQL text (a table or column name): NOT quoted, never for
             user input. Braces inside string literals and comments are left alone.

settings (%config PaimonMagic.<name> = <value>):
  displaylimit  rows shown and returned (default 10, jupysql's; 0 or None: all); --out gets all rows
  autopandas    True (default): results are pandas DataFrames; False: pyarrow.Tables
  feedback      True (default): print what each DDL/DML statement did, e.g. "inserted 3 rows into
                c.db.t — snapshot 2"
"""


_ASSIGN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*<<")
_TAKES_VALUE = {"--out", "-o", "--engine", "-e", "--catalog"}


def _split_options(line: str) -> tuple[list[str], str]:
    """Leading --options of a line; the rest is SQL (for the line magic)."""
    try:
        words = shlex.split(line, posix=True)
    except ValueError:
        return [], line
    opts: list[str] = []
    i = 0
    while i < len(words) and words[i].startswith("-"):
        opts.append(words[i])
        if words[i] in _TAKES_VALUE and i + 1 < len(words):
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


def parse_line(line: str) -> tuple[argparse.Namespace, str]:
    """The options of a magic's line and the SQL after them; ``NAME <<`` (before or after the
    options) sets ``out``."""
    assign = None
    m = _ASSIGN.match(line)
    if m:
        assign, line = m.group(1), line[m.end():]
    opts, rest = _split_options(line)
    m = _ASSIGN.match(rest)
    if m and assign is None:
        assign, rest = m.group(1), rest[m.end():].strip()
    try:
        args = _parser().parse_args(opts)
    except SystemExit:
        raise PaimonMagicError(f"{_parser().format_usage().strip()}\n(%paimon --help lists the options)") from None
    if assign is not None:
        if args.out is not None and args.out != assign:
            raise PaimonMagicError(f"Both --out {args.out} and {assign} << given; use one")
        args.out = assign
    if args.out is not None and not args.out.isidentifier():
        raise PaimonMagicError(f"--out {args.out!r}: not a Python name")
    return args, rest.strip()


def help_text() -> str:
    return _parser().format_help()


# ---------------------------------------------------------------------------------- results

def run_statements(session, text: str, report: Callable[[str], None] | None) -> tuple[pa.Table | None,
                                                                                       list[StatementResult]]:
    """Run the cell's statements in ``session``: the last result table (None if none) and what
    each statement did; ``report`` gets each DDL/DML statement's feedback line as it finishes."""
    last, steps = None, []
    try:
        for step in session.statements(text):
            if step.result is not None:
                last = step.result
            steps.append(StatementResult(step.index, step.text, None, step.feedback))
            message = step.feedback.message
            if report is not None and message and step.result is None:
                report(message)
    except ScriptError as e:
        total = len(split_statements(text))
        where = f"{e.progress}: " if total > 1 else ""
        raise PaimonMagicError(f"{where}SqlError: {e}") from None
    except PaimonLabError as e:
        raise PaimonMagicError(f"{type(e).__name__}: {e}") from None
    return last, steps


def feedback_table(steps: list[StatementResult]) -> pa.Table:
    """One row per statement: its index, kind, target, rows, snapshot_id and message."""
    fb = [s.feedback for s in steps]
    return pa.table({
        "statement": pa.array([s.index for s in steps], pa.int64()),
        "kind": pa.array([f.kind for f in fb], pa.string()),
        "target": pa.array([f.target for f in fb], pa.string()),
        "rows": pa.array([f.rows for f in fb], pa.int64()),
        "snapshot_id": pa.array([f.snapshot_id for f in fb], pa.int64()),
        "message": pa.array([f.message for f in fb], pa.string()),
    })


def head(table: pa.Table, limit: int | None) -> tuple[pa.Table, int]:
    """The first ``limit`` rows (a zero-copy slice; None or <= 0: all) and the total row count."""
    total = table.num_rows
    if limit is None or limit <= 0 or total <= limit:
        return table, total
    return table.slice(0, limit), total


def _convert(table: pa.Table, as_pandas: bool) -> Any:
    return table.to_pandas() if as_pandas else table


# ---------------------------------------------------------------------------------- the magic

def run_magic(shell, line: str, cell: str | None, settings: Any = None, local_ns: dict | None = None) -> Any:
    """What ``%paimon`` / ``%%paimon`` do; ``settings`` carries displaylimit, autopandas and
    feedback (a :class:`PaimonMagic`; defaults without one)."""
    displaylimit = getattr(settings, "displaylimit", DISPLAYLIMIT)
    autopandas = getattr(settings, "autopandas", True)
    feedback = getattr(settings, "feedback", True)
    args, inline_sql = parse_line(line or "")
    if args.help:
        print(help_text())
        return None
    text = cell if cell is not None else inline_sql
    if cell is not None and inline_sql:
        raise PaimonMagicError(f"Unexpected text after the %%paimon options: {inline_sql!r}")
    if not text or not text.strip():
        return None
    try:
        text = interpolate(text, ChainMap(local_ns or {}, shell.user_ns if shell is not None else {}))
    except PaimonLabError as e:
        raise PaimonMagicError(f"{type(e).__name__}: {e}") from None
    as_pandas = autopandas and not args.arrow
    steps: list[StatementResult] = []
    if args.engine == "spark":
        result = _run_spark(text, arrow=True)
    else:
        try:
            session = sql_module._session_for(args.catalog)
        except PaimonLabError as e:
            raise PaimonMagicError(f"{type(e).__name__}: {e}") from None
        report = print if feedback and not args.quiet else None
        result, steps = run_statements(session, text, report)
    if args.out:
        bound = result if result is not None else (feedback_table(steps) if steps else None)
        shell.user_ns[args.out] = None if bound is None else _convert(bound, as_pandas)
    if result is None or args.quiet:
        return None
    if not isinstance(result, pa.Table):
        return result
    text = None if args.arrow else display_text(result)
    if text is not None:  # SHOW CREATE: the statement as text, one column or option per line
        return Text(text)
    shown, total = head(result, displaylimit)
    if shown.num_rows < total:
        print(f"showing {shown.num_rows:,} of {total:,} rows (displaylimit {displaylimit}; for all rows: "
              f"--out NAME, or %config PaimonMagic.displaylimit = 0)")
    return _convert(shown, as_pandas)


@magics_class
class PaimonMagic(Magics):
    """``%paimon`` / ``%%paimon``; settings through ``%config PaimonMagic.<name> = <value>``."""

    displaylimit = Int(DISPLAYLIMIT, allow_none=True, config=True,
                       help="Rows of a result shown and returned (0 or None: all). Larger results show their "
                            "first rows and say 'showing N of M rows'; --out NAME gets all of them.")
    autopandas = Bool(True, config=True,
                      help="Return results as pandas DataFrames (False: as pyarrow.Tables, like --arrow).")
    feedback = Bool(True, config=True,
                    help="Print what each DDL/DML statement did ('inserted 3 rows into c.db.t — snapshot 2').")

    @no_var_expand  # {name} is ours to expand, as a quoted literal: IPython would paste raw text
    @needs_local_scope
    @line_cell_magic
    def paimon(self, line: str, cell: str | None = None, local_ns: dict | None = None):
        return run_magic(self.shell, line, cell, self, local_ns)


PaimonMagic.paimon.__doc__ = __doc__ + "\n" + help_text()


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
    """Register ``%paimon`` and ``%%paimon`` (``%load_ext paimon_lab`` / ``paimon_lab.magic``) and
    their settings (``%config PaimonMagic``)."""
    ip.register_magics(PaimonMagic(shell=ip))


def unload_ipython_extension(ip) -> None:  # pragma: no cover - IPython keeps magics until restart
    pass
