"""Filters on table rows: parsed from SQL-like text or built in Python.

A :class:`Predicate` does three jobs: it becomes an Arrow expression that filters rows exactly,
it tells from a file's or partition's min/max/null-count statistics whether any row *may*
match (so the file can be skipped), and it says which columns it needs.

    parse_filter("dt = '20240101' AND id > 5", schema)
    col("dt") == "20240101"      # the same leaf, built in Python
"""

from __future__ import annotations

import bisect
import datetime as _dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from paimon_lab.errors import FilterError

Stats = Mapping[str, tuple]  # column -> (min, max, null_count); row count under key None


class Predicate:
    def to_expression(self) -> pc.Expression:
        raise NotImplementedError

    def may_match(self, stats: Stats, row_count: int) -> bool:
        """False only if no row described by ``stats`` can satisfy the predicate."""
        raise NotImplementedError

    def columns(self) -> set[str]:
        raise NotImplementedError

    def restrict(self, names: set[str]) -> Predicate | None:
        """The part of this predicate that only uses ``names`` (weaker or equal), or None."""
        raise NotImplementedError

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray:
        """The predicate on every row of ``table`` (true, false or null), with compute kernels
        called directly: the rows ``table.filter(self.to_expression())`` keeps are the true ones,
        without the cost of planning a query per call. NotImplementedError: use the expression."""
        raise NotImplementedError

    def __and__(self, other: Predicate) -> Predicate:
        return And((self, other))

    def __or__(self, other: Predicate) -> Predicate:
        return Or((self, other))

    def __invert__(self) -> Predicate:
        return Not(self)


def _arrow_literal(value: Any) -> Any:
    """A literal as Arrow compares it: a timestamp with nanoseconds (pandas' Timestamp, the value of
    a TIMESTAMP(7..9) literal) as a nanosecond scalar, since Arrow reads it as a datetime otherwise."""
    if isinstance(value, _dt.datetime) and hasattr(value, "nanosecond"):
        return pa.scalar(value, pa.timestamp("ns", tz="UTC" if value.tzinfo else None))
    return value


def _cmp(a: Any, b: Any, op: Callable[[Any, Any], bool]) -> bool:
    try:
        return op(a, b)
    except TypeError:
        return True  # incomparable stats never prune


