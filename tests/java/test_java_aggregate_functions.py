"""The collection and sketch aggregate functions against Java Paimon, both ways.

One aggregation table with ``collect`` (plain and ``distinct``), ``merge_map``, ``nested_update``
(with a nested key), ``hll_sketch``, ``theta_sketch`` and ``rbm32`` (``rbm64`` on a table of its
own): paimon-lab writes, Java reads the merged rows; Java writes more (with -U/-D retractions) and compacts, paimon-lab reads Java's
aggregates; paimon-lab writes more and compacts, Java reads ours. Sketch and bitmap values are
compared as bytes (Java stores the serialized union), and as estimates.

Java keeps distinct ``collect`` elements and ``nested_update`` rows in a hash set or map, so their
order is unspecified: those columns are compared sorted.
"""

from __future__ import annotations

import base64

import numpy as np
import pyarrow as pa
import pytest
from datasketches import compact_theta_sketch, hll_sketch, update_theta_sketch
from pyroaring import BitMap

from paimon_lab.core.roaring64 import deserialize_roaring64, serialize_roaring64

from .java_rows import arrow_schema, lab_fields

FIELDS = [("k", "INT NOT NULL"), ("c", "ARRAY<INT>"), ("cd", "ARRAY<STRING>"), ("m", "MAP<STRING, INT>"),
          ("n", "ARRAY<ROW<id INT, v STRING>>"), ("h", "BYTES"), ("t", "BYTES"), ("r", "BYTES")]
OPTIONS = {"bucket": "1", "merge-engine": "aggregation",
           "fields.c.aggregate-function": "collect",
           "fields.cd.aggregate-function": "collect", "fields.cd.distinct": "true",
           "fields.m.aggregate-function": "merge_map",
           "fields.n.aggregate-function": "nested_update", "fields.n.nested-key": "id",
           "fields.h.aggregate-function": "hll_sketch", "fields.h.ignore-retract": "true",
           "fields.t.aggregate-function": "theta_sketch", "fields.t.ignore-retract": "true",
           "fields.r.aggregate-function": "rbm32", "fields.r.ignore-retract": "true"}
UNORDERED = ("cd", "n")
KEYS = range(6)


def _hll(values):
    s = hll_sketch(12)
    for v in values:
        s.update(v)
    return s.serialize_compact()


def _theta(values):
    s = update_theta_sketch(12)
    for v in values:
        s.update(v)
    return s.compact().serialize()


def _rbm(values):
    b = BitMap(values)
    b.run_optimize()
    return b.serialize()


def _batch(step: int, retract: bool = False) -> tuple[pa.Table, list[str] | None]:
    rows, kinds = [], []
    for k in KEYS:
        base = k * 100 + step * 10
        rows.append({
            "k": k,
            "c": None if (k + step) % 4 == 0 else [step, k, None] if k % 3 == 0 else [step],
            "cd": [f"s{k % 2}", f"s{step}", f"s{step}"],
            "m": None if (k + step) % 5 == 0 else [("a", step), (f"k{k}", k), (f"s{step}", 1)],
            "n": [{"id": 1, "v": f"v{step}"}, {"id": 10 + step, "v": "x"}],
            "h": _hll(range(base, base + 1 + k * 50)),
            "t": _theta(range(base, base + 1 + k * 300)),
            "r": None if k == 5 else _rbm([base, base + 1, 70000 + step, 1 << 20]),
        })
        kinds.append("+I")
    if retract:  # take back step 1's contribution of two keys
        for k in (1, 3):
            rows.append({"k": k, "c": [1], "cd": ["s1"], "m": [("a", 0)],
                         "n": [{"id": 11, "v": "x"}], "h": None, "t": None, "r": None})
            kinds.append("-U")
    return pa.Table.from_pylist(rows, schema=arrow_schema(FIELDS)), kinds if retract else None


