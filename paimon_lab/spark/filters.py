"""Spark's pushed-down filters (``pyspark.sql.datasource.Filter``) as paimon_lab predicates.

A translated filter prunes manifests and files by statistics and is applied exactly to the
rows the reader returns. Filters on floating-point columns are pushed for pruning but also
handed back to Spark (Spark orders NaN above every number, Arrow's comparisons do not), and
filters on TIMESTAMP WITH LOCAL TIME ZONE columns are left to Spark (their literals arrive as
naive local datetimes).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from paimon_lab.errors import FilterError
from paimon_lab.core.predicate import And, Leaf, Not, Predicate, bind


def _column(attribute: tuple) -> str | None:
    return attribute[0] if len(attribute) == 1 else None


def to_predicate(f: Any) -> Predicate | None:
    """The predicate for one Spark filter, or None if it has no exact paimon_lab counterpart."""
    from pyspark.sql import datasource as ds

    if isinstance(f, ds.Not):
        if isinstance(f.child, ds.In):
            c = _column(f.child.attribute)
            values = tuple(f.child.value)
            # NOT IN with a NULL in the list is never true in SQL: leave that to Spark.
            if c is None or any(v is None for v in values):
                return None
            return Leaf("not_in", c, values)
        if isinstance(f.child, ds.EqualNullSafe):
            return None  # NOT (a <=> v) keeps NULLs; a negated Arrow comparison would drop them
        child = to_predicate(f.child)
        return Not(child) if child is not None else None
    attribute = getattr(f, "attribute", None)
    if attribute is None:
        return None
    c = _column(attribute)
    if c is None:
        return None  # nested fields are not pushed
    simple = {ds.EqualTo: "=", ds.GreaterThan: ">", ds.GreaterThanOrEqual: ">=", ds.LessThan: "<",
              ds.LessThanOrEqual: "<="}
    for cls, op in simple.items():
        if type(f) is cls:
            if f.value is None:
                return None  # comparing with NULL is never true; Spark knows that better
            return Leaf(op, c, (f.value,))
    if isinstance(f, ds.EqualNullSafe):
        return Leaf("is_null", c) if f.value is None else Leaf("=", c, (f.value,))
    if isinstance(f, ds.In):
        values = tuple(v for v in f.value if v is not None)
        return Leaf("in", c, values) if values else None
    if isinstance(f, ds.IsNull):
        return Leaf("is_null", c)
    if isinstance(f, ds.IsNotNull):
        return Leaf("is_not_null", c)
    if isinstance(f, ds.StringStartsWith):
        return Leaf("starts_with", c, (f.value,))
    return None


def _kind(arrow: pa.Schema, names: set[str]) -> str:
    """'exact', 'prune' (push, but Spark re-checks) or 'skip' for filters on these columns."""
    kinds = set()
    for n in names:
        t = arrow.field(n).type
        if pa.types.is_timestamp(t) and t.tz is not None:
            kinds.add("skip")
        elif pa.types.is_floating(t) or pa.types.is_nested(t):
            kinds.add("prune")
    return "skip" if "skip" in kinds else ("prune" if "prune" in kinds else "exact")


def translate(filters: list, arrow: pa.Schema) -> tuple[list[Predicate], list]:
    """Split Spark's filters into bound predicates to push and the filters Spark must still apply."""
    pushed: list[Predicate] = []
    remaining: list = []
    for f in filters:
        pred = to_predicate(f)
        if pred is None or not pred.columns() <= set(arrow.names):
            remaining.append(f)
            continue
        kind = _kind(arrow, pred.columns())
        if kind == "skip":
            remaining.append(f)
            continue
        try:
            pushed.append(bind(pred, arrow))
        except FilterError:
            remaining.append(f)
            continue
        if kind == "prune":
            remaining.append(f)
    return pushed, remaining


def conjunction(preds: list[Predicate]) -> Predicate | None:
    if not preds:
        return None
    return preds[0] if len(preds) == 1 else And(tuple(preds))


__all__ = ["to_predicate", "translate", "conjunction"]
