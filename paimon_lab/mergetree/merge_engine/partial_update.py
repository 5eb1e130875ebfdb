"""The ``partial-update`` merge engine: per column, the last non-null value wins.

Sequence groups ('fields.<seq>.sequence-group') update groups of columns together, ordered by
their own sequence field(s), and may aggregate columns (:class:`SequenceGroup`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.utils.arrow import sort_indices_nulls_first
from paimon_lab.errors import DataValidationError, OptionError
from paimon_lab.mergetree.aggregators import (FIELDS_PREFIX, FieldAggregator, aggregate_function_option,
                                              bool_option, canonical_function, count_contributions,
                                              split_names)
from paimon_lab.mergetree.aggregate_functions import create_field_aggregator
from paimon_lab.mergetree.aggregators_nested import FoldingAggregator
from paimon_lab.mergetree.key_groups import KeyGroups, as_array, segment_reduce, take_or_null, valid_mask
from paimon_lab.core.key_value import DELETE, INSERT, SEQUENCE_NUMBER, VALUE_KIND
from paimon_lab.mergetree.merge_engine.base import MergeFunction, inserts

__all__ = ["PartialUpdateMergeFunction", "SequenceGroup"]


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
            rows = count_contributions(rows, group.aggregators)
        return rows

    def accepts_retractions(self) -> bool:
        """With sequence groups a -U/-D row retracts the fields of each group it wins and is
        retracted from the group's aggregated fields, as Java's ``retractWithSequenceGroup``; with
        'partial-update.remove-record-on-delete' a -U row is ignored (a -D removes the record)."""
        return self.remove_on_delete or bool(self.sequence_groups)

    def _merge(self, kv, keys, groups, kinds, retract):
        grouped = {c for g in self.sequence_groups for c in g.fields + g.sequence_fields}
        values: dict[str, pa.Array | pa.ChunkedArray] = {}
        for name in kv.column_names:
            if name not in self.fixed and name not in grouped and name not in keys \
                    and name not in (SEQUENCE_NUMBER, VALUE_KIND):
                values[name] = _last_non_null(kv.column(name), groups, retract)
        for group in self.sequence_groups:
            values.update(self._merge_group(kv, groups, group, retract))
        if not retract.any():
            return inserts(groups), values
        # a key that met no +I/+U row is deleted (Java 1.1+: 'meetInsert'; 0.9/1.0 fail on it)
        met_insert = np.maximum.reduceat((~retract).astype(np.int8), groups.starts) > 0
        return np.where(met_insert, INSERT, DELETE).astype(np.int8), values

    @staticmethod
    def _merge_group(kv: pa.Table, groups: KeyGroups, group: SequenceGroup,
                     retract: np.ndarray | None = None) -> dict[str, pa.Array]:
        """The group's columns from the row with the highest sequence (the later on a tie) among
        those whose sequence is not all null; a retraction winning leaves the group's fields null
        (its sequence fields stay)."""
        names = [c for c in group.fields + group.sequence_fields if c in kv.column_names]
        if not names:
            return {}
        missing = [c for c in group.sequence_fields if c not in kv.column_names]
        if missing:
            raise DataValidationError(
                f"Sequence group '{group.option}' needs column(s) {missing} to merge {names}")
        seq_cols = [as_array(kv.column(c)) for c in group.sequence_fields]
        taking_part = np.zeros(kv.num_rows, dtype=bool)
        for col in seq_cols:
            taking_part |= valid_mask(col)
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
        cleared = winner
        if retract is not None and retract.any():
            cleared = np.where((winner >= 0) & retract[np.maximum(winner, 0)], -1, winner)
        arrival = None
        for name in names:
            agg = group.aggregators.get(name)
            if agg is None:
                out[name] = take_or_null(kv.column(name), winner if name in group.sequence_fields else cleared)
            elif _folds_in_arrival_order(agg):
                if arrival is None:
                    arrival = _Arrival(groups.ids[rows], _wins(order, rows, seq_cols, gids, kv.num_rows),
                                       np.zeros(len(rows), dtype=bool) if retract is None else retract[rows])
                col = as_array(kv.column(name))
                out[name] = arrival.fold(agg, col if len(rows) == kv.num_rows else col.take(pa.array(rows)),
                                         groups.count)
            else:
                out[name] = agg.aggregate(take_or_null(as_array(kv.column(name)), order), gids, groups.count,
                                          None if retract is None else retract[order])
        return out

    @classmethod
    def from_schema(cls, schema, ignore_delete, fixed, sequence_fields):
        fn = cls(ignore_delete, fixed, _sequence_groups(schema, fixed))
        fn.remove_on_delete = bool_option(schema.options, cls.remove_on_delete_option)
        if fn.remove_on_delete and (ignore_delete or fn.sequence_groups):  # as Java's factory
            other = "'ignore-delete'" if ignore_delete else "sequence groups"
            raise OptionError(f"Option '{cls.remove_on_delete_option}' cannot be combined with {other}: "
                              f"they disagree on what a -D row does")
        return fn

    def __repr__(self) -> str:
        return (f"PartialUpdateMergeFunction(ignore_delete={self.ignore_delete}, "
                f"sequence_groups={self.sequence_groups})")


def _folds_in_arrival_order(agg: FieldAggregator) -> bool:
    """Functions whose result depends on the order Java folds them in."""
    return agg.name in ("last_value", "last_non_null_value", "first_value", "first_non_null_value",
                        "listagg") or isinstance(agg, FoldingAggregator)


def _wins(order: np.ndarray, rows: np.ndarray, seq_cols: list[pa.Array], gids: np.ndarray,
          num_rows: int) -> np.ndarray:
    """For each taking-part row (``rows``, in arrival order): whether its sequence is at least every
    earlier one of its key's (Java compares it with the merged row's sequence, which only grows)."""
    n = len(order)
    new = np.ones(n, dtype=bool)  # ``order`` is sorted by (key, sequence): a new rank where either changes
    if n > 1:
        new[1:] = gids[1:] != gids[:-1]
        for col in seq_cols:
            s = col.take(pa.array(order))
            a, b = s.slice(1), s.slice(0, n - 1)
            same = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False) | (
                ~valid_mask(a) & ~valid_mask(b))
            new[1:] |= ~same
    position = np.empty(num_rows, dtype=np.int64)  # a row's place among ``rows``
    position[rows] = np.arange(n)
    rank = np.empty(n, dtype=np.int64)
    rank[position[order]] = np.cumsum(new)
    return rank == np.maximum.accumulate(rank)  # key ranks grow with the key: no reset needed


@dataclass
class _Arrival:
    """Java's fold of a sequence group's aggregated column, row by row in arrival order: an insert
    whose sequence wins aggregates (``agg``), one that loses is folded in reversed
    (``aggReversed``), and a retraction retracts whatever its sequence (``retractWithSequenceGroup``)."""

    gids: np.ndarray
    wins: np.ndarray
    retract: np.ndarray

    def _first_non_null(self, values: pa.Array, n: int, insert: np.ndarray) -> np.ndarray:
        """Java's state: 'initialized' by the first winning non-null insert, or by a losing insert
        after a losing non-null one (whose value it keeps); before that a losing insert sets the
        value only while it is null, after it every losing insert sets it (null too)."""
        at, big, gids = np.arange(len(values)), len(values), self.gids
        valid = valid_mask(values)
        win, lose = insert & self.wins, insert & ~self.wins

        def first(mask):
            return segment_reduce(np.minimum, np.where(mask, at, big), gids, n, big)

        win_set = first(win & valid)
        lose_set = first(lose & valid)
        init = np.minimum(win_set, first(lose & (at > lose_set[gids])))
        at_init = np.where(init == win_set, win_set, lose_set)
        after = segment_reduce(np.maximum, np.where(lose & (at > init[gids]), at, -1), gids, n, -1)
        return np.where(init < big, np.where(after >= 0, after, at_init), np.where(lose_set < big, lose_set, -1))

    def _fold_rows(self, agg: FieldAggregator, values: pa.Array, n: int, keep: np.ndarray | None) -> pa.Array:
        """Java's fold row by row (``agg_one``) for the keys with a losing insert; the others
        arrive in sequence order and aggregate at once."""
        gids, wins = self.gids, self.wins
        if keep is not None:  # ignored retractions (a listagg cannot retract otherwise)
            values, gids, wins = values.filter(pa.array(keep)), gids[keep], wins[keep]
        touched = np.zeros(n, dtype=bool)
        touched[gids[~wins]] = True
        plain = ~touched[gids]
        out = agg.aggregate(values.filter(pa.array(plain)), gids[plain], n)
        rows = np.flatnonzero(~plain)
        if not len(rows):
            return out
        folded: dict[int, object] = {}
        for row, value in zip(rows, values.take(pa.array(rows)).to_pylist()):
            acc = folded.get(gids[row])
            folded[gids[row]] = agg.agg_one(acc, value) if wins[row] else agg.agg_one(value, acc)
        groups = np.flatnonzero(touched)
        take = np.where(touched, n + np.cumsum(touched) - 1, np.arange(n))
        return pa.concat_arrays([out, pa.array([folded[g] for g in groups], out.type)]).take(pa.array(take))

    def _last(self, mask: np.ndarray, n: int) -> np.ndarray:
        return segment_reduce(np.maximum, np.where(mask, np.arange(len(mask)), -1), self.gids, n, -1)

    def fold(self, agg: FieldAggregator, values: pa.Array, n: int) -> pa.Array:
        if not len(values):
            return pa.nulls(n, values.type)
        keep = agg.taking_part(self.retract)  # None: every row; else ignored retractions left out
        if isinstance(agg, FoldingAggregator):  # collect, merge_map, nested_update: row by row where it matters
            losing = ~self.wins & ~self.retract
            if keep is None:
                return agg.fold_arrival(values, self.gids, n, self.retract, losing)
            return agg.fold_arrival(values.filter(pa.array(keep)), self.gids[keep], n, self.retract[keep],
                                    losing[keep])
        if getattr(agg, "distinct", False):  # listagg: a losing insert keeps its own tokens first
            return self._fold_rows(agg, values, n, keep)
        if agg.name in ("first_value", "listagg"):
            # aggReversed of a monoid prepends: the fold is the function over the key's losing
            # inserts, newest first, then its winning rows in arrival order
            if self.wins.all():
                return agg.aggregate(values, self.gids, n, self.retract)
            at = np.arange(len(values))
            java = np.lexsort((np.where(self.wins, at, -at), self.wins, self.gids))
            return agg.aggregate(values.take(pa.array(java)), self.gids[java], n, self.retract[java])
        # an ignored retraction leaves the value (its sequence still counted in ``wins``)
        retract = self.retract if keep is None else self.retract & keep
        insert = ~self.retract
        if agg.name == "first_non_null_value":
            return take_or_null(values, self._first_non_null(values, n, insert))
        if agg.name == "last_value":  # a winning insert sets the value, a retraction clears it
            last = self._last((self.wins & insert) | retract, n)
            return take_or_null(values, np.where((last >= 0) & retract[np.maximum(last, 0)], -1, last))
        # last_non_null_value: a winning non-null insert sets it, a retraction of a non-null clears
        # it, and a losing non-null insert fills it only while it is null
        valid = valid_mask(values)
        hard = valid & ((self.wins & insert) | retract)
        last = self._last(hard, n)
        if_set = (last >= 0) & ~retract[np.maximum(last, 0)]
        after = np.arange(len(values)) > last[self.gids]
        fill = segment_reduce(np.minimum, np.where(valid & insert & ~self.wins & after, np.arange(len(values)),
                                                   len(values)), self.gids, n, len(values))
        return take_or_null(values, np.where(if_set, last, np.where(fill < len(values), fill, -1)))


def _last_non_null(col: pa.ChunkedArray | pa.Array, groups: KeyGroups, retract: np.ndarray | None = None):
    """Each key's last non-null value of ``col``; retraction rows do not count."""
    has_retract = retract is not None and retract.any()
    if col.null_count == 0 and not has_retract:
        return col.take(pa.array(groups.lasts))
    valid = valid_mask(as_array(col))
    if has_retract:
        valid = valid & ~retract
    pos = np.where(valid, np.arange(len(col)), -1)
    return take_or_null(col, np.maximum.reduceat(pos, groups.starts))


def _sequence_groups(schema, fixed: Sequence[str]) -> list[SequenceGroup]:
    options: Mapping[str, str] = schema.options
    names = schema.field_names
    suffix = ".sequence-group"
    groups: list[SequenceGroup] = []
    owner: dict[str, str] = {}
    for key in sorted(options):
        if not (key.startswith(FIELDS_PREFIX) and key.endswith(suffix)):
            continue
        seq_fields = split_names(key[len(FIELDS_PREFIX):-len(suffix)])
        protected = split_names(options[key])
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
    by_field = {c: g for g in groups for c in g.fields}
    seq_cols = {c for g in groups for c in g.sequence_fields}
    for f in schema.fields:
        if f.name in fixed or f.name in seq_cols:
            continue
        function = aggregate_function_option(options, f.name)
        if function is None:
            continue
        group = by_field.get(f.name)
        if group is None:
            if canonical_function(function) == "last_non_null_value":
                continue  # the partial-update rule anyway
            raise OptionError(f"Column '{f.name}': aggregate function '{function}' in a partial-update table "
                              f"needs the column in a sequence group ('fields.<seq>.sequence-group')")
        group.aggregators[f.name] = create_field_aggregator(f.name, f.type, function, options)
    return groups
