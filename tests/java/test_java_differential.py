"""paimon-lab and Java Paimon on random tables: a differential test against a Python model.

Each example draws an append table (unaware or fixed bucket) or a primary-key table (merge
engine, changelog producer, deletion vectors, bucket mode, partitioning, file format,
``sequence.field``), who creates it, and a few commits, each written by paimon-lab or by Java
(upserts and, where the engine takes them, retractions) and sometimes followed by a full
compaction by the same side. paimon-lab reads the model after every commit; at the end Java
reads the same rows, and a lookup changelog replays to them. A table paimon-lab creates must
also be one Java accepts: an option combination Java's schema validation refuses fails the
example.

CI runs a few derandomized examples per Java version (``HYPOTHESIS_PROFILE=ci``); ``-m soak`` runs
many (``PAIMON_DIFFERENTIAL_EXAMPLES``, default 40).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from paimon_lab import Catalog
from paimon_lab.errors import PaimonLabError

from .java_rows import arrow_schema, lab_fields
from .test_java_merge_engines import _replay

FIELDS = [("k", "BIGINT NOT NULL"), ("part", "INT NOT NULL"), ("n", "BIGINT"), ("s", "STRING"), ("ts", "BIGINT")]
SCHEMA = arrow_schema(FIELDS)
KEYS = 8
# Retractions: deduplicate takes every kind; partial-update and aggregation (without their
# remove-on-delete options) and first-row refuse or ignore them, so they get upserts only.
KINDS = {"deduplicate": ["+I", "+U", "-U", "-D"], "partial-update": ["+I", "+U"], "aggregation": ["+I", "+U"],
         "first-row": ["+I"], "append": ["+I"]}   # "append": a table without primary key


@st.composite
def tables(draw):
    engine = draw(st.sampled_from(sorted(KINDS)))
    options = {"bucket": draw(st.sampled_from(["1", "2", "-1"])),
               "file.format": draw(st.sampled_from(["parquet", "orc", "avro"]))}
    partitioned = draw(st.booleans())
    if engine == "append":
        if options["bucket"] != "-1":
            options["bucket-key"] = "k"
        return engine, options, False, partitioned
    options["merge-engine"] = engine
    producer = draw(st.sampled_from(["none", "input", "lookup", "full-compaction"]))
    if producer != "none":
        options["changelog-producer"] = producer
    if draw(st.booleans()):
        options["deletion-vectors.enabled"] = "true"
    if engine == "aggregation":
        options["fields.n.aggregate-function"] = "sum"
    sequenced = engine in ("deduplicate", "partial-update") and draw(st.booleans())
    if sequenced:
        options["sequence.field"] = "ts"
    return engine, options, sequenced, partitioned


def commits(engine: str, sequenced: bool):
    row = st.fixed_dictionaries({
        "k": st.integers(0, KEYS - 1),
        "n": st.one_of(st.none(), st.integers(-50, 50)),
        "s": st.one_of(st.none(), st.sampled_from(["a", "b", "c", "dd"])),
        # the sequence field is never NULL (Java orders NULL first, a case of its own)
        "ts": st.integers(0, 5) if sequenced else st.one_of(st.none(), st.integers(0, 5)),
        "kind": st.sampled_from(KINDS[engine]),
    })
    commit = st.fixed_dictionaries({"writer": st.sampled_from(["lab", "java"]),
                                    "rows": st.lists(row, min_size=1, max_size=10),
                                    "compact": st.booleans()})
    return st.lists(commit, min_size=2, max_size=4)


def expected(engine: str, sequenced: bool, history: list[dict]) -> list[dict]:
    """The model: every key's rows in merge order (the sequence field, then arrival)."""
    if engine == "append":
        return [{c: r[c] for c in ("k", "n", "s", "ts")} | {"part": r["k"] % 2} for r in history]
    by_key: dict[int, list[dict]] = {}
    for r in history:
        by_key.setdefault(r["k"], []).append(r)
    out = []
    for k, rows in by_key.items():
        rows = sorted(rows, key=lambda r: (r["ts"] if sequenced else 0, r["at"]))
        if engine == "deduplicate":
            last = rows[-1]
            if last["kind"] in ("+I", "+U"):
                out.append({c: last[c] for c in ("n", "s", "ts")} | {"k": k})
        elif engine == "first-row":
            first = min(rows, key=lambda r: r["at"])
            out.append({c: first[c] for c in ("n", "s", "ts")} | {"k": k})
        else:
            acc = {"k": k, "n": None, "s": None, "ts": None}
            for r in rows:
                if engine == "aggregation":
                    if r["n"] is not None:
                        acc["n"] = r["n"] + (acc["n"] or 0)
                elif r["n"] is not None:
                    acc["n"] = r["n"]
                for c in ("s", "ts"):   # partial-update: non-null overwrites; aggregation: last_non_null_value
                    if r[c] is not None:
                        acc[c] = r[c]
            out.append(acc)
    for r in out:
        r["part"] = r["k"] % 2
    return out


def _rows(jo, rows: list[dict]) -> list[dict]:
    return jo.sort_rows(jo.canonical(pa.Table.from_pylist(rows, schema=SCHEMA)))