@dataclass(frozen=True)
class Leaf(Predicate):
    op: str  # = != < <= > >= in not_in is_null is_not_null starts_with
    column: str
    literals: tuple = ()

    def to_expression(self) -> pc.Expression:
        f = pc.field(self.column)
        lits = tuple(_arrow_literal(v) for v in self.literals)
        if self.op == "=":
            return f == lits[0]
        if self.op == "!=":
            return f != lits[0]
        if self.op == "<":
            return f < lits[0]
        if self.op == "<=":
            return f <= lits[0]
        if self.op == ">":
            return f > lits[0]
        if self.op == ">=":
            return f >= lits[0]
        if self.op in ("in", "not_in"):
            # SQL: NULL IN (...) is NULL, and so is a miss when the list holds a NULL; Arrow's
            # is_in says false, which NOT would turn into a match.
            values = [v for v in lits if v is not None]
            unknown = pa.scalar(None, pa.bool_())
            hit = pc.if_else(f.is_valid(), f.isin(values), unknown)
            if len(values) < len(lits):
                hit = pc.if_else(hit, True, unknown)
            return hit if self.op == "in" else ~hit
        if self.op == "is_null":
            return f.is_null()
        if self.op == "is_not_null":
            return f.is_valid()
        if self.op == "starts_with":
            return pc.starts_with(f, lits[0])
        raise FilterError(f"Unknown operator {self.op}")

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray:
        f = table.column(self.column)
        lits = self.literals
        if self._has_null or (self.op in _BINARY and not lits):
            raise NotImplementedError  # NULL literals: leave the typing to the expression
        if self.op in _BINARY:
            return _BINARY[self.op](f, _arrow_literal(lits[0]))
        if self.op in ("in", "not_in"):
            hit = pc.is_in(f, value_set=self._value_set)
            if f.null_count:
                hit = pc.if_else(pc.is_valid(f), hit, pa.scalar(None, pa.bool_()))
            return hit if self.op == "in" else pc.invert(hit)
        if self.op == "is_null":
            return pc.is_null(f)
        if self.op == "is_not_null":
            return pc.is_valid(f)
        if self.op == "starts_with":
            return pc.starts_with(f, lits[0])
        raise NotImplementedError

    @cached_property
    def _has_null(self) -> bool:
        return any(v is None for v in self.literals)

    @cached_property
    def _value_set(self) -> pa.Array:
        return pa.array([_arrow_literal(v) for v in self.literals])

    @cached_property
    def _sorted_literals(self) -> list | None:
        values = [v for v in self.literals if v is not None]
        if any(v != v for v in values):  # noqa: PLR0124 - NaN: no total order
            return None
        try:
            return sorted(values)
        except TypeError:
            return None

    def may_match(self, stats: Stats, row_count: int) -> bool:
        if self.column not in stats:
            return True
        lo, hi, nulls = stats[self.column]
        if self.op == "is_null":
            return nulls is None or nulls > 0
        all_null = nulls is not None and nulls >= row_count
        if self.op == "is_not_null":
            return not all_null
        if all_null:
            return False
        if lo is None or hi is None:
            return True
        v = self.literals[0] if self.literals else None
        import operator as o
        if self.op == "=":
            return _cmp(lo, v, o.le) and _cmp(v, hi, o.le)
        if self.op == "!=":
            return not (_cmp(lo, v, o.eq) and _cmp(hi, v, o.eq) and lo == v == hi)
        if self.op == "<":
            return _cmp(lo, v, o.lt)
        if self.op == "<=":
            return _cmp(lo, v, o.le)
        if self.op == ">":
            return _cmp(hi, v, o.gt)
        if self.op == ">=":
            return _cmp(hi, v, o.ge)
        if self.op == "in":
            values = self._sorted_literals
            if values is not None and len(values) > 8:
                try:  # the smallest literal >= lo must not be above hi
                    i = bisect.bisect_left(values, lo)
                    return i < len(values) and values[i] <= hi
                except TypeError:
                    pass
            return any(_cmp(lo, x, o.le) and _cmp(x, hi, o.le) for x in self.literals if x is not None)
        if self.op == "not_in":
            return not (lo == hi and lo in self.literals)
        if self.op == "starts_with":
            if not isinstance(lo, str) or not isinstance(hi, str):
                return True
            return lo[: len(v)] <= v <= hi[: len(v)]
        return True

    def columns(self) -> set[str]:
        return {self.column}

    def restrict(self, names: set[str]) -> Predicate | None:
        return self if self.column in names else None


@dataclass(frozen=True)
class And(Predicate):
    children: tuple[Predicate, ...]

    def to_expression(self) -> pc.Expression:
        out = self.children[0].to_expression()
        for c in self.children[1:]:
            out = out & c.to_expression()
        return out

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray:
        out = self.children[0].evaluate(table)
        for c in self.children[1:]:
            out = pc.and_kleene(out, c.evaluate(table))
        return out

    def may_match(self, stats: Stats, row_count: int) -> bool:
        return all(c.may_match(stats, row_count) for c in self.children)

    def columns(self) -> set[str]:
        return set().union(*(c.columns() for c in self.children))

    def restrict(self, names: set[str]) -> Predicate | None:
        kept = tuple(r for r in (c.restrict(names) for c in self.children) if r is not None)
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else And(kept)


@dataclass(frozen=True)
class Or(Predicate):
    children: tuple[Predicate, ...]

    def to_expression(self) -> pc.Expression:
        out = self.children[0].to_expression()
        for c in self.children[1:]:
            out = out | c.to_expression()
        return out

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray:
        out = self.children[0].evaluate(table)
        for c in self.children[1:]:
            out = pc.or_kleene(out, c.evaluate(table))
        return out

    def may_match(self, stats: Stats, row_count: int) -> bool:
        return any(c.may_match(stats, row_count) for c in self.children)

    def columns(self) -> set[str]:
        return set().union(*(c.columns() for c in self.children))

    def restrict(self, names: set[str]) -> Predicate | None:
        parts = [c.restrict(names) for c in self.children]
        return None if any(p is None for p in parts) else Or(tuple(parts))


