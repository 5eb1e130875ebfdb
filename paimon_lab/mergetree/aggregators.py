"""Field aggregators of the ``aggregation`` merge engine (and of partial-update sequence groups).

One :class:`FieldAggregator` per column, after Paimon's Java ``FieldAggregator`` classes; the
function is chosen by ``fields.<f>.aggregate-function`` (default
``fields.default-aggregate-function``, else ``last_non_null_value``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.errors import DataValidationError, OptionError
from paimon_lab.mergetree.key_groups import hash_aggregate, segment_reduce, take_or_null, to_bool, valid_mask

__all__ = [
    "FieldAggregator", "SIMPLE_FUNCTIONS", "ALIASES", "canonical_function",
    "aggregate_function_option", "count_contributions", "bool_option", "split_names", "FIELDS_PREFIX",
]

FIELDS_PREFIX = "fields."


# ====================================================================== options

def bool_option(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key)
    if value is None:
        return False
    low = str(value).strip().lower()
    if low not in ("true", "false"):
        raise OptionError(f"Option '{key}': '{value}' is not a boolean (true/false)")
    return low == "true"


def split_names(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def aggregate_function_option(options: Mapping[str, str], column: str) -> str | None:
    """The aggregate function asked for ``column``: its own option, else the table's default."""
    return (options.get(f"{FIELDS_PREFIX}{column}.aggregate-function")
            or options.get(f"{FIELDS_PREFIX}default-aggregate-function"))


def canonical_function(function: str) -> str:
    """``function`` lower-cased, with Java's alias names resolved."""
    key = function.strip().lower()
    return ALIASES.get(key, key)


# ====================================================================== field aggregators

