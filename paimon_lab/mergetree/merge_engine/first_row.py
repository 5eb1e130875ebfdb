"""The ``first-row`` merge engine: the first row of each key wins."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.errors import OptionError
from paimon_lab.core.key_value import SEQUENCE_NUMBER, VALUE_KIND, is_retract
from paimon_lab.mergetree.merge_engine.base import MergeFunction, inserts

__all__ = ["FirstRowMergeFunction"]


class FirstRowMergeFunction(MergeFunction):
    """The first row of each key wins, as +I; -U/-D rows are an error unless ignored."""

    engine = "first-row"
    ignore_delete_options = ("ignore-delete", "first-row.ignore-delete")
    retract_option = "first-row.ignore-delete"

    def merge(self, kv: pa.Table, keys, merge_lone: bool = False) -> pa.Table:
        """As :meth:`MergeFunction.merge`, but a -U/-D row is refused also when it is its key's only
        row: Java's first-row writer merges every row (its lookup compaction), lone ones too."""
        if not self.ignore_delete and kv.num_rows and pc.any(is_retract(kv.column(VALUE_KIND))).as_py():
            self.reject_retractions()
        return super().merge(kv, keys, merge_lone)

    def _merge(self, kv, keys, groups, kinds, retract):
        firsts = pa.array(groups.starts)
        return (inserts(groups),
                {name: kv.column(name).take(firsts) for name in kv.column_names
                 if name not in (SEQUENCE_NUMBER, VALUE_KIND)})

    @classmethod
    def from_schema(cls, schema, ignore_delete, fixed, sequence_fields):
        if sequence_fields:
            raise OptionError("The first-row merge engine does not support 'sequence.field'")
        return cls(ignore_delete)
