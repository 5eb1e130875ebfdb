"""LsmView: the LSM tree of one partition and bucket, drawn file by file, snapshot by snapshot."""

from __future__ import annotations

import math
from numbers import Number
from typing import TYPE_CHECKING

import pandas as pd
import plotly.graph_objects as go

from paimon_lab.errors import ArgumentError
from paimon_lab.widgets._common import (CSS, W, FigureSlot, check_snapshot_id, error_html, esc, fmt_key,
                                        fmt_partition, html_table)

if TYPE_CHECKING:
    from paimon_lab.table import Table

COLOR_BY = {"rows": ("row_count", "rows"), "bytes": ("file_size", "bytes"),
            "sequence": ("max_sequence_number", "max sequence")}


def _sort_key(key):
    if not isinstance(key, tuple):
        key = (key,)
    return tuple((0, 0) if v is None else (1, v) for v in key)


def _lanes(starts: list[float], ends: list[float]) -> list[int]:
    """Greedy lanes so that overlapping intervals of one level are drawn side by side."""
    order = sorted(range(len(starts)), key=lambda i: (starts[i], ends[i]))
    lane_end: list[float] = []
    lanes = [0] * len(starts)
    for i in order:
        for lane, end in enumerate(lane_end):
            if end <= starts[i]:
                lanes[i], lane_end[lane] = lane, ends[i]
                break
        else:
            lanes[i] = len(lane_end)
            lane_end.append(ends[i])
    return lanes


