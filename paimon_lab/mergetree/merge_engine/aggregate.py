"""The ``aggregation`` merge engine: each value column is reduced by its field aggregator."""

from __future__ import annotations

from typing import Mapping

import pyarrow as pa

from paimon_lab.mergetree.aggregate_functions import create_field_aggregator
from paimon_lab.mergetree.aggregators import (FieldAggregator, aggregate_function_option, bool_option,
                                              count_contributions)
from paimon_lab.mergetree.key_groups import as_array
from paimon_lab.mergetree.merge_engine.base import MergeFunction, inserts

__all__ = ["AggregateMergeFunction"]


class AggregateMergeFunction(MergeFunction):
    """Each value column is reduced by its :class:`FieldAggregator`; the result is +I.

    Primary-key and partition columns are not aggregated (last row's value); ``sequence.field``
    columns take ``last_value``, so a retraction merged last leaves them null.
    """

    engine = "aggregation"
    remove_on_delete_option = "aggregation.remove-record-on-delete"

    def __init__(self, aggregators: Mapping[str, FieldAggregator], ignore_delete: bool = False,
                 remove_on_delete: bool = False):
        super().__init__(ignore_delete, remove_on_delete)
        self.aggregators = dict(aggregators)

    def prepare_input(self, rows: pa.Table) -> pa.Table:
        return count_contributions(rows, self.aggregators)

    def _merge(self, kv, keys, groups, kinds, retract):
        values = {}
        for name, agg in self.aggregators.items():
            if name in kv.column_names:
                values[name] = agg.aggregate(as_array(kv.column(name)), groups.ids, groups.count, retract)
        return inserts(groups), values

    def __repr__(self) -> str:
        return f"AggregateMergeFunction({list(self.aggregators.values())}, ignore_delete={self.ignore_delete})"

    @classmethod
    def from_schema(cls, schema, ignore_delete, fixed, sequence_fields):
        """One aggregator per column but the fixed ones (``last_non_null_value`` unless
        'fields.<f>.aggregate-function' or 'fields.default-aggregate-function' says); sequence
        columns ``last_value`` whatever the options say, as Java 1.1+ (apache/paimon#4977; 0.9/1.0
        aggregated them like any column)."""
        options: Mapping[str, str] = schema.options
        aggregators = {
            f.name: create_field_aggregator(
                f.name, f.type, "last_value" if f.name in sequence_fields
                else aggregate_function_option(options, f.name) or "last_non_null_value", options)
            for f in schema.fields if f.name not in fixed}
        return cls(aggregators, ignore_delete, bool_option(options, cls.remove_on_delete_option))
