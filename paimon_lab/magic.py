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
``--engine spark`` hands the cell to ``paimon_lab.spark``. A mistake in the SQL shows one red
line, the SQL line with a caret under the spot and foldable details, not a traceback
(``short_errors``). Tab completes table, column, system table and procedure names in the SQL
(:func:`paimon_matcher`, registered with the magics).
"""

from __future__ import annotations

import argparse
import html
import re
import shlex
from collections import ChainMap
from typing import Any, Callable

import pyarrow as pa
from IPython.core.completer import SimpleCompletion, context_matcher
from IPython.core.magic import Magics, line_cell_magic, magics_class, needs_local_scope, no_var_expand
from IPython.display import display
from traitlets import Bool, Int

from paimon_lab import sql as sql_module
from paimon_lab.errors import PaimonLabError
from paimon_lab.sql.common import display_text
from paimon_lab.sql.complete import Completion
from paimon_lab.sql.complete import complete as complete_sql
from paimon_lab.sql.errors import SqlError, excerpt_of
from paimon_lab.sql.feedback import ScriptError, StatementResult
from paimon_lab.sql.lexer import split_statements
from paimon_lab.sql.params import interpolate
from paimon_lab.utils.html import Text

DISPLAYLIMIT = 10  # jupysql's SqlMagic.displaylimit default


class PaimonMagicError(Exception):
    """A user's mistake, shown by IPython without a traceback: a one-line red ``message``, the
    offending line of SQL with a caret (``excerpt``), and ``details`` shown after it, foldable in
    a notebook. ``error`` is the paimon-lab error behind it (None for the magic's own)."""

    def __init__(self, message: str, excerpt: str | None = None, details: str | None = None,
                 error: BaseException | None = None):
        super().__init__(message)
        self.message = message
        self.excerpt = excerpt
        self.details = details
        self.error = error

    def _render_traceback_(self) -> list[str]:
        return [f"{_RED}{self.message}{_RESET}"] + (self.excerpt.split("\n") if self.excerpt else [])

    def details_bundle(self) -> dict[str, str]:
        """The details as plain text, and as a folded ``<details>`` block for notebooks."""
        text = self.details or ""
        return {"text/plain": text,
                "text/html": f"<details class='paimon-error-details'><summary>details</summary>"
                             f"<pre>{html.escape(text)}</pre></details>"}


_RED, _RESET = "\x1b[31m", "\x1b[0m"
_HELP = ("%paimon --help lists the magic's options; %config PaimonMagic.short_errors = False shows the "
         "Python traceback")


def user_error(e: PaimonLabError, script: str | None = None, short: bool = True) -> Exception:
    """What the magic raises for an error of the user's SQL or settings: a :class:`PaimonMagicError`
    (``short``), or a RuntimeError chained to ``e`` whose traceback IPython shows in full."""
    where = f"{e.progress}: " if isinstance(e, ScriptError) and script is not None and \
        len(split_statements(script)) > 1 else ""
    kind = "SqlError" if isinstance(e, SqlError) else type(e).__name__
    message = f"{where}{kind}: {e}"
    if not short:
        return RuntimeError(message)
    excerpt = None
    if isinstance(e, SqlError):  # positioned in its statement, or (with none) in the cell's text
        excerpt = e.excerpt() or (excerpt_of(script, e.line, e.column) if e.source is None else None)
    details = []
    if isinstance(e, SqlError):
        if e.detail:
            details.append(e.detail)
        if e.statement and e.statement.strip() and (excerpt is None or e.statement.strip().count("\n") > 1):
            details.append("statement:\n" + e.statement.strip())
    cause = e.__cause__ if isinstance(e.__cause__, PaimonLabError) else None
    details.append(f"exception: {type(e).__module__}.{type(e).__qualname__}" +
                   (f" (from {type(cause).__module__}.{type(cause).__qualname__})" if cause is not None else ""))
    details.append(_HELP)
    return PaimonMagicError(message, excerpt, "\n\n".join(details), e)


# ---------------------------------------------------------------------------------- completion

def _sql_offset(line: str) -> int | None:
    """Where the SQL starts in the text after ``%paimon`` (past ``NAME <<`` and the options);
    None while the options are being typed."""
    i = 0
    m = _ASSIGN.match(line)
    if m:
        i = m.end()
    while True:
        rest = line[i:]
        word = re.match(r"\s*(\S+)", rest)
        if word is None or not word.group(1).startswith("-"):
            break
        i += word.end()
        if word.group(1) in _TAKES_VALUE:
            value = re.match(r"\s*\S+", line[i:])
            if value is None:
                return None
            i += value.end()
    m = _ASSIGN.match(line, i)
    if m:
        i = m.end()
    return i


def sql_completions(full_text: str, offset: int) -> tuple[int, list[Completion]] | None:
    """The SQL completions at ``offset`` of a cell's text: ``(start, candidates)`` when the cursor
    is in the SQL of a ``%%paimon`` cell or a ``%paimon`` line (the fragment from ``start`` to
    ``offset`` is replaced by a candidate's text), else None."""
    lines = full_text.split("\n")
    line_no = full_text.count("\n", 0, offset)
    line_start = offset - len(full_text[:offset].rsplit("\n", 1)[-1])
    first = lines[0].lstrip()
    if first.startswith("%%paimon") and line_no > 0:
        header, sql_start = first[len("%%paimon"):], len(lines[0]) + 1
        sql = full_text[sql_start:]
    else:
        line = full_text[line_start:offset]
        stripped = line.lstrip()
        if not stripped.startswith("%paimon") or stripped.startswith("%paimon_"):
            return None
        after = stripped[len("%paimon"):]
        if after and not after[0].isspace():
            return None
        at = _sql_offset(after)
        if at is None:
            return None
        header, sql_start = after[:at], line_start + (len(line) - len(stripped)) + len("%paimon") + at
        sql = full_text[sql_start:offset]
    try:
        args, _ = parse_line(header)
        session = sql_module._session_for(args.catalog)
    except (PaimonMagicError, PaimonLabError):
        session = sql_module.default_session()
    start, items = complete_sql(session, sql, offset - sql_start)
    return sql_start + start, items


@context_matcher()
def paimon_matcher(context) -> dict:
    """IPython completion matcher (API v2): SQL names in ``%%paimon`` cells and ``%paimon``
    lines (see :func:`paimon_lab.sql.complete.complete`); other cells are left to IPython."""
    lines = context.full_text.split("\n")
    offset = sum(len(x) + 1 for x in lines[:context.cursor_line]) + context.cursor_position
    found = sql_completions(context.full_text, offset)
    if found is None:
        return {"completions": [], "suppress": False}
    start, items = found
    return {"completions": [SimpleCompletion(c.text, type=c.kind) for c in items],
            "matched_fragment": context.full_text[start:offset], "suppress": True, "ordered": True}


def _show_details(result) -> None:
    """post_run_cell: after a cell that failed with a user's mistake, its details (below the
    error, where a notebook folds them)."""
    error = getattr(result, "error_in_exec", None)
    if isinstance(error, PaimonMagicError) and error.details:
        display(error.details_bundle(), raw=True)


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

def run_statements(session, text: str, report: Callable[[str], None] | None,
                   short: bool = True) -> tuple[pa.Table | None, list[StatementResult]]:
    """Run the cell's statements in ``session``: the last result table (None if none) and what
    each statement did; ``report`` gets each DDL/DML statement's feedback line as it finishes.
    Errors are raised as :func:`user_error` makes them."""
    last, steps = None, []
    try:
        for step in session.statements(text):
            if step.result is not None:
                last = step.result
            steps.append(StatementResult(step.index, step.text, None, step.feedback))
            message = step.feedback.message
            if report is not None and message and step.result is None:
                report(message)
    except PaimonLabError as e:
        raise user_error(e, text, short) from (e if not short else None)
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
    short = getattr(settings, "short_errors", True)
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
        raise user_error(e, text, short) from (e if not short else None)
    as_pandas = autopandas and not args.arrow
    steps: list[StatementResult] = []
    if args.engine == "spark":
        result = _run_spark(text, arrow=True)
    else:
        try:
            session = sql_module._session_for(args.catalog)
        except PaimonLabError as e:
            raise user_error(e, short=short) from (e if not short else None)
        report = print if feedback and not args.quiet else None
        result, steps = run_statements(session, text, report, short)
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
    short_errors = Bool(True, config=True,
                        help="Show a mistake in the SQL as one red line, the SQL line with a caret under the "
                             "spot and foldable details, without a traceback (jupysql's setting; False: the "
                             "full Python traceback). Errors of paimon-lab itself always show their traceback.")

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
        reason = str(e) if "paimon-lab[spark]" in str(e) else f"{e}; pip install 'paimon-lab[spark]'"
        raise PaimonMagicError(f"--engine spark needs PySpark and paimon_lab.spark, which cannot be imported here "
                               f"({reason})") from None
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
    if paimon_matcher not in ip.Completer.custom_matchers:
        ip.Completer.custom_matchers.append(paimon_matcher)
    if _show_details not in ip.events.callbacks["post_run_cell"]:
        ip.events.register("post_run_cell", _show_details)


def unload_ipython_extension(ip) -> None:  # pragma: no cover - IPython keeps magics until restart
    pass
