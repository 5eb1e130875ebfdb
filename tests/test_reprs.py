"""Notebook displays of tables, schemas, snapshots, scan plans and the layout views: small HTML
with no script, every value escaped, and a short text repr."""

from __future__ import annotations

import re

import pandas as pd
import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.utils.html import Text
from paimon_lab.utils.html import table as html_table


@pytest.fixture
def dv_table(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())]),
                         primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true", "hive.x<b>": "</td><script>"})
    t.write(pa.table({"id": list(range(20)), "v": ["<b>v</b>"] * 20, "dt": ["a", "b"] * 10}))
    t.write(pa.table({"id": list(range(0, 10, 2)), "v": ["w"] * 5, "dt": ["a"] * 5}))
    return t


def _html(obj) -> str:
    text = obj._repr_html_()
    assert "<script" not in text and "<style" not in text
    return text


def test_table_html_shows_schema_options_snapshots_and_size(dv_table):
    t = dv_table
    text = _html(t)
    assert "Table db.t" in text
    snaps = t.snapshots()
    assert f"{len(snaps)} ({snaps[0].id} … {snaps[-1].id})" in text
    assert "primary key (id, dt)" in text
    assert "&#x27;bucket&#x27; = &#x27;2&#x27;" in text                   # options one per line, escaped
    assert "hive.x&lt;b&gt;" in text and "&lt;/td&gt;&lt;script&gt;" in text   # option names and values escaped
    assert f"{t.latest_snapshot().total_record_count:,}" in text
    assert re.search(r"data files</th><td[^>]*>\d+ \(\d", text)
    assert repr(t) == f"Table('db.t', path={t.path!r})"


def test_schema_and_snapshot_reprs(dv_table):
    t = dv_table
    s = t.schema
    assert repr(s).startswith("TableSchema(id=0, [id BIGINT NOT NULL, v STRING, dt STRING NOT NULL]")
    text = _html(s)
    assert "primary key, partition key" in text and "<td>v</td>" in text
    snap = t.latest_snapshot()
    assert repr(snap).startswith(f"Snapshot(id={snap.id}, {snap.commit_kind}, schema_id=0, time=")
    text = _html(snap)
    assert f"Snapshot {snap.id}" in text and snap.delta_manifest_list in text and "<details>" in text


def test_scan_plan_is_a_list_with_decoded_partitions(dv_table):
    t = dv_table
    plan = t.plan(filter="dt = 'a'")
    assert isinstance(plan, list) and all(s.partition for s in plan)
    assert {plan.partition_text(s) for s in plan} == {"dt=a"}
    assert repr(plan).startswith(f"ScanPlan(snapshot_id={t.latest_snapshot().id}, {len(plan)} splits")
    text = _html(plan)
    assert "<td>dt=a</td>" in text and "\\u0000" not in text and "dt=b" not in text
    assert plan.row_count == sum(s.row_count for s in plan)


def test_empty_table_displays(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.e", pa.schema([("id", pa.int64())]))
    assert "snapshots</th><td style='text-align:left'>0</td>" in _html(t)
    assert t.plan() == [] and "no snapshot" in _html(t.plan())
    assert "no snapshot" in _html(t.levels()) and "no snapshot" in _html(t.deletion_vectors())


def test_levels_and_deletion_vector_views(dv_table):
    t = dv_table
    levels = t.levels()
    assert isinstance(levels, pd.DataFrame)
    assert type(levels[["level"]]) is pd.DataFrame          # selections are plain DataFrames
    text = _html(levels)
    assert f"snapshot {t.latest_snapshot().id} · {len(levels)} files" in text
    assert "<td>dt=a</td>" in text and "L" in text
    dvs = t.deletion_vectors()
    assert len(dvs) and dvs["cardinality"].sum() == 5
    text = _html(dvs)
    assert "5 rows deleted" in text and "<td>dt=a</td>" in text


def test_html_table_caps_rows_and_scrolls():
    text = html_table(["a"], ([i] for i in range(1000)), max_rows=10)
    assert text.count("<tr>") == 11 and "showing 10 of 1,000 rows" in text and "overflow:auto" in text
    assert "&lt;x&gt;" in html_table(["<x>"], [["<x>"]])


def test_text_shows_lines():
    from IPython.lib.pretty import pretty

    t = Text("CREATE TABLE t (\n  a INT\n)")
    assert pretty(t) == "CREATE TABLE t (\n  a INT\n)"
    assert t._repr_html_().startswith("<pre") and "\n  a INT\n" in t._repr_html_()


def test_an_opened_table_is_named_like_the_catalogs(dv_table, tmp_path):
    from paimon_lab import Table

    opened = Table.open(dv_table.path)
    assert opened.identifier == "db.t" and repr(opened) == f"Table('db.t', path={dv_table.path!r})"
    assert opened.on_branch("main").identifier == "db.t"
    import shutil

    plain = tmp_path / "loose" / "events"
    shutil.copytree(dv_table.path, plain)
    assert Table.open(str(plain)).identifier == "events"  # not in a <db>.db folder: its own name