@dataclass(frozen=True)
class Not(Predicate):
    child: Predicate

    def to_expression(self) -> pc.Expression:
        return ~self.child.to_expression()

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray:
        return pc.invert(self.child.evaluate(table))

    def may_match(self, stats: Stats, row_count: int) -> bool:
        return True

    def columns(self) -> set[str]:
        return self.child.columns()

    def restrict(self, names: set[str]) -> Predicate | None:
        return self if self.columns() <= names else None


_BINARY = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
           ">": pc.greater, ">=": pc.greater_equal}


def filter_table(table: pa.Table, pred: Predicate | None) -> pa.Table:
    """``table.filter(pred.to_expression())``, computed without a query plan where possible."""
    if pred is None or table.num_rows == 0:
        return table
    try:
        mask = pred.evaluate(table)
    except (NotImplementedError, pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid, TypeError):
        return table.filter(pred.to_expression())
    return table.filter(mask)


def match_mask(table: pa.Table, pred: Predicate) -> np.ndarray:
    """Boolean numpy mask of the rows of ``table`` that ``pred`` selects (null: not selected)."""
    if table.num_rows:
        try:
            mask = pred.evaluate(table)
        except (NotImplementedError, pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid, TypeError):
            pass
        else:
            if isinstance(mask, pa.ChunkedArray):
                mask = mask.combine_chunks() if mask.num_chunks != 1 else mask.chunk(0)
            if mask.null_count:
                mask = pc.fill_null(mask, False)
            return mask.to_numpy(zero_copy_only=False).astype(bool, copy=False)
    indexed = table.append_column("__row", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    out = np.zeros(table.num_rows, dtype=bool)
    out[indexed.filter(pred.to_expression()).column("__row").to_numpy()] = True
    return out


class col:
    """Build predicates in Python: ``(col("a") > 1) & col("b").isin(["x", "y"])``."""

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, v):  # type: ignore[override]
        return Leaf("=", self.name, (v,))

    def __ne__(self, v):  # type: ignore[override]
        return Leaf("!=", self.name, (v,))

    def __lt__(self, v):
        return Leaf("<", self.name, (v,))

    def __le__(self, v):
        return Leaf("<=", self.name, (v,))

    def __gt__(self, v):
        return Leaf(">", self.name, (v,))

    def __ge__(self, v):
        return Leaf(">=", self.name, (v,))

    def isin(self, values: Sequence) -> Predicate:
        return Leaf("in", self.name, tuple(values))

    def is_null(self) -> Predicate:
        return Leaf("is_null", self.name)

    def is_not_null(self) -> Predicate:
        return Leaf("is_not_null", self.name)

    def startswith(self, prefix: str) -> Predicate:
        return Leaf("starts_with", self.name, (prefix,))

    def between(self, low, high) -> Predicate:
        return And((Leaf(">=", self.name, (low,)), Leaf("<=", self.name, (high,))))


# --------------------------------------------------------------------------- binding

def bind(pred: Predicate, schema: pa.Schema) -> Predicate:
    """Check columns exist and cast every literal to its column's type."""
    if isinstance(pred, Leaf):
        if pred.column not in schema.names:
            raise FilterError(f"Filter refers to unknown column '{pred.column}'; columns are {schema.names}")
        target = schema.field(pred.column).type
        if pa.types.is_decimal(target) and pred.literals:
            return _bind_decimal(pred, target)
        many = _coerce_many(pred.literals, target) if len(pred.literals) > 8 else None
        if many is not None:
            return Leaf(pred.op, pred.column, many)
        return Leaf(pred.op, pred.column, tuple(_coerce(v, target, pred.column) for v in pred.literals))
    if isinstance(pred, (And, Or)):
        return type(pred)(tuple(bind(c, schema) for c in pred.children))
    if isinstance(pred, Not):
        return Not(bind(pred.child, schema))
    raise FilterError(f"Not a predicate: {pred!r}")


