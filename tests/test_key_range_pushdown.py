"""Filters on merge engines that combine versions (partial-update, aggregation, first-row): a
filter on primary-key columns prunes files and row groups by key range (every version of a key
has the key), a filter on other columns must not prune before the merge. Each case would return
wrong rows if a value filter were pushed below the merge; Hypothesis compares filtered reads with
the unfiltered read filtered in pyarrow. Append reads' late materialization (filter columns
first, the others only for row groups with a match) is checked the same way."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_lab import Catalog

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.int64())])
ENGINES = {"partial-update": {}, "aggregation": {"fields.a.aggregate-function": "sum",
                                                 "fields.b.aggregate-function": "max"},
           "first-row": {}}


def _table(cat, name, engine, **options):
    return cat.create_table(f"db.{name}", SCHEMA, primary_keys=["k"],
                            options={"bucket": "1", "merge-engine": engine, **ENGINES[engine], **options})


def _rows(k, a, b):
    return pa.table({"k": k, "a": a, "b": b}, schema=SCHEMA)


@pytest.mark.parametrize("engine,filt,want", [
    ("partial-update", "b = 2", [(1, 1, 2)]),  # file 1 has b NULL only
    ("partial-update", "a = 1", [(1, 1, 2)]),  # file 2 has a NULL only
    ("aggregation", "a = 12", [(1, 12, 7)]),  # neither file holds 12
    ("first-row", "a = 7", []),  # the second version matches, but the first row wins
    ("first-row", "a = 5", [(1, 5, 5)]),
])
def test_value_filters_do_not_prune_before_the_merge(lab, engine, filt, want):
    t = _table(lab, "t", engine)
    # the first file far bigger than the second, so that a first-row commit lifts the second
    # above it rather than merging the two (Java's size-ratio pick); the filler rows match no filter
    filler = list(range(100, 3100))
    if engine == "partial-update":
        t.write(_rows([1, 50] + filler, [1, 9] + [9] * len(filler), [None, 9] + [9] * len(filler)))
        t.write(_rows([1, 60], [None, 9], [2, 9]))
    else:
        t.write(_rows([1, 50] + filler, [5, 9] + [9] * len(filler), [5, 9] + [9] * len(filler)))
        t.write(_rows([1, 60], [7, 9], [7, 9]))
    got = t.to_arrow(filter=filt)
    assert sorted(zip(*[got.column(c).to_pylist() for c in "kab"])) == want
    assert len([f for s in t.plan(filter=filt) for f in s.files]) == 2  # both files kept


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_key_filters_prune_files(lab, engine):
    t = _table(lab, "t", engine)
    t.write(_rows(list(range(10)), list(range(10)), list(range(10))))
    t.write(_rows(list(range(100, 110)), list(range(10)), list(range(10))))
    plan = [f for s in t.plan(filter="k = 5") for f in s.files]
    assert len(plan) == 1 and plan[0].min_key != plan[0].max_key
    assert t.to_arrow(filter="k = 5").to_pylist() == [{"k": 5, "a": 5, "b": 5}]
    assert t.to_arrow(filter="k BETWEEN 8 AND 101").column("k").to_pylist() == [8, 9, 100, 101]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(engine=st.sampled_from(sorted(ENGINES)),
       commits=st.lists(st.lists(st.tuples(st.integers(0, 40), st.one_of(st.none(), st.integers(0, 9)),
                                           st.one_of(st.none(), st.integers(0, 9))), min_size=1, max_size=12),
                        min_size=1, max_size=5),
       compact_after=st.integers(0, 5), small_groups=st.booleans(),
       filters=st.lists(st.sampled_from(["k = 7", "k BETWEEN 5 AND 20", "k IN (1, 30)", "a = 3", "a > 5",
                                         "b < 2", "b IS NULL", "k < 10 AND a >= 4", "k > 30 OR b = 1"]),
                        min_size=1, max_size=3))
def test_filtered_read_is_read_then_filtered(tmp_path_factory, engine, commits, compact_after, small_groups, filters):
    cat = Catalog(str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    t = _table(cat, "t", engine, **{"parquet.block.size": "1"} if small_groups else {})  # a row group per row
    for i, rows in enumerate(commits):
        last = {}
        for k, a, b in rows:
            last[k] = (a, b)  # one version per key and commit, as a writer's buffer would hold
        t.write(_rows(list(last), [v[0] for v in last.values()], [v[1] for v in last.values()]))
        if i + 1 == compact_after:
            t.compact(full=True)
    everything = t.to_arrow()
    for filt in filters:
        got = t.to_arrow(filter=filt).sort_by("k")
        want = everything.filter(pc.fill_null(_expr(filt, everything), False)).sort_by("k")
        assert got == want, filt


def _expr(filt: str, table: pa.Table):
    from paimon_lab.core.predicate import parse_filter

    return parse_filter(filt, table.schema).evaluate(table)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_key_filters_skip_row_groups(lab, engine, monkeypatch):
    from paimon_lab.mergetree import reader

    t = _table(lab, "t", engine, **{"parquet.block.size": "1024"})
    t.write(_rows(list(range(5000)), list(range(5000)), list(range(5000))))
    t.write(_rows(list(range(0, 5000, 2)), [1] * 2500, [1] * 2500))  # two files spanning all keys
    read_rows = []
    original = reader.KVFileReader.read

    def spy(self, names):
        out = original(self, names)
        read_rows.append(out.num_rows)
        return out

    monkeypatch.setattr(reader.KVFileReader, "read", spy)
    got = t.to_arrow(filter="k IN (10, 4001)")
    want = t.to_arrow().filter(pc.field("k").isin([10, 4001]))
    assert got.sort_by("k") == want.sort_by("k") and got.num_rows == 2
    assert 0 < sum(read_rows) < 1000  # of 7500 rows on disk: only the row groups holding the keys


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(-20, 20), st.one_of(st.none(), st.text("abc", max_size=3)),
                               st.one_of(st.none(), st.integers(0, 5))), min_size=0, max_size=60),
       block=st.sampled_from(["1", "64", "100000"]),
       filt=st.sampled_from(["k = 3", "k BETWEEN -2 AND 4", "s = 'ab'", "s IS NULL", "n > 2", "k < 0 AND n = 1",
                             "k IN (1, 7) OR s = 'c'", "NOT (k > 0)", "s LIKE 'a%'"]),
       columns=st.sampled_from([None, ["s"], ["n", "k"]]))
def test_late_materialization_matches_pyarrow(tmp_path_factory, rows, block, filt, columns):
    """A filtered read of an append table decodes the filter's columns first and the others only for
    row groups with a match (Parquet files with one row group per row, a few, or one)."""
    from paimon_lab import Catalog
    from paimon_lab.core.predicate import parse_filter

    cat = Catalog(str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("s", pa.string()), ("n", pa.int32())])
    t = cat.create_table("db.t", schema, options={"parquet.block.size": block})
    if rows:
        t.write(pa.table({"k": [r[0] for r in rows], "s": [r[1] for r in rows], "n": [r[2] for r in rows]},
                         schema=schema))
    everything = t.to_arrow()
    want = everything.filter(pc.fill_null(parse_filter(filt, schema).evaluate(everything), False))
    got = t.to_arrow(filter=filt, columns=columns)
    assert got == (want if columns is None else want.select(columns))
