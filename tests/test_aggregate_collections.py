"""The collection and sketch aggregate functions (collect, merge_map, nested_update, hll_sketch,
theta_sketch, rbm32, rbm64): Java's fold of agg / retract row by row, checked on small key groups.
Both ways against Java Paimon: tests/java/test_java_aggregate_functions.py."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from datasketches import compact_theta_sketch, hll_sketch, update_theta_sketch
from pyroaring import BitMap
from test_merge_function import UB, D, I, make_kv, values

from paimon_lab.core.roaring64 import deserialize_roaring64, serialize_roaring64
from paimon_lab.core.schema import new_schema
from paimon_lab.errors import DataValidationError, OptionError
from paimon_lab.mergetree.merge_engine import merge_function_for

ROW = pa.struct([("id", pa.int32()), ("v", pa.string())])


def _schema(col_type, function, **extra):
    options = {"merge-engine": "aggregation", "fields.v.aggregate-function": function}
    options.update({f"fields.v.{k.replace('_', '-')}": v for k, v in extra.items()})
    return new_schema(pa.schema([("k", pa.int32()), ("v", col_type)]), primary_keys=["k"], options=options)


def _merge(schema, rows, kinds=None):
    fn = merge_function_for(schema)
    return values(fn.merge(fn.prepare_input(make_kv(schema, rows, kinds)), ["_KEY_k"]), schema)


def test_collect_keeps_nulls_and_order_distinct_once():
    s = _schema(pa.list_(pa.int32()), "collect")
    rows = [(1, [1, None]), (1, None), (1, [1, 2]), (2, None), (3, [])]
    assert _merge(s, rows) == [(1, [1, None, 1, 2]), (2, None), (3, [])]
    s = _schema(pa.list_(pa.int32()), "collect", distinct="true")
    assert _merge(s, rows) == [(1, [1, None, 2]), (2, None), (3, [])]


def test_collect_distinct_on_rows_and_binary():
    s = _schema(pa.list_(ROW), "collect", distinct="true")
    rows = [(1, [{"id": 1, "v": "a"}, None]), (1, [{"id": 1, "v": "a"}, {"id": 1, "v": "b"}, None])]
    assert _merge(s, rows) == [(1, [{"id": 1, "v": "a"}, None, {"id": 1, "v": "b"}])]
    s = _schema(pa.list_(pa.binary()), "collect", distinct="true")
    assert _merge(s, [(1, [b"x"]), (1, [b"x", b"y"])]) == [(1, [b"x", b"y"])]


def test_collect_retraction_removes_one_occurrence_per_element():
    s = _schema(pa.list_(pa.int32()), "collect")
    rows = [(1, [1, 1, 2]), (1, [1, 3]), (2, [5]), (2, [5]), (3, [7]), (3, [7]), (4, [8])]
    # only retractions: +I with nothing left (Java's aggregation has no 'meetInsert'); a lone -D
    # is not merged (Java's ReducerMergeFunctionWrapper) and the reader drops it
    assert _merge(s, rows, [I, UB, I, D, D, UB, D]) == [(1, [1, 2]), (2, []), (3, None)]


def test_merge_map_later_value_wins_and_retraction_removes_keys():
    s = _schema(pa.map_(pa.string(), pa.int32()), "merge_map")
    rows = [(1, [("a", 1), ("b", 2)]), (1, None), (1, [("a", 3)]), (2, None)]
    assert _merge(s, rows) == [(1, [("b", 2), ("a", 3)]), (2, None)]
    rows = [(1, [("a", 1), ("b", 2)]), (1, [("a", 0)]), (1, [("c", 3)])]
    assert _merge(s, rows, [I, UB, I]) == [(1, [("b", 2), ("c", 3)])]


def test_nested_update_by_nested_key_and_appending():
    s = _schema(pa.list_(ROW), "nested_update", nested_key="id")
    rows = [(1, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]), (1, [{"id": 1, "v": "c"}, None])]
    assert _merge(s, rows) == [(1, [{"id": 2, "v": "b"}, {"id": 1, "v": "c"}])]
    assert _merge(s, rows + [(1, [{"id": 2, "v": "zz"}])], [I, I, D]) == [(1, [{"id": 1, "v": "c"}])]
    s = _schema(pa.list_(ROW), "nested_update")
    assert _merge(s, rows) == [(1, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 1, "v": "c"}])]
    r = {"id": 1, "v": "a"}
    assert _merge(s, rows + [(1, [r])], [I, I, UB]) == [(1, [{"id": 2, "v": "b"}, {"id": 1, "v": "c"}])]


def test_nested_update_keeps_an_array_met_only_by_nulls_as_it_is():
    """Java's agg(acc, null) and agg(null, input) return the other array untouched (repeated ids and
    null rows stay); its retract first maps the accumulator by id (repeated ids collapse)."""
    twice = [{"id": 1, "v": "a"}, {"id": 1, "v": "b"}]
    s = _schema(pa.list_(ROW), "nested_update", nested_key="id")
    assert _merge(s, [(1, None), (1, twice), (1, None)]) == [(1, twice)]
    assert _merge(s, [(1, twice), (1, [{"id": 9, "v": "z"}])], [I, UB]) == [(1, [{"id": 1, "v": "b"}])]
    assert _merge(s, [(1, twice), (1, [{"id": 2, "v": "c"}])]) == [(1, [{"id": 1, "v": "b"}, {"id": 2, "v": "c"}])]
    s = _schema(pa.list_(ROW), "nested_update")
    assert _merge(s, [(1, [None, twice[0]]), (1, None), (2, None), (2, None)]) == [(1, [None, twice[0]]), (2, None)]


def test_nested_update_checks_its_type_and_key():
    with pytest.raises(OptionError, match="ARRAY<ROW"):
        merge_function_for(_schema(pa.list_(pa.int32()), "nested_update"))
    with pytest.raises(OptionError, match="nested-key"):
        merge_function_for(_schema(pa.list_(ROW), "nested_update", nested_key="nope"))


def _hll(vals):
    sk = hll_sketch(12)
    for v in vals:
        sk.update(v)
    return sk.serialize_compact()


def _theta(vals):
    sk = update_theta_sketch(12)
    for v in vals:
        sk.update(v)
    return sk.compact().serialize()


@pytest.mark.parametrize("function,make,estimate", [
    ("hll_sketch", _hll, lambda b: hll_sketch.deserialize(b).get_estimate()),
    ("theta_sketch", _theta, lambda b: compact_theta_sketch.deserialize(b).get_estimate()),
    ("rbm32", lambda v: BitMap(v).serialize(), lambda b: len(BitMap.deserialize(b))),
    ("rbm64", lambda v: serialize_roaring64(np.array(list(v), np.uint64) << np.uint64(40)),
     lambda b: len(deserialize_roaring64(b))),
])
def test_sketch_unions(function, make, estimate):
    s = _schema(pa.binary(), function)
    one = make(range(10))
    out = _merge(s, [(1, make(range(10))), (1, None), (1, make(range(5, 20))), (2, one), (3, None)])
    assert [k for k, _ in out] == [1, 2, 3]
    assert round(estimate(out[0][1])) == 20
    assert out[1][1] == one and out[2][1] is None  # a lone value is kept as it is
    with pytest.raises(DataValidationError, match="retraction"):
        _merge(s, [(1, one), (1, one)], [I, UB])
    with pytest.raises(DataValidationError, match="not a valid"):
        _merge(s, [(1, one), (1, b"garbage")])


def test_rbm64_union_and_retraction():
    s = _schema(pa.binary(), "rbm64")
    a, b = np.array([1, 2, 1 << 40], np.uint64), np.array([2, 2**64 - 1], np.uint64)
    out = _merge(s, [(1, serialize_roaring64(a)), (1, serialize_roaring64(b))])
    assert deserialize_roaring64(out[0][1]).tolist() == [1, 2, 1 << 40, 2**64 - 1]
    ignoring = _schema(pa.binary(), "rbm64", ignore_retract="true")
    out = _merge(ignoring, [(1, serialize_roaring64(a)), (1, serialize_roaring64(b))], [I, UB])
    assert deserialize_roaring64(out[0][1]).tolist() == [1, 2, 1 << 40]