_INTEGERS = {"TINYINT", "SMALLINT", "INT", "BIGINT"}
_NUMERIC = _INTEGERS | {"DECIMAL", "FLOAT", "DOUBLE"}
_COMPARABLE = _NUMERIC | {"CHAR", "VARCHAR", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ"}


class FieldAggregator:
    """Aggregates one column per key group (Java: ``FieldAggregator``).

    :meth:`aggregate` gets the column's values of the rows taking part, their group ids (sorted)
    and which rows are retractions; it returns one value per group (null for a group without rows).
    """

    name: str = ""
    types: frozenset[str] | None = None  # supported type roots; None = any type
    supports_retract: bool = False

    def __init__(self, column: str, ignore_retract: bool = False, options: Mapping[str, str] | None = None):
        self.column = column
        self.ignore_retract = ignore_retract

    def aggregate(self, values: pa.Array, gids: np.ndarray, n: int,
                  retract: np.ndarray | None = None) -> pa.Array:
        if retract is None:
            retract = np.zeros(len(values), dtype=bool)
        keep = self.taking_part(retract)
        if keep is not None:
            values, gids, retract = values.filter(pa.array(keep)), gids[keep], retract[keep]
        out = self._aggregate(values, gids, n, retract)
        return out if out.type == values.type else out.cast(values.type)

    def _aggregate(self, values: pa.Array, gids: np.ndarray, n: int, retract: np.ndarray) -> pa.Array:
        raise NotImplementedError

    def taking_part(self, retract: np.ndarray) -> np.ndarray | None:
        """The rows to aggregate: None for all of them, or the inserts where the function ignores
        retractions ('fields.<f>.ignore-retract'); raises if it cannot handle the retractions."""
        if not retract.any():
            return None
        if self.ignore_retract:
            return ~retract
        if not self.supports_retract:
            self.refuse_retractions()
        return None

    def refuse_retractions(self) -> None:
        raise DataValidationError(
            f"Aggregate function '{self.name}' of column '{self.column}' cannot handle "
            f"retraction rows (-U/-D); set 'fields.{self.column}.ignore-retract' = 'true' to ignore them")

    def check_type(self, data_type) -> None:
        """Raise OptionError if the column's type (beyond its root) does not fit the function."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.column!r})"


def _widen(values: pa.Array) -> pa.Array:
    """Numeric values in the widest type of their kind (BIGINT, DECIMAL(38, s), DOUBLE)."""
    t = values.type
    if pa.types.is_integer(t):
        return values.cast(pa.int64())
    if pa.types.is_decimal(t):
        return values.cast(pa.decimal128(38, t.scale))
    return values.cast(pa.float64())


class FieldSumAgg(FieldAggregator):
    """Sum of non-null values; retractions subtract. Null if there is no value."""

    name, types, supports_retract = "sum", frozenset(_NUMERIC), True

    def _aggregate(self, values, gids, n, retract):
        t, work = values.type, _widen(values)
        if retract.any():
            work = pc.if_else(pa.array(retract), pc.negate(work), work)
        out = hash_aggregate(work, gids, n, "sum")
        if t == pa.int64():  # hash_sum wraps around silently; check against a float sum
            approx = hash_aggregate(work.cast(pa.float64(), safe=False), gids, n, "sum")
            if np.any(np.abs(pc.fill_null(approx, 0.0).to_numpy()) >= 2.0 ** 63):
                raise DataValidationError(f"sum of column '{self.column}' overflows BIGINT")
        try:
            return out.cast(t, safe=not pa.types.is_floating(t))
        except pa.ArrowInvalid:
            raise DataValidationError(f"sum of column '{self.column}' overflows its type {t}") from None


class FieldProductAgg(FieldAggregator):
    """Product of non-null values; retractions divide (product of inserts / product of retracts).

    As Java's ``FieldProductAgg``, a retraction that comes before the key's first non-null insert
    meets a null product and leaves it null. Integer division truncates toward zero, as in Java;
    integer products wrap around like Java's; a decimal quotient is rounded half away from zero
    (Java's ``HALF_UP``).
    """

    name, types, supports_retract = "product", frozenset(_NUMERIC), True

    def _aggregate(self, values, gids, n, retract):
        t, work = values.type, _widen(values)
        if retract.any():   # rows are in merge order within each group
            pos = np.arange(len(values))
            first = segment_reduce(np.minimum, np.where(~retract & valid_mask(values), pos, len(values)),
                                   gids, n, len(values))
            early = retract & (pos < first[gids])
            if early.any():
                keep = ~early
                work, gids, retract = work.filter(pa.array(keep)), gids[keep], retract[keep]
        if not retract.any():
            return self._fit(hash_aggregate(work, gids, n, "product"), t)
        ins = ~retract
        num = hash_aggregate(work.filter(pa.array(ins)), gids[ins], n, "product")
        den = hash_aggregate(work.filter(pa.array(retract)), gids[retract], n, "product")
        has_num, has_den = valid_mask(num), valid_mask(den)
        if pa.types.is_integer(t):
            a = num.to_numpy(zero_copy_only=False) if num.null_count == 0 else pc.fill_null(num, 1).to_numpy()
            b = pc.fill_null(den, 1).to_numpy()
            if np.any(b == 0):
                raise DataValidationError(f"product of column '{self.column}': retraction divides by zero")
            q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)
            out = pa.array(q, pa.int64(), mask=~(has_num | has_den))
        else:
            one = pa.scalar(Decimal(1) if pa.types.is_decimal(t) else 1.0, work.type)
            a, b = pc.fill_null(num, one), pc.fill_null(den, one)
            if pa.types.is_decimal(t):
                if to_bool(pc.equal(b, pa.scalar(Decimal(0), work.type))).any():
                    raise DataValidationError(f"product of column '{self.column}': retraction divides by zero")
                a, b = self._fit(a, t), self._fit(b, t)
                if t.precision <= 37:  # Arrow's quotient needs precision 2p + 1 <= 76
                    wide = pa.decimal256(t.precision, t.scale)
                    q = pc.round(pc.divide(a.cast(wide), b.cast(wide)), t.scale, round_mode="half_towards_infinity")
                else:  # DECIMAL(38, s): divide approximately
                    q = pc.divide(a.cast(pa.float64()), b.cast(pa.float64()))
            else:
                q = pc.divide(a, b)
            out = pc.if_else(pa.array(has_num | has_den), q, pa.nulls(n, q.type))
        return self._fit(out, t)

    def _fit(self, out: pa.Array, t: pa.DataType) -> pa.Array:
        try:
            return out.cast(t, safe=pa.types.is_decimal(t))
        except pa.ArrowInvalid:
            raise DataValidationError(f"product of column '{self.column}' overflows its type {t}") from None


class FieldCountAgg(FieldAggregator):
    """Number of non-null values; a retraction of a non-null value subtracts one.

    Stored values are counts, so merging merged rows stays right: the writer first turns each
    input value into its contribution (1 if non-null, else 0, see
    :meth:`AggregateMergeFunction.prepare_input`) and merging adds contributions up.
    Null for a group without rows taking part (e.g. all ignored retractions).
    """

    name, types, supports_retract = "count", frozenset({"INT", "BIGINT"}), True

    @staticmethod
    def contribution(column):
        return pc.if_else(pc.is_valid(column), 1, 0).cast(column.type)

    def _aggregate(self, values, gids, n, retract):
        stored = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        counts = np.bincount(gids, weights=np.where(retract, -1, 1) * stored, minlength=n).round().astype(np.int64)
        present = np.bincount(gids, minlength=n) > 0
        return pa.array(counts, pa.int64(), mask=~present)


class FieldMaxAgg(FieldAggregator):
    """Largest non-null value."""

    name, types = "max", frozenset(_COMPARABLE)

    def _aggregate(self, values, gids, n, retract):
        return hash_aggregate(values, gids, n, self.name)


class FieldMinAgg(FieldMaxAgg):
    """Smallest non-null value."""

    name = "min"


class FieldFirstValueAgg(FieldAggregator):
    """Value of the first row (null included)."""

    name = "first_value"

    def _aggregate(self, values, gids, n, retract):
        return take_or_null(values, segment_reduce(np.minimum, np.arange(len(values)), gids, n, -1))


class FieldLastValueAgg(FieldAggregator):
    """Value of the last row (null included); a retraction as the last row gives null (Java's
    ``FieldLastValueAgg.retract``)."""

    name, supports_retract = "last_value", True

    def _aggregate(self, values, gids, n, retract):
        idx = segment_reduce(np.maximum, np.arange(len(values)), gids, n, -1)
        if retract.any():
            idx = np.where((idx >= 0) & retract[np.maximum(idx, 0)], -1, idx)
        return take_or_null(values, idx)


class FieldFirstNonNullValueAgg(FieldAggregator):
    """First non-null value."""

    name = "first_non_null_value"

    def _aggregate(self, values, gids, n, retract):
        big = len(values)
        pos = np.where(valid_mask(values), np.arange(big), big)
        idx = segment_reduce(np.minimum, pos, gids, n, big)
        return take_or_null(values, np.where(idx == big, -1, idx))


class FieldLastNonNullValueAgg(FieldAggregator):
    """Last non-null value (the default function); a retraction of a non-null value after it
    gives null (Java's ``FieldLastNonNullValueAgg.retract``)."""

    name, supports_retract = "last_non_null_value", True

    def _aggregate(self, values, gids, n, retract):
        pos = np.where(valid_mask(values), np.arange(len(values)), -1)
        idx = segment_reduce(np.maximum, pos, gids, n, -1)
        if retract.any():
            idx = np.where((idx >= 0) & retract[np.maximum(idx, 0)], -1, idx)
        return take_or_null(values, idx)


class FieldListaggAgg(FieldAggregator):
    """Non-blank strings joined in order by ``fields.<f>.list-agg-delimiter`` (default ',').

    With ``fields.<f>.distinct`` = true, the first value is kept whole and later values add only
    their non-blank tokens (split at the delimiter) not seen before, as Java's ``FieldListaggAgg``.
    """

    name, types = "listagg", frozenset({"VARCHAR"})

    def __init__(self, column: str, ignore_retract: bool = False, options: Mapping[str, str] | None = None):
        super().__init__(column, ignore_retract, options)
        options = options or {}
        self.delimiter = options.get(f"{FIELDS_PREFIX}{column}.list-agg-delimiter", ",")
        self.distinct = bool_option(options, f"{FIELDS_PREFIX}{column}.distinct")
        if self.distinct and self.delimiter == "":
            raise OptionError(f"listagg of column '{column}' with 'distinct' needs a non-empty delimiter")

    def agg_one(self, acc: str | None, value: str | None) -> str | None:
        """Java's ``agg`` of one value into ``acc`` (a blank one counts as none)."""
        if value is None or not value.strip():
            return acc
        if acc is None or not acc.strip():
            return value
        if not self.distinct:
            return acc + self.delimiter + value
        seen, out = set(acc.split(self.delimiter)), [acc]
        for token in value.split(self.delimiter):
            if token.strip() and token not in seen:
                seen.add(token)
                out.append(token)
        return self.delimiter.join(out)

    @staticmethod
    def _blank(strings: pa.Array) -> np.ndarray:
        return to_bool(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(strings)), 0))

    def _join(self, tokens: pa.Array, gids: np.ndarray, n: int) -> pa.Array:
        counts = np.bincount(gids, minlength=n)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), tokens.cast(pa.string()))
        joined = pc.binary_join(lists, self.delimiter)
        return pc.if_else(pa.array(counts > 0), joined, pa.nulls(n, pa.string()))

    def _aggregate(self, values, gids, n, retract):
        keep = valid_mask(values)
        keep[keep] = ~self._blank(values.filter(pa.array(keep)))
        kept, kg = values.filter(pa.array(keep)), gids[keep]
        if not self.distinct or len(kept) == 0:
            return self._join(kept, kg, n)
        first_value = np.r_[True, kg[1:] != kg[:-1]]
        split = pc.split_pattern(kept.cast(pa.string()), self.delimiter)
        tokens = split.flatten()
        parent = pc.list_parent_indices(split).to_numpy()
        tok_gid, tok_first = kg[parent], first_value[parent]
        order = np.arange(len(tokens))
        firsts = pa.table({"g": tok_gid, "t": tokens, "i": order}).group_by(
            ["g", "t"], use_threads=False).aggregate([("i", "min")])
        first_seen = np.zeros(len(tokens), dtype=bool)
        first_seen[firsts.column("i_min").to_numpy()] = True
        keep_tok = tok_first | (first_seen & ~self._blank(tokens))
        return self._join(tokens.filter(pa.array(keep_tok)), tok_gid[keep_tok], n)


