"""Merge functions: how the rows of one primary key become one row.

A merge function receives a *KV table* (key columns ``_KEY_<pk>``, ``_SEQUENCE_NUMBER``,
``_VALUE_KIND``, then every table column) sorted by key and, within a key, in merge order
(oldest first). It returns one row per key, in key order, with the same columns: the group's
largest ``_SEQUENCE_NUMBER`` and the kind of the merged row. The caller drops retractions.

Everything is vectorized: rows are split into key groups by comparing adjacent keys, and each
column is reduced per group with numpy (``reduceat``, ``bincount``) or Arrow's hash
aggregations. Python loops run only over columns, never over rows.

Engines (option ``merge-engine``), after Paimon's Java classes of the same names:

* ``deduplicate`` -- :class:`DeduplicateMergeFunction`: the last row wins, kind and all.
* ``first-row`` -- :class:`FirstRowMergeFunction`: the first row wins.
* ``partial-update`` -- :class:`PartialUpdateMergeFunction`: last non-null value per column,
  with optional sequence groups.
* ``aggregation`` -- :class:`AggregateMergeFunction`: one :class:`FieldAggregator` per column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.utils.arrow import sort_indices_nulls_first
from paimon_lab.errors import DataValidationError, OptionError
from paimon_lab.core.key_value import DELETE, INSERT, SEQUENCE_NUMBER, UPDATE_BEFORE, VALUE_KIND

__all__ = [
    "MergeFunction", "DeduplicateMergeFunction", "FirstRowMergeFunction",
    "PartialUpdateMergeFunction", "AggregateMergeFunction", "SequenceGroup",
    "FieldAggregator", "create_field_aggregator", "AGGREGATE_FUNCTIONS",
    "KeyGroups", "group_starts", "merge_function_for",
]

FIELDS_PREFIX = "fields."


# ====================================================================== key groups

def group_starts(kv: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """Boolean mask of the rows that start a new key in ``kv`` (sorted by ``keys``).

    Adjacent rows are compared column by column; nulls equal nulls and NaN equals NaN.
    """
    n = kv.num_rows
    starts = np.zeros(n, dtype=bool)
    if n == 0:
        return starts
    starts[0] = True
    if n == 1:
        return starts
    changed = np.zeros(n - 1, dtype=bool)
    for name in keys:
        col = _as_array(kv.column(name))
        prev, cur = col.slice(0, n - 1), col.slice(1)
        differ = _to_bool(pc.not_equal(prev, cur))  # null (either side null) -> False
        if col.null_count:
            differ |= _to_bool(prev.is_null()) != _to_bool(cur.is_null())
        if pa.types.is_floating(col.type):
            differ &= ~(_to_bool(pc.is_nan(prev)) & _to_bool(pc.is_nan(cur)))
        changed |= differ
    starts[1:] = changed
    return starts


@dataclass(frozen=True)
class KeyGroups:
    """The key groups of a sorted KV table: a group id per row and each group's first row."""

    ids: np.ndarray     # int64 group id of every row, non-decreasing from 0
    starts: np.ndarray  # int64 index of each group's first row

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def lasts(self) -> np.ndarray:
        """Index of each group's last row."""
        return np.append(self.starts[1:] - 1, len(self.ids) - 1).astype(np.int64)

    @staticmethod
    def of(kv: pa.Table, keys: Sequence[str]) -> "KeyGroups":
        mask = group_starts(kv, keys)
        return KeyGroups(np.cumsum(mask, dtype=np.int64) - 1, np.flatnonzero(mask).astype(np.int64))


# ====================================================================== vector helpers

