"""Merge engines (option ``merge-engine``): how the rows of one primary key become one row.

After Paimon's Java classes of the same names, one module each:

* ``deduplicate`` -- :class:`.deduplicate.DeduplicateMergeFunction`: the last row wins, kind and all.
* ``first-row`` -- :class:`.first_row.FirstRowMergeFunction`: the first row wins.
* ``partial-update`` -- :class:`.partial_update.PartialUpdateMergeFunction`: last non-null value
  per column, with optional sequence groups.
* ``aggregation`` -- :class:`.aggregate.AggregateMergeFunction`: one field aggregator per column
  (:mod:`..aggregators`).

:mod:`.base` holds what they share; :func:`merge_function_for` picks one from a table's options.
"""

from __future__ import annotations

from typing import Mapping

from paimon_lab.errors import OptionError
from paimon_lab.mergetree.aggregators import bool_option, split_names
from paimon_lab.mergetree.merge_engine.aggregate import AggregateMergeFunction
from paimon_lab.mergetree.merge_engine.base import MergeFunction
from paimon_lab.mergetree.merge_engine.deduplicate import DeduplicateMergeFunction
from paimon_lab.mergetree.merge_engine.first_row import FirstRowMergeFunction
from paimon_lab.mergetree.merge_engine.partial_update import PartialUpdateMergeFunction

__all__ = ["merge_function_for", "merge_function_of", "MergeFunction"]

ENGINES: dict[str, type[MergeFunction]] = {
    c.engine: c for c in (DeduplicateMergeFunction, FirstRowMergeFunction,
                          PartialUpdateMergeFunction, AggregateMergeFunction)}


def merge_function_for(schema) -> MergeFunction:
    """The merge function a primary-key table's options ask for (``merge-engine`` and friends)."""
    options: Mapping[str, str] = schema.options
    engine = str(options.get("merge-engine", "deduplicate")).strip().lower()
    cls = ENGINES.get(engine)
    if cls is None:
        raise OptionError(f"Option 'merge-engine': '{engine}' is not one of {', '.join(ENGINES)}")
    ignore_delete = any(bool_option(options, k) for k in cls.ignore_delete_options)
    sequence_fields = split_names(options.get("sequence.field") or "")
    fixed = list(dict.fromkeys([*schema.primary_keys, *schema.partition_keys]))
    return cls.from_schema(schema, ignore_delete, fixed, sequence_fields)


def merge_function_of(store) -> MergeFunction:
    """The merge function of a store's current schema (kept until the schema changes)."""
    return store.derived("merge_function", merge_function_for)