def _coerce_many(values: tuple, target: pa.DataType) -> tuple | None:
    """:func:`_coerce` of a long literal list in one go, for the common plain cases (None: do
    them one by one)."""
    if pa.types.is_integer(target) and all(type(v) is int for v in values):
        try:
            return tuple(pa.array(values, pa.int64()).cast(target).to_pylist())
        except (pa.ArrowInvalid, OverflowError):
            return None
    if (pa.types.is_string(target) or pa.types.is_large_string(target)) and all(type(v) is str for v in values):
        return tuple(values)
    return None


_ZONE = re.compile(r"(Z|[+-]\d{2}(:?\d{2})?)$")


def _timestamp_literal(text: str, target: pa.DataType, column: str) -> Any:
    """A timestamp string compared with a timestamp column. With no session zone in the Python API,
    a zone-less string is UTC for a TIMESTAMP_LTZ column (``'... 18:00:00+08:00'`` or ``Z`` names
    another offset); a TIMESTAMP column has no zone, so an offset there is refused."""
    text = text.strip().replace("T", " ")
    zone = _ZONE.search(text) if len(text) > 10 else None
    if zone is not None and not target.tz:
        raise FilterError(f"Value '{text}' has a zone offset, but column '{column}' is a TIMESTAMP without time "
                          "zone: compare it with a local date-time")
    offset = _dt.datetime.fromisoformat("2000-01-01 00:00:00" + (zone.group(1) if zone else "")).utcoffset() \
        if zone else None
    local = text[:zone.start()].rstrip() if zone else text
    if target.unit == "ns" and re.search(r"[.]\d{7}", local):  # nanoseconds, which datetime drops
        nanos = pa.scalar(local).cast(pa.timestamp("ns")).cast(pa.int64()).as_py()
        nanos -= int(offset.total_seconds()) * 10 ** 9 if offset else 0
        return pa.scalar(nanos, pa.int64()).cast(pa.timestamp("ns", tz=target.tz)).as_py()
    value = _dt.datetime.fromisoformat(local)
    if target.tz:
        value = value.replace(tzinfo=_dt.timezone(offset) if offset is not None else _dt.timezone.utc)
    return pa.scalar(value).cast(target).as_py()