def _as_array(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _to_bool(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean Arrow array as numpy, nulls as False."""
    arr = _as_array(arr)
    if arr.null_count:
        arr = pc.fill_null(arr, False)
    return arr.to_numpy(zero_copy_only=False).astype(bool, copy=False)


def _valid(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return _to_bool(arr.is_valid())


def _segment_reduce(ufunc: np.ufunc, values: np.ndarray, gids: np.ndarray, n: int, fill) -> np.ndarray:
    """``ufunc``-reduce ``values`` per group (``gids`` sorted); ``fill`` for groups without rows."""
    out = np.full(n, fill, dtype=values.dtype)
    if len(values):
        starts = np.flatnonzero(np.r_[True, gids[1:] != gids[:-1]])
        out[gids[starts]] = ufunc.reduceat(values, starts)
    return out


def _take(col: pa.Array | pa.ChunkedArray, idx: np.ndarray):
    """Take rows by index; index -1 gives null."""
    missing = idx < 0
    if missing.any():
        return col.take(pa.array(idx, type=pa.int64(), mask=missing))
    return col.take(pa.array(idx, type=pa.int64()))


def _hash_aggregate(values: pa.Array, gids: np.ndarray, n: int, func: str,
                    options: pc.FunctionOptions | None = None) -> pa.Array:
    """Arrow's ``hash_<func>`` per group, as an array of length ``n`` (null for empty groups)."""
    if len(values) == 0:
        return pa.nulls(n, values.type)
    table = pa.table({"g": pa.array(gids, pa.int64()), "v": values})
    res = table.group_by("g", use_threads=False).aggregate([("v", func, options)])
    pos = np.full(n, -1, dtype=np.int64)
    pos[res.column("g").to_numpy()] = np.arange(res.num_rows)
    return _take(_as_array(res.column(f"v_{func}")), pos)


def _is_retract(kinds: np.ndarray) -> np.ndarray:
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


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
        if retract is None or not retract.any():
            retract = np.zeros(len(values), dtype=bool)
        elif self.ignore_retract:
            keep = ~retract
            values, gids, retract = values.filter(pa.array(keep)), gids[keep], retract[keep]
        elif not self.supports_retract:
            raise DataValidationError(
                f"Aggregate function '{self.name}' of column '{self.column}' cannot handle "
                f"retraction rows (-U/-D); set 'fields.{self.column}.ignore-retract' = 'true' to ignore them")
        out = self._aggregate(values, gids, n, retract)
        return out if out.type == values.type else out.cast(values.type)

    def _aggregate(self, values: pa.Array, gids: np.ndarray, n: int, retract: np.ndarray) -> pa.Array:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.column!r})"


class FieldSumAgg(FieldAggregator):
    """Sum of non-null values; retractions subtract. Null if there is no value."""

    name, types, supports_retract = "sum", frozenset(_NUMERIC), True

    def _aggregate(self, values, gids, n, retract):
        t = values.type
        if pa.types.is_integer(t):
            work = values.cast(pa.int64())
        elif pa.types.is_decimal(t):
            work = values.cast(pa.decimal128(38, t.scale))
        else:
            work = values.cast(pa.float64())
        if retract.any():
            work = pc.if_else(pa.array(retract), pc.negate(work), work)
        out = _hash_aggregate(work, gids, n, "sum")
        if t == pa.int64():  # hash_sum wraps around silently; check against a float sum
            approx = _hash_aggregate(work.cast(pa.float64(), safe=False), gids, n, "sum")
            if np.any(np.abs(pc.fill_null(approx, 0.0).to_numpy()) >= 2.0 ** 63):
                raise DataValidationError(f"sum of column '{self.column}' overflows BIGINT")
        try:
            return out.cast(t, safe=not pa.types.is_floating(t))
        except pa.ArrowInvalid:
            raise DataValidationError(f"sum of column '{self.column}' overflows its type {t}") from None


class FieldProductAgg(FieldAggregator):
    """Product of non-null values; retractions divide (product of inserts / product of retracts).

    Integer division truncates toward zero, as in Java; integer products wrap around like Java's.
    """

    name, types, supports_retract = "product", frozenset(_NUMERIC), True

    def _aggregate(self, values, gids, n, retract):
        t = values.type
        if pa.types.is_integer(t):
            work = values.cast(pa.int64())
        elif pa.types.is_decimal(t):
            work = values.cast(pa.decimal128(38, t.scale))
        else:
            work = values.cast(pa.float64())
        if not retract.any():
            return self._fit(_hash_aggregate(work, gids, n, "product"), t)
        ins = ~retract
        num = _hash_aggregate(work.filter(pa.array(ins)), gids[ins], n, "product")
        den = _hash_aggregate(work.filter(pa.array(retract)), gids[retract], n, "product")
        has_num, has_den = _valid(num), _valid(den)
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
                if _to_bool(pc.equal(b, pa.scalar(Decimal(0), work.type))).any():
                    raise DataValidationError(f"product of column '{self.column}': retraction divides by zero")
                a, b = self._fit(a, t), self._fit(b, t)
                if t.precision <= 37:  # Arrow's quotient needs precision 2p + 1 <= 76
                    wide = pa.decimal256(t.precision, t.scale)
                    q = pc.round(pc.divide(a.cast(wide), b.cast(wide)), t.scale, round_mode="half_up")
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
        return _hash_aggregate(values, gids, n, self.name)


