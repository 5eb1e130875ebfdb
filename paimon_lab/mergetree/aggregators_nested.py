"""Field aggregators over ARRAY and MAP columns: ``collect``, ``merge_map`` and ``nested_update``.

Without retractions a key group is reduced with Arrow kernels: the elements of all its rows are
flattened, deduplicated with a hash group-by where the function asks, and rebuilt into one list
or map per group. Retractions (-U/-D) depend on the order of the rows, so the few groups that hold
one are folded row by row, as Java's ``agg`` / ``retract`` pair does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.errors import OptionError
from paimon_lab.mergetree.aggregators import (
    FIELDS_PREFIX,
    FieldAggregator,
    bool_option,
    split_names,
)
from paimon_lab.mergetree.key_groups import valid_mask

__all__ = ["FieldCollectAgg", "FieldMergeMapAgg", "FieldNestedUpdateAgg", "FoldingAggregator"]


def _children(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """For a list or map array: the child index of every element of its non-null rows and the
    row each element belongs to (in row order)."""
    offsets = values.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    lens = np.where(valid_mask(values), np.diff(offsets), 0)
    total = int(lens.sum())
    parent = np.repeat(np.arange(len(values), dtype=np.int64), lens)
    before = np.concatenate(([0], np.cumsum(lens)[:-1])) if len(lens) else lens
    idx = np.repeat(offsets[:-1] - before, lens) + np.arange(total, dtype=np.int64)
    return idx, parent


def _key_columns(arr: pa.Array) -> list[pa.Array]:
    """Columns that a hash group-by can take and that are equal exactly where elements are."""
    t = arr.type
    if pa.types.is_struct(t):
        cols = [arr.is_valid()]
        for child in arr.flatten():
            cols.extend(_key_columns(child))
        return cols
    if pa.types.is_nested(t) or pa.types.is_dictionary(t):
        # lists or maps as elements: compared through their text (rare, not vectorizable in Arrow)
        return [pa.array([None if v is None else repr(v) for v in arr.to_pylist()], pa.string())]
    return [arr]


def _first_or_last(gids: np.ndarray, keys: list[pa.Array], last: bool) -> np.ndarray:
    """Sorted positions of the first (or last) element of each distinct (group, key)."""
    if len(gids) == 0:
        return np.zeros(0, dtype=np.int64)
    cols = {"g": pa.array(gids, pa.int64()), "i": pa.array(np.arange(len(gids), dtype=np.int64))}
    names = ["g"]
    for j, k in enumerate(keys):
        cols[f"k{j}"] = k
        names.append(f"k{j}")
    how = "max" if last else "min"
    res = pa.table(cols).group_by(names, use_threads=False).aggregate([("i", how)])
    return np.sort(res.column(f"i_{how}").to_numpy())


def _offsets(counts: np.ndarray) -> pa.Array:
    offsets = np.zeros(len(counts) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.array(offsets, pa.int32())


def _present(gids: np.ndarray, values: pa.Array, n: int) -> np.ndarray:
    """Groups with at least one non-null row."""
    return np.bincount(gids[valid_mask(values)], minlength=n) > 0


class FoldingAggregator(FieldAggregator):
    """Vectorized without retractions; groups with a retraction are folded row by row."""

    supports_retract = True

    def _aggregate(self, values, gids, n, retract):
        return self.fold_arrival(values, gids, n, retract, None)

    def fold_arrival(self, values: pa.Array, gids: np.ndarray, n: int, retract: np.ndarray,
                     reversed_: np.ndarray | None) -> pa.Array:
        """The rows in arrival order; ``reversed_`` marks inserts folded in with Java's
        ``aggReversed`` (those losing their sequence group)."""
        odd = retract if reversed_ is None else retract | reversed_
        if not odd.any():
            return self._vector(values, gids, n)
        touched = np.zeros(n, dtype=bool)
        touched[gids[odd]] = True
        plain = ~touched[gids]
        out = self._vector(values.filter(pa.array(plain)), gids[plain], n)
        rows = np.flatnonzero(~plain)
        py, rgids = values.take(pa.array(rows)).to_pylist(), gids[rows]
        folded: list[Any] = []
        acc, current = None, None
        for j, row in enumerate(rows):
            if rgids[j] != current:
                if current is not None:
                    folded.append(acc)
                acc, current = None, rgids[j]
            if retract[row]:
                acc = self._py_retract(acc, py[j])
            elif reversed_ is not None and reversed_[row]:
                acc = self._py_agg_reversed(acc, py[j])
            else:
                acc = self._py_agg(acc, py[j])
        folded.append(acc)
        groups = np.flatnonzero(touched)
        take = np.arange(n, dtype=np.int64)
        take[groups] = n + np.arange(len(groups))
        both = pa.concat_arrays([out.cast(values.type), pa.array(folded, values.type)])
        return both.take(pa.array(take))

    def _vector(self, values: pa.Array, gids: np.ndarray, n: int) -> pa.Array:
        raise NotImplementedError

    def _py_agg_reversed(self, acc, value):
        return self._py_agg(value, acc)

    def _py_agg(self, acc, value):
        raise NotImplementedError

    def _py_retract(self, acc, value):
        raise NotImplementedError


class FieldCollectAgg(FoldingAggregator):
    """All elements of the group's arrays in one array; with ``fields.<f>.distinct`` each element
    once. Null elements are kept; the result is null only if every array is null. A retraction
    removes one occurrence of each of its elements (Java's ``FieldCollectAgg``)."""

    name, types = "collect", frozenset({"ARRAY"})

    def __init__(self, column: str, ignore_retract: bool = False, options: Mapping[str, str] | None = None):
        super().__init__(column, ignore_retract, options)
        self.distinct = bool_option(options or {}, f"{FIELDS_PREFIX}{column}.distinct")

    def _vector(self, values, gids, n):
        idx, parent = _children(values)
        elements, egids = values.values.take(pa.array(idx)), gids[parent]
        if self.distinct:
            keep = _first_or_last(egids, _key_columns(elements), last=False)
            elements, egids = elements.take(pa.array(keep)), egids[keep]
        counts = np.bincount(egids, minlength=n)
        return pa.ListArray.from_arrays(_offsets(counts), elements, type=values.type,
                                        mask=pa.array(~_present(gids, values, n)))

    def _py_agg(self, acc, value):
        if acc is None and value is None:
            return None
        if not self.distinct and (acc is None or value is None):
            return acc if value is None else value
        out = list(acc or [])
        for v in value or []:
            if not self.distinct or v not in out:
                out.append(v)
        return out

    def _py_agg_reversed(self, acc, value):  # Java's FieldCollectAgg appends either way
        return self._py_agg(acc, value)

    def _py_retract(self, acc, value):
        if acc is None or not value:
            return acc
        gone, out = list(value), []
        for v in acc:
            if v in gone:
                gone.remove(v)
            else:
                out.append(v)
        return out


class FieldMergeMapAgg(FoldingAggregator):
    """The union of the group's maps, a later value winning for the same key; a retraction removes
    its keys (Java's ``FieldMergeMapAgg``). Null only if every map is null."""

    name, types = "merge_map", frozenset({"MAP"})

    def _vector(self, values, gids, n):
        idx, parent = _children(values)
        take = pa.array(idx)
        keys, items, egids = values.keys.take(take), values.items.take(take), gids[parent]
        keep = pa.array(_first_or_last(egids, _key_columns(keys), last=True))
        counts = np.bincount(egids[keep.to_numpy()], minlength=n)
        return pa.MapArray.from_arrays(_offsets(counts), keys.take(keep), items.take(keep), type=values.type,
                                       mask=pa.array(~_present(gids, values, n)))

    def _py_agg(self, acc, value):
        if acc is None or value is None:
            return acc if value is None else value
        merged = dict(acc)
        merged.update(value)
        return list(merged.items())

    def _py_retract(self, acc, value):
        if acc is None or not value:
            return acc
        gone = {k for k, _ in value}
        return [(k, v) for k, v in acc if k not in gone]


class FieldNestedUpdateAgg(FoldingAggregator):
    """An ARRAY<ROW> kept like a nested table (Java's ``FieldNestedUpdateAgg``).

    With ``fields.<f>.nested-key`` (row fields, comma separated) a later row replaces the earlier
    one of the same nested key; without it rows are appended. Null rows are dropped. A retraction
    removes the rows of its nested keys (without a key: the rows equal to its rows). As Java's
    ``agg`` and ``retract``, a value met only by nulls is kept as it is (its repeated keys and null
    rows too) until a second array or a retraction merges it.
    """

    name, types = "nested_update", frozenset({"ARRAY"})

    def __init__(self, column: str, ignore_retract: bool = False, options: Mapping[str, str] | None = None):
        super().__init__(column, ignore_retract, options)
        self.nested_key = split_names((options or {}).get(f"{FIELDS_PREFIX}{column}.nested-key", ""))

    def check_type(self, data_type) -> None:
        element = data_type.element
        if element.root != "ROW":
            raise OptionError(f"Column '{self.column}': aggregate function 'nested_update' needs ARRAY<ROW<...>>, "
                              f"not {data_type}")
        names = [f.name for f in element.fields]
        missing = [k for k in self.nested_key if k not in names]
        if missing:
            raise OptionError(f"Column '{self.column}': 'fields.{self.column}.nested-key' names {missing}, "
                              f"which are not fields of {element}")

    def _vector(self, values, gids, n):
        valid = valid_mask(values)
        arrays = np.bincount(gids[valid], minlength=n)
        merged = self._merge_arrays(values, gids, n)
        if not (arrays == 1).any():
            return merged
        # a group's only array is Java's accumulator untouched: not deduplicated
        at = np.full(n, -1, dtype=np.int64)
        at[gids[valid]] = np.flatnonzero(valid)
        take = np.where(arrays == 1, n + at, np.arange(n))
        return pa.concat_arrays([merged, values.cast(merged.type)]).take(pa.array(take))

    def _merge_arrays(self, values, gids, n):
        idx, parent = _children(values)
        rows = values.values.take(pa.array(idx))
        keep = valid_mask(rows)
        if not keep.all():
            rows, parent = rows.filter(pa.array(keep)), parent[keep]
        egids = gids[parent]
        if self.nested_key:
            keys = [c for k in self.nested_key for c in _key_columns(pc.struct_field(rows, k))]
            last = _first_or_last(egids, keys, last=True)
            rows, egids = rows.take(pa.array(last)), egids[last]
        counts = np.bincount(egids, minlength=n)
        return pa.ListArray.from_arrays(_offsets(counts), rows, type=values.type,
                                        mask=pa.array(~_present(gids, values, n)))

    def _key(self, row: dict) -> tuple:
        return tuple(repr(row[k]) for k in self.nested_key)

    def _py_agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        rows = [r for r in acc + value if r is not None]
        if not self.nested_key:
            return rows
        merged: dict[tuple, dict] = {}
        for r in rows:
            merged.pop(self._key(r), None)
            merged[self._key(r)] = r
        return list(merged.values())

    def _py_retract(self, acc, value):
        if acc is None or value is None:
            return acc
        gone = [r for r in value if r is not None]
        if self.nested_key:  # Java puts the accumulator in a map by key first: repeated keys go
            keys = {self._key(r) for r in gone}
            return [r for r in self._py_agg([], acc) if self._key(r) not in keys]
        return [r for r in acc if r is not None and r not in gone]
