"""pypaimon-rust (the native Apache paimon-rust core, 0.4.0) on lookup-changelog tables whose
upper levels hold folded rows, written by paimon-lab and by Java.

With ``changelog-producer = lookup`` (no deletion vectors) every commit lifts level 0 and the
lifted row of a key already holds the merge of that key's older levels (Java's
LookupMergeFunction), so a reader must take a key's lowest-level row above level 0 and never
merge it with the older, already-folded rows again. Java and paimon-lab do; pypaimon-rust does
not: its primary-key read (``crates/paimon/src/table/sort_merge.rs``) feeds every row of a key,
from every sorted run, to the table's merge function (a ``MergeRow`` carries no level), and it
does not refuse such tables. For aggregation with a non-idempotent function (``sum``) it therefore
counts the older levels again, on Java's files as on ours; for partial-update (and idempotent
aggregates) re-merging a folded row changes nothing and all three agree. After a full compaction
(one level) all three agree again.
"""

from __future__ import annotations

import glob

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pypaimon_rust")
from pypaimon_rust.datafusion import PaimonCatalog

S = pa.schema([pa.field("k", pa.int64(), nullable=False), ("s", pa.int64()), ("tag", pa.string())])
FIELDS = [("k", "BIGINT NOT NULL"), ("s", "BIGINT"), ("tag", "STRING")]
COMMITS = 5


SIZES = (1000, 200, 40, 8, 1)   # new keys per commit


def _commit(i: int) -> pa.Table:
    """Key 1 in every commit (s = 10**i, its tag only in the first), plus new keys with
    incompressible tags: each commit far smaller than the one before, so that Java's size-ratio
    picking (both sides') keeps the later commits on their own levels."""
    n = SIZES[i]
    keys = [1] + list(range(10 + 100_000 * i, 10 + 100_000 * i + n))
    tags = [f"{v:032x}" for v in np.random.default_rng(i).integers(0, 2 ** 62, n)]
    return pa.table({"k": pa.array(keys, pa.int64()), "s": pa.array([10 ** i] + [1] * n, pa.int64()),
                     "tag": pa.array(["first" if i == 0 else None] + tags, pa.string())}, schema=S)


def _rust_key1(wh: str, ident: str) -> dict:
    table = PaimonCatalog({"warehouse": wh}).get_table(ident)
    rb = table.new_read_builder()
    got = pa.Table.from_batches(rb.new_read().read(rb.new_scan().plan().splits()))
    assert got.num_rows == 1 + sum(SIZES), "pypaimon-rust lost or duplicated keys"
    rows = [r for r in got.to_pylist() if r["k"] == 1]
    assert len(rows) == 1
    return rows[0]


def _key1_rows_per_level(lab, wh: str, ident: str) -> dict[int, list[int]]:
    """``s`` of key 1 in each live data file, by level (read raw from the files)."""
    out: dict[int, list[int]] = {}
    for _, f in lab.get_table(ident).levels().iterrows():
        path, = glob.glob(f"{wh}/**/{f['file_name']}", recursive=True)
        raw = pq.read_table(path).to_pylist()
        out.setdefault(int(f["level"]), []).extend(r["s"] for r in raw if r["_KEY_k"] == 1)
    return out


@pytest.mark.compat("primary-key", "lookup-changelog {engine}: folded levels (pypaimon-rust pinned)", "both")
@pytest.mark.parametrize("engine", ["aggregation", "partial-update"])
def test_rust_on_folded_lookup_tables(jo, java09, lab, wh, engine):
    options = {"bucket": "1", "changelog-producer": "lookup", "merge-engine": engine}
    if engine == "aggregation":
        options["fields.s.aggregate-function"] = "sum"
    truth = {"k": 1, "s": sum(10 ** i for i in range(COMMITS)) if engine == "aggregation" else 10 ** (COMMITS - 1),
             "tag": "first"}
    jo.create(wh, "db.j", FIELDS, primary_keys=["k"], options=options, version=java09)
    t = lab.create_table("db.p", S, primary_keys=["k"], options=options)
    for i in range(COMMITS):
        jo.write(wh, "db.j", _commit(i), version=java09)
        t.write(_commit(i))

    for name, writer in (("p", "paimon-lab"), ("j", "Java")):
        ident = f"db.{name}"
        levels = _key1_rows_per_level(lab, wh, ident)
        assert 0 not in levels and len(levels) >= 2, f"{writer}: key 1 should sit on several levels: {levels}"
        ours = [r for r in lab.get_table(ident).to_arrow().to_pylist() if r["k"] == 1]
        java = [r for r in jo.read(wh, ident, version=java09) if r["k"] == 1]
        assert ours == [truth] and java == jo.canonical([truth]), f"{writer}'s files: {ours} / {java}"
        rust = _rust_key1(wh, ident)
        if engine == "aggregation":
            # every level's folded sum counted again: pypaimon-rust has no lookup (lowest-level) merge
            assert rust == {**truth, "s": sum(sum(v) for v in levels.values())} != truth, \
                f"pypaimon-rust now reads {writer}'s folded levels as Java does ({rust}): make this an agreement test"
        else:
            assert rust == truth, f"pypaimon-rust on {writer}'s files"

    # one level after a full compaction: pypaimon-rust agrees with Java and us (on both tables)
    lab.get_table("db.p").compact(full=True)
    jo.compact(wh, "db.j", version=java09)
    for ident in ("db.p", "db.j"):
        assert len(_key1_rows_per_level(lab, wh, ident)) == 1
        assert _rust_key1(wh, ident) == truth
        assert [r for r in jo.read(wh, ident, version=java09) if r["k"] == 1] == jo.canonical([truth])