class FieldMinAgg(FieldMaxAgg):
    """Smallest non-null value."""

    name = "min"


class FieldFirstValueAgg(FieldAggregator):
    """Value of the first row (null included)."""

    name = "first_value"

    def _aggregate(self, values, gids, n, retract):
        return _take(values, _segment_reduce(np.minimum, np.arange(len(values)), gids, n, -1))


class FieldLastValueAgg(FieldAggregator):
    """Value of the last row (null included)."""

    name = "last_value"

    def _aggregate(self, values, gids, n, retract):
        return _take(values, _segment_reduce(np.maximum, np.arange(len(values)), gids, n, -1))


class FieldFirstNonNullValueAgg(FieldAggregator):
    """First non-null value."""

    name = "first_non_null_value"

    def _aggregate(self, values, gids, n, retract):
        big = len(values)
        pos = np.where(_valid(values), np.arange(big), big)
        idx = _segment_reduce(np.minimum, pos, gids, n, big)
        return _take(values, np.where(idx == big, -1, idx))


class FieldLastNonNullValueAgg(FieldAggregator):
    """Last non-null value (the default function)."""

    name = "last_non_null_value"

    def _aggregate(self, values, gids, n, retract):
        pos = np.where(_valid(values), np.arange(len(values)), -1)
        return _take(values, _segment_reduce(np.maximum, pos, gids, n, -1))


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
        self.distinct = _bool_option(options, f"{FIELDS_PREFIX}{column}.distinct")
        if self.distinct and self.delimiter == "":
            raise OptionError(f"listagg of column '{column}' with 'distinct' needs a non-empty delimiter")

    @staticmethod
    def _blank(strings: pa.Array) -> np.ndarray:
        return _to_bool(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(strings)), 0))

    def _join(self, tokens: pa.Array, gids: np.ndarray, n: int) -> pa.Array:
        counts = np.bincount(gids, minlength=n)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), tokens.cast(pa.string()))
        joined = pc.binary_join(lists, self.delimiter)
        return pc.if_else(pa.array(counts > 0), joined, pa.nulls(n, pa.string()))

    def _aggregate(self, values, gids, n, retract):
        keep = _valid(values)
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
        valid = _valid(values)
        trues = np.bincount(gids, weights=(_to_bool(values) & valid).astype(np.float64), minlength=n)
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


AGGREGATE_FUNCTIONS: dict[str, type[FieldAggregator]] = {
    cls.name: cls for cls in (
        FieldSumAgg, FieldProductAgg, FieldCountAgg, FieldMaxAgg, FieldMinAgg, FieldFirstValueAgg,
        FieldLastValueAgg, FieldFirstNonNullValueAgg, FieldLastNonNullValueAgg, FieldListaggAgg,
        FieldBoolAndAgg, FieldBoolOrAgg)
}
_ALIASES = {"first_not_null_value": "first_non_null_value", "last_not_null_value": "last_non_null_value"}
# Java functions paimon-lab does not implement (named so the error can say so).
_NOT_IMPLEMENTED = {"collect", "merge_map", "merge_map_with_keytime", "nested_update",
                    "nested_partial_update", "hll_sketch", "theta_sketch", "rbm32", "rbm64", "avg"}


