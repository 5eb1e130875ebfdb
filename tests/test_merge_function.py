"""Merge functions of primary-key tables: seed examples, options, errors, and a property test
against a plain per-row reference model."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_lab.errors import DataValidationError, OptionError
from paimon_lab.mergetree.key_groups import KeyGroups, group_starts
from paimon_lab.mergetree.merge_engine import merge_function_for
from paimon_lab.mergetree.merge_engine.aggregate import AggregateMergeFunction
from paimon_lab.mergetree.merge_engine.deduplicate import DeduplicateMergeFunction
from paimon_lab.mergetree.merge_engine.first_row import FirstRowMergeFunction
from paimon_lab.mergetree.merge_engine.partial_update import PartialUpdateMergeFunction
from paimon_lab.core.schema import new_schema

I, UB, UA, D = 0, 1, 2, 3
RETRACT = {UB, D}
SYSTEM = ("_SEQUENCE_NUMBER", "_VALUE_KIND")


# ---------------------------------------------------------------- helpers

def schema_of(columns, pk=("k",), options=None, partition=()):
    return new_schema(pa.schema(columns), primary_keys=list(pk), partition_keys=list(partition),
                      options=options or {})


def make_kv(schema, rows, kinds=None):
    """A KV table of ``rows`` (tuples in column order) sorted by key, then arrival."""
    kinds = [I] * len(rows) if kinds is None else kinds
    arrow = schema.arrow_schema()
    names = schema.field_names
    data = {}
    for k in schema.trimmed_primary_keys:
        data["_KEY_" + k] = pa.array([r[names.index(k)] for r in rows], arrow.field(k).type)
    data["_SEQUENCE_NUMBER"] = pa.array(range(len(rows)), pa.int64())
    data["_VALUE_KIND"] = pa.array(kinds, pa.int8())
    for i, n in enumerate(names):
        data[n] = pa.array([r[i] for r in rows], arrow.field(n).type)
    kv = pa.table(data)
    keys = ["_KEY_" + k for k in schema.trimmed_primary_keys]
    return kv.take(pc.sort_indices(kv, sort_keys=[(c, "ascending") for c in keys + ["_SEQUENCE_NUMBER"]]))


def merge(schema, rows, kinds=None):
    fn = merge_function_for(schema)
    kv = fn.prepare_input(make_kv(schema, rows, kinds))
    out = fn.merge(kv, ["_KEY_" + k for k in schema.trimmed_primary_keys])
    assert out.schema == kv.schema
    return out


def values(out, schema):
    """Merged rows as value tuples, retractions dropped (what a reader sees)."""
    return [tuple(r[n] for n in schema.field_names) for r in out.to_pylist() if r["_VALUE_KIND"] in (I, UA)]


# ---------------------------------------------------------------- group_starts

def test_group_starts_on_several_key_types():
    t = pa.table({
        "a": pa.array([1, 1, 1, 2, 2, 2], pa.int32()),
        "s": ["x", "x", "y", "y", "y", "y"],
        "d": pa.array([Decimal("1.10")] * 5 + [Decimal("1.20")], pa.decimal128(5, 2)),
        "ts": pa.array([dt.datetime(2024, 1, 1)] * 4 + [dt.datetime(2024, 1, 2)] * 2, pa.timestamp("us")),
    })
    assert group_starts(t, ["a"]).tolist() == [True, False, False, True, False, False]
    assert group_starts(t, ["a", "s"]).tolist() == [True, False, True, True, False, False]
    assert group_starts(t, ["d"]).tolist() == [True, False, False, False, False, True]
    assert group_starts(t, ["ts", "a"]).tolist() == [True, False, False, True, True, False]
    chunked = pa.concat_tables([t.slice(0, 2), t.slice(2, 3), t.slice(5)])
    assert group_starts(chunked, ["a", "s"]).tolist() == [True, False, True, True, False, False]
    assert group_starts(t.slice(0, 0), ["a"]).tolist() == []
    groups = KeyGroups.of(t, ["a", "s"])
    assert groups.ids.tolist() == [0, 0, 1, 2, 2, 2]
    assert groups.starts.tolist() == [0, 2, 3] and groups.lasts.tolist() == [1, 2, 5]


def test_group_starts_treats_null_and_nan_as_equal():
    t = pa.table({"f": pa.array([None, None, float("nan"), float("nan"), 1.0])})
    assert group_starts(t, ["f"]).tolist() == [True, False, True, False, True]


# ---------------------------------------------------------------- seed 003 examples

KV3 = [("k", pa.int32()), ("v1", pa.float64()), ("v2", pa.string())]
FRUIT = [(1, 2.0, "apple"), (1, 4.0, "banana"), (1, 8.0, "cherry")]


def test_seed_deduplicate():
    s = schema_of(KV3)
    assert isinstance(merge_function_for(s), DeduplicateMergeFunction)
    assert values(merge(s, FRUIT), s) == [(1, 8.0, "cherry")]
    out = merge(s, [(1, 2.0, "apple"), (1, 4.0, "banana"), (1, 4.0, "banana")], [I, I, D])
    assert out.column("_VALUE_KIND").to_pylist() == [D]
    assert values(out, s) == []


def test_seed_first_row():
    s = schema_of(KV3, options={"merge-engine": "first-row"})
    assert isinstance(merge_function_for(s), FirstRowMergeFunction)
    assert values(merge(s, FRUIT), s) == [(1, 2.0, "apple")]


def test_seed_aggregation():
    s = schema_of([("product_id", pa.int64()), ("price", pa.float64()), ("sales", pa.int64())],
                  pk=("product_id",), options={"merge-engine": "aggregation",
                                               "fields.price.aggregate-function": "max",
                                               "fields.sales.aggregate-function": "sum"})
    assert isinstance(merge_function_for(s), AggregateMergeFunction)
    assert values(merge(s, [(1, 23.0, 15), (1, 30.2, 20)]), s) == [(1, 30.2, 35)]


def test_seed_partial_update():
    s = schema_of([("k", pa.int32()), ("v1", pa.float64()), ("v2", pa.int64()), ("v3", pa.string())],
                  options={"merge-engine": "partial-update"})
    assert isinstance(merge_function_for(s), PartialUpdateMergeFunction)
    rows = [(1, 23.0, 10, None), (1, None, None, "This is a book"), (1, 25.2, None, None)]
    assert values(merge(s, rows), s) == [(1, 25.2, 10, "This is a book")]


SEQ_GROUP_OPTIONS = {"merge-engine": "partial-update",
                     "fields.g_1.sequence-group": "a,b", "fields.g_2.sequence-group": "c,d"}


def test_seed_partial_update_sequence_groups():
    s = schema_of([("k", pa.int32()), ("a", pa.string()), ("b", pa.string()), ("g_1", pa.int32()),
                   ("c", pa.string()), ("d", pa.string()), ("g_2", pa.int32())], options=SEQ_GROUP_OPTIONS)
    rows = [
        (1, "a1", "b1", 1, None, None, None),   # g_2 null: c, d untouched
        (1, "a2", None, 3, "c1", "d1", 1),      # g_1 up: a, b from this row (null b too)
        (1, "a3", "b3", 2, None, "d2", 2),      # g_1 down: a, b ignored; g_2 up: c=null, d=d2
        (1, None, None, None, "c3", "d3", 1),   # g_1 null: untouched; g_2 down: ignored
    ]
    assert values(merge(s, rows), s) == [(1, "a2", None, 3, None, "d2", 2)]


def test_partial_update_sequence_groups_take_retractions():
    """-U/-D rows retract the fields of each sequence group they win (Java's
    retractWithSequenceGroup); columns in no group ignore them."""
    s = schema_of([("k", pa.int32()), ("a", pa.string()), ("b", pa.string()), ("g_1", pa.int32()),
                   ("c", pa.string()), ("d", pa.string()), ("g_2", pa.int32()), ("e", pa.string())],
                  options=SEQ_GROUP_OPTIONS)
    rows = [
        (1, "a1", "b1", 1, "c1", "d1", 1, "e1"),
        (1, "a0", "b0", 2, "c0", "d0", 0, "e0"),   # -U: wins g_1 (2 >= 1), loses g_2 (0 < 1); e untouched
    ]
    assert values(merge(s, rows, [I, UB]), s) == [(1, None, None, 2, "c1", "d1", 1, "e1")]
    # a retraction first, then the insert: it wins g_2 (1 >= 0), not g_1 (1 < 2, fields stay retracted)
    assert values(merge(s, rows[::-1], [D, I]), s) == [(1, None, None, 2, "c1", "d1", 1, "e1")]


def test_partial_update_key_of_only_retractions_is_deleted():
    """A key that met no +I/+U row merges to -D (Java 1.1+'s 'meetInsert'; Java 0.9/1.0 fail
    with a NullPointerException on the key column), and a lone row passes through as it is."""
    s = schema_of([("k", pa.int32()), ("a", pa.string()), ("b", pa.string()), ("g_1", pa.int32()),
                   ("c", pa.string()), ("d", pa.string()), ("g_2", pa.int32()), ("e", pa.string())],
                  options=SEQ_GROUP_OPTIONS)
    rows = [(1, "a1", "b1", 1, "c1", "d1", 1, "e1"), (1, "a0", "b0", 2, "c0", "d0", 0, "e0")]
    out = merge(s, rows, [UB, D])
    assert out.column("_VALUE_KIND").to_pylist() == [D] and values(out, s) == []
    out = merge(s, rows[:1], [D])
    assert out.column("_VALUE_KIND").to_pylist() == [D] and values(out, s) == []
    out = merge(s, rows[:1], [UA])
    assert out.column("_VALUE_KIND").to_pylist() == [UA] and values(out, s) == [rows[0]]
    # remove-record-on-delete: -U rows are ignored, a key with no insert is deleted
    s = schema_of([("k", pa.int32()), ("v", pa.int64()), ("w", pa.string())],
                  options={"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"})
    out = merge(s, [(1, 1, "a"), (1, 2, None), (2, 3, "c"), (2, 4, "d"), (3, 5, "e"), (3, 6, None)],
                [I, UB, UB, UB, D, UA])
    assert out.column("_VALUE_KIND").to_pylist() == [I, D, UA]
    assert values(out, s) == [(1, 1, "a"), (3, 6, None)]


def test_seed_partial_update_sequence_groups_with_aggregation():
    s = schema_of([("k", pa.int32()), ("a", pa.string()), ("b", pa.int32()), ("g_1", pa.int32()),
                   ("c", pa.string()), ("d", pa.int32()), ("g_2", pa.int32())],
                  options={**SEQ_GROUP_OPTIONS, "fields.b.aggregate-function": "max",
                           "fields.d.aggregate-function": "sum"})
    rows = [
        (1, "a1", 1, 1, "c1", 1, 1),
        (1, "a2", 2, 2, "c2", 2, 2),
        (1, "a3", 3, 1, "c3", 3, 1),          # older in both groups: a, c stay; b = max 3, d = 1+2+3
        (1, None, 10, None, "c4", None, 3),   # g_1 null: b not aggregated; g_2 newest: c = c4, d stays 6
    ]
    assert values(merge(s, rows), s) == [(1, "a2", 3, 2, "c4", 6, 3)]


def test_partial_update_sequence_group_last_value_folds_in_arrival_order():
    """last_value / last_non_null_value in a sequence group, as Java 0.9/1.0 merge them (checked by
    tests/java/test_java_merge_retractions.py): rows in arrival order; an insert winning the group
    aggregates, a losing one is folded in reversed (last_value keeps, last_non_null_value fills a
    null), a retraction retracts whatever its sequence."""
    s = schema_of([("k", pa.int32()), ("g", pa.int32()), ("lv", pa.string()), ("lnn", pa.string())],
                  options={"merge-engine": "partial-update", "fields.g.sequence-group": "lv,lnn",
                           "fields.lv.aggregate-function": "last_value",
                           "fields.lnn.aggregate-function": "last_non_null_value"})
    history = {  # key: [(kind, g, lv, lnn)], expected (g, lv, lnn)
        1: ([(I, 5, "a", "a"), (UB, 3, "x", "x")], (5, None, None)),          # older retraction
        2: ([(I, 3, "a", "a"), (D, 5, "a", "a")], (5, None, None)),           # newer retraction
        3: ([(I, 4, "a", "a"), (UB, 4, "a", "a")], (4, None, None)),          # equal sequence
        4: ([(UB, 4, "a", "a"), (UA, 4, "b", "b")], (4, "b", "b")),           # insert after it, equal
        5: ([(I, 5, "a", "a"), (UB, 3, "x", None)], (5, None, "a")),          # older retraction of a null
        6: ([(I, 5, "a", "a"), (UB, 6, "a", "a"), (UA, 4, "c", "c")], (6, None, "c")),  # older insert fills
        7: ([(I, 1, "a", "a"), (I, 3, None, None), (I, 2, "c", "c")], (3, None, "a")),  # ... only a null
        8: ([(I, 5, "a", "a"), (UB, 3, "a", "a"), (UA, 6, "b", None)], (6, "b", None)),
        9: ([(I, 2, "a", "a"), (D, 1, None, None)], (2, None, "a")),
        10: ([(I, 2, "a", "a"), (I, None, "z", "z"), (UB, None, "a", "a")], (2, "a", "a")),  # no sequence: ignored
    }
    rows = [(k, g, lv, lnn) for k, (h, _) in history.items() for _, g, lv, lnn in h]
    kinds = [kind for h, _ in history.values() for kind, *_ in h]
    assert values(merge(s, rows, kinds), s) == [(k, *want) for k, (_, want) in history.items()]


def test_partial_update_sequence_group_first_value_and_listagg_fold_in_arrival_order():
    """An insert losing its group is folded in with Java's aggReversed: first_value takes it,
    listagg prepends it, first_non_null_value takes it (null too) once initialized (Java 0.9/1.0
    merge these rows so, checked by tests/java/test_java_merge_retractions.py)."""
    s = schema_of([("k", pa.int32()), ("g", pa.int32()), ("fv", pa.string()), ("fnn", pa.string()),
                   ("la", pa.string())],
                  options={"merge-engine": "partial-update", "fields.g.sequence-group": "fv,fnn,la",
                           "fields.fv.aggregate-function": "first_value",
                           "fields.fnn.aggregate-function": "first_non_null_value",
                           "fields.la.aggregate-function": "listagg"})
    history = {  # key: [(g, value)] in arrival order, expected (g, fv, fnn, la)
        1: ([(1, "a"), (3, "b"), (2, "c")], (3, "c", "c", "c,a,b")),
        2: ([(3, "b"), (1, "a"), (2, "c")], (3, "c", "c", "c,a,b")),
        3: ([(2, None), (1, "a"), (3, "c")], (3, "a", "c", "a,c")),
        4: ([(2, "b"), (1, None), (3, "c")], (3, None, None, "b,c")),
        5: ([(1, None), (2, "b"), (0, "z")], (2, "z", "z", "z,b")),
    }
    rows = [(k, g, v, v, v) for k, (h, _) in history.items() for g, v in h]
    assert values(merge(s, rows), s) == [(k, *want) for k, (_, want) in history.items()]


def test_partial_update_sequence_group_listagg_distinct_folds_in_arrival_order():
    """listagg with 'distinct' (Java 1.3+, apache/paimon#6566; the oracle's 0.9/1.0 lack it): a
    losing insert is folded in with aggReversed = agg(insert, accumulator), so the insert is kept
    whole and the accumulator adds its tokens not in it; an ignored retraction's sequence counts."""
    s = schema_of([("k", pa.int32()), ("g", pa.int32()), ("la", pa.string())],
                  options={"merge-engine": "partial-update", "fields.g.sequence-group": "la",
                           "fields.la.aggregate-function": "listagg", "fields.la.distinct": "true",
                           "fields.la.ignore-retract": "true"})
    rows = [(1, 1, "a,a,b"), (1, 3, "b,c"), (1, 2, "c,d"),       # the last loses: c,d then a, b
            (2, 1, "a"), (2, 5, "x"), (2, 4, "b,b"),             # a retraction of sequence 5 in between
            (3, 1, "a,b"), (3, 2, "b,c"), (3, 3, " ")]           # in sequence order: appended
    kinds = [I, I, I, I, UB, I, I, I, I]
    assert values(merge(s, rows, kinds), s) == [(1, 3, "c,d,a,b"), (2, 5, "b,b,a"), (3, 3, "a,b,c")]


def test_partial_update_sequence_group_collect_and_merge_map_fold_in_arrival_order():
    """collect appends a losing insert too (Java's FieldCollectAgg.aggReversed is agg); a losing
    merge_map gives way to the keys it meets; a retraction retracts where it arrives."""
    s = schema_of([("k", pa.int32()), ("g", pa.int32()), ("col", pa.list_(pa.int32())),
                   ("mm", pa.map_(pa.string(), pa.int32()))],
                  options={"merge-engine": "partial-update", "fields.g.sequence-group": "col,mm",
                           "fields.col.aggregate-function": "collect", "fields.mm.aggregate-function": "merge_map"})
    rows = [(1, 1, [1], [("x", 1)]), (1, 3, [3], [("x", 3)]), (1, 2, [2], [("x", 2)]),
            (2, 3, [3], [("x", 3)]), (2, 1, [1], [("y", 1)]), (2, 2, [2], [("y", 2)]),
            (3, 2, [1], [("x", 1)]), (3, 1, [2], [("y", 2)]), (3, 3, [1], [("x", 0)])]
    got = [(k, g, col, sorted(mm)) for k, g, col, mm in values(merge(s, rows, [I] * 8 + [UB]), s)]
    assert got == [(1, 3, [1, 3, 2], [("x", 3)]), (2, 3, [3, 1, 2], [("x", 3), ("y", 1)]), (3, 3, [2], [("y", 2)])]


def test_partial_update_multi_field_sequence_group():
    s = schema_of([("k", pa.int32()), ("a", pa.string()), ("g_1", pa.int32()), ("g_3", pa.int32())],
                  options={"merge-engine": "partial-update", "fields.g_1,g_3.sequence-group": "a"})
    rows = [(1, "x", 1, 5), (1, "y", 1, 2), (1, "z", 2, 0), (1, "w", None, None), (2, "q", None, 7)]
    assert values(merge(s, rows), s) == [(1, "z", 2, 0), (2, "q", None, 7)]


# ---------------------------------------------------------------- deletes and retractions

def test_deduplicate_ignore_delete():
    s = schema_of(KV3, options={"ignore-delete": "true"})
    out = merge(s, [(1, 1.0, "a"), (1, 1.0, "a"), (2, 2.0, "b"), (3, 3.0, "c"), (3, 4.0, "d")],
                [I, D, D, I, UB])
    assert values(out, s) == [(1, 1.0, "a"), (3, 3.0, "c")]
    assert out.column("_SEQUENCE_NUMBER").to_pylist() == [0, 2, 3]  # key 2's lone -D passes as it is


def test_first_row_rejects_or_ignores_retractions():
    s = schema_of(KV3, options={"merge-engine": "first-row"})
    with pytest.raises(DataValidationError, match="first-row.ignore-delete"):
        merge(s, [(1, 1.0, "a"), (1, 1.0, "a")], [I, D])
    for key in ("first-row.ignore-delete", "ignore-delete"):
        s = schema_of(KV3, options={"merge-engine": "first-row", key: "true"})
        out = merge(s, [(1, 1.0, "a"), (1, 2.0, "b"), (2, 3.0, "c"), (3, 4.0, "d")], [D, UA, UB, I])
        assert values(out, s) == [(1, 2.0, "b"), (3, 4.0, "d")]
        assert out.column("_VALUE_KIND").to_pylist() == [I, UB, I]  # +U merged: +I; lone rows as they are
    # a lone -D fails too (Java's first-row writer merges every row in its lookup compaction)
    s = schema_of(KV3, options={"merge-engine": "first-row"})
    with pytest.raises(DataValidationError, match="first-row.ignore-delete"):
        merge(s, [(1, 1.0, "a"), (2, 1.0, "b")], [D, I])


def test_partial_update_rejects_or_ignores_retractions():
    cols = [("k", pa.int32()), ("v", pa.int64()), ("w", pa.string())]
    s = schema_of(cols, options={"merge-engine": "partial-update"})
    with pytest.raises(DataValidationError, match="partial-update.ignore-delete"):
        merge(s, [(1, 1, "a"), (1, 1, "a")], [I, UB])
    for key in ("partial-update.ignore-delete", "ignore-delete"):
        s = schema_of(cols, options={"merge-engine": "partial-update", key: "true"})
        out = merge(s, [(1, 1, "a"), (1, 5, None), (1, None, "b"), (2, 3, "c")], [I, D, UA, D])
        assert values(out, s) == [(1, 1, "b")]


AGG_COLS = [("k", pa.int32()), ("price", pa.float64()), ("sales", pa.int64()), ("n", pa.int32()),
            ("p", pa.int64())]
AGG_OPTS = {"merge-engine": "aggregation", "fields.price.aggregate-function": "max",
            "fields.sales.aggregate-function": "sum", "fields.n.aggregate-function": "count",
            "fields.p.aggregate-function": "product"}


def test_aggregation_retractions_for_sum_count_product():
    s = schema_of(AGG_COLS, options={**AGG_OPTS, "fields.price.ignore-retract": "true"})
    rows = [(1, 10.0, 10, 1, 2), (1, 10.0, 10, 1, 2), (1, 7.0, 7, 1, 6), (1, 99.0, 5, None, 3)]
    out = merge(s, rows, [I, UB, UA, D])
    # sales 10-10+7-5, n counts non-null +1-1+1, p = 2*6 / (2*3), price ignores -U/-D rows
    assert values(out, s) == [(1, 10.0, 2, 1, 2)]
    assert out.column("_VALUE_KIND").to_pylist() == [I]


def test_aggregation_rejects_retraction_for_other_functions():
    s = schema_of(AGG_COLS, options=AGG_OPTS)
    with pytest.raises(DataValidationError, match=r"fields\.price\.ignore-retract"):
        merge(s, [(1, 10.0, 10, 1, 2), (1, 10.0, 10, 1, 2)], [I, D])
    # the default function (last_non_null_value) and last_value take retractions as Java does:
    # retracting a non-null value (last_value: any value) leaves null
    s = schema_of([("k", pa.int32()), ("v", pa.string()), ("w", pa.string())],
                  options={"merge-engine": "aggregation", "fields.w.aggregate-function": "last_value"})
    assert values(merge(s, [(1, "a", "x"), (1, "a", "x")], [I, UB]), s) == [(1, None, None)]
    assert values(merge(s, [(1, "a", "x"), (1, None, None)], [I, UB]), s) == [(1, "a", None)]
    assert values(merge(s, [(1, "a", "x"), (1, "a", "x"), (1, "b", "y")], [I, UB, UA]), s) == [(1, "b", "y")]
    s = schema_of([("k", pa.int32()), ("v", pa.string())],
                  options={"merge-engine": "aggregation", "ignore-delete": "true"})
    assert values(merge(s, [(1, "a"), (1, "a"), (2, "b")], [I, UB, D]), s) == [(1, "a")]


def test_aggregation_nulls_and_defaults():
    s = schema_of([("k", pa.int32()), ("a", pa.int64()), ("b", pa.float64()), ("c", pa.string()),
                   ("d", pa.int64())],
                  options={"merge-engine": "aggregation", "fields.default-aggregate-function": "sum",
                           "fields.c.aggregate-function": "last_value",
                           "fields.d.aggregate-function": "count"})
    rows = [(1, None, 1.5, "x", None), (1, None, None, None, None), (2, 3, None, "y", 5)]
    assert values(merge(s, rows), s) == [(1, None, 1.5, None, 0), (2, 3, None, "y", 1)]


def test_aggregation_keeps_key_partition_and_sequence_columns():
    s = schema_of([("dt", pa.string()), ("k", pa.int32()), ("ts", pa.int64()), ("v", pa.int64())],
                  pk=("dt", "k"), partition=("dt",),
                  options={"merge-engine": "aggregation", "sequence.field": "ts",
                           "fields.default-aggregate-function": "sum"})
    assert values(merge(s, [("x", 1, 5, 1), ("x", 1, 9, 2)]), s) == [("x", 1, 9, 3)]
    # the sequence column is last_value (Java 1.1+, apache/paimon#4977): a retraction merged last
    # leaves it null, whatever 'fields.ts.aggregate-function' or the default says
    rows = [("x", 1, 5, 1), ("x", 1, 9, 2), ("x", 2, 3, 4), ("x", 2, 7, 1)]
    s = dataclasses.replace(s, options={**s.options, "fields.ts.aggregate-function": "max"})
    assert values(merge(s, rows, [I, UB, I, D]), s) == [("x", 1, None, -1), ("x", 2, None, 3)]


def test_listagg_delimiter_and_distinct():
    s = schema_of([("k", pa.int32()), ("a", pa.string()), ("b", pa.string())],
                  options={"merge-engine": "aggregation", "fields.a.aggregate-function": "listagg",
                           "fields.a.list-agg-delimiter": "|", "fields.b.aggregate-function": "listagg",
                           "fields.b.distinct": "true"})
    rows = [(1, "x", "p,q"), (1, None, " "), (1, "", "q,r,,p"), (1, "y", "r,s,s"), (2, None, None)]
    assert values(merge(s, rows), s) == [(1, "x|y", "p,q,r,s"), (2, None, None)]


def test_sum_overflow_raises():
    s = schema_of([("k", pa.int32()), ("v", pa.int8())],
                  options={"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    with pytest.raises(DataValidationError, match="overflow"):
        merge(s, [(1, 100), (1, 100)])
    s = schema_of([("k", pa.int32()), ("v", pa.int64())],
                  options={"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    with pytest.raises(DataValidationError, match="overflow"):
        merge(s, [(1, 2 ** 62), (1, 2 ** 62)])


def test_decimal_sum_and_product():
    dec = pa.decimal128(6, 2)
    s = schema_of([("k", pa.int32()), ("s", dec), ("p", dec)],
                  options={"merge-engine": "aggregation", "fields.s.aggregate-function": "sum",
                           "fields.p.aggregate-function": "product"})
    rows = [(1, Decimal("1.25"), Decimal("1.50")), (1, Decimal("2.50"), Decimal("2.00")),
            (1, Decimal("0.25"), Decimal("4.00"))]
    assert values(merge(s, rows, [I, I, D]), s) == [(1, Decimal("3.50"), Decimal("0.75"))]
    with pytest.raises(DataValidationError, match="overflow"):
        merge(s, [(1, None, Decimal("100.00")), (1, None, Decimal("100.00"))])



def test_product_retraction_before_any_insert_and_rounding_as_java():
    # Java's FieldProductAgg (1.1+, apache/paimon#4842; 0.9/1.0 made the retracted value the
    # product): retracting from a null product leaves it null, so a key's leading retractions do
    # not divide; a decimal quotient rounds HALF_UP (half away from zero)
    dec = pa.decimal128(6, 2)
    s = schema_of([("k", pa.int32()), ("p", pa.int64()), ("d", dec)],
                  options={"merge-engine": "aggregation", "fields.p.aggregate-function": "product",
                           "fields.d.aggregate-function": "product"})
    rows = [(1, 2, Decimal("2.00")), (1, 3, Decimal("3.00")), (1, 2, Decimal("-8.00"))]
    assert values(merge(s, rows, [D, I, D]), s) == [(1, 1, Decimal("-0.38"))]
    rows = [(1, 1, Decimal("1.00")), (1, 8, Decimal("-8.00"))]
    assert values(merge(s, rows, [I, D]), s) == [(1, 0, Decimal("-0.13"))]
    assert values(merge(s, rows[:1] * 2, [D, D]), s) == [(1, None, None)]


# ---------------------------------------------------------------- option errors

@pytest.mark.parametrize("col_type,function", [
    (pa.string(), "sum"), (pa.string(), "product"), (pa.float64(), "count"), (pa.int32(), "listagg"),
    (pa.int32(), "bool_and"), (pa.string(), "bool_or"), (pa.bool_(), "max"), (pa.list_(pa.int32()), "min"),
    (pa.int32(), "avgg"), (pa.int32(), "collect"),
])
def test_bad_aggregate_function_raises_option_error(col_type, function):
    s = schema_of([("k", pa.int32()), ("v", col_type)],
                  options={"merge-engine": "aggregation", "fields.v.aggregate-function": function})
    with pytest.raises(OptionError, match=rf"'v'.*'{function}'"):
        merge_function_for(s)


def test_bad_default_aggregate_function_raises_option_error():
    s = schema_of([("k", pa.int32()), ("v", pa.string())],
                  options={"merge-engine": "aggregation", "fields.default-aggregate-function": "sum"})
    with pytest.raises(OptionError, match="'v'"):
        merge_function_for(s)


def test_aggregate_function_aliases_and_any_type():
    s = schema_of([("k", pa.int32()), ("a", pa.list_(pa.int32())), ("b", pa.map_(pa.string(), pa.int32()))],
                  options={"merge-engine": "aggregation", "fields.a.aggregate-function": "first_not_null_value",
                           "fields.b.aggregate-function": "last_not_null_value"})
    rows = [(1, None, [("x", 1)]), (1, [1, 2], None), (1, [3], None)]
    assert values(merge(s, rows), s) == [(1, [1, 2], [("x", 1)])]


@pytest.mark.parametrize("options,match", [
    ({"fields.g.sequence-group": "nope"}, "nope"),
    ({"fields.g.sequence-group": "k"}, "key column"),
    ({"fields.g.sequence-group": "a", "fields.h.sequence-group": "a"}, "more than one"),
    ({"fields.a.aggregate-function": "sum"}, "sequence group"),
    ({"fields.g.sequence-group": "a", "fields.a.aggregate-function": "listagg"}, "does not support"),
    ({"fields.g.sequence-group": "a", "partial-update.remove-record-on-delete": "true"}, "sequence groups"),
    ({"ignore-delete": "true", "partial-update.remove-record-on-delete": "true"}, "'ignore-delete'"),
])
def test_partial_update_option_errors(options, match):
    with pytest.raises(OptionError, match=match):   # from the schema's validation or the merge function
        merge_function_for(schema_of([("k", pa.int32()), ("a", pa.int32()), ("g", pa.int32()), ("h", pa.int32())],
                                     options={"merge-engine": "partial-update", **options}))


def test_engine_option_errors():
    s = schema_of(KV3, options={"merge-engine": "first-row", "sequence.field": "v1"})
    with pytest.raises(OptionError, match="sequence.field"):
        merge_function_for(s)
    bad = dataclasses.replace(schema_of(KV3), options={"merge-engine": "newest"})
    with pytest.raises(OptionError, match="newest"):
        merge_function_for(bad)


def test_empty_input_and_projection():
    s = schema_of(KV3, options={"merge-engine": "partial-update"})
    kv = make_kv(s, [])
    assert merge_function_for(s).merge(kv, ["_KEY_k"]).num_rows == 0
    kv = make_kv(s, [(1, 1.0, None), (1, None, "b")]).select(["_KEY_k", *SYSTEM, "k", "v2"])
    assert merge_function_for(s).merge(kv, ["_KEY_k"]).to_pylist() == [
        {"_KEY_k": 1, "_SEQUENCE_NUMBER": 1, "_VALUE_KIND": I, "k": 1, "v2": "b"}]


def test_many_keys_vectorized_result():
    """A larger input (no timing): deduplicate and aggregation agree with numpy."""
    rng = np.random.default_rng(7)
    n, keys = 200_000, 60_000
    k = np.sort(rng.integers(0, keys, n)).astype(np.int64)
    v = rng.integers(-1000, 1000, n)
    kv = pa.table({"_KEY_k": k, "_SEQUENCE_NUMBER": np.arange(n), "_VALUE_KIND": pa.array(np.zeros(n, np.int8)),
                   "k": k, "v": v, "w": v.astype(np.float64)})
    s = schema_of([("k", pa.int64()), ("v", pa.int64()), ("w", pa.float64())],
                  options={"merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                           "fields.w.aggregate-function": "max"})
    out = merge_function_for(s).merge(kv, ["_KEY_k"])
    uniq, starts = np.unique(k, return_index=True)
    assert out.column("k").to_numpy().tolist() == uniq.tolist()
    assert out.column("v").to_numpy().tolist() == np.add.reduceat(v, starts).tolist()
    assert out.column("w").to_numpy().tolist() == np.maximum.reduceat(v, starts).astype(float).tolist()
    dedup = merge_function_for(dataclasses.replace(s, options={})).merge(kv, ["_KEY_k"])
    lasts = np.r_[starts[1:] - 1, n - 1]
    assert dedup.column("v").to_numpy().tolist() == v[lasts].tolist()
    assert dedup.column("_SEQUENCE_NUMBER").to_numpy().tolist() == lasts.tolist()


# ---------------------------------------------------------------- reference model (per row, plain)

def _bool(options, key):
    return str(options.get(key, "false")).lower() == "true"


def _seq_key(values):
    return tuple((v is not None, v if v is not None else 0) for v in values)


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def model_aggregate(function, items, column, options, arrow_type):
    """Fold (value, is_retract) pairs the way the named function is documented to."""
    function = {"first_not_null_value": "first_non_null_value",
                "last_not_null_value": "last_non_null_value"}.get(function, function)
    if _bool(options, f"fields.{column}.ignore-retract"):
        items = [(v, r) for v, r in items if not r]
    elif any(r for _, r in items) and function not in ("sum", "count", "product", "last_value",
                                                        "last_non_null_value"):
        raise DataValidationError("retraction")
    present = [v for v, _ in items if v is not None]
    if function == "sum":
        if not present:
            return None
        total = 0
        for v, r in items:
            if v is not None:
                total = total - v if r else total + v
        return total
    if function == "product":
        num = den = None
        for v, r in items:
            if v is None or (r and num is None):  # a retraction of a null product leaves it null
                continue
            if r:
                den = v if den is None else den * v
            else:
                num = v if num is None else num * v
        if num is None and den is None:
            return None
        num, den = (1 if num is None else num), (1 if den is None else den)
        if pa.types.is_integer(arrow_type):
            return _trunc_div(num, den)
        if pa.types.is_decimal(arrow_type):
            return (Decimal(num) / Decimal(den)).quantize(Decimal(1).scaleb(-arrow_type.scale), ROUND_HALF_UP)
        return num / den
    if function == "count":
        if not items:
            return None
        return sum((-1 if r else 1) for v, r in items if v is not None)
    if function == "max":
        return max(present) if present else None
    if function == "min":
        return min(present) if present else None
    if function == "first_value":
        return items[0][0] if items else None
    if function == "last_value":  # a retraction leaves null (Java's FieldLastValueAgg.retract)
        acc = None
        for v, r in items:
            acc = None if r else v
        return acc
    if function == "first_non_null_value":
        return present[0] if present else None
    if function == "last_non_null_value":  # retracting a non-null value leaves null
        acc = None
        for v, r in items:
            if v is not None:
                acc = None if r else v
        return acc
    if function == "bool_and":
        return all(present) if present else None
    if function == "bool_or":
        return any(present) if present else None
    if function == "listagg":
        delim = options.get(f"fields.{column}.list-agg-delimiter", ",")
        distinct = _bool(options, f"fields.{column}.distinct")
        acc = None
        for v in present:
            if v.strip() == "":
                continue
            if acc is None:
                acc = v
            elif distinct:
                seen = set(acc.split(delim))
                for token in v.split(delim):
                    if token.strip() and token not in seen:
                        seen.add(token)
                        acc = acc + delim + token
            else:
                acc = acc + delim + v
        return acc
    raise AssertionError(function)


def model_merge(schema, rows, kinds):
    """Expected merged rows: {key: (max sequence number, kind, row)}; raises like the engine."""
    opts = schema.options
    engine = opts.get("merge-engine", "deduplicate")
    names = schema.field_names
    types = {f.name: f.type for f in schema.arrow_schema()}
    pk = schema.trimmed_primary_keys
    fixed = set(schema.primary_keys) | set(schema.partition_keys)
    ignore = _bool(opts, "ignore-delete") or _bool(opts, f"{engine}.ignore-delete")
    by_key = {}
    for seq, (row, kind) in enumerate(zip(rows, kinds)):
        by_key.setdefault(tuple(row[names.index(k)] for k in pk), []).append((seq, kind, dict(zip(names, row))))
    out = {}
    if engine == "first-row" and not ignore and any(k in RETRACT for k in kinds):
        raise DataValidationError("retraction")
    for key in sorted(by_key):
        items = by_key[key]
        if len(items) == 1:  # a lone row is not merged (Java's ReducerMergeFunctionWrapper), only stored
            seq, kind, row = items[0]
            out[key] = (seq, kind, {n: (int(v is not None) if _is_count(opts, n) else v) for n, v in row.items()})
            continue
        if engine == "partial-update" and _bool(opts, "partial-update.remove-record-on-delete") and not ignore:
            deletes = [i for i, it in enumerate(items) if it[1] == D]
            if deletes and deletes[-1] == len(items) - 1:
                out[key] = items[-1]
                continue
            if deletes:
                items = items[deletes[-1] + 1:]
                if len(items) == 1:
                    out[key] = items[0]
                    continue
        if ignore:
            items = [it for it in items if it[1] not in RETRACT]
        elif (engine == "first-row" or (engine == "partial-update" and not _pu_takes_retractions(opts))) \
                and any(it[1] in RETRACT for it in items):
            raise DataValidationError("retraction")
        if not items:
            continue
        seq = max(it[0] for it in items)
        if engine == "deduplicate":
            out[key] = (seq, items[-1][1], items[-1][2])
        elif engine == "first-row":
            out[key] = (seq, I, items[0][2])
        elif engine == "aggregation":
            row = {}
            for n in names:
                if n in fixed:
                    row[n] = items[-1][2][n]
                    continue
                func = (opts.get(f"fields.{n}.aggregate-function")
                        or opts.get("fields.default-aggregate-function") or "last_non_null_value")
                row[n] = model_aggregate(func, [(it[2][n], it[1] in RETRACT) for it in items], n, opts, types[n])
            out[key] = (seq, I, row)
        else:
            row = model_partial_update(schema, [it[2] for it in items], [it[1] for it in items])
            row.update(zip(pk, key))   # the merged row carries its key, also when only retractions came
            # a key that met no insert is deleted (Java 1.1+)
            out[key] = (seq, I if any(it[1] not in RETRACT for it in items) else D, row)
    return out


def _is_count(opts, column):
    """Whether ``column`` aggregates with 'count' (stored as each row's contribution, 1 or 0)."""
    return (opts.get(f"fields.{column}.aggregate-function") or opts.get("fields.default-aggregate-function")) \
        == "count"


def _pu_takes_retractions(opts):
    """Partial-update takes -U/-D rows with sequence groups (or remove-record-on-delete)."""
    groups = [v.split(",") for k, v in opts.items() if k.startswith("fields.") and k.endswith(".sequence-group")]
    if _bool(opts, "partial-update.remove-record-on-delete"):
        return True  # -U rows are ignored
    return bool(groups)


# folded as Java does (arrival order, aggReversed for a losing insert), not in sequence order
ARRIVAL_ORDER = ("last_value", "last_non_null_value", "first_value", "first_non_null_value", "listagg")


def java_fold_step(func, acc, initialized, v, kind, wins, column, opts):
    """One row of Java 0.9's fold of a sequence group's aggregated field: ``agg(acc, v)`` for a
    winning insert, ``aggReversed(acc, v)`` = ``agg(v, acc)`` for a losing one, ``retract`` for a
    -U/-D row; returns (value, initialized)."""
    if kind in RETRACT:
        if _bool(opts, f"fields.{column}.ignore-retract"):
            return acc, initialized
        if func == "last_value":
            return None, initialized
        if func == "last_non_null_value":
            return (None if v is not None else acc), initialized
        raise DataValidationError("retraction")
    a, b = (acc, v) if wins else (v, acc)   # agg(a, b)
    if func == "last_value":
        return b, initialized
    if func == "last_non_null_value":
        return (a if b is None else b), initialized
    if func == "first_value":
        return (a, True) if initialized else (b, True)
    if func == "first_non_null_value":
        return (b, True) if not initialized and b is not None else (a, initialized)
    delim = opts.get(f"fields.{column}.list-agg-delimiter", ",")   # listagg: blanks do not count
    a, b = (None if x is None or x.strip() == "" else x for x in (a, b))
    if a is not None and b is not None and _bool(opts, f"fields.{column}.distinct"):
        seen = set(a.split(delim))
        for token in b.split(delim):
            if token.strip() and token not in seen:
                seen.add(token)
                a = a + delim + token
        return a, initialized
    return (b if a is None else a if b is None else a + delim + b), initialized


def model_partial_update(schema, rows, kinds=None):
    opts = schema.options
    groups = []
    for k, v in opts.items():
        if k.startswith("fields.") and k.endswith(".sequence-group"):
            groups.append((k[len("fields."):-len(".sequence-group")].split(","), v.split(",")))
    grouped = {c for s, f in groups for c in s + f}
    kinds = kinds or [I] * len(rows)
    state = {n: None for n in schema.field_names}
    for row, kind in zip(rows, kinds):
        for n in schema.field_names:
            if n not in grouped and row[n] is not None and kind not in RETRACT:
                state[n] = row[n]
    for seq_fields, fields in groups:
        aliases = {"first_not_null_value": "first_non_null_value", "last_not_null_value": "last_non_null_value"}
        aggs = {f: aliases.get(opts.get(f"fields.{f}.aggregate-function"), opts.get(f"fields.{f}.aggregate-function"))
                for f in fields}
        arrival = {f: func for f, func in aggs.items() if func in ARRIVAL_ORDER}
        initialized = dict.fromkeys(arrival, False)
        current = None
        for row, kind in zip(rows, kinds):  # Java's rule: a row with a non-null sequence >= the current one updates
            s = [row[f] for f in seq_fields]
            if all(v is None for v in s):
                continue
            wins = current is None or _seq_key(s) >= _seq_key(current)
            for f, func in arrival.items():  # Java's agg / aggReversed / retract, in arrival order
                state[f], initialized[f] = java_fold_step(func, state[f], initialized[f], row[f], kind, wins,
                                                          f, opts)
            if wins:
                current = s
                for f in seq_fields:
                    state[f] = row[f]
                for f in fields:  # a retraction clears the group's fields
                    if aggs[f] is None:
                        state[f] = None if kind in RETRACT else row[f]
        taking_part = sorted(((r, k) for r, k in zip(rows, kinds) if any(r[f] is not None for f in seq_fields)),
                             key=lambda rk: _seq_key([rk[0][f] for f in seq_fields]))  # stable: ties by arrival
        for f, func in aggs.items():
            if func is not None and f not in arrival:  # a retraction is retracted, winning or not (Java)
                state[f] = model_aggregate(func, [(r[f], k in RETRACT) for r, k in taking_part], f, opts, None)
    return state


def check_against_model(schema, rows, kinds):
    try:
        expected = model_merge(schema, rows, kinds)
    except DataValidationError:
        with pytest.raises(DataValidationError):
            merge(schema, rows, kinds)
        return
    out = merge(schema, rows, kinds)
    pk = schema.trimmed_primary_keys
    got = {}
    for r in out.to_pylist():
        key = tuple(r["_KEY_" + k] for k in pk)
        assert key not in got
        got[key] = (r["_SEQUENCE_NUMBER"], r["_VALUE_KIND"], {n: r[n] for n in schema.field_names})
    assert list(got) == list(expected)  # one row per key, in key order
    assert got == expected


# ---------------------------------------------------------------- property tests

SMALL_TEXT = st.text(alphabet="ab ,;", max_size=4)


def nullable(strategy):
    return st.one_of(st.none(), strategy)


@st.composite
def kinds_for(draw, n, retractions):
    return draw(st.lists(st.sampled_from([I, UB, UA, D] if retractions else [I, UA]), min_size=n, max_size=n))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), engine=st.sampled_from(["deduplicate", "first-row"]))
def test_property_deduplicate_and_first_row(data, engine):
    options = {"merge-engine": engine}
    if data.draw(st.booleans()):
        options[data.draw(st.sampled_from(["ignore-delete", f"{engine}.ignore-delete"]))
                if engine == "first-row" else "ignore-delete"] = "true"
    s = schema_of([("k1", pa.int8()), ("k2", pa.string()), ("v1", pa.float64()), ("v2", pa.string())],
                  pk=("k1", "k2"), options=options)
    row = st.tuples(st.integers(0, 2), st.sampled_from(["", "a", "b"]), nullable(st.floats(-10, 10)),
                    nullable(SMALL_TEXT))
    rows = data.draw(st.lists(row, max_size=14))
    kinds = data.draw(kinds_for(len(rows), data.draw(st.booleans())))
    check_against_model(s, rows, kinds)


PU_COLUMNS = [("k", pa.int32()), ("a", pa.string()), ("b", pa.int32()), ("g1", pa.int32()), ("c", pa.string()),
              ("d", pa.int64()), ("g2", pa.int32()), ("e", pa.float64())]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_partial_update(data):
    options = {"merge-engine": "partial-update"}
    if data.draw(st.booleans()):
        options[data.draw(st.sampled_from(["ignore-delete", "partial-update.ignore-delete"]))] = "true"
    if "ignore-delete" not in options and "partial-update.ignore-delete" not in options and data.draw(st.booleans()):
        options["partial-update.remove-record-on-delete"] = "true"
    elif data.draw(st.booleans()):
        options["fields.g1.sequence-group"] = "a,b"
        options["fields.g2.sequence-group"] = "c,d"
        for col, funcs in (("a", ["last_non_null_value", "first_value", "listagg"]), ("b", ["max", "sum"]),
                           ("c", ["listagg", "last_value", "first_non_null_value"]), ("d", ["sum", "count"])):
            if data.draw(st.booleans()):
                options[f"fields.{col}.aggregate-function"] = data.draw(st.sampled_from(funcs))
    s = schema_of(PU_COLUMNS, options=options)
    small = nullable(st.integers(0, 3))
    row = st.tuples(st.integers(0, 2), nullable(SMALL_TEXT), nullable(st.integers(-50, 50)), small,
                    nullable(SMALL_TEXT), nullable(st.integers(-50, 50)), small, nullable(st.floats(-5, 5)))
    rows = data.draw(st.lists(row, max_size=14))
    kinds = data.draw(kinds_for(len(rows), data.draw(st.booleans())))
    check_against_model(s, rows, kinds)


DEC = pa.decimal128(10, 2)
# (column, type, function, value strategy, takes retractions)
AGG_SPECS = [
    ("i_sum", pa.int32(), "sum", st.integers(-1000, 1000), True),
    ("d_sum", DEC, "sum", st.decimals(-100, 100, places=2, allow_nan=False), True),
    ("f_sum", pa.float64(), "sum", st.integers(-100, 100).map(float), True),
    ("p_prod", pa.int64(), "product", st.sampled_from([-3, -2, -1, 1, 2, 3]), True),
    ("f_prod", pa.float64(), "product", st.sampled_from([0.5, 2.0, -1.0, 4.0]), True),
    ("d_prod", DEC, "product", st.sampled_from([Decimal(v) for v in ("-2.00", "1.00", "3.00", "7.00")]), True),
    ("c_cnt", pa.int64(), "count", st.integers(0, 9), True),
    ("i_cnt", pa.int32(), "count", st.booleans(), True),
    ("mx", pa.float64(), "max", st.floats(-100, 100), False),
    ("mn_s", pa.string(), "min", SMALL_TEXT, False),
    ("mx_ts", pa.timestamp("us"), "max", st.datetimes(dt.datetime(2000, 1, 1), dt.datetime(2030, 1, 1)), False),
    ("mn_dt", pa.date32(), "min", st.dates(dt.date(2000, 1, 1), dt.date(2030, 1, 1)), False),
    ("mx_dec", DEC, "max", st.decimals(-100, 100, places=2, allow_nan=False), False),
    ("mn_i8", pa.int8(), "min", st.integers(-128, 127), False),
    ("fv", pa.string(), "first_value", SMALL_TEXT, False),
    ("lv", pa.int32(), "last_value", st.integers(0, 9), True),
    ("fnn", pa.string(), "first_not_null_value", SMALL_TEXT, False),
    ("lnn", pa.int16(), None, st.integers(0, 9), True),  # default: last_non_null_value
    ("la", pa.string(), "listagg", SMALL_TEXT, False),
    ("lad", pa.string(), "listagg", SMALL_TEXT, False),
    ("ba", pa.bool_(), "bool_and", st.booleans(), False),
    ("bo", pa.bool_(), "bool_or", st.booleans(), False),
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_aggregation(data):
    retractions = data.draw(st.booleans())
    options = {"merge-engine": "aggregation", "fields.lad.distinct": "true",
               "fields.lad.list-agg-delimiter": ";"}
    # with retractions, functions other than sum/count/product must ignore them; now and then one
    # column does not, and the merge must raise
    strict = retractions and data.draw(st.integers(0, 4)) == 0
    not_ignoring = data.draw(st.sampled_from([n for n, *_, takes in AGG_SPECS if not takes])) if strict else None
    for name, _, func, _, takes_retract in AGG_SPECS:
        if func is not None:
            options[f"fields.{name}.aggregate-function"] = func
        if retractions and name != not_ignoring and (not takes_retract or data.draw(st.booleans())):
            options[f"fields.{name}.ignore-retract"] = "true"
    if data.draw(st.integers(0, 4)) == 0:
        options["ignore-delete"] = "true"
    s = schema_of([("k", pa.int32())] + [(n, t) for n, t, *_ in AGG_SPECS], options=options)
    row = st.tuples(st.integers(0, 3), *[nullable(v) for _, _, _, v, _ in AGG_SPECS])
    rows = data.draw(st.lists(row, max_size=12))
    rows = [tuple(int(v) if isinstance(v, bool) and n == "i_cnt" else v
                  for n, v in zip(["k"] + [a[0] for a in AGG_SPECS], r)) for r in rows]
    kinds = data.draw(kinds_for(len(rows), retractions))
    check_against_model(s, rows, kinds)


def test_merge_lone_merges_a_keys_only_row():
    s = schema_of([("k", pa.int32()), ("v", pa.int64())],
                  options={"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    fn = merge_function_for(s)
    kv = make_kv(s, [(1, 5), (2, 7), (2, 1)], [D, I, I])
    assert fn.merge(kv, ["_KEY_k"]).column("_VALUE_KIND").to_pylist() == [D, I]
    out = fn.merge(kv, ["_KEY_k"], merge_lone=True)
    assert values(out, s) == [(1, -5), (2, 8)]


@pytest.mark.parametrize("lookup", [False, True])
def test_lone_aggregation_retraction_in_a_table(tmp_path, lookup):
    """A key's lone -D is not merged, so not read (Java's ReducerMergeFunctionWrapper); the lift of
    level 0 in a lookup table merges it (Java's lookup compaction): a row with the retracted sum."""
    from paimon_lab import Catalog

    options = {"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
               **({"changelog-producer": "lookup"} if lookup else {})}
    cat = Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                         options=options)

    def rows():
        return sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"])

    t.write(pa.table({"k": [1, 2], "v": [5, 7]}), row_kinds=["-D", "+I"])
    assert rows() == ([{"k": 1, "v": -5}] if lookup else []) + [{"k": 2, "v": 7}]
    t.write(pa.table({"k": [1], "v": [8]}))
    assert rows() == [{"k": 1, "v": 3}, {"k": 2, "v": 7}]
    t.compact(full=True)
    assert rows() == [{"k": 1, "v": 3}, {"k": 2, "v": 7}]