class FieldBoolAndAgg(FieldAggregator):
    """True if every non-null value is true; null if there is none."""

    name, types = "bool_and", frozenset({"BOOLEAN"})

    def _aggregate(self, values, gids, n, retract):
        valid = valid_mask(values)
        trues = np.bincount(gids, weights=(to_bool(values) & valid).astype(np.float64), minlength=n)
        nonnull = np.bincount(gids, weights=valid.astype(np.float64), minlength=n)
        return pa.array(self._combine(trues, nonnull), pa.bool_(), mask=nonnull == 0)

    @staticmethod
    def _combine(trues: np.ndarray, nonnull: np.ndarray) -> np.ndarray:
        return trues == nonnull


class FieldBoolOrAgg(FieldBoolAndAgg):
    """True if any non-null value is true; null if there is none."""

    name = "bool_or"

    @staticmethod
    def _combine(trues, nonnull):
        return trues > 0


SIMPLE_FUNCTIONS: tuple[type[FieldAggregator], ...] = (
    FieldSumAgg, FieldProductAgg, FieldCountAgg, FieldMaxAgg, FieldMinAgg, FieldFirstValueAgg,
    FieldLastValueAgg, FieldFirstNonNullValueAgg, FieldLastNonNullValueAgg, FieldListaggAgg,
    FieldBoolAndAgg, FieldBoolOrAgg)
ALIASES = {"first_not_null_value": "first_non_null_value", "last_not_null_value": "last_non_null_value"}


def count_contributions(rows: pa.Table, aggregators: Mapping[str, FieldAggregator]) -> pa.Table:
    for name, agg in aggregators.items():
        if isinstance(agg, FieldCountAgg) and name in rows.column_names:
            i = rows.schema.get_field_index(name)
            rows = rows.set_column(i, rows.schema.field(i), FieldCountAgg.contribution(rows.column(name)))
    return rows