def _coerce(value: Any, target: pa.DataType, column: str) -> Any:
    if value is None:
        return None
    try:
        if pa.types.is_timestamp(target) and isinstance(value, str):
            return _timestamp_literal(value, target, column)
        elif pa.types.is_date(target) and isinstance(value, str):
            value = _dt.date.fromisoformat(value)
        elif pa.types.is_string(target) or pa.types.is_large_string(target):
            if not isinstance(value, str):
                raise TypeError
            return value
        elif pa.types.is_integer(target) and isinstance(value, float) and not value.is_integer():
            return value  # compare as float: `id > 2.5`
        value = _arrow_literal(value)
        return (value if isinstance(value, pa.Scalar) else pa.scalar(value)).cast(target).as_py()
    except (TypeError, ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise FilterError(f"Value {value!r} cannot be compared with column '{column}' of type {target}") from None


def _exact_decimal(value: Any, target: pa.DataType, column: str):
    """A literal as an exact Decimal (a float by its shortest repr, as it was written)."""
    import decimal

    if isinstance(value, decimal.Decimal):
        out = value
    elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise FilterError(f"Value {value!r} cannot be compared with column '{column}' of type {target}")
    else:
        try:
            out = decimal.Decimal(repr(value) if isinstance(value, float) else str(value).strip())
        except decimal.InvalidOperation:
            raise FilterError(f"Value {value!r} cannot be compared with column '{column}' of type {target}") from None
    if not out.is_finite():
        raise FilterError(f"Value {value!r} cannot be compared with column '{column}' of type {target}")
    return out


def _bind_decimal(pred: Leaf, target: pa.DataType) -> Predicate:
    """Bind a leaf on a DECIMAL(p, s) column. Literals (int, float, Decimal, numeric text) that
    the column type holds exactly become values of that type; others are compared exactly by
    rewriting the leaf: ``x > 10.555`` on DECIMAL(10, 2) is ``x >= 10.56``, ``x = 10.555``
    matches nothing, a literal beyond the type's range compares with its largest value."""
    import decimal

    if pred.op == "starts_with":
        raise FilterError(f"Column '{pred.column}' of type {target} cannot be matched with LIKE")
    scale, precision = target.scale, target.precision
    with decimal.localcontext() as ctx:
        ctx.prec = 100
        quantum = decimal.Decimal(1).scaleb(-scale)
        largest = (decimal.Decimal(10) ** precision - 1).scaleb(-scale)
        exact = [None if v is None else _exact_decimal(v, target, pred.column) for v in pred.literals]

        def fits(v) -> bool:
            return abs(v) <= largest and v == v.quantize(quantum, rounding=decimal.ROUND_FLOOR)

        def q(v, rounding=decimal.ROUND_FLOOR):
            return v.quantize(quantum, rounding=rounding)

        if pred.op in ("in", "not_in"):
            kept = tuple(None if v is None else q(v) for v in exact if v is None or fits(v))
            return Leaf(pred.op, pred.column, kept)  # a value the column cannot hold matches no row
        v = exact[0]
        if v is None or fits(v):
            return Leaf(pred.op, pred.column, (None if v is None else q(v),))
        nothing = Leaf("in", pred.column, ())
        not_null = Leaf("is_not_null", pred.column)
        if pred.op == "=":
            return nothing
        if pred.op == "!=":
            return not_null
        if v > largest:
            return nothing if pred.op in (">", ">=") else not_null
        if v < -largest:
            return not_null if pred.op in (">", ">=") else nothing
        if pred.op in (">", ">="):
            return Leaf(">=", pred.column, (q(v, decimal.ROUND_CEILING),))
        return Leaf("<=", pred.column, (q(v, decimal.ROUND_FLOOR),))


# --------------------------------------------------------------------------- parsing

_CMP = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}


def parse_filter(text: str, schema: pa.Schema | None = None) -> Predicate:
    """Parse a SQL boolean expression (``AND``/``OR``/``NOT``, comparisons, ``IN``, ``BETWEEN``,
    ``IS [NOT] NULL``, ``LIKE 'prefix%'``) into a predicate, bound to ``schema`` if given.

    A timestamp string compared with a TIMESTAMP_LTZ column is UTC unless it names an offset
    (``'2024-01-01 18:00:00+08:00'``, ``...Z``); there is no session time zone outside SQL."""
    long_list = _parse_long_in_list(text)
    if long_list is not None:
        return bind(long_list, schema) if schema is not None else long_list
    try:
        tree = sqlglot.parse_one(text)
    except sqlglot.errors.ParseError as e:
        raise FilterError(f"Cannot parse filter {text!r}: {str(e).splitlines()[0]}") from None
    pred = _convert(tree, text)
    return bind(pred, schema) if schema is not None else pred


def predicate_of(tree: exp.Expression, schema: pa.Schema | None = None) -> Predicate:
    """:func:`parse_filter` of an expression sqlglot has already parsed (no SQL text round trip)."""
    pred = _convert(tree, _SqlText(tree))
    return bind(pred, schema) if schema is not None else pred


class _SqlText:
    """An expression's SQL text, rendered only when an error message quotes it."""

    def __init__(self, node: exp.Expression):
        self.node = node

    def __repr__(self) -> str:
        return repr(self.node.sql())


_LONG_IN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s+(NOT\s+)?IN\s*\((.*)\)\s*", re.DOTALL | re.IGNORECASE)
_IN_ITEM = re.compile(r"\s*(?:(-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)|'([^'\\]*)'|(NULL))\s*(,|$)", re.IGNORECASE)