class LsmView(W.VBox):
    """The LSM tree of a primary-key table's bucket: one horizontal bar per data file, at its
    level (y, level 0 on top), spanning its key range (x), coloured by rows, bytes or sequence
    number, with the file's details on hover. ``snapshot_slider`` steps through history, e.g.
    across a compaction. Append tables (no keys) show their files side by side, as wide as their
    row counts.
    """

    def __init__(self, table: "Table", partition: dict | None = None, bucket: int | None = None, *,
                 snapshot_id: int | None = None, color_by: str = "rows", height: int = 380):
        if color_by not in COLOR_BY:
            raise ArgumentError(f"color_by must be one of {list(COLOR_BY)}, not {color_by!r}")
        if partition is not None and not isinstance(partition, dict):
            raise ArgumentError(f"partition is a dict of partition values such as {{'dt': '2024-05-01'}}, "
                                f"not {type(partition).__name__} {partition!r}")
        self.table = table
        self._levels_cache: dict[int, pd.DataFrame] = {}
        self.files: pd.DataFrame = pd.DataFrame()
        self._fig = go.Figure(layout=go.Layout(
            height=height, margin=dict(l=60, r=20, t=40, b=50), bargap=0.1,
            yaxis=dict(title="level", zeroline=False),
            xaxis=dict(title="key" if table.primary_keys else "rows (files in write order)")))
        self._fig.add_bar(orientation="h", x=[], y=[], base=[], name="data files",
                            marker=dict(colorscale="Viridis", showscale=True, line=dict(width=1, color="#333")))
        self._slot = FigureSlot(height)
        self.figure = self._slot.show(self._fig)
        self.snapshot_slider = W.SelectionSlider(description="Snapshot", options=[0], continuous_update=False,
                                                 layout=W.Layout(width="520px"))
        self.partition_selector = W.Dropdown(description="Partition", layout=W.Layout(width="320px"))
        self.bucket_selector = W.Dropdown(description="Bucket", layout=W.Layout(width="160px"))
        self.color_selector = W.ToggleButtons(options=list(COLOR_BY), value=color_by, description="Colour",
                                              style={"button_width": "80px"})
        self.refresh_button = W.Button(description="Refresh", icon="refresh", layout=W.Layout(width="100px"))
        self.snapshot_info = W.HTML()
        self.summary_html = W.HTML()
        self.files_html = W.HTML()
        self._updating = False
        self.snapshot_slider.observe(self._on_snapshot, names="value")
        self.partition_selector.observe(lambda _: self._partition_changed(), names="value")
        self.bucket_selector.observe(lambda _: self.draw(), names="value")
        self.color_selector.observe(lambda _: self.draw(), names="value")
        self.refresh_button.on_click(lambda _: self.refresh())
        super().__init__([W.HTML(CSS), W.HTML(f"<b>LSM tree of {esc(table.identifier)}</b>"),
                          W.HBox([self.partition_selector, self.bucket_selector, self.refresh_button]),
                          W.HBox([self.snapshot_slider, self.snapshot_info]), self.color_selector,
                          self._slot.box, self.summary_html, self.files_html])
        self.refresh(snapshot_id=snapshot_id, partition=partition, bucket=bucket)

    # ------------------------------------------------------------------ data
    def levels(self, snapshot_id: int) -> pd.DataFrame:
        got = self._levels_cache.get(snapshot_id)
        if got is None:
            got = self._levels_cache[snapshot_id] = self.table.levels(snapshot_id)
            if len(self._levels_cache) > 64:
                self._levels_cache.pop(next(iter(self._levels_cache)))
        return got

    def refresh(self, *, snapshot_id: int | None = None, partition: dict | None = None,
                bucket: int | None = None) -> None:
        """Re-read the snapshot list (newest selected unless ``snapshot_id``)."""
        self.table.refresh()
        ids = [s.id for s in self.table.snapshots()]
        check_snapshot_id(snapshot_id, ids)
        self._updating = True
        try:
            if not ids:
                self.snapshot_slider.options = [0]
                self.snapshot_slider.disabled = True
            else:
                self.snapshot_slider.disabled = False
                self.snapshot_slider.options = ids
                self.snapshot_slider.value = snapshot_id if snapshot_id in ids else ids[-1]
        finally:
            self._updating = False
        self._fill_selectors(partition, bucket)
        self.draw()

    def _fill_selectors(self, partition: dict | None = None, bucket: int | None = None) -> None:
        sid = self.snapshot_slider.value
        df = self.levels(sid) if sid else pd.DataFrame(columns=["partition", "bucket"])
        parts = {tuple(p.items()): p for p in df["partition"]} if len(df) else {}
        want = tuple(partition.items()) if partition is not None else self.partition_selector.value
        options = [(fmt_partition(dict(k)), k) for k in sorted(parts, key=lambda k: tuple(str(v) for _, v in k))]
        if want is not None and want not in parts:
            options.append((fmt_partition(dict(want)) + " (no files here)", want))
        self._updating = True
        try:
            self.partition_selector.options = options or [("(no files)", ())]
            values = [v for _, v in self.partition_selector.options]
            self.partition_selector.value = want if want in values else values[0]
            self._fill_buckets(bucket)
        finally:
            self._updating = False

    def _fill_buckets(self, bucket: int | None = None) -> None:
        sid = self.snapshot_slider.value
        df = self.levels(sid) if sid else pd.DataFrame(columns=["partition", "bucket"])
        p = self.partition_selector.value
        in_part = df[df["partition"].map(lambda d: tuple(d.items()) == p)] if len(df) else df
        buckets = sorted(set(in_part["bucket"])) if len(in_part) else []
        want = bucket if bucket is not None else self.bucket_selector.value
        if want is not None and want not in buckets:
            buckets = sorted(buckets + [want])
        self.bucket_selector.options = buckets or [0]
        self.bucket_selector.value = want if want in buckets else (buckets[0] if buckets else 0)

    def _partition_changed(self) -> None:
        if self._updating:
            return
        self._updating = True
        try:
            self._fill_buckets()
        finally:
            self._updating = False
        self.draw()

    def _on_snapshot(self, change) -> None:
        if self._updating:
            return
        self._fill_selectors()
        self.draw()

    # ------------------------------------------------------------------ drawing
    def draw(self) -> None:
        if self._updating:
            return
        sid = self.snapshot_slider.value
        bar = self._fig.data[0]
        if not sid:
            self.files = pd.DataFrame()
            self.snapshot_info.value = "<span class='plab-muted'>no snapshot yet</span>"
            with self._fig.batch_update():
                bar.x, bar.y, bar.base = [], [], []
            self.figure = self._slot.show(self._fig)
            return
        try:
            snap = self.table.snapshot(sid)
            df = self.levels(sid)
        except Exception as e:  # noqa: BLE001
            self.snapshot_info.value = error_html(e)
            return
        self.snapshot_info.value = (f"&nbsp;<b>{snap.commit_kind}</b> · total {snap.total_record_count} · "
                                    f"delta {snap.delta_record_count}")
        p, b = self.partition_selector.value, self.bucket_selector.value
        if len(df):
            df = df[(df["partition"].map(lambda d: tuple(d.items()) == p)) & (df["bucket"] == b)]
        self.files = df = df.reset_index(drop=True)
        col, label = COLOR_BY[self.color_selector.value]
        starts, ends, ticks = self._extent(df)
        num_levels = max(self.table.store.num_levels if self.table.primary_keys else 1,
                         int(df["level"].max()) + 1 if len(df) else 1)
        ys, widths = [], []
        for i in range(len(df)):
            ys.append(0.0)
            widths.append(0.8)
        for level in set(df["level"]) if len(df) else []:
            idx = [i for i in range(len(df)) if df["level"].iloc[i] == level]
            lanes = _lanes([starts[i] for i in idx], [ends[i] for i in idx])
            n = max(lanes) + 1
            for i, lane in zip(idx, lanes):
                ys[i] = level - 0.4 + (lane + 0.5) * 0.8 / n
                widths[i] = 0.8 / n * 0.9
        custom = [[r.file_name, r.row_count, r.file_size, fmt_key(r.min_key), fmt_key(r.max_key),
                   r.min_sequence_number, r.max_sequence_number, r.deleted_rows, r.level, r.schema_id]
                  for r in df.itertuples()] if len(df) else []
        title = (f"{fmt_partition(dict(p)) if p else '(unpartitioned)'} · bucket {b} · snapshot {sid} "
                 f"({snap.commit_kind}) · {len(df)} files")
        with self._fig.batch_update():
            bar.x = [e - s for s, e in zip(starts, ends)]
            bar.base = starts
            bar.y = ys
            bar.width = widths
            bar.customdata = custom
            bar.marker.color = df[col].tolist() if len(df) else []
            bar.marker.colorbar = dict(title=label)
            bar.hovertemplate = ("%{customdata[0]}<br>level %{customdata[8]} · %{customdata[1]} rows · "
                                 "%{customdata[2]} bytes<br>keys %{customdata[3]} … %{customdata[4]}"
                                 "<br>sequence %{customdata[5]} … %{customdata[6]}<br>deleted rows %{customdata[7]}"
                                 " · schema %{customdata[9]}<extra></extra>")
            self._fig.layout.title = dict(text=title, font=dict(size=13))
            self._fig.layout.yaxis.tickvals = list(range(num_levels))
            self._fig.layout.yaxis.ticktext = [f"L{i}" for i in range(num_levels)]
            self._fig.layout.yaxis.autorange = False        # every level shown, L0 on top
            self._fig.layout.yaxis.range = [num_levels - 0.5, -0.5]
            if ticks is None:
                self._fig.layout.xaxis.tickvals = None
                self._fig.layout.xaxis.ticktext = None
            else:
                self._fig.layout.xaxis.tickvals, self._fig.layout.xaxis.ticktext = ticks
        self.figure = self._slot.show(self._fig)
        per_level = (df.groupby("level").agg(files=("file_name", "size"), rows=("row_count", "sum"),
                                             bytes=("file_size", "sum"), deleted_rows=("deleted_rows", "sum"))
                     .reset_index() if len(df) else pd.DataFrame())
        self.summary_html.value = html_table(per_level, empty="no files in this bucket at this snapshot")
        shown = df.drop(columns=["partition", "bucket"]) if len(df) else df
        self.files_html.value = html_table(shown, 50, empty="")

    def _extent(self, df: pd.DataFrame):
        """Bar starts and ends on the x axis, and (tickvals, ticktext) for an ordinal key axis."""
        if not len(df):
            return [], [], None
        if not self.table.primary_keys:  # no keys: files side by side, as wide as their row counts
            ends = df["row_count"].astype(float).cumsum().tolist()
            return [e - r for e, r in zip(ends, df["row_count"].astype(float))], ends, None
        mins, maxs = df["min_key"].tolist(), df["max_key"].tolist()
        if all(len(k) == 1 and isinstance(k[0], Number) and not isinstance(k[0], bool)
               and k[0] is not None and not (isinstance(k[0], float) and math.isnan(k[0])) for k in mins + maxs):
            lo, hi = [float(k[0]) for k in mins], [float(k[0]) for k in maxs]
            integral = all(float(v).is_integer() for v in lo + hi)
            span = (max(hi) - min(lo)) or 1.0
            if integral:
                return lo, [h + 1 for h in hi], None
            return lo, [max(h, l + span * 0.005) for l, h in zip(lo, hi)], None
        keys = sorted({k for k in mins + maxs}, key=_sort_key)
        rank = {k: i for i, k in enumerate(keys)}
        step = max(1, len(keys) // 20)
        ticks = ([i for i in range(0, len(keys), step)], [fmt_key(keys[i]) for i in range(0, len(keys), step)])
        return [rank[k] for k in mins], [rank[k] + 1 for k in maxs], ticks

    def __repr__(self) -> str:
        return f"LsmView({self.table.identifier!r})"
