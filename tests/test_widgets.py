"""The notebook widgets, driven from Python: change a selection, press a button, move a slider,
and check what the widget then shows (widget values, figure data)."""

import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")
pytest.importorskip("anywidget")   # plotly >= 6 builds FigureWidget on anywidget

from paimon_lab.utils import progress
from paimon_lab.widgets import (DeletionVectorView, LiveTail, LsmView, ManifestExplorer,  # noqa: E402
                                SnapshotBrowser, SnapshotDiff)
from paimon_lab.widgets._common import java_bytes  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kv_schema():
    return pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                      pa.field("dt", pa.string(), nullable=False)])


def rows(keys, tag, dt="a"):
    keys = list(keys)
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{tag}{k}" for k in keys], "dt": [dt] * len(keys)})


@pytest.fixture
def pk_table(catalog):
    t = catalog.create_table("db.pk", kv_schema(), primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write(rows(range(0, 50), "a"))                        # 1
    t.write(rows(range(40, 60), "b"))                       # 2: 10 updates, 10 inserts
    t.delete("k < 5")                                       # 3
    return t


@pytest.fixture
def dv_table(catalog):
    t = catalog.create_table("db.dv", kv_schema(), primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(rows(range(100), "a"))
    t.compact(full=True)
    t.write(rows(range(0, 100, 10), "b"))
    return t


# ---------------------------------------------------------------------------------- SnapshotBrowser

def test_snapshot_browser_timeline_and_rows(pk_table):
    pk_table.create_tag("first", snapshot_id=1)
    b = SnapshotBrowser(pk_table, page_size=20)
    tl = b.timeline
    assert tl["snapshot_id"].tolist() == [1, 2, 3]
    assert tl["commit_kind"].tolist() == ["APPEND"] * 3
    assert tl["total_record_count"].tolist() == [50, 70, 75]
    assert tl["tags"].tolist() == ["first", "", ""]
    assert b.selected == ("snapshot", 3)
    # the timeline chart: one point per snapshot, tag annotated
    xs = sorted(x for tr in b.figure.data for x in tr.x)
    assert xs == [1, 2, 3]
    assert any("first" in a.text for a in b.figure.layout.annotations)
    # the tag marker is a character the usual fonts have (no emoji: headless browsers draw a box)
    assert all(max(map(ord, a.text)) < 0x10000 for a in b.figure.layout.annotations)
    # latest: 55 rows, shown 20 at a time
    assert len(b.rows) == 20 and "rows 1–20" in b.page_label.value
    b.next_button.click()
    b.next_button.click()
    assert b.page == 2 and len(b.rows) == 15 and b.next_button.disabled
    b.next_button.click()                      # no 4th page: stays
    assert b.page == 2
    b.prev_button.click()
    assert b.page == 1 and len(b.rows) == 20


def test_snapshot_browser_select_tag_schema_manifests(pk_table):
    pk_table.create_tag("first", snapshot_id=1)
    b = SnapshotBrowser(pk_table, page_size=100)
    b.selector.value = ("tag", "first")
    assert len(b.rows) == 50 and set(b.rows["v"].str[0]) == {"a"}
    assert "BIGINT NOT NULL" in b.schema_html.value and "primary keys" in b.schema_html.value
    assert "delta" in b.manifests_html.value and "manifest-" in b.manifests_html.value
    assert '"commitKind": "APPEND"' in b.json_html.value.replace("&quot;", '"')
    b.selector.value = ("snapshot", 2)
    assert len(b.rows) == 60


def test_snapshot_browser_create_tag_with_confirmation(pk_table):
    b = SnapshotBrowser(pk_table)
    b.selector.value = ("snapshot", 2)
    b.tag_name.value = "release"
    b.tag_button.click()
    assert b.confirm_box.layout.display != "none"
    assert "release" in b.confirm_message.value and "snapshot 2" in b.confirm_message.value
    assert pk_table.tags() == []                         # nothing before confirming
    b.cancel_button.click()
    assert b.confirm_box.layout.display == "none" and pk_table.tags() == []
    b.tag_button.click()
    b.confirm_button.click()
    assert [(t.name, t.snapshot.id) for t in pk_table.tags()] == [("release", 2)]
    assert "Created tag" in b.status.value
    assert "release" in b.timeline["tags"].tolist()
    assert ("tag", "release") in [v for _, v in b.selector.options]


def test_snapshot_browser_rollback_with_confirmation(pk_table):
    b = SnapshotBrowser(pk_table)
    b.selector.value = ("snapshot", 1)
    b.rollback_button.click()
    assert b.question == ("Roll back to snapshot 1? This deletes snapshots 2–3, the files only they use and "
                          "tags on them.")
    assert [s.id for s in pk_table.snapshots()] == [1, 2, 3]
    b.selector.value = ("snapshot", 2)
    assert b.question == ""                               # choosing another snapshot cancels the question
    b.rollback_button.click()
    assert b.question.endswith("This deletes snapshot 3, the files only it uses and tags on it.")
    b.selector.value = ("snapshot", 1)
    b.rollback_button.click()
    b.confirm_button.click()
    assert [s.id for s in pk_table.snapshots()] == [1]
    assert b.timeline["snapshot_id"].tolist() == [1]
    assert b.message == "Rolled back to snapshot 1." and b.question == ""
    assert pk_table.to_arrow().num_rows == 50


def test_snapshot_browser_error_is_shown_not_raised(pk_table):
    pk_table.create_tag("dup", snapshot_id=1)
    b = SnapshotBrowser(pk_table)
    b.tag_name.value = "dup"
    b.tag_button.click()
    b.confirm_button.click()
    assert "already exists" in b.status.value


def test_snapshot_browser_reads_only_a_page(pk_table, monkeypatch):
    seen = []
    original = type(pk_table).to_arrow

    def spy(self, **kwargs):
        seen.append(kwargs.get("limit"))
        return original(self, **kwargs)

    monkeypatch.setattr(type(pk_table), "to_arrow", spy)
    SnapshotBrowser(pk_table, page_size=7)
    assert seen and all(limit is not None and limit <= 8 for limit in seen)


def test_snapshot_browser_empty_table(catalog):
    t = catalog.create_table("db.empty", kv_schema())
    b = SnapshotBrowser(t)
    assert b.selector.value is None and "no snapshot" in b.rows_html.value


# ---------------------------------------------------------------------------------- SnapshotDiff

def test_snapshot_diff_by_primary_key(pk_table):
    d = SnapshotDiff(pk_table, 1, 2)
    r = d.result
    assert r.summary["rows added"] == 10 and r.summary["rows removed"] == 0
    assert r.summary["rows changed"] == 10
    assert r.added["k"].tolist() == list(range(50, 60))
    assert set(r.changed["column"]) == {"v"}
    first = r.changed.iloc[0]
    assert (first["k"], first["before"], first["after"]) == (40, "a40", "b40")
    assert r.files["files added"].sum() == 1 and r.files["files deleted"].sum() == 0
    assert r.counts["total records"].tolist() == [50, 70]
    assert "b40" in d.changed_html.value and "Rows compared" in d.summary_html.value
    # choose other snapshots in the dropdowns
    d.before_selector.value = ("snapshot", 2)
    d.after_selector.value = ("snapshot", 3)
    assert d.result.removed["k"].tolist() == [0, 1, 2, 3, 4]
    assert d.result.summary["rows added"] == 0 and d.result.summary["rows changed"] == 0


def test_snapshot_diff_append_table_and_tags(catalog):
    t = catalog.create_table("db.app", pa.schema([("x", pa.int64()), ("y", pa.string())]))
    t.write(pa.table({"x": [1, 2, 2, 3], "y": ["a", "b", "b", "c"]}))
    t.create_tag("before")
    t.write(pa.table({"x": [4, 2], "y": ["d", "b"]}))
    t.delete("x = 1")
    d = SnapshotDiff(t, "before", 3)
    assert sorted(d.result.added.itertuples(index=False, name=None)) == [(2, "b"), (4, "d")]
    assert sorted(d.result.removed.itertuples(index=False, name=None)) == [(1, "a")]
    assert "no key" in d.changed_html.value


def test_snapshot_diff_compaction_changes_files_not_rows(catalog):
    t = catalog.create_table("db.c", kv_schema(), primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write(rows(range(10), "a"))
    t.write(rows(range(5, 15), "b"))
    cid = t.compact(full=True)
    r = SnapshotDiff(t, cid - 1, cid).result
    assert r.summary["files added"] == 1 and r.summary["files deleted"] == 2
    assert len(r.added) == len(r.removed) == len(r.changed) == 0


def test_snapshot_diff_skips_rows_of_big_partitions(pk_table):
    d = SnapshotDiff(pk_table, 1, 2, max_rows=10)
    assert not d.result.rows_compared and "max_rows" in d.result.note
    assert d.result.summary["files added"] == 1


# ---------------------------------------------------------------------------------- LsmView

def test_lsm_view_bars_and_slider(catalog):
    t = catalog.create_table("db.lsm", kv_schema(), primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write(rows(range(0, 100), "a"))                  # 1
    t.write(rows(range(20, 40), "b"))                  # 2
    t.write(rows(range(60, 70), "c"))                  # 3
    t.compact(full=True)                               # 4: COMPACT
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == ["APPEND", "APPEND", "APPEND", "COMPACT"]
    v = LsmView(t, {"dt": "a"}, 0)
    assert v.snapshot_slider.value == 4
    bar = v.figure.data[0]
    assert list(v.files["level"]) != [0, 0, 0]
    v.snapshot_slider.value = 3                        # before the compaction: three level-0 runs
    bar = v.figure.data[0]
    assert list(v.files["level"]) == [0, 0, 0]
    assert sorted(zip(bar.base, bar.x)) == [(0.0, 100.0), (20.0, 20.0), (60.0, 10.0)]   # [min, max+1)
    assert list(v.figure._widget_data[0]["base"]) == list(bar.base)   # synced state for views made later
    assert len(set(bar.y)) == 2                        # overlapping runs side by side in their level;
    assert bar.y[1] == bar.y[2] != bar.y[0]            # runs that do not overlap share a lane
    assert all(-0.5 < y < 0.5 for y in bar.y)
    assert list(bar.marker.color) == [100, 20, 10] or sorted(bar.marker.color) == [10, 20, 100]
    assert "bucket 0" in v.figure.layout.title.text and "snapshot 3" in v.figure.layout.title.text
    hover = bar.customdata[0]
    assert hover[0].startswith("data-") and hover[1] in (100, 20, 10)
    v.color_selector.value = "sequence"
    assert sorted(v.figure.data[0].marker.color) == sorted(v.files["max_sequence_number"])
    v.snapshot_slider.value = 4                        # after: merged into one upper level
    assert (v.files["level"] > 0).all() and len(v.figure.data[0].base) == len(v.files)
    assert v.figure.layout.yaxis.ticktext[0] == "L0"


def test_lsm_view_partitions_buckets_and_string_keys(catalog):
    t = catalog.create_table("db.s", pa.schema([pa.field("name", pa.string(), nullable=False), ("n", pa.int32()),
                                                pa.field("dt", pa.string(), nullable=False)]),
                             primary_keys=["name", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    t.write(pa.table({"name": [f"user{i:03d}" for i in range(40)], "n": pa.array(range(40), pa.int32()),
                      "dt": ["x"] * 20 + ["y"] * 20}))
    v = LsmView(t)
    assert sorted(v.partition_selector.options, key=str)[0][0] in ("dt=x", "dt=y")
    assert set(v.bucket_selector.options) == {0, 1}
    v.partition_selector.value = (("dt", "y"),)
    v.bucket_selector.value = 1
    assert set(v.files["bucket"]) <= {1} and len(v.files) == 1
    assert v.figure.layout.xaxis.ticktext                      # ordinal key axis, labelled with keys
    assert all(t.startswith("user") for t in v.figure.layout.xaxis.ticktext)


def test_lsm_view_append_table(catalog):
    t = catalog.create_table("db.app", pa.schema([("x", pa.int64())]))
    t.write(pa.table({"x": [1, 2, 3]}))
    t.write(pa.table({"x": [4]}))
    v = LsmView(t)
    bar = v.figure.data[0]
    assert sorted(zip(bar.base, bar.x)) == [(0.0, 3.0), (3.0, 1.0)]


# ---------------------------------------------------------------------------------- DeletionVectorView

def test_deletion_vector_view(dv_table):
    v = DeletionVectorView(dv_table)
    assert len(v.vectors) == 1
    row = v.vectors.iloc[0]
    assert row["cardinality"] == 10 and row["row_count"] == 100
    assert v.rows["k"].tolist() == list(range(0, 100, 10))
    assert v.rows["position"].tolist() == list(range(0, 100, 10))
    assert set(v.rows["_VALUE_KIND"]) == {"+I"}
    z = np.array(v.figure.data[0].z, dtype=float)
    assert np.nansum(z) == 10                            # one red cell per deleted row
    assert "NaN" not in __import__("json").dumps(v.figure._widget_data)   # widget state must be JSON
    assert "10 of 100 rows deleted" in v.figure.layout.title.text
    assert "cardinality" in v.detail_html.value
    # an earlier snapshot had no deletion vectors
    v.snapshot_selector.value = 1
    assert len(v.vectors) == 0 and v.rows.empty


def test_deletion_vector_view_large_file_is_binned(catalog):
    t = catalog.create_table("db.big", kv_schema(), primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(rows(range(10_000), "a"))
    t.compact(full=True)
    t.write(rows(range(0, 10_000, 3), "b"))
    v = DeletionVectorView(t, max_rows=50)
    assert v.vectors["cardinality"].tolist() == [3334]
    assert len(v.rows) == 50                              # only the first page's rows are read for the table
    assert v.rows_pager.label.value == "deleted rows 1–50 of 3,334" and v.rows_pager.prev_button.disabled
    v.rows_pager.next_button.click()
    assert v.rows["position"].tolist() == [3 * i for i in range(50, 100)]
    assert v.rows_pager.label.value == "deleted rows 51–100 of 3,334"
    v.rows_pager.go(v.rows_pager.pages - 1)
    assert len(v.rows) == 3334 - 66 * 50 and v.rows_pager.next_button.disabled
    assert "class='plab-scroll'" in v.rows_html.value       # the table scrolls inside the cell
    z = np.array(v.figure.data[0].z)
    assert z.size == 512 and "share deleted" in v.figure.layout.title.text


# ---------------------------------------------------------------------------------- ManifestExplorer

def test_manifest_explorer_walk(catalog):
    t = catalog.create_table("db.layout1", pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                                                      pa.field("dt", pa.string(), nullable=False)]),
                             primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": pa.array([1, 98, 1], pa.int32()), "name": ["x", "y", "z"], "dt": ["20241011"] * 3}))
    m = ManifestExplorer(t, snapshot_id=1)
    assert m.list_selector.value == "delta"
    assert len(m.manifests) == 1 and len(m.entries) == 1
    f = m.file
    assert f["_KIND"] == "ADD" and f["partition"] == {"dt": "20241011"}
    assert f["min_key"] == (1,) and f["max_key"] == (98,) and f["_ROW_COUNT"] == 2
    assert f["value_stats"]["name"] == ("y", "z", 0)
    # the seed's bytes for the partition, as avro-tools prints them
    seed = "\u0000\u0000\u0000\u0001\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\b\u0000\u0000\u0000\u0010\u0000\u0000\u000020241011"
    assert f["_PARTITION"] == seed.encode("latin-1")
    assert java_bytes(f["_PARTITION"]) == (r'"\u0000\u0000\u0000\u0001\u0000\u0000\u0000\u0000\u0000\u0000\u0000'
                                           r'\u0000\b\u0000\u0000\u0000\u0010\u0000\u0000\u000020241011"')
    assert "dt=20241011" in m.file_html.value
    # partitions and keys read decoded; their raw bytes only inside a folded <details>
    shown = m.file_html.value.split("<details")
    assert "\\u0000" not in shown[0] and all("\\u0000" not in part.split("</details>", 1)[1] for part in shown[1:])
    assert "\\u0000" not in "".join(o for o, _ in m.entry_selector.options) + m.entries_html.value
    m.select(manifest_list="base")
    assert m.manifests == [] and m.file is None and "empty list" in m.list_html.value
    m.select(manifest_list="changelog")
    assert m.file["_FILE_NAME"].startswith("changelog-") and m.file["_ROW_COUNT"] == 3


def test_manifest_explorer_pages_entries(catalog):
    t = catalog.create_table("db.many", pa.schema([("x", pa.int64()), ("p", pa.int64())]), partition_keys=["p"])
    t.write(pa.table({"x": list(range(25)), "p": list(range(25))}))     # 25 partitions: 25 entries
    m = ManifestExplorer(t, page_size=10)
    assert len(m.entries) == 25 and len(m.entries_df) == 10
    assert m.entries_pager.label.value == "entries 1–10 of 25"
    m.entries_pager.next_button.click()
    assert [v for _, v in m.entry_selector.options] == list(range(10, 20)) and m.entry_selector.value == 10
    assert m.file["_FILE_NAME"] == m.entries[10].file.file_name
    assert "p=" in m.entries_html.value


def test_manifest_explorer_compaction_entries(dv_table):
    m = ManifestExplorer(dv_table)
    kinds = m.entries_df["kind"].tolist()
    assert "ADD" in kinds and "DELETE" in kinds
    i = kinds.index("DELETE")
    m.select(entry=i)
    assert m.file["_KIND"] == "DELETE" and m.file["_LEVEL"] == 0
    m.snapshot_selector.value = ("snapshot", 1)
    assert m.entries_df["kind"].tolist() == ["ADD"]


# ---------------------------------------------------------------------------------- LiveTail

def test_live_tail_follows_commits(pk_table):
    tail = LiveTail(pk_table, rows=5, poll_interval=0.05)
    try:
        assert tail.running and tail.toggle.value
        sid = pk_table.write(rows([100, 101, 102], "n"))
        assert tail.wait_for(sid, timeout=20)
        sid = pk_table.write(rows([103], "m"))
        assert tail.wait_for(sid, timeout=20)
        deadline = time.monotonic() + 5
        while tail.counts["+I"] < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tail.counts["+I"] == 4
        assert tail.newest_rows["k"].tolist() == [100, 101, 102, 103][-4:]
        assert [c["snapshot_id"] for c in tail.commits] == [4, 5]
        assert list(tail.figure.data[0].y) == [3, 1]              # +I rows per commit
        assert "rows +I" in tail.counts_html.value and "n100" in tail.rows_html.value or "m103" in tail.rows_html.value
    finally:
        tail.stop()
    assert not tail.running and not tail.toggle.value
    # resumes where it stopped
    pk_table.write(rows([104], "z"))
    tail.toggle.value = True
    try:
        assert tail.wait_for(pk_table.snapshot_manager.latest_id(), timeout=20)
        deadline = time.monotonic() + 5
        while tail.counts["+I"] < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tail.counts["+I"] == 5
    finally:
        tail.close()


def test_live_tail_latest_full_and_no_autostart(pk_table):
    tail = LiveTail(pk_table, mode="latest-full", autostart=False, rows=3)
    assert not tail.running and tail.counts["+I"] == 0
    tail.start()
    try:
        assert tail.wait_for(3, timeout=20)
        deadline = time.monotonic() + 5
        while tail.counts["+I"] < 55 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tail.counts["+I"] == 55 and len(tail.newest_rows) == 3
    finally:
        tail.stop()


def test_live_tail_left_open_at_exit_says_nothing(tmp_path):
    """A script that ends with a LiveTail left open: ipywidgets closes it from __del__ while the
    interpreter shuts down, which must not print a traceback."""
    script = tmp_path / "tail.py"
    script.write_text(
        "import pyarrow as pa, sys\n"
        "from paimon_lab import Catalog\n"
        "from paimon_lab.widgets import LiveTail\n"
        "c = Catalog(sys.argv[1]); c.create_database('db')\n"
        "t = c.create_table('db.t', pa.schema([('k', pa.int64())]))\n"
        "t.write(pa.table({'k': [1]}))\n"
        "tail = LiveTail(t, poll_interval=0.05)\n"
        "assert tail.wait_for(1, timeout=20)\n"
        "tail.stop()\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "wh")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("missing", ["plotly", "ipywidgets", "anywidget"])
def test_widgets_without_the_notebook_extra_name_it(missing):
    code = (f"import sys; sys.modules[{missing!r}] = None\n"
            "try:\n    import paimon_lab.widgets\nexcept ImportError as e:\n    print(e)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120).stdout
    assert f"({missing} is missing)" in out and "pip install 'paimon-lab[notebook]'" in out, out


def test_snapshot_diff_refuses_a_point_that_is_not_there(pk_table):
    from paimon_lab.errors import SnapshotNotExistError, TagNotExistError

    with pytest.raises(SnapshotNotExistError, match=r"Snapshot 99 does not exist \(snapshots: 1, 2, 3\)"):
        SnapshotDiff(pk_table, 1, 99)  # was a diff of 1 and the latest, said nowhere
    with pytest.raises(TagNotExistError, match="Tag 'nope' does not exist"):
        SnapshotDiff(pk_table, "nope", 2)


# ---------------------------------------------------------------------------------- progress

def test_progress_is_a_no_op_for_small_work():
    items = [1, 2, 3]
    progress.configure(enabled=None, min_total=10)
    try:
        assert progress.progress(items) is items
        with progress.progress_bar(total=5) as bar:
            assert bar is progress.NO_BAR
            bar.update(3)
        with progress.disabled():
            assert progress.progress(range(1000)) == range(1000)
    finally:
        progress.configure(min_total=2)


def test_progress_bar_counts_when_forced(capsys):
    progress.configure(enabled=True)
    try:
        out = list(progress.progress(range(5), desc="unit-test"))
        assert out == list(range(5))
        with progress.progress_bar(total=10, desc="rows", unit="row") as bar:
            bar.update(4)
            bar.update(6)
            assert bar.n == 10
    finally:
        progress.configure(enabled=None)
    assert "unit-test" in capsys.readouterr().err


def test_progress_env_switch(monkeypatch):
    monkeypatch.setenv("PAIMON_LAB_PROGRESS", "0")
    assert not progress.enabled()
    assert progress.progress(range(10_000)) == range(10_000)
    monkeypatch.setenv("PAIMON_LAB_PROGRESS", "1")
    assert progress.enabled()