def _norm(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        r = dict(r)
        for c in UNORDERED:
            if r[c] is not None:
                r[c] = sorted(r[c], key=repr)
        out.append(r)
    return sorted(out, key=lambda r: r["k"])


def _check_sketches(rows: list[dict]) -> None:
    """The sketch columns decode, with estimates in the range the inputs allow."""
    for r in rows:
        if r["h"] is not None:
            assert hll_sketch.deserialize(base64.b64decode(r["h"])).get_estimate() > 0
        if r["t"] is not None:
            assert compact_theta_sketch.deserialize(base64.b64decode(r["t"])).get_estimate() > 0


@pytest.mark.compat("primary-key", "aggregate functions: collect, merge_map, nested_update, hll/theta sketches, rbm32", "both")
@pytest.mark.parametrize("version", ["0.9", "1.0"])
def test_aggregate_functions_both_ways(jo, oracle, lab, wh, version):
    oracle(version)
    t = lab.create_table("db.t", fields=lab_fields(FIELDS), primary_keys=["k"], options=OPTIONS)
    ours = lambda: _norm(jo.canonical(lab.get_table("db.t").to_arrow()))
    java = lambda: _norm(jo.read(wh, "db.t", version=version))

    # 1. paimon-lab writes two commits; Java merges our level-0 files the same
    for step in (1, 2):
        t.write(_batch(step)[0])
    mine = ours()
    assert mine[1]["m"] == [["a", 2], ["k1", 1], ["s1", 1], ["s2", 1]]
    assert mine[1]["n"] == [{"id": 1, "v": "v2"}, {"id": 11, "v": "x"}, {"id": 12, "v": "x"}]
    assert java() == mine

    # 2. Java writes with retractions and compacts: paimon-lab reads Java's aggregates
    data, kinds = _batch(3, retract=True)
    jo.write(wh, "db.t", data, row_kinds=kinds, compact=True, version=version)
    from_java = java()
    assert ours() == from_java
    _check_sketches(from_java)

    # 3. paimon-lab writes more and compacts; Java reads our compacted files
    t = lab.get_table("db.t")
    data, kinds = _batch(4, retract=True)
    t.write(data, row_kinds=kinds)
    assert t.compact(full=True) is not None
    mine = ours()
    assert java() == mine
    _check_sketches(mine)
    est = hll_sketch.deserialize(base64.b64decode(mine[5]["h"])).get_estimate()
    assert abs(est - 281) / 281 < 0.05  # 510..790: four overlapping ranges of 251 values
    assert sorted(BitMap.deserialize(base64.b64decode(mine[0]["r"]))) == \
        [10, 11, 20, 21, 30, 31, 40, 41, 70001, 70002, 70003, 70004, 1 << 20]


def _r64(values) -> bytes:
    return serialize_roaring64(np.asarray(values, dtype=np.uint64))


def _r64_set(b64: str | None) -> list[int] | None:
    return None if b64 is None else deserialize_roaring64(base64.b64decode(b64)).tolist()


# Per key, the value sets written in order. Keys 0, 2 and 3 only add containers above the ones
# they have or merge into existing ones, so Java's union (tree and containers grown in ascending
# order) is byte for byte ours; key 1 adds keys between existing ones (Java's layout differs,
# not its set) over enough high keys for Node4/48/256; key 3 has runs, arrays and bitmaps.
_HIGH = [(h << 16) for h in range(300)]
R64_STEPS = [
    {0: [1, 2, 1 << 40], 1: _HIGH[::2], 2: None, 3: list(range(0, 70000, 3))},
    {0: [3, (1 << 41) + 7], 1: _HIGH[1::2][:30], 2: [5, (1 << 63) + 1], 3: list(range(10, 5000))},
    {0: [2 ** 64 - 1], 1: [7 << 40] + _HIGH[1::2][30:], 2: [6], 3: list(range(200000, 300000))},
    {0: [9], 1: [1], 2: None, 3: [1 << 33]},
]


def _r64_batch(step: int) -> pa.Table:
    rows = [{"k": k, "r": None if v is None else _r64(v)} for k, v in R64_STEPS[step].items()]
    return pa.Table.from_pylist(rows, schema=pa.schema([("k", pa.int32(), False), ("r", pa.binary())]))


def _r64_expected(upto: int) -> dict[int, list[int] | None]:
    out: dict[int, set | None] = {}
    for step in R64_STEPS[:upto]:
        for k, v in step.items():
            if v is not None:
                out[k] = (out.get(k) or set()) | set(v)
    return {k: sorted(out.get(k)) if out.get(k) is not None else None for k in range(4)}


@pytest.mark.compat("primary-key", "aggregate function rbm64", "both")
@pytest.mark.parametrize("version", ["0.9", "1.0"])
def test_rbm64_both_ways(jo, oracle, lab, wh, version):
    """Java's rbm64 stores RoaringBitmap's ``Roaring64Bitmap`` serialization: paimon-lab writes
    it, Java reads and aggregates on top, paimon-lab reads Java's unions."""
    oracle(version)
    fields = [("k", "INT NOT NULL"), ("r", "BYTES")]
    lab.create_table("db.r", fields=lab_fields(fields), primary_keys=["k"],
                     options={"bucket": "1", "merge-engine": "aggregation",
                              "fields.r.aggregate-function": "rbm64"})
    ours = lambda: sorted(jo.canonical(lab.get_table("db.r").to_arrow()), key=lambda r: r["k"])
    java = lambda: sorted(jo.read(wh, "db.r", version=version), key=lambda r: r["k"])
    sets = lambda rows: {r["k"]: _r64_set(r["r"]) for r in rows}

    # 1. paimon-lab writes two commits; both sides merge the level-0 files to the same sets
    t = lab.get_table("db.r")
    for step in (0, 1):
        t.write(_r64_batch(step))
    mine, theirs = ours(), java()
    assert sets(mine) == sets(theirs) == _r64_expected(2)
    assert [theirs[k]["r"] for k in (0, 2, 3)] == [mine[k]["r"] for k in (0, 2, 3)]

    # 2. Java writes more and compacts: paimon-lab reads Java's unions
    jo.write(wh, "db.r", _r64_batch(2), compact=True, version=version)
    from_java = java()
    assert sets(from_java) == _r64_expected(3)
    assert ours() == from_java

    # 3. paimon-lab writes more and compacts on top of Java's bytes; Java reads ours
    t = lab.get_table("db.r")
    t.write(_r64_batch(3))
    assert t.compact(full=True) is not None
    mine = ours()
    assert sets(mine) == _r64_expected(4)
    assert java() == mine


@pytest.mark.compat("primary-key", "rbm64 takes Java's 64-bit roaring format only", "Java refuses the portable one")
def test_portable_64_bit_roaring_is_not_javas_rbm64(jo, java, wh):
    """pyroaring's portable 64-bit format is not what Java's rbm64 reads."""
    from pyroaring import BitMap64

    portable = BitMap64([1, 2, 1 << 40])
    portable.run_optimize()
    jo.create(wh, "db.r", [("k", "INT NOT NULL"), ("r", "BYTES")], primary_keys=["k"],
              options={"bucket": "1", "merge-engine": "aggregation", "fields.r.aggregate-function": "rbm64"},
              version=java)
    data = base64.b64encode(portable.serialize()).decode()
    with pytest.raises(jo.OracleError, match="roaring bitmap"):
        jo.write(wh, "db.r", [{"k": 1, "r": data}, {"k": 1, "r": data}], version=java)
