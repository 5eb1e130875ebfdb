"""Timestamps cast to strings as Flink writes them: exactly p fractional digits for TIMESTAMP(p)
and TIMESTAMP_LTZ(p) (``2024-01-01 10:00:00.000`` for p = 3, no fraction for p = 0; Flink's and
Paimon's ``DateTimeUtils.formatTimestamp``), an LTZ as the session zone's wall clock without an
offset. DuckDB drops trailing zeros and appends '+08' to a TIMESTAMPTZ."""

from __future__ import annotations

from typing import Callable

from sqlglot import exp

_OFFSET = r"[+-][0-9]{2}(:[0-9]{2}){0,2}$"
# DuckDB's timestamp types and the digits each keeps (TIMESTAMPTZ: microseconds)
_UNITS = {"TIMESTAMP_S": 0, "TIMESTAMP_MS": 3, "TIMESTAMP": 6, "TIMESTAMP_NS": 9, "TIMESTAMP WITH TIME ZONE": 6}
_TYPE_UNITS = {exp.DataType.Type.TIMESTAMP_S: "TIMESTAMP_S", exp.DataType.Type.TIMESTAMP_MS: "TIMESTAMP_MS",
               exp.DataType.Type.TIMESTAMP: "TIMESTAMP", exp.DataType.Type.TIMESTAMP_NS: "TIMESTAMP_NS",
               exp.DataType.Type.TIMESTAMPTZ: "TIMESTAMP WITH TIME ZONE",
               exp.DataType.Type.TIMESTAMPLTZ: "TIMESTAMP WITH TIME ZONE"}

# a column's (DuckDB type, Flink precision) where the statement's tables say, else None
ColumnPrecision = Callable[[exp.Column], "tuple[str, int] | None"]


def precision_of(node: exp.Expression, column: ColumnPrecision) -> tuple[str, int] | None:
    """(DuckDB type, precision) of a timestamp expression whose Flink precision is known: a
    table's column, a cast to TIMESTAMP(p) / TIMESTAMP_LTZ(p), CURRENT_TIMESTAMP and
    TO_TIMESTAMP_LTZ (LTZ(3))."""
    while isinstance(node, exp.Paren):
        node = node.this
    if "timestamp" in node.meta:  # a function the planner rewrote (TO_TIMESTAMP_LTZ)
        return node.meta["timestamp"]
    if isinstance(node, exp.Column):
        return column(node)
    if isinstance(node, exp.Cast):
        to = node.args.get("to")
        if to is not None and to.this in _TYPE_UNITS and "precision" in to.meta:
            return _TYPE_UNITS[to.this], to.meta["precision"]
    if isinstance(node, exp.CurrentTimestamp):
        return "TIMESTAMP WITH TIME ZONE", 3
    return None


def _fraction(text: exp.Expression, digits: int) -> exp.Expression:
    """``text`` (DuckDB's rendering, trailing zeros dropped) with exactly ``digits`` fractional digits."""
    whole = exp.Anonymous(this="SPLIT_PART", expressions=[text.copy(), exp.Literal.string("."), exp.Literal.number(1)])
    if digits == 0:
        return whole
    frac = exp.Anonymous(this="SPLIT_PART", expressions=[text.copy(), exp.Literal.string("."), exp.Literal.number(2)])
    padded = exp.Anonymous(this="LEFT", expressions=[
        exp.Anonymous(this="RPAD", expressions=[frac, exp.Literal.number(digits), exp.Literal.string("0")]),
        exp.Literal.number(digits)])
    # '||', not CONCAT: CONCAT skips NULLs, so a NULL timestamp would show as '.'
    return exp.DPipe(this=exp.DPipe(this=whole, expression=exp.Literal.string(".")), expression=padded)


def timestamp_strings(ast: exp.Expression, column: ColumnPrecision) -> None:
    """Rewrite each cast to a string (and each timestamp operand of ``||``) so that a timestamp
    shows as Flink shows it. Which casts read a timestamp is known only once DuckDB binds the
    query, so each asks ``typeof``, which DuckDB folds to a constant."""
    for node in list(ast.find_all(exp.DPipe)):
        for key in ("this", "expression"):
            operand = node.args.get(key)
            if operand is not None and precision_of(operand, column) is not None:
                node.set(key, exp.Cast(this=operand.copy(), to=exp.DataType.build("VARCHAR")))
    for node in reversed(list(ast.find_all(exp.Cast))):  # inner casts first: the outer ones copy them
        to = node.args.get("to")
        if to is None or to.this not in exp.DataType.TEXT_TYPES or isinstance(node.this, (exp.Literal, exp.Null)):
            continue
        known = precision_of(node.this, column)
        text = exp.Anonymous(this="REGEXP_REPLACE", expressions=[node.copy(), exp.Literal.string(_OFFSET),
                                                                  exp.Literal.string("")])
        ifs = []
        for unit, digits in _UNITS.items():
            if known is not None and known[0] == unit:
                digits = known[1]
            ifs.append(exp.If(this=exp.Literal.string(unit), true=_fraction(text, digits)))
        case = exp.Case(this=exp.Anonymous(this="TYPEOF", expressions=[node.this.copy()]), ifs=ifs,
                        default=node.copy())
        if isinstance(node.parent, exp.Select) and node in node.parent.expressions:  # keep the column's name
            case = exp.alias_(case, node.sql(dialect="duckdb"), quoted=True)
        node.replace(case)