def _differential(jo, version: str, data) -> None:
    engine, options, sequenced, partitioned = data.draw(tables(), label="table")
    java_creates = data.draw(st.booleans(), label="java creates")
    plan = data.draw(commits(engine, sequenced), label="commits")
    wh = tempfile.mkdtemp(prefix="paimon-diff-")
    try:
        ident, pk, parts = "db.t", [] if engine == "append" else ["k", "part"], ["part"] if partitioned else []
        catalog = Catalog(wh)
        catalog.create_database("db", ignore_if_exists=True)
        if java_creates:
            try:
                jo.create(wh, ident, FIELDS, partition_keys=parts, primary_keys=pk, options=options, version=version)
            except jo.OracleError:
                # Java refuses the combination: paimon-lab must refuse it too
                with pytest.raises(PaimonLabError):
                    catalog.create_table(ident, fields=lab_fields(FIELDS), primary_keys=pk, partition_keys=parts,
                                         options=options)
                assume(False)
        else:
            try:
                catalog.create_table(ident, fields=lab_fields(FIELDS), primary_keys=pk, partition_keys=parts,
                                     options=options)
            except PaimonLabError:
                assume(False)    # refused here (Java may accept it: not this test's question)
        history: list[dict] = []
        for i, commit in enumerate(plan):
            # Sequence-field values rise from commit to commit (out of order only within one): a
            # compaction folds a key's rows into one (a dropped -D is forgotten), so a later row
            # ordered before them would meet the fold, not the rows, in Java as here.
            rows = [dict(r, part=r["k"] % 2, ts=r["ts"] + 10 * i if sequenced else r["ts"]) for r in commit["rows"]]
            table = pa.Table.from_pylist([{c: r[c] for c in SCHEMA.names} for r in rows], schema=SCHEMA)
            kinds = None if engine == "append" else [r["kind"] for r in rows]
            if commit["writer"] == "lab":
                t = catalog.get_table(ident)
                t.write(table, row_kinds=kinds)
                if commit["compact"]:
                    t.compact(full=True)
            else:
                # Java compacts an unaware-bucket append table in a dedicated job, not in its
                # writer (1.0's refuses: "NoopCompactManager does not support user triggered compaction")
                unaware = engine == "append" and options["bucket"] == "-1"
                jo.write(wh, ident, table, row_kinds=kinds, compact=commit["compact"] and not unaware, version=version)
            history += [dict(r, at=len(history) + j) for j, r in enumerate(rows)]
            want = _rows(jo, expected(engine, sequenced, history))
            got = jo.sort_rows(jo.canonical(catalog.get_table(ident).to_arrow()))
            assert got == want, f"paimon-lab after commit {i} ({commit['writer']})"
        assert jo.sort_rows(jo.read(wh, ident, version=version)) == want, "Java at the end"
        if options.get("changelog-producer") == "lookup":
            # both sides' lookup changelog, replayed in snapshot order, gives the same rows
            replayed = _replay(jo, jo.canonical(catalog.get_table(ident).changes(0)))
            assert jo.sort_rows(replayed) == want, "the changelog replayed"
    finally:
        shutil.rmtree(wh, ignore_errors=True)


def _settings(examples: int):
    # no shrinking in CI: each example costs several JVM starts
    phases = [Phase.explicit, Phase.reuse, Phase.generate] + ([] if os.environ.get("CI") else [Phase.shrink])
    return settings(max_examples=examples, deadline=None, phases=phases,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.filter_too_much])


@pytest.mark.slow
@pytest.mark.compat("differential", "random append and primary-key tables", "both ways")
@_settings(3)
@given(data=st.data())
def test_random_tables_agree_with_java(jo, java, data):
    _differential(jo, java, data)


@pytest.mark.soak
@_settings(int(os.environ.get("PAIMON_DIFFERENTIAL_EXAMPLES", "40")))
@given(data=st.data())
def test_random_tables_agree_with_java_soak(jo, java, data):
    _differential(jo, java, data)


# Schemas Java's validation refuses, one JVM start each: paimon-lab refuses them too
# (tests/test_schema_validation.py has every rule).
REFUSED = {  # id: (primary keys, partition keys, options, extra column)
    "first-row-input-changelog": (["k", "part"], ["part"], {"merge-engine": "first-row", "changelog-producer": "input"},
                                  None),
    "deletion-vectors-full-compaction-changelog": (["k", "part"], ["part"], {"deletion-vectors.enabled": "true",
                                                   "changelog-producer": "full-compaction"}, None),
    "changelog-without-primary-key": ([], ["part"], {"changelog-producer": "input", "bucket": "-1"}, None),
    "aggregated-sequence-field": (["k", "part"], ["part"], {"merge-engine": "aggregation", "sequence.field": "ts",
                                                            "fields.ts.aggregate-function": "max"}, None),
    "latest-scan-with-snapshot-id": (["k", "part"], ["part"], {"scan.mode": "latest", "scan.snapshot-id": "1"}, None),
    "reserved-column-name": (["k", "part"], ["part"], {}, ("_VALUE_KIND", "TINYINT")),
}


@pytest.mark.compat("differential", "schemas Java refuses", "both refuse")
@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_schemas_java_refuses_are_refused(jo, java09, tmp_path, case):
    pk, parts, options, extra = REFUSED[case]
    fields = FIELDS + [extra] if extra else FIELDS
    with pytest.raises(jo.OracleError, match="create failed"):
        jo.create(str(tmp_path / "java"), "db.t", fields, partition_keys=parts, primary_keys=pk, options=options,
                  version=java09)
    catalog = Catalog(str(tmp_path / "lab"))
    catalog.create_database("db")
    with pytest.raises(PaimonLabError):
        catalog.create_table("db.t", fields=lab_fields(fields), primary_keys=pk, partition_keys=parts, options=options)
