"""A new user's widgets on fresh tables and edge cases: what a widget is asked for by code exists or
is refused with an error naming it (never silently swapped for the latest snapshot or a
traitlets error), and a constructor that fails leaves no noise behind."""

import gc
import sys

import pyarrow as pa
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")
pytest.importorskip("anywidget")

from paimon_lab.errors import ArgumentError, SnapshotNotExistError, TagNotExistError  # noqa: E402
from paimon_lab.widgets import (DeletionVectorView, LiveTail, LsmView, ManifestExplorer,  # noqa: E402
                                SnapshotBrowser)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


@pytest.fixture
def dv(catalog):
    t = catalog.create_table("db.dv", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write({"id": list(range(20)), "v": ["a"] * 20, "dt": ["x"] * 20})
    t.write({"id": [1, 2], "v": ["b", "b"], "dt": ["x", "x"]})
    return t


def test_lsm_view_refuses_what_is_not_there(dv):
    with pytest.raises(ArgumentError, match="color_by must be one of .* not 'nope'"):
        LsmView(dv, color_by="nope")
    with pytest.raises(ArgumentError, match="partition is a dict .* not str 'dt=x'"):
        LsmView(dv, "dt=x")
    with pytest.raises(SnapshotNotExistError, match=r"Snapshot 99 does not exist \(snapshots: 1, 2, 3, 4\)"):
        LsmView(dv, {"dt": "x"}, 0, snapshot_id=99)
    view = LsmView(dv, {"dt": "x"}, 0, snapshot_id=2)
    assert view.snapshot_slider.value == 2 and sorted(view.files["level"]) == [5]


def test_deletion_vector_view_refuses_what_is_not_there(dv):
    view = DeletionVectorView(dv)
    assert view.vectors["cardinality"].tolist() == [2]
    with pytest.raises(SnapshotNotExistError, match="Snapshot 99 does not exist"):
        view.refresh(99)
    with pytest.raises(ArgumentError, match="No data file with a deletion vector 'nope.parquet'; the choices are"):
        view.show("nope.parquet")
    view.show(view.vectors["file_name"].iloc[0])
    assert sorted(view.rows["id"]) == [1, 2]


def test_manifest_explorer_refuses_what_is_not_there_and_pages_to_an_entry(catalog):
    t = catalog.create_table("db.many", pa.schema([("x", pa.int64()), ("p", pa.int64())]), partition_keys=["p"])
    t.write(pa.table({"x": list(range(25)), "p": list(range(25))}))     # one manifest of 25 entries
    t.create_tag("t1")
    with pytest.raises(SnapshotNotExistError, match="Snapshot 7 does not exist"):
        ManifestExplorer(t, snapshot_id=7)
    with pytest.raises(TagNotExistError, match="Tag 'nope' does not exist"):
        ManifestExplorer(t, tag="nope")
    m = ManifestExplorer(t, tag="t1", page_size=10)
    with pytest.raises(ArgumentError, match="No manifest list 'deltas'; the choices are"):
        m.select(manifest_list="deltas")
    with pytest.raises(ArgumentError, match=r"No manifest \(index\) 3"):
        m.select(manifest=3)
    with pytest.raises(ArgumentError, match="No manifest 'manifest-x' in this list"):
        m.select(manifest="manifest-x")
    with pytest.raises(ArgumentError, match="No entry 25: this manifest has 25 entries"):
        m.select(entry=25)
    m.select(entry=23)                          # on the third page
    assert m.entries_pager.page == 2 and m.entry_selector.value == 23 and m.file["_ROW_COUNT"] == 1


def test_live_tail_with_a_bad_mode_raises_and_leaves_no_noise(catalog, monkeypatch):
    t = catalog.create_table("db.t", SCHEMA)
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with pytest.raises(ArgumentError, match="LiveTail mode must be 'latest' or 'latest-full'.*not 'nope'"):
        LiveTail(t, mode="nope")
    with pytest.raises(TypeError):
        LiveTail(t, consumer="c1")
    gc.collect()
    assert unraisable == []


def test_widgets_on_a_table_after_expiration(catalog):
    t = catalog.create_table("db.ex", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(4):
        t.write({"id": [i], "v": ["a"], "dt": ["x"]})
    t.create_tag("old", 2)
    t.expire_snapshots(retain_max=1, retain_min=1)
    live = [s.id for s in t.snapshots()]
    b = SnapshotBrowser(t)
    assert b.timeline[["snapshot_id", "tags", "expired"]].to_dict("records")[0] == \
        {"snapshot_id": 2, "tags": "old", "expired": True}
    b.selector.value = ("tag", "old")
    assert sorted(b.rows["id"]) == [0, 1]
    view = LsmView(t)
    assert view.snapshot_slider.options == tuple(live)
    with pytest.raises(SnapshotNotExistError, match="Snapshot 2 does not exist"):
        LsmView(t, snapshot_id=2)
    m = ManifestExplorer(t, tag="old")           # the tag's snapshot file is gone; its manifests are not
    assert m.file is not None and m.file["_ROW_COUNT"] >= 1
