"""A query that is one filtered read of a table needs no DuckDB: ``SELECT * | columns FROM t
[WHERE ...]`` over a relation that applies its pushed-down filter exactly, every WHERE conjunct
pushed into the read, and only column types DuckDB hands back unchanged. The answer is the read's
Arrow table, named and typed as DuckDB would return it (every field nullable, no metadata).

A conjunct qualifies only where the read's filter and DuckDB's agree on every row: comparisons,
IN, BETWEEN, IS [NOT] NULL and LIKE 'prefix%' of a column with plain literals of its own kind
(whole numbers for integer columns, numbers for DOUBLE and DECIMAL, strings for strings, TRUE /
FALSE for booleans), combined with AND / OR / NOT. Casts, date literals, FLOAT columns and
DOUBLE columns under NOT (DuckDB orders NaN above every number, Arrow compares it false) go
through DuckDB as before."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from sqlglot import exp

# the SELECT clauses a plain read may have
_CLAUSES = {"expressions", "from", "from_", "where"}
_NODES = (exp.Column, exp.Identifier, exp.Literal, exp.Neg, exp.Boolean, exp.Null, exp.Paren, exp.And,
          exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.In, exp.Between,
          exp.Like)


def returned_unchanged(t: pa.DataType) -> bool:
    """Whether DuckDB gives a column of Arrow type ``t`` back with the same type."""
    if pa.types.is_timestamp(t):
        return t.tz is None or t.unit == "us"
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_date32(t)
            or pa.types.is_decimal128(t) or t == pa.time64("us"))


def outputs(select: exp.Expression, rel: Any) -> list[tuple[str, str]] | None:
    """(output name, table column) of each column of ``select`` when it is a plain read of
    ``rel`` (a ``prepared.RelInfo``: see the module docstring), else None."""
    if not isinstance(select, exp.Select) or not getattr(rel.relation, "exact_filter", False):
        return None
    if any(v not in (None, [], False) for k, v in select.args.items() if k not in _CLAUSES):
        return None
    frm = select.args.get("from") or select.args.get("from_")
    if frm is None or frm.expressions or frm.this is not rel.node:
        return None
    schema = rel.relation.schema
    if not all(returned_unchanged(f.type) for f in schema):
        return None
    cmap = rel.column_map()
    out: list[tuple[str, str]] = []
    for item in select.expressions:
        name = None
        if isinstance(item, exp.Alias):
            name, item = item.alias, item.this
            if not name:
                return None
        if isinstance(item, exp.Star) and name is None and not any(item.args.values()):
            out += [(n, n) for n in schema.names]
            continue
        if not isinstance(item, exp.Column) or not isinstance(item.this, exp.Identifier) or \
                item.args.get("db") or item.args.get("catalog") or \
                (item.table and item.table.lower() != rel.alias.lower()):
            return None
        real = cmap.get(item.name.lower())
        if real is None:
            return None
        out.append((name or real, real))
    if not out or not _exact_where(select, rel):
        return None
    return out


def _exact_where(select: exp.Select, rel: Any) -> bool:
    where = select.args.get("where")
    if where is None:
        return True
    conjuncts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    if len(conjuncts) != len(rel.predicates):
        return False  # a conjunct was not pushed into the read: DuckDB must apply it
    types = {n.lower(): f.type for n, f in zip(rel.relation.schema.names, rel.relation.schema)}
    for node in where.this.walk():
        if not isinstance(node, _NODES):
            return False
        if isinstance(node, exp.Column) and node.name.lower() in types:
            t = types[node.name.lower()]
            if pa.types.is_floating(t) and (t != pa.float64() or node.find_ancestor(exp.Not) is not None):
                return False
        if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Between, exp.Like)):
            column = node.this.unnest() if isinstance(node.this, exp.Paren) else node.this
            values = [node.expression] if not isinstance(node, (exp.In, exp.Between)) else \
                list(node.expressions) if isinstance(node, exp.In) else [node.args["low"], node.args["high"]]
            if not isinstance(column, exp.Column) or column.name.lower() not in types or node.args.get("query") or \
                    not all(_same_kind(types[column.name.lower()], v) for v in values):
                return False
    return True


def _same_kind(t: pa.DataType, value: exp.Expression) -> bool:
    """Whether literal ``value`` is of the kind column type ``t`` compares with unconverted."""
    while isinstance(value, exp.Paren):
        value = value.this
    if isinstance(value, exp.Null):
        return True
    negative = isinstance(value, exp.Neg)
    if negative:
        value = value.this
    if isinstance(value, exp.Boolean):
        return pa.types.is_boolean(t) and not negative
    if not isinstance(value, exp.Literal):
        return False
    if value.is_string:
        return (pa.types.is_string(t) or pa.types.is_large_string(t)) and not negative
    if pa.types.is_integer(t):
        return value.this.isdigit()
    if pa.types.is_decimal(t):
        return not any(c in value.this for c in "eE")  # DuckDB reads 1e2 as a DOUBLE, not exactly
    return pa.types.is_floating(t)


def answer(data: pa.Table, columns: list[tuple[str, str]]) -> pa.Table:
    """The read's rows as DuckDB returns them: the output columns in order, nullable, no metadata."""
    arrays = [data.column(real) for _, real in columns]
    fields = [pa.field(name, a.type) for (name, _), a in zip(columns, arrays)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