def create_field_aggregator(column: str, data_type, function: str,
                            options: Mapping[str, str]) -> FieldAggregator:
    """The aggregator of ``function`` for a column of Paimon type ``data_type``.

    Raises OptionError for an unknown function or one that does not support the type.
    """
    key = function.strip().lower()
    key = _ALIASES.get(key, key)
    cls = AGGREGATE_FUNCTIONS.get(key)
    if cls is None:
        what = ("is not implemented in paimon-lab" if key in _NOT_IMPLEMENTED
                else "is not a known aggregate function")
        raise OptionError(f"Column '{column}': aggregate function '{function}' {what}; "
                          f"use one of {sorted(AGGREGATE_FUNCTIONS) + sorted(_ALIASES)}")
    if cls.types is not None and data_type.root not in cls.types:
        raise OptionError(f"Column '{column}': aggregate function '{key}' does not support type {data_type}; "
                          f"it takes {', '.join(sorted(cls.types))}")
    ignore_retract = _bool_option(options, f"{FIELDS_PREFIX}{column}.ignore-retract")
    return cls(column, ignore_retract, options)


# ====================================================================== merge functions

class MergeFunction:
    """Merges the rows of each key of a sorted KV table into one row (Java: ``MergeFunction``)."""

    #: the 'merge-engine' option value
    engine: str = ""
    #: option keys that make this engine drop retraction rows (-U/-D) before merging
    ignore_delete_options: tuple[str, ...] = ("ignore-delete",)
    #: option named in the error when retractions are not accepted (None: they are accepted)
    retract_option: str | None = None

    #: option that makes a -D row remove the whole row (state after it starts afresh)
    remove_on_delete_option: str | None = None

    def __init__(self, ignore_delete: bool = False, remove_on_delete: bool = False):
        self.ignore_delete = ignore_delete
        self.remove_on_delete = remove_on_delete

    def prepare_input(self, rows: pa.Table) -> pa.Table:
        """Turn freshly written rows into what the engine stores (before any merge)."""
        return rows

    def merge(self, kv: pa.Table, keys: Sequence[str]) -> pa.Table:
        """One row per distinct key of ``kv`` (sorted by ``keys``, then merge order)."""
        if kv.num_rows == 0:
            return kv
        kinds = _as_array(kv.column(VALUE_KIND)).to_numpy(zero_copy_only=False)
        if self.remove_on_delete and not self.ignore_delete and (kinds == DELETE).any():
            return self._merge_with_removals(kv, keys, kinds)
        retract = _is_retract(kinds)
        if retract.any():
            if self.ignore_delete:
                kv = kv.filter(pa.array(~retract))
                if kv.num_rows == 0:
                    return kv
                kinds, retract = kinds[~retract], retract[~retract]
            elif self.retract_option is not None:
                raise DataValidationError(
                    f"The {self.engine} merge engine cannot accept -U/-D rows; set "
                    f"'{self.retract_option}' = 'true' (or 'ignore-delete') to ignore them")
        groups = KeyGroups.of(kv, keys)
        kind_out, values = self._merge(kv, list(keys), groups, kinds, retract)
        return _assemble(kv, groups, kind_out, values)

    def _merge_with_removals(self, kv: pa.Table, keys: Sequence[str], kinds: np.ndarray) -> pa.Table:
        """'<engine>.remove-record-on-delete': rows up to a key's last -D are gone; a key whose
        last row is that -D merges to a -D row, the others merge what follows it."""
        groups = KeyGroups.of(kv, keys)
        idx = np.arange(kv.num_rows, dtype=np.int64)
        last_delete = np.maximum.reduceat(np.where(kinds == DELETE, idx, -1), groups.starts)[groups.ids]
        keep = idx > last_delete
        removed = (idx == last_delete) & (idx == groups.lasts[groups.ids])
        rest = self.merge(kv.filter(pa.array(keep)), keys) if keep.any() else kv.slice(0, 0)
        gone = kv.filter(pa.array(removed))
        if gone.num_rows == 0:
            return rest
        out = pa.concat_tables([rest.cast(kv.schema) if rest.schema != kv.schema else rest, gone])
        return out.take(pc.sort_indices(out, [(k, "ascending") for k in keys]))

    def _merge(self, kv: pa.Table, keys: list[str], groups: KeyGroups, kinds: np.ndarray,
               retract: np.ndarray) -> tuple[np.ndarray, dict[str, pa.Array | pa.ChunkedArray]]:
        """Kind of each merged row and the merged columns; others come from each group's last row."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ignore_delete={self.ignore_delete})"


def _assemble(kv: pa.Table, groups: KeyGroups, kinds: np.ndarray,
              values: Mapping[str, pa.Array | pa.ChunkedArray]) -> pa.Table:
    seq = _as_array(kv.column(SEQUENCE_NUMBER)).to_numpy(zero_copy_only=False)
    lasts = None
    columns = []
    for f in kv.schema:
        if f.name == SEQUENCE_NUMBER:
            columns.append(pa.array(np.maximum.reduceat(seq, groups.starts), f.type))
        elif f.name == VALUE_KIND:
            columns.append(pa.array(kinds.astype(np.int8, copy=False), f.type))
        elif f.name in values:
            col = values[f.name]
            columns.append(col if col.type == f.type else col.cast(f.type))
        else:
            lasts = groups.lasts if lasts is None else lasts
            columns.append(kv.column(f.name).take(pa.array(lasts)))
    return pa.Table.from_arrays(columns, schema=kv.schema)


class DeduplicateMergeFunction(MergeFunction):
    """The last row of each key wins, with its kind ('-D' last means the key is deleted)."""

    engine = "deduplicate"

    def _merge(self, kv, keys, groups, kinds, retract):
        return kinds[groups.lasts], {}


class FirstRowMergeFunction(MergeFunction):
    """The first row of each key wins, as +I; -U/-D rows are an error unless ignored."""

    engine = "first-row"
    ignore_delete_options = ("ignore-delete", "first-row.ignore-delete")
    retract_option = "first-row.ignore-delete"

    def _merge(self, kv, keys, groups, kinds, retract):
        firsts = pa.array(groups.starts)
        return (np.full(groups.count, INSERT, dtype=np.int8),
                {name: kv.column(name).take(firsts) for name in kv.column_names
                 if name not in (SEQUENCE_NUMBER, VALUE_KIND)})


@dataclass
class SequenceGroup:
    """Columns updated together, ordered by their own sequence field(s).

    A row takes part if any sequence field is non-null. Plain columns of the group take the values
    (nulls included) of the row with the largest sequence (ties: the later row); columns with an
    aggregator aggregate all taking-part rows in sequence order.
    """

    sequence_fields: list[str]
    fields: list[str]
    aggregators: dict[str, FieldAggregator] = field(default_factory=dict)

    @property
    def option(self) -> str:
        return f"{FIELDS_PREFIX}{','.join(self.sequence_fields)}.sequence-group"


class PartialUpdateMergeFunction(MergeFunction):
    """Per column, the last non-null value wins; sequence groups order groups of columns apart."""

    engine = "partial-update"
    ignore_delete_options = ("ignore-delete", "partial-update.ignore-delete")
    retract_option = "partial-update.ignore-delete"
    remove_on_delete_option = "partial-update.remove-record-on-delete"

    def __init__(self, ignore_delete: bool = False, fixed: Sequence[str] = (),
                 sequence_groups: Sequence[SequenceGroup] = ()):
        super().__init__(ignore_delete)
        self.fixed = set(fixed)
        self.sequence_groups = list(sequence_groups)

    def prepare_input(self, rows: pa.Table) -> pa.Table:
        for group in self.sequence_groups:
            rows = _count_contributions(rows, group.aggregators)
        return rows

    def _merge(self, kv, keys, groups, kinds, retract):
        grouped = {c for g in self.sequence_groups for c in g.fields + g.sequence_fields}
        values: dict[str, pa.Array | pa.ChunkedArray] = {}
        for name in kv.column_names:
            if name not in self.fixed and name not in grouped and name not in keys \
                    and name not in (SEQUENCE_NUMBER, VALUE_KIND):
                values[name] = _last_non_null(kv.column(name), groups)
        for group in self.sequence_groups:
            values.update(self._merge_group(kv, groups, group))
        return np.full(groups.count, INSERT, dtype=np.int8), values

    @staticmethod
    def _merge_group(kv: pa.Table, groups: KeyGroups, group: SequenceGroup) -> dict[str, pa.Array]:
        names = [c for c in group.fields + group.sequence_fields if c in kv.column_names]
        if not names:
            return {}
        missing = [c for c in group.sequence_fields if c not in kv.column_names]
        if missing:
            raise DataValidationError(
                f"Sequence group '{group.option}' needs column(s) {missing} to merge {names}")
        seq_cols = [_as_array(kv.column(c)) for c in group.sequence_fields]
        taking_part = np.zeros(kv.num_rows, dtype=bool)
        for col in seq_cols:
            taking_part |= _valid(col)
        rows = np.flatnonzero(taking_part)
        # order taking-part rows by (key group, sequence fields, arrival)
        sort_table = pa.table({"g": pa.array(groups.ids[rows]),
                               **{f"s{i}": col.take(pa.array(rows)) for i, col in enumerate(seq_cols)},
                               "p": pa.array(rows)})
        sort_keys = ["g", *(f"s{i}" for i in range(len(seq_cols))), "p"]
        order = rows[sort_indices_nulls_first(sort_table, sort_keys).to_numpy()]
        gids = groups.ids[order]
        is_last = np.r_[gids[1:] != gids[:-1], True] if len(gids) else np.zeros(0, dtype=bool)
        winner = np.full(groups.count, -1, dtype=np.int64)
        winner[gids[is_last]] = order[is_last]
        out = {}
        for name in names:
            agg = group.aggregators.get(name)
            if agg is None:
                out[name] = _take(kv.column(name), winner)
            else:
                out[name] = agg.aggregate(_take(_as_array(kv.column(name)), order), gids, groups.count)
        return out

    def __repr__(self) -> str:
        return (f"PartialUpdateMergeFunction(ignore_delete={self.ignore_delete}, "
                f"sequence_groups={self.sequence_groups})")


class AggregateMergeFunction(MergeFunction):
    """Each value column is reduced by its :class:`FieldAggregator`; the result is +I.

    Primary-key, partition and ``sequence.field`` columns are not aggregated (last row's value).
    """

    engine = "aggregation"
    remove_on_delete_option = "aggregation.remove-record-on-delete"

    def __init__(self, aggregators: Mapping[str, FieldAggregator], ignore_delete: bool = False,
                 remove_on_delete: bool = False):
        super().__init__(ignore_delete, remove_on_delete)
        self.aggregators = dict(aggregators)

    def prepare_input(self, rows: pa.Table) -> pa.Table:
        return _count_contributions(rows, self.aggregators)

    def _merge(self, kv, keys, groups, kinds, retract):
        values = {}
        for name, agg in self.aggregators.items():
            if name in kv.column_names:
                values[name] = agg.aggregate(_as_array(kv.column(name)), groups.ids, groups.count, retract)
        return np.full(groups.count, INSERT, dtype=np.int8), values

    def __repr__(self) -> str:
        return f"AggregateMergeFunction({list(self.aggregators.values())}, ignore_delete={self.ignore_delete})"


def _count_contributions(rows: pa.Table, aggregators: Mapping[str, FieldAggregator]) -> pa.Table:
    for name, agg in aggregators.items():
        if isinstance(agg, FieldCountAgg) and name in rows.column_names:
            i = rows.schema.get_field_index(name)
            rows = rows.set_column(i, rows.schema.field(i), FieldCountAgg.contribution(rows.column(name)))
    return rows


def _last_non_null(col: pa.ChunkedArray | pa.Array, groups: KeyGroups):
    if col.null_count == 0:
        return col.take(pa.array(groups.lasts))
    pos = np.where(_valid(_as_array(col)), np.arange(len(col)), -1)
    return _take(col, np.maximum.reduceat(pos, groups.starts))


# ====================================================================== factory

def _bool_option(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key)
    if value is None:
        return False
    low = str(value).strip().lower()
    if low not in ("true", "false"):
        raise OptionError(f"Option '{key}': '{value}' is not a boolean (true/false)")
    return low == "true"


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def merge_function_for(schema) -> MergeFunction:
    """The merge function a primary-key table's options ask for (``merge-engine`` and friends)."""
    options: Mapping[str, str] = schema.options
    engine = str(options.get("merge-engine", "deduplicate")).strip().lower()
    classes = {c.engine: c for c in (DeduplicateMergeFunction, FirstRowMergeFunction,
                                     PartialUpdateMergeFunction, AggregateMergeFunction)}
    cls = classes.get(engine)
    if cls is None:
        raise OptionError(f"Option 'merge-engine': '{engine}' is not one of {', '.join(classes)}")
    ignore_delete = any(_bool_option(options, k) for k in cls.ignore_delete_options)
    sequence_fields = _split(options.get("sequence.field") or "")
    fixed = list(dict.fromkeys([*schema.primary_keys, *schema.partition_keys]))
    if cls is DeduplicateMergeFunction:
        return DeduplicateMergeFunction(ignore_delete)
    if cls is FirstRowMergeFunction:
        if sequence_fields:
            raise OptionError("The first-row merge engine does not support 'sequence.field'")
        return FirstRowMergeFunction(ignore_delete)
    if cls is AggregateMergeFunction:
        default = options.get(f"{FIELDS_PREFIX}default-aggregate-function")
        aggregators = {}
        for f in schema.fields:
            if f.name in fixed or f.name in sequence_fields:
                continue
            function = (options.get(f"{FIELDS_PREFIX}{f.name}.aggregate-function") or default
                        or "last_non_null_value")
            aggregators[f.name] = create_field_aggregator(f.name, f.type, function, options)
        return AggregateMergeFunction(aggregators, ignore_delete,
                                      _bool_option(options, AggregateMergeFunction.remove_on_delete_option))
    fn = PartialUpdateMergeFunction(ignore_delete, fixed, _sequence_groups(schema, fixed))
    fn.remove_on_delete = _bool_option(options, PartialUpdateMergeFunction.remove_on_delete_option)
    return fn


def _sequence_groups(schema, fixed: Sequence[str]) -> list[SequenceGroup]:
    options: Mapping[str, str] = schema.options
    names = schema.field_names
    suffix = ".sequence-group"
    groups: list[SequenceGroup] = []
    owner: dict[str, str] = {}
    for key in sorted(options):
        if not (key.startswith(FIELDS_PREFIX) and key.endswith(suffix)):
            continue
        seq_fields = _split(key[len(FIELDS_PREFIX):-len(suffix)])
        protected = _split(options[key])
        for c in seq_fields + protected:
            if c not in names:
                raise OptionError(f"Option '{key}': column '{c}' does not exist; columns are {names}")
            if c in fixed:
                raise OptionError(f"Option '{key}': key column '{c}' cannot be in a sequence group")
        for c in dict.fromkeys(seq_fields + protected):
            if c in owner and owner[c] != key:
                raise OptionError(f"Column '{c}' is in more than one sequence group: '{owner[c]}' and '{key}'")
            owner[c] = key
        for c in seq_fields:
            if schema.field(c).type.is_nested:
                raise OptionError(f"Option '{key}': sequence field '{c}' has a nested type")
        groups.append(SequenceGroup(seq_fields, [c for c in protected if c not in seq_fields]))
    default = options.get(f"{FIELDS_PREFIX}default-aggregate-function")
    by_field = {c: g for g in groups for c in g.fields}
    seq_cols = {c for g in groups for c in g.sequence_fields}
    for f in schema.fields:
        if f.name in fixed or f.name in seq_cols:
            continue
        function = options.get(f"{FIELDS_PREFIX}{f.name}.aggregate-function") or default
        if function is None:
            continue
        group = by_field.get(f.name)
        if group is None:
            if _ALIASES.get(function.strip().lower(), function.strip().lower()) == "last_non_null_value":
                continue  # the partial-update rule anyway
            raise OptionError(f"Column '{f.name}': aggregate function '{function}' in a partial-update table "
                              f"needs the column in a sequence group ('fields.<seq>.sequence-group')")
        group.aggregators[f.name] = create_field_aggregator(f.name, f.type, function, options)
    return groups


def merge_function_of(store) -> "MergeFunction":
    """The merge function of a store's current schema (kept until the schema changes)."""
    return store.derived("merge_function", merge_function_for)
