"""The primary-key matrix against Java Paimon, both ways: every merge engine, every changelog
producer, deletion vectors, dynamic bucket and cross-partition update.

Each case is one chain over one table, so that both directions cost four or five JVM calls:

1. paimon-lab writes two commits (inserts, then ``-U``/``+U`` pairs, ``-D`` and new keys): Java
   reads what paimon-lab wrote and gets the rows paimon-lab reads (Java merges our level-0 files);
2. Java writes more rows with row kinds and compacts every bucket (merging our files into its own);
3. paimon-lab writes more with row kinds, without compacting: Java reads both sides' files merged
   and gets the rows paimon-lab reads (so paimon-lab read what Java wrote right: step 3 only adds
   to it);
4. paimon-lab compacts fully: its rows are unchanged, and Java reads our compacted files (and
   deletion vectors) the same;
5. where a changelog producer writes changelog files: Java's changelog of the whole history
   (``incremental-between`` in ``changelog`` mode on ``$audit_log``) is the one paimon-lab reads,
   and replaying it gives the final rows.

Java 0.9 (and the 1.0 snapshot) has no ``count`` aggregate function (added in a later Paimon), so
it is not in the aggregation case. Java's oracle cannot write cross-partition-update tables, so in
that case Java only reads and compacts (test_java_cross_partition.py has Java write them, through
its GlobalIndexAssigner).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
import pytest

from .java_rows import arrow_schema, lab_fields

KEY = ["k"]


@dataclass
class Case:
    id: str
    fields: list[tuple[str, str]]
    options: dict
    values: Callable[[int, int, bool], dict]  # (key, step, retract) -> the non-key columns
    primary_keys: list[str] = field(default_factory=lambda: ["k", "part"])
    partition_keys: list[str] = field(default_factory=lambda: ["part"])
    retract_updates: bool = True  # updates as -U/+U pairs (else +U only)
    java_writes: bool = True
    moves_partitions: bool = False  # cross-partition update: keys change partition in step 4
    changelog: bool = False
    slow: bool = False
    xfail: str | None = None


BASE = [("k", "BIGINT NOT NULL"), ("part", "INT NOT NULL")]


def _dedup_values(k, step, retract):
    return {"name": f"n{k}-s{step}", "amount": None if (k + step) % 5 == 0 else f"{k * 10 + step}.25",
            "at": f"2024-01-{1 + k % 28:02d}T00:00:0{step}.123456000"}


DEDUP_FIELDS = BASE + [("name", "STRING"), ("amount", "DECIMAL(12, 2)"), ("at", "TIMESTAMP(6)")]


def _pu_values(k, step, retract):
    # two sequence groups: (a, b) ordered by g1, (c, d) by g2; e is in no group (last non-null)
    return {"a": None if (k + step) % 3 == 0 else k * 10 + step, "b": f"b{k}-{step}",
            "g1": step - 5 if (k + step) % 7 == 0 else step,  # some updates arrive out of order
            "c": k * 100 + step, "d": None if k % 2 else f"d{step}",
            # a null sequence: the group is left alone (not on a key's first row: Java then keeps the
            # row's (c, d) in its files, and whether a read shows them depends on the files' layout)
            "g2": None if (k + step) % 4 == 0 and k not in STEPS[step][2] else step,
            "e": f"e{step}" if (k + step) % 2 else None}


PU_FIELDS = BASE + [("a", "INT"), ("b", "STRING"), ("g1", "INT"), ("c", "BIGINT"), ("d", "STRING"),
                    ("g2", "INT"), ("e", "STRING")]


def _pu_plain_values(k, step, retract):
    return {"a": None if (k + step) % 3 == 0 else k * 10 + step, "b": None if (k + step) % 2 else f"b{step}"}


AGG = {  # column: (type, function, retractable)
    "s_sum": ("BIGINT", "sum", True),
    "s_prod": ("BIGINT", "product", True),
    "s_max": ("INT", "max", False),
    "s_min": ("DECIMAL(10, 2)", "min", False),
    "s_first": ("STRING", "first_value", False),
    "s_last": ("STRING", "last_value", True),
    "s_fnn": ("INT", "first_non_null_value", False),
    "s_lnn": ("INT", "last_non_null_value", True),
    "s_list": ("STRING", "listagg", False),
    "s_and": ("BOOLEAN", "bool_and", False),
    "s_or": ("BOOLEAN", "bool_or", False),
}


def _agg_values(k, step, retract):
    if retract:  # what a retraction carries: only the retractable columns
        return {"s_sum": k + step, "s_prod": None, "s_max": None, "s_min": None, "s_first": None,
                "s_last": f"L{k}-{step}", "s_fnn": None, "s_lnn": k, "s_list": None, "s_and": None, "s_or": None}
    return {"s_sum": k * step, "s_prod": None if (k + step) % 4 == 0 else 1 + (k + step) % 3,
            "s_max": (k * 7 + step * 13) % 50, "s_min": f"{(k * 3 + step * 11) % 40}.5",
            "s_first": None if (k + step) % 3 == 0 else f"F{step}", "s_last": None if (k + step) % 5 == 0 else f"L{step}",
            "s_fnn": None if (k + step) % 2 == 0 else step, "s_lnn": None if (k + step) % 3 == 0 else step,
            "s_list": None if (k + step) % 4 == 1 else f"x{step}",
            "s_and": None if (k + step) % 6 == 0 else (k + step) % 3 != 0, "s_or": (k * step) % 5 == 0}


AGG_OPTIONS = {"merge-engine": "aggregation",
               **{f"fields.{c}.aggregate-function": fn for c, (_, fn, _) in AGG.items()},
               **{f"fields.{c}.ignore-retract": "true" for c, (_, _, r) in AGG.items() if not r}}

CASES = [
    Case("deduplicate", DEDUP_FIELDS, {"bucket": "2"}, _dedup_values, slow=True),
    Case("changelog-input", DEDUP_FIELDS, {"bucket": "2", "changelog-producer": "input"}, _dedup_values,
         changelog=True, slow=True),
    Case("changelog-lookup", DEDUP_FIELDS, {"bucket": "2", "changelog-producer": "lookup"}, _dedup_values,
         changelog=True),
    Case("changelog-full-compaction", DEDUP_FIELDS, {"bucket": "2", "changelog-producer": "full-compaction"},
         _dedup_values, changelog=True, slow=True),
    Case("first-row", DEDUP_FIELDS, {"bucket": "2", "merge-engine": "first-row", "first-row.ignore-delete": "true"},
         _dedup_values),
    Case("partial-update-sequence-group", PU_FIELDS,
         {"bucket": "2", "merge-engine": "partial-update", "fields.g1.sequence-group": "a,b",
          "fields.g2.sequence-group": "c,d"}, _pu_values),
    Case("partial-update-remove-record-on-delete", BASE + [("a", "INT"), ("b", "STRING")],
         {"bucket": "2", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
         _pu_plain_values, retract_updates=False,
         xfail="Java 0.9/1.0 itself fails: NullPointerException in PartialUpdateMergeFunction (this.row is null) "
               "when a key's first record in its write buffer is a -D with remove-record-on-delete"),
    Case("aggregation", BASE + [(c, t) for c, (t, _, _) in AGG.items()], {"bucket": "2", **AGG_OPTIONS},
         _agg_values),
    Case("deletion-vectors", DEDUP_FIELDS, {"bucket": "2", "deletion-vectors.enabled": "true"}, _dedup_values),
    Case("deletion-vectors-lookup", DEDUP_FIELDS,
         {"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "lookup"}, _dedup_values,
         changelog=True, slow=True),
    Case("dynamic-bucket", DEDUP_FIELDS, {"bucket": "-1", "dynamic-bucket.target-row-num": "8"}, _dedup_values),
    Case("cross-partition", DEDUP_FIELDS, {"bucket": "-1", "dynamic-bucket.target-row-num": "8"}, _dedup_values,
         primary_keys=["k"], java_writes=False, moves_partitions=True),
]

# Which keys each step touches: (updated, deleted, inserted)
STEPS = {
    1: ([], [], list(range(0, 30))),
    2: (list(range(0, 6)), [6, 7, 8], list(range(30, 35))),
    3: (list(range(10, 16)), [16, 17, 18], list(range(35, 40)) + [6]),
    4: ([0, 1, 2, 20, 21, 22], [23, 24, 25], list(range(40, 45)) + [16]),
}


def _batch(case: Case, step: int) -> tuple[pa.Table, list[str]]:
    updated, deleted, inserted = STEPS[step]
    rows, kinds = [], []

    def row(k, kind, s, retract=False):
        part = (k + 1) % 2 if case.moves_partitions and step == 4 else k % 2
        rows.append({"k": k, "part": part, **case.values(k, s, retract)})
        kinds.append(kind)

    for k in updated:
        if case.retract_updates:
            row(k, "-U", step - 1, retract=True)
        row(k, "+U", step)
    for k in deleted:
        row(k, "-D", step - 1, retract=True)
    for k in inserted:
        row(k, "+I", step)
    schema = arrow_schema(case.fields)
    cols = {n: [r[n] for r in rows] for n in schema.names}
    return _to_arrow(cols, schema), kinds


def _to_arrow(cols: dict, schema: pa.Schema) -> pa.Table:
    from decimal import Decimal
    import datetime as dt

    arrays = []
    for f in schema:
        vals = cols[f.name]
        if pa.types.is_decimal(f.type):
            vals = [None if v is None else Decimal(v) for v in vals]
        elif pa.types.is_timestamp(f.type):
            vals = [None if v is None else dt.datetime.fromisoformat(v[:26]) for v in vals]
        arrays.append(pa.array(vals, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _same(jo, got: list[dict], expected: list[dict], what: str) -> None:
    got, expected = jo.sort_rows(got, KEY), jo.sort_rows(expected, KEY)
    missing = [r for r in expected if r not in got]
    extra = [r for r in got if r not in expected]
    assert (missing, extra) == ([], []), f"{what}: rows missing / extra"


def _replay(jo, changelog: list[dict]) -> list[dict]:
    """Apply a changelog (in order) to an empty keyed table."""
    state: dict = {}
    for r in changelog:
        r = dict(r)
        kind = r.pop("rowkind")
        if kind in ("+I", "+U"):
            state[r["k"]] = r
        else:
            assert state.pop(r["k"], None) == r, f"changelog retracts a row that is not there: {kind} {r}"
    return list(state.values())


# The fast tier: the cases most likely to break, against Java 0.9; the rest (and all of 1.0, which
# is 0.9 plus a few days) under `slow`.
# Java 0.9 (the oldest reader we promise) in every run; the 1.0 snapshot (0.9 plus a few days)
# too with PAIMON_JAVA_ORACLE_FULL=1, as for the ORC/Avro variants.
VERSIONS = ("0.9", "1.0") if os.environ.get("PAIMON_JAVA_ORACLE_FULL") else ("0.9",)
PARAMS = [pytest.param(v, c, id=f"java{v}-{c.id}",
                       marks=([pytest.mark.slow] if c.slow or v == "1.0" else [])
                       + ([pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []))
          for v in VERSIONS for c in CASES]


@pytest.mark.compat("primary-key", "{case.id}", "both")
@pytest.mark.parametrize("version,case", PARAMS)
def test_merge_engine_both_ways(jo, oracle, lab, wh, version, case):
    oracle(version)
    t = lab.create_table("db.t", fields=lab_fields(case.fields), primary_keys=case.primary_keys,
                         partition_keys=case.partition_keys, options=case.options)
    canon = lambda: jo.canonical(lab.get_table("db.t").to_arrow())  # noqa: E731

    # 1. paimon-lab writes; Java reads our files
    for step in (1, 2):
        data, kinds = _batch(case, step)
        t.write(data, row_kinds=kinds)
    ours = canon()
    assert len(ours) > 20
    ranges = [t.latest_snapshot().id]
    _same(jo, jo.read(wh, "db.t", version=version), ours, "Java reading paimon-lab's files")

    # 2. Java writes with row kinds and compacts (cross-partition: Java only compacts)
    if case.java_writes:
        data, kinds = _batch(case, 3)
        jo.write(wh, "db.t", data, row_kinds=kinds, compact=True, version=version)
    else:
        jo.compact(wh, "db.t", version=version)
    assert lab.get_table("db.t").snapshots()[-1].commit_kind == "COMPACT"
    ranges.append(lab.get_table("db.t").latest_snapshot().id)

    # 3. paimon-lab writes more on top of Java's files; both merge them the same
    data, kinds = _batch(case, 4)
    t = lab.get_table("db.t")
    t.write(data, row_kinds=kinds)
    ours = canon()
    _same(jo, jo.read(wh, "db.t", version=version), ours, "both sides' files merged")

    # 4. paimon-lab compacts everything; nothing changes, and Java reads our compacted files
    t.compact(full=True)   # (nothing to do if the commits' own compactions left one top-level run)
    assert set(t.levels()["level"]) == {t.store.num_levels - 1}
    _same(jo, canon(), ours, "paimon-lab after its full compaction")
    _same(jo, jo.read(wh, "db.t", version=version), ours, "Java reading paimon-lab's compacted files")

    # 5. the changelog both sides read (of Java's commits, then of ours), and what it replays to.
    # Java reads one range at a time: its batch read of a range over several snapshots merges
    # the changelog of a key across them (drops the earlier rows), so each range is one writer's.
    if case.changelog:
        t = lab.get_table("db.t")
        ranges.append(t.latest_snapshot().id)
        for start, end in zip(ranges, ranges[1:]):
            java_log = jo.read(wh, "db.t", audit=True, version=version,
                               options={"incremental-between": f"{start},{end}",
                                        "incremental-between-scan-mode": "changelog"})
            assert jo.sort_rows(jo.canonical(t.changes(start, end))) == jo.sort_rows(java_log), (start, end)
        if case.options["changelog-producer"] != "input":  # an input changelog is whatever was written
            _same(jo, _replay(jo, jo.canonical(t.changes(0))), ours, "the changelog replayed")
