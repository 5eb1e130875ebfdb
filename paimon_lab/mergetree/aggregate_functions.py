"""The registry of field aggregate functions, by the name 'fields.<f>.aggregate-function' gives."""

from __future__ import annotations

from collections.abc import Mapping

from paimon_lab.errors import OptionError
from paimon_lab.mergetree.aggregators import (
    ALIASES,
    FIELDS_PREFIX,
    SIMPLE_FUNCTIONS,
    FieldAggregator,
    bool_option,
    canonical_function,
)
from paimon_lab.mergetree.aggregators_nested import (
    FieldCollectAgg,
    FieldMergeMapAgg,
    FieldNestedUpdateAgg,
)
from paimon_lab.mergetree.aggregators_sketch import (
    FieldHllSketchAgg,
    FieldRoaringBitmap32Agg,
    FieldRoaringBitmap64Agg,
    FieldThetaSketchAgg,
)

__all__ = ["AGGREGATE_FUNCTIONS", "create_field_aggregator"]

AGGREGATE_FUNCTIONS: dict[str, type[FieldAggregator]] = {
    cls.name: cls for cls in SIMPLE_FUNCTIONS + (
        FieldCollectAgg, FieldMergeMapAgg, FieldNestedUpdateAgg, FieldHllSketchAgg, FieldThetaSketchAgg,
        FieldRoaringBitmap32Agg, FieldRoaringBitmap64Agg)
}
# Java functions paimon-lab does not implement (named so the error can say so).
_NOT_IMPLEMENTED = {"merge_map_with_keytime", "nested_partial_update", "avg"}


def create_field_aggregator(column: str, data_type, function: str,
                            options: Mapping[str, str]) -> FieldAggregator:
    """The aggregator of ``function`` for a column of Paimon type ``data_type``.

    Raises OptionError for an unknown function or one that does not support the type.
    """
    key = canonical_function(function)
    cls = AGGREGATE_FUNCTIONS.get(key)
    if cls is None:
        what = ("is not implemented in paimon-lab" if key in _NOT_IMPLEMENTED
                else "is not a known aggregate function")
        raise OptionError(f"Column '{column}': aggregate function '{function}' {what}; "
                          f"use one of {sorted(AGGREGATE_FUNCTIONS) + sorted(ALIASES)}")
    if cls.types is not None and data_type.root not in cls.types:
        raise OptionError(f"Column '{column}': aggregate function '{key}' does not support type {data_type}; "
                          f"it takes {', '.join(sorted(cls.types))}")
    ignore_retract = bool_option(options, f"{FIELDS_PREFIX}{column}.ignore-retract")
    aggregator = cls(column, ignore_retract, options)
    aggregator.check_type(data_type)
    return aggregator
