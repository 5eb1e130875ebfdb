"""Interoperability with pypaimon-rust (the native Apache paimon-rust core), both ways.

A third, independent implementation as an oracle: paimon-lab writes tables that pypaimon-rust
reads (through its catalog, read builder, scan and read), and pypaimon-rust writes tables (SQL
``CREATE TABLE`` / ``INSERT`` on its DataFusion context, and its batch write builder) that
paimon-lab reads, extends and compacts and pypaimon-rust reads again. Every read is compared
row by row, sorted by key, against a plain Python model of what was written.

pypaimon-rust is used strictly through its public Python API (``pypaimon_rust.datafusion``):
``PaimonCatalog.get_table``, ``Table.new_read_builder(options)`` with ``scan.snapshot-id`` for
time travel, ``ReadBuilder.with_filter`` / ``with_projection``, ``SQLContext.sql`` and
``Table.new_batch_write_builder``.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal
from typing import Any, Sequence

import pyarrow as pa
import pytest

pytest.importorskip("pypaimon_rust")
from pypaimon_rust.datafusion import PaimonCatalog, SQLContext  # noqa: E402

from paimon_lab import Catalog  # noqa: E402

UTC = dt.timezone.utc
FORMATS = ["parquet", "orc", "avro"]


# ====================================================================== pypaimon-rust side

def rust_table(warehouse: str, ident: str):
    return PaimonCatalog({"warehouse": warehouse}).get_table(ident)


def rust_read(warehouse: str, ident: str, *, options: dict | None = None, predicate: dict | None = None,
              columns: Sequence[str] | None = None) -> pa.Table:
    """One full batch read by pypaimon-rust: plan the scan, read every split."""
    table = rust_table(warehouse, ident)
    rb = table.new_read_builder(dict(options) if options else None)
    if columns is not None:
        rb = rb.with_projection(list(columns))
    if predicate is not None:
        rb = rb.with_filter(predicate)
    splits = rb.new_scan().plan().splits()
    batches = rb.new_read().read(splits)
    if not batches:
        return pa.table({f.name(): pa.array([], pa.null()) for f in table.schema().fields()})
    return pa.Table.from_batches(batches)


def rust_sql(warehouse: str, statements: Sequence[str]) -> list[pa.Table]:
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    out = []
    for s in statements:
        batches = ctx.sql(s)
        out.append(pa.Table.from_batches(batches) if batches else pa.table({}))
    return out


def eq(field: str, value: Any) -> dict:
    return {"method": "equal", "field": field, "literals": [value]}


def pred(method: str, field: str, *literals: Any) -> dict:
    return {"method": method, "field": field, "literals": list(literals)}


# ====================================================================== comparing rows

def _norm(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    return v


def sorted_rows(rows: list[dict], key: Sequence[str]) -> list[dict]:
    return sorted((_norm(r) for r in rows), key=lambda r: tuple(r[k] for k in key))


def assert_rows(got: pa.Table, expected: list[dict], *, key: Sequence[str] = ("id",), what: str = "") -> None:
    """``got`` holds exactly ``expected`` (a list of row dicts, any order); the first differing
    row and column are named instead of dumping both sides."""
    cols = list(expected[0]) if expected else None
    g = got.select(cols).to_pylist() if cols and got.num_rows else got.to_pylist()
    assert len(g) == len(expected), f"{what}: {len(g)} rows, expected {len(expected)}"
    g, e = sorted_rows(g, key), sorted_rows(expected, key)
    if g != e:
        for a, b in zip(g, e):
            for c in b:
                assert a[c] == b[c], f"{what}: row {tuple(b[k] for k in key)} column {c}: got {a[c]!r}, expected {b[c]!r}"
    assert g == e, what


@pytest.fixture
def wh(tmp_path) -> str:
    path = tmp_path / "wh"
    path.mkdir()
    return str(path)


@pytest.fixture
def lab(wh) -> Catalog:
    cat = Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    return cat


# ====================================================================== 1. append tables, lab -> rust

APPEND_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("value", pa.float64()),
                           ("dt", pa.string())])


def append_rows(start: int, n: int) -> list[dict]:
    return [{"id": i, "name": None if i % 7 == 0 else f"name-{i}", "value": i * 0.25,
             "dt": f"2024-05-0{i % 3 + 1}"} for i in range(start, start + n)]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("bucket", ["-1", "3"], ids=["unaware", "fixed3"])
def test_append_table_lab_to_rust(lab, wh, fmt, bucket):
    opts = {"file.format": fmt, "bucket": bucket}
    if bucket != "-1":
        opts["bucket-key"] = "id"
    t = lab.create_table("db.events", APPEND_SCHEMA, partition_keys=["dt"], options=opts)
    commits = [append_rows(0, 3000), append_rows(3000, 500), append_rows(3500, 2000)]
    model: list[dict] = []
    for rows in commits:
        t.write(pa.Table.from_pylist(rows, schema=APPEND_SCHEMA))
        model += rows

    assert_rows(rust_read(wh, "db.events"), model, what="rust latest")
    assert_rows(t.to_arrow(), model, what="lab latest")
    # time travel to the first snapshot
    assert_rows(rust_read(wh, "db.events", options={"scan.snapshot-id": "1"}), commits[0], what="rust snapshot 1")
    # filters pushed into the scan: a partition filter and a value filter (both exact here)
    got = rust_read(wh, "db.events", predicate=eq("dt", "2024-05-02"))
    assert_rows(got, [r for r in model if r["dt"] == "2024-05-02"], what="rust dt filter")
    got = rust_read(wh, "db.events", predicate=pred("between", "id", 1000, 1099))
    assert_rows(got, [r for r in model if 1000 <= r["id"] <= 1099], what="rust id filter")
    # projection
    got = rust_read(wh, "db.events", columns=["value", "id"])
    assert got.column_names == ["value", "id"]
    assert_rows(got, [{"id": r["id"], "value": r["value"]} for r in model], what="rust projection")
    snap = rust_table(wh, "db.events").latest_snapshot()
    assert snap.id() == 3 and snap.total_record_count() == len(model)


# ====================================================================== 2. primary-key tables, lab -> rust

PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                       ("score", pa.float64()), ("qty", pa.int32()), ("dt", pa.string())])


def pk_row(i: int, gen: int) -> dict:
    return {"id": i, "name": f"n{i}-g{gen}" if (i + gen) % 11 else None, "score": i * 1.5 + gen,
            "qty": (i * 31 + gen) % 1000, "dt": "p0"}


def _pk_scenario(t, rng: random.Random, n: int) -> tuple[dict, list[dict]]:
    """Several commits on ``t``: an initial load, upserts overlapping it, deletes, more upserts
    re-inserting some deleted keys. Returns the model ({id: row}) and the model after commit 1."""
    model: dict[int, dict] = {}
    first = [pk_row(i, 0) for i in range(n)]
    t.write(pa.Table.from_pylist(first, schema=PK_SCHEMA))
    model.update({r["id"]: r for r in first})
    snap1 = list(model.values())
    for gen in (1, 2):
        ids = sorted(rng.sample(range(n + n // 10), n // 4))
        rows = [pk_row(i, gen) for i in ids]
        t.write(pa.Table.from_pylist(rows, schema=PK_SCHEMA))
        model.update({r["id"]: r for r in rows})
        dels = sorted(rng.sample(sorted(model), n // 20))
        kinds = ["-D"] * len(dels)
        t.write(pa.Table.from_pylist([model[i] for i in dels], schema=PK_SCHEMA), row_kinds=kinds)
        for i in dels:
            del model[i]
    back = [pk_row(i, 3) for i in range(0, n, 97)]  # some of these were deleted: re-inserts
    t.write(pa.Table.from_pylist(back, schema=PK_SCHEMA))
    model.update({r["id"]: r for r in back})
    return model, snap1


@pytest.mark.parametrize("fmt,n", [("parquet", 60_000), ("orc", 20_000), ("avro", 20_000)])
def test_pk_table_lab_to_rust(lab, wh, fmt, n):
    t = lab.create_table("db.users", PK_SCHEMA, primary_keys=["id"],
                         options={"bucket": "4", "file.format": fmt})
    model, snap1 = _pk_scenario(t, random.Random(7), n)
    expected = list(model.values())
    assert_rows(t.to_arrow(), expected, what="lab before compaction")
    assert_rows(rust_read(wh, "db.users"), expected, what=f"rust before compaction ({fmt}, overlapping files)")
    assert_rows(rust_read(wh, "db.users", options={"scan.snapshot-id": "1"}), snap1, what="rust snapshot 1")
    k = sorted(model)[len(model) // 2]
    assert_rows(rust_read(wh, "db.users", predicate=eq("id", k)), [model[k]], what="rust key filter")
    got = rust_read(wh, "db.users", predicate=pred("lessThan", "qty", 10))
    assert_rows(got, [r for r in expected if r["qty"] < 10], what="rust value filter")
    before = t.snapshots()[-1].id

    t.compact(full=True)
    assert t.snapshots()[-1].commit_kind == "COMPACT"
    assert_rows(rust_read(wh, "db.users"), expected, what="rust after full compaction")
    assert_rows(rust_read(wh, "db.users", options={"scan.snapshot-id": str(before)}), expected,
                what="rust snapshot before compaction")
    snap = rust_table(wh, "db.users").latest_snapshot()
    assert snap.commit_kind() == "COMPACT"


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_pk_deletion_vectors_lab_to_rust(lab, wh, fmt):
    t = lab.create_table("db.dv", PK_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2", "file.format": fmt, "deletion-vectors.enabled": "true"})
    n = 20_000
    model, _ = _pk_scenario(t, random.Random(11), n)
    expected = list(model.values())
    assert_rows(rust_read(wh, "db.dv"), expected, what="rust DV table before compaction")
    t.compact(full=True)
    # upserts and deletes against compacted files: these now produce deletion vectors
    more = [pk_row(i, 9) for i in range(5, n, 13)]
    t.write(pa.Table.from_pylist(more, schema=PK_SCHEMA))
    model.update({r["id"]: r for r in more})
    t.delete("id < 500")
    model = {i: r for i, r in model.items() if i >= 500}
    t.compact()  # a non-full compaction: lookup writes deletion vectors for the rewritten keys
    dvs = t.deletion_vectors()
    assert not dvs.empty, "the scenario should leave deletion vectors behind"
    expected = list(model.values())
    assert_rows(t.to_arrow(), expected, what="lab DV table")
    assert_rows(rust_read(wh, "db.dv"), expected, key=("id",), what="rust DV table with deletion vectors")
