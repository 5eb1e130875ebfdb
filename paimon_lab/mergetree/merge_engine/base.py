"""The base of the merge engines: how the rows of one primary key become one row.

A merge function receives a *KV table* (key columns ``_KEY_<pk>``, ``_SEQUENCE_NUMBER``,
``_VALUE_KIND``, then every table column) sorted by key and, within a key, in merge order
(oldest first). It returns one row per key, in key order, with the same columns: the group's
largest ``_SEQUENCE_NUMBER`` and the kind of the merged row. The caller drops retractions.

:class:`MergeFunction` handles retractions and '<engine>.remove-record-on-delete' and assembles
the merged table; each engine only says how a key group's kind and columns merge.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.errors import DataValidationError
from paimon_lab.mergetree.key_groups import KeyGroups, as_array
from paimon_lab.core.key_value import DELETE, INSERT, SEQUENCE_NUMBER, UPDATE_BEFORE, VALUE_KIND

__all__ = ["MergeFunction", "inserts"]


def _is_retract(kinds: np.ndarray) -> np.ndarray:
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


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

    def merge(self, kv: pa.Table, keys: Sequence[str], merge_lone: bool = False) -> pa.Table:
        """One row per distinct key of ``kv`` (sorted by ``keys``, then merge order).

        A key with a single row keeps that row as it is, kind included (Java merges through its
        ``ReducerMergeFunctionWrapper``, which calls the merge function only from a key's second
        row on): a lone -D stays a -D, which the caller drops. ``merge_lone`` merges lone rows
        too, as Java's lookup compaction (the lift of level 0 in lookup tables) does."""
        if kv.num_rows == 0:
            return kv
        if merge_lone:
            return self._merge_rows(kv, keys)
        groups = KeyGroups.of(kv, keys)
        if groups.count == kv.num_rows:
            return kv
        lone = np.diff(np.append(groups.starts, kv.num_rows)) == 1
        if not lone.any():
            return self._merge_rows(kv, keys, groups)
        merged = self._merge_rows(kv.filter(pa.array(~lone[groups.ids])), keys)
        singles = kv.take(pa.array(groups.starts[lone]))
        if merged.num_rows == 0:
            return singles
        both = pa.concat_tables([merged.cast(kv.schema) if merged.schema != kv.schema else merged, singles])
        if merged.num_rows == int((~lone).sum()):  # every merged key kept its row: interleave by position
            order = np.empty(groups.count, dtype=np.int64)
            order[~lone] = np.arange(merged.num_rows)
            order[lone] = merged.num_rows + np.arange(singles.num_rows)
            return both.take(pa.array(order))
        return both.take(pc.sort_indices(both, [(k, "ascending") for k in keys]))

    def _merge_rows(self, kv: pa.Table, keys: Sequence[str], groups: KeyGroups | None = None) -> pa.Table:
        """:meth:`merge` of keys that have two rows or more (``groups``: those of ``kv``, if known)."""
        kinds = as_array(kv.column(VALUE_KIND)).to_numpy(zero_copy_only=False)
        if self.remove_on_delete and not self.ignore_delete and (kinds == DELETE).any():
            return self._merge_with_removals(kv, keys, kinds)
        retract = _is_retract(kinds)
        if retract.any():
            if self.ignore_delete:
                kv = kv.filter(pa.array(~retract))
                if kv.num_rows == 0:
                    return kv
                kinds, retract, groups = kinds[~retract], retract[~retract], None
            elif self.retract_option is not None and not self.accepts_retractions():
                self.reject_retractions()
        groups = groups if groups is not None else KeyGroups.of(kv, keys)
        kind_out, values = self._merge(kv, list(keys), groups, kinds, retract)
        return _assemble(kv, groups, kind_out, values)

    def reject_retractions(self) -> None:
        """Raise the error of a -U/-D row this engine cannot take."""
        raise DataValidationError(
            f"The {self.engine} merge engine cannot accept -U/-D rows; set "
            f"'{self.retract_option}' = 'true' (or 'ignore-delete') to ignore them")

    def accepts_retractions(self) -> bool:
        """Whether ``_merge`` takes -U/-D rows although the engine names a ``retract_option``."""
        return False

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

    @classmethod
    def from_schema(cls, schema, ignore_delete: bool, fixed: Sequence[str],
                    sequence_fields: Sequence[str]) -> "MergeFunction":
        """This engine for a table: ``fixed`` are its primary-key and partition columns,
        ``sequence_fields`` its 'sequence.field' columns (see ``merge_function_for``)."""
        return cls(ignore_delete)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ignore_delete={self.ignore_delete})"


def _assemble(kv: pa.Table, groups: KeyGroups, kinds: np.ndarray,
              values: Mapping[str, pa.Array | pa.ChunkedArray]) -> pa.Table:
    seq = as_array(kv.column(SEQUENCE_NUMBER)).to_numpy(zero_copy_only=False)
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


def inserts(groups: KeyGroups) -> np.ndarray:
    """The kinds of merged rows that are all +I (one per key group)."""
    return np.full(groups.count, INSERT, dtype=np.int8)