def _parse_long_in_list(text: str) -> Predicate | None:
    """``col [NOT] IN (<many plain literals>)`` without a SQL parser (a DELETE of thousands of
    keys spends seconds in one). Anything less plain, or a short list, returns None."""
    m = _LONG_IN.fullmatch(text)
    if m is None or m.group(3).count(",") < 15:
        return None
    body, pos, values, sep = m.group(3), 0, [], ","
    while pos < len(body):
        item = _IN_ITEM.match(body, pos)
        if item is None or item.end() == pos:
            return None
        number, string, _null, sep = item.groups()
        if number is not None:
            values.append(float(number) if any(c in number for c in ".eE") else int(number))
        elif string is not None:
            values.append(string)
        else:
            values.append(None)
        pos = item.end()
        if sep == "" and pos < len(body):
            return None
    if sep != "":
        return None  # empty, or a trailing comma
    return Leaf("not_in" if m.group(2) else "in", m.group(1), tuple(values))


def _column(node: exp.Expression, text: str) -> str | None:
    if isinstance(node, exp.Paren):
        return _column(node.this, text)
    if isinstance(node, exp.Column):
        return node.name
    return None


def _literal(node: exp.Expression, text: str) -> Any:
    if isinstance(node, exp.Paren):
        return _literal(node.this, text)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, exp.Neg):
        return -_literal(node.this, text)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        num = node.this
        return float(num) if any(c in num for c in ".eE") else int(num)
    if isinstance(node, exp.Cast):
        return _literal(node.this, text)
    if isinstance(node, (exp.Date, exp.TsOrDsToDate)) and node.this is not None:
        return _dt.date.fromisoformat(_literal(node.this, text))
    raise FilterError(f"Filter {text!r}: expected a literal value, got {node.sql()!r}")


def _convert(node: exp.Expression, text: str) -> Predicate:
    if isinstance(node, exp.Paren):
        return _convert(node.this, text)
    if isinstance(node, exp.And):
        return And((_convert(node.this, text), _convert(node.expression, text)))
    if isinstance(node, exp.Or):
        return Or((_convert(node.this, text), _convert(node.expression, text)))
    if isinstance(node, exp.Not):
        inner = node.this.this if isinstance(node.this, exp.Paren) else node.this
        if isinstance(inner, exp.Is):
            name = _column(inner.this, text)
            if name and isinstance(inner.expression, exp.Null):
                return Leaf("is_not_null", name)
        if isinstance(inner, exp.In):
            base = _convert(inner, text)
            assert isinstance(base, Leaf)
            return Leaf("not_in", base.column, base.literals)
        return Not(_convert(node.this, text))
    for cls, op in _CMP.items():
        if isinstance(node, cls):
            left, right = _column(node.this, text), _column(node.expression, text)
            if left is not None and right is None:
                return Leaf(op, left, (_literal(node.expression, text),))
            if right is not None and left is None:
                return Leaf(_FLIP[op], right, (_literal(node.this, text),))
            quoted = left is not None and right is not None and any(
                isinstance(side, exp.Column) and side.this.args.get("quoted") for side in (node.this, node.expression))
            hint = "; double quotes name a column: write a string value in single quotes ('a')" if quoted else ""
            raise FilterError(f"Filter {text!r}: {node.sql()!r} must compare a column with a value{hint}")
    if isinstance(node, exp.Is):
        name = _column(node.this, text)
        if name and isinstance(node.expression, exp.Null):
            return Leaf("is_null", name)
    if isinstance(node, exp.In):
        name = _column(node.this, text)
        if name:
            return Leaf("in", name, tuple(_literal(e, text) for e in node.expressions))
    if isinstance(node, exp.Between):
        name = _column(node.this, text)
        if name:
            return And((Leaf(">=", name, (_literal(node.args["low"], text),)),
                        Leaf("<=", name, (_literal(node.args["high"], text),))))
    if isinstance(node, exp.Like):
        name = _column(node.this, text)
        pattern = _literal(node.expression, text)
        if name and isinstance(pattern, str) and pattern.endswith("%") and not any(
                c in pattern[:-1] for c in "%_"):
            return Leaf("starts_with", name, (pattern[:-1],))
        raise FilterError(f"Filter {text!r}: only LIKE 'prefix%' patterns are supported")
    raise FilterError(f"Filter {text!r}: unsupported expression {node.sql()!r}")
