"""paimon-lab and Java Paimon committing to the same table in turns (issue #17, item 3).

Six alternating rounds (paimon-lab, Java, paimon-lab, ...) of upserts, deletes and re-inserts
(appends only, on the append table), with full compactions from both sides every other round,
checked against a Python model: no row lost, duplicated or resurrected; paimon-lab reads the model
after every round, and at the end Java reads the same rows. On the lookup-changelog table the
changelog both sides wrote replays to the final rows.
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow as pa
import pytest

from .java_rows import arrow_schema, lab_fields
from .test_java_merge_engines import _replay

FIELDS = [("k", "BIGINT NOT NULL"), ("part", "INT NOT NULL"), ("v", "STRING"), ("amount", "DECIMAL(10, 2)"),
          ("at", "TIMESTAMP(6)")]
TABLES = {  # id: (primary key?, options)
    "append": (False, {"bucket": "2", "bucket-key": "k"}),
    "pk": (True, {"bucket": "2"}),
    "pk-deletion-vectors": (True, {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "pk-lookup-changelog": (True, {"bucket": "2", "changelog-producer": "lookup"}),
}
ROUNDS = 6


def _round(r: int, pk: bool) -> tuple[pa.Table, list[str]]:
    """Round ``r``'s rows: 12 upserts (half of them keys of earlier rounds), 3 deletes of earlier
    keys (one of them deleted before: a no-op), and from round 3 the re-insert of a deleted key."""
    upserts = list(range(r * 6, r * 6 + 12))
    deletes = [r * 6 - 5, r * 6 - 4, r * 6 - 11] if pk and r >= 2 else []
    if pk and r >= 3:
        upserts.append(r * 6 - 10)  # deleted in round r-1
    ks = upserts + deletes
    kinds = ["+I"] * len(upserts) + ["-D"] * len(deletes)
    data = pa.Table.from_arrays([
        pa.array(ks, pa.int64()), pa.array([k % 2 for k in ks], pa.int32()),
        pa.array([f"v{k}-r{r}" if (k + r) % 5 else None for k in ks]),
        pa.array([Decimal(k * 100 + r).scaleb(-2) for k in ks], pa.decimal128(10, 2)),
        pa.array([dt.datetime(2024, 1, 1, 0, 0, r, k) for k in ks], pa.timestamp("us")),
    ], schema=arrow_schema(FIELDS))
    return data, kinds


def _compact_fully(t, pk: bool) -> None:
    """A full compaction by paimon-lab (it has nothing to do when the commits' own compactions
    already left every key in the top level, as Java's pick does for small commits)."""
    t.compact(full=True)
    if pk:
        assert set(t.levels()["level"]) == {t.store.num_levels - 1}


class Model:
    def __init__(self, pk: bool):
        self.pk, self.rows = pk, {} if pk else []

    def apply(self, data: pa.Table, kinds: list[str]) -> None:
        for row, kind in zip(data.to_pylist(), kinds):
            if not self.pk:
                self.rows.append(row)
            elif kind == "-D":
                self.rows.pop(row["k"], None)
            else:
                self.rows[row["k"]] = row

    def expected(self, jo) -> list[dict]:
        rows = list(self.rows.values()) if self.pk else self.rows
        return jo.sort_rows(jo.canonical(pa.Table.from_pylist(rows, schema=arrow_schema(FIELDS))))


# Java 0.9 (the oldest reader we promise) in every run; the 1.0 snapshot (0.9 plus a few days)
# too with PAIMON_JAVA_ORACLE_FULL=1, as for the ORC/Avro variants.
VERSIONS = ("0.9", "1.0") if os.environ.get("PAIMON_JAVA_ORACLE_FULL") else ("0.9",)
PARAMS = [pytest.param(v, name, id=f"java{v}-{name}",
                       marks=[] if (v, name) == ("0.9", "pk-deletion-vectors") else [pytest.mark.slow])
          for v in VERSIONS for name in TABLES]


@pytest.mark.compat("mixed writers", "{name}", "in turns")
@pytest.mark.parametrize("version,name", PARAMS)
def test_mixed_writers(jo, oracle, lab, wh, version, name):
    oracle(version)
    pk, options = TABLES[name]
    lab.create_table("db.t", fields=lab_fields(FIELDS), primary_keys=["k", "part"] if pk else [],
                     partition_keys=["part"], options=options)
    model = Model(pk)
    for r in range(ROUNDS):
        data, kinds = _round(r, pk)
        compact = r % 4 in (2, 3)  # rounds 2 (paimon-lab) and 3 (Java) compact fully
        if r % 2 == 0:
            t = lab.get_table("db.t")
            t.write(data, row_kinds=kinds if pk else None)
            if compact:
                _compact_fully(t, pk)
        else:
            jo.write(wh, "db.t", data, row_kinds=kinds if pk else None, compact=compact, version=version)
        model.apply(data, kinds)
        got = jo.sort_rows(jo.canonical(lab.get_table("db.t").to_arrow()))
        assert got == model.expected(jo), f"paimon-lab after round {r}"
    assert jo.sort_rows(jo.read(wh, "db.t", version=version)) == model.expected(jo), "Java at the end"
    if "changelog-producer" in options:
        t = lab.get_table("db.t")
        replayed = _replay(jo, jo.canonical(t.changes(0)))
        assert jo.sort_rows(replayed) == model.expected(jo), "the changelog replayed"


# ------------------------------------------------------------- partial-update and aggregation

PU_FIELDS = [("k", "BIGINT NOT NULL"), ("part", "INT NOT NULL"), ("a", "INT"), ("b", "STRING"), ("g", "INT"),
             ("c", "STRING")]
AGG_FIELDS = [("k", "BIGINT NOT NULL"), ("part", "INT NOT NULL"), ("s_sum", "BIGINT"), ("s_max", "INT"),
              ("s_min", "DECIMAL(10, 2)"), ("s_first", "STRING"), ("s_lnn", "STRING")]
MERGE_TABLES = {  # id: (fields, options)
    "partial-update-sequence-group": (PU_FIELDS, {"bucket": "2", "merge-engine": "partial-update",
                                                  "fields.g.sequence-group": "a,b"}),
    "aggregation": (AGG_FIELDS, {"bucket": "2", "merge-engine": "aggregation",
                                 "fields.s_sum.aggregate-function": "sum", "fields.s_max.aggregate-function": "max",
                                 "fields.s_min.aggregate-function": "min",
                                 "fields.s_first.aggregate-function": "first_value"}),  # s_lnn: the default
}
MERGE_ROUNDS = 4


def _merge_round(name: str, r: int, seen: set) -> list[dict]:
    """Round ``r``: 10 new keys and 8 keys of earlier rounds; on the partial-update table some
    updates carry an older sequence (their group is ignored) or none (the group is left alone)."""
    ks = list(range(r * 10, r * 10 + 10)) + [k for k in range(0, r * 10, 3)][:8]
    rows = []
    for k in ks:
        first = k not in seen
        if name == "aggregation":
            rows.append({"k": k, "part": k % 2, "s_sum": None if (k + r) % 4 == 0 else k + r,
                         "s_max": None if (k + r) % 3 == 0 else (k * 7 + r * 13) % 50,
                         "s_min": None if (k + r) % 5 == 0 else Decimal((k * 3 + r * 11) % 40).scaleb(-1),
                         "s_first": None if k % 6 == 0 else f"f{k}-{r}",
                         "s_lnn": None if (k + r) % 2 else f"l{r}"})
        else:
            g = r if first or (k + r) % 5 else r - 3  # some updates arrive out of order
            rows.append({"k": k, "part": k % 2, "a": None if (k + r) % 3 == 0 else k * 10 + r, "b": f"b{k}-{r}",
                         "g": None if not first and (k + r) % 7 == 0 else g,
                         "c": None if (k + r) % 2 else f"c{r}"})
    seen.update(ks)
    return rows


def _merge_model(name: str, state: dict, rows: list[dict]) -> None:
    for row in rows:
        cur = state.get(row["k"])
        if cur is None:
            state[row["k"]] = dict(row)
        elif name == "aggregation":
            if row["s_sum"] is not None:
                cur["s_sum"] = row["s_sum"] + (cur["s_sum"] or 0)
            for col, pick in (("s_max", max), ("s_min", min)):
                if row[col] is not None:
                    cur[col] = row[col] if cur[col] is None else pick(cur[col], row[col])
            if row["s_lnn"] is not None:
                cur["s_lnn"] = row["s_lnn"]
        else:
            if row["g"] is not None and (cur["g"] is None or row["g"] >= cur["g"]):
                cur.update(a=row["a"], b=row["b"], g=row["g"])
            if row["c"] is not None:
                cur["c"] = row["c"]


MERGE_PARAMS = [pytest.param(v, name, id=f"java{v}-{name}") for v in VERSIONS for name in MERGE_TABLES]


@pytest.mark.compat("mixed writers", "{name}", "in turns")
@pytest.mark.parametrize("version,name", MERGE_PARAMS)
def test_mixed_writers_merge_engines(jo, oracle, lab, wh, version, name):
    """Partial-update with a sequence group, and aggregation: the sides write in turns (Java
    compacts in round 1, paimon-lab in round 2) and both read the merge a Python model computes."""
    oracle(version)
    fields, options = MERGE_TABLES[name]
    schema = arrow_schema(fields)
    lab.create_table("db.t", fields=lab_fields(fields), primary_keys=["k", "part"], partition_keys=["part"],
                     options=options)
    state: dict = {}
    seen: set = set()

    def expected() -> list[dict]:
        return jo.sort_rows(jo.canonical(pa.Table.from_pylist(list(state.values()), schema=schema)))

    for r in range(MERGE_ROUNDS):
        rows = _merge_round(name, r, seen)
        data = pa.Table.from_pylist(rows, schema=schema)
        if r % 2 == 0:
            t = lab.get_table("db.t")
            t.write(data)
            if r == 2:
                _compact_fully(t, True)
        else:
            jo.write(wh, "db.t", data, compact=r == 1, version=version)
        _merge_model(name, state, rows)
        assert jo.sort_rows(jo.canonical(lab.get_table("db.t").to_arrow())) == expected(), f"paimon-lab, round {r}"
    assert jo.sort_rows(jo.read(wh, "db.t", version=version)) == expected(), "Java at the end"
