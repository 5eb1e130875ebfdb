"""DeletionVectorView: each data file's deletion vector, drawn, with the rows it deletes."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from paimon_lab.widgets._common import (CSS, W, check_snapshot_id, choose, error_html, esc, fmt_partition, html_table, kv_table,
                                        FigureSlot, Pager)
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.io.file_io import join
from paimon_lab.core.file_format import read_file
from paimon_lab.core.key_value import (KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND, KIND_NAMES, KeyValueLayout)

if TYPE_CHECKING:
    from paimon_lab.table import Table

GRID_MAX = 4096   # files up to this many rows are drawn one cell per row
BINS = 512        # larger files are drawn as the deleted share of BINS equal slices


def deleted_rows(table: "Table", partition: bytes, bucket: int, file, positions: np.ndarray,
                 max_rows: int = 1000) -> pd.DataFrame:
    """The rows at ``positions`` of one data file: for primary-key tables the key columns, the
    sequence number and the row kind (the record the vector hides); for append tables the row."""

    positions = np.asarray(positions[:max_rows], dtype=np.int64)
    schema = table.store.schema_for(file.schema_id)
    path = file.external_path or join(table.store.bucket_path(partition, bucket), file.file_name)
    if table.primary_keys:

        layout = KeyValueLayout(schema)
        file_cols = [f.name for f in layout.file_fields]
        keys = [(KEY_PREFIX + k if KEY_PREFIX + k in file_cols else k, k) for k in layout.key_names]
        raw = read_file(table.file_io, path, file.format, [c for c, _ in keys] + [SEQUENCE_NUMBER, VALUE_KIND],
                        layout.file_fields)
        rows = raw.take(positions)
        out = {"position": positions}
        for c, name in keys:
            out[name] = rows.column(c).to_pylist()
        out["_SEQUENCE_NUMBER"] = rows.column(SEQUENCE_NUMBER).to_pylist()
        out["_VALUE_KIND"] = [KIND_NAMES.get(k, k) for k in rows.column(VALUE_KIND).to_pylist()]
        return pd.DataFrame(out)
    raw = read_file(table.file_io, path, file.format, None, schema.fields)
    df = raw.take(positions).to_pandas()
    df.insert(0, "position", positions)
    return df


class DeletionVectorView(W.VBox):
    """Deletion vectors of a snapshot (default latest): choose a data file to see its vector drawn
    (one cell per row; red = deleted), its cardinality, and the keys at the deleted positions,
    ``max_rows`` per page (only the rows of the page shown are looked up)."""

    def __init__(self, table: "Table", snapshot_id: int | None = None, *, max_rows: int = 50):
        self.table = table
        self.max_rows = max_rows
        self.vectors: pd.DataFrame = pd.DataFrame()
        self.rows: pd.DataFrame = pd.DataFrame()
        self._files: dict = {}
        self._positions = np.zeros(0, dtype=np.int64)
        self._entry = None
        self.rows_pager = Pager(max_rows, self._show_rows, noun="deleted rows")
        self._overview = pd.DataFrame()
        self._note = ""
        self.overview_pager = Pager(50, self._show_overview, noun="files")
        self.snapshot_selector = W.Dropdown(description="Snapshot", layout=W.Layout(width="260px"))
        self.file_selector = W.Dropdown(description="Data file", layout=W.Layout(width="640px"))
        self.refresh_button = W.Button(description="Refresh", icon="refresh", layout=W.Layout(width="100px"))
        self.overview_html = W.HTML()
        self.detail_html = W.HTML()
        self.rows_html = W.HTML()
        self._fig = go.Figure(layout=go.Layout(
            height=260, margin=dict(l=50, r=20, t=40, b=40), xaxis=dict(title="row position"),
            yaxis=dict(autorange="reversed", title="")))
        self._fig.add_heatmap(z=[[0]], colorscale=[[0, "#e8f0fe"], [1, "#d62728"]], showscale=False,
                                zmin=0, zmax=1, xgap=1, ygap=1)
        self._slot = FigureSlot()
        self.figure = self._slot.show(self._fig)
        self._loading = False
        self.snapshot_selector.observe(lambda _: self._load(), names="value")
        self.file_selector.observe(lambda _: self.show(), names="value")
        self.refresh_button.on_click(lambda _: self.refresh())
        super().__init__([W.HTML(CSS), W.HTML(f"<b>Deletion vectors of {esc(table.identifier)}</b>"),
                          W.HBox([self.snapshot_selector, self.refresh_button]), self.overview_html,
                          self.overview_pager.box,
                          self.file_selector, self.detail_html, self._slot.box, self.rows_html,
                          self.rows_pager.box])
        self.refresh(snapshot_id)

    def refresh(self, snapshot_id: int | None = None) -> None:
        self.table.refresh()
        ids = [s.id for s in self.table.snapshots()]
        check_snapshot_id(snapshot_id, ids)
        want = snapshot_id if snapshot_id is not None else self.snapshot_selector.value
        self._loading = True
        try:
            self.snapshot_selector.options = [(f"snapshot {i}", i) for i in ids]
            self.snapshot_selector.value = want if want in ids else (ids[-1] if ids else None)
        finally:
            self._loading = False
        self._load()

    def _load(self) -> None:
        if self._loading:
            return
        sid = self.snapshot_selector.value
        if sid is None:
            self.vectors = pd.DataFrame()
            self.overview_html.value = "<span class='plab-muted'>no snapshot yet</span>"
            self.file_selector.options = []
            return
        try:
            dvs = self.table.deletion_vectors(sid)
            snap = self.table.snapshot(sid)
            self._files = {e.file.file_name: e for e in FileStoreScan(self.table.store).read_entries(snap)}
        except Exception as e:  # noqa: BLE001
            self.overview_html.value = error_html(e)
            return
        dvs = dvs[dvs["file_name"].isin(self._files)].reset_index(drop=True)
        dvs["row_count"] = [self._files[n].file.row_count for n in dvs["file_name"]]
        dvs["level"] = [self._files[n].file.level for n in dvs["file_name"]]
        self.vectors = dvs
        share = [round(c / max(r, 1), 3) for c, r in zip(dvs["cardinality"], dvs["row_count"])]
        overview = dvs.assign(partition=dvs["partition"].map(fmt_partition), deleted_share=share) \
            .drop(columns=["positions"])
        if not self.table.options.get("deletion-vectors.enabled", "false").lower() == "true" and not len(dvs):
            note = "<div class='plab-muted'>This table does not use deletion vectors " \
                   "('deletion-vectors.enabled' is not set).</div>"
        else:
            note = ""
        self._overview, self._note = overview, note
        self.overview_pager.reset(len(overview))
        options = [(f"{fmt_partition(r.partition)} · bucket-{r.bucket} · {r.file_name} "
                    f"({r.cardinality}/{r.row_count} deleted)", r.file_name) for r in dvs.itertuples()]
        old = self.file_selector.value
        self._loading = True
        try:
            self.file_selector.options = options
            if options:
                self.file_selector.value = old if old in [v for _, v in options] else options[0][1]
        finally:
            self._loading = False
        self.show()

    def _show_overview(self, page: int) -> None:
        shown = self._overview.iloc[self.overview_pager.slice()] if len(self._overview) else self._overview
        self.overview_html.value = self._note + html_table(shown, empty="no deletion vectors in this snapshot")

    def show(self, file_name: str | None = None) -> None:
        """Draw the deletion vector of ``file_name`` (default: the chosen file)."""
        if self._loading:
            return
        if file_name is not None:
            choose(self.file_selector, file_name, "data file with a deletion vector")
            return
        name = self.file_selector.value
        heat = self._fig.data[0]
        if name is None or not len(self.vectors):
            self.detail_html.value = ""
            self.rows_html.value = ""
            self.rows = pd.DataFrame()
            self._entry, self._positions = None, np.zeros(0, dtype=np.int64)
            self.rows_pager.size = 0
            self.rows_pager._label()
            with self._fig.batch_update():
                heat.z = [[0]]
                self._fig.layout.title = dict(text="no deletion vector", font=dict(size=13))
            self.figure = self._slot.show(self._fig)
            return
        row = self.vectors[self.vectors["file_name"] == name].iloc[0]
        entry = self._files[name]
        positions = np.asarray(row["positions"], dtype=np.int64)
        n = int(entry.file.row_count)
        self.detail_html.value = kv_table([
            ("partition", fmt_partition(row["partition"])), ("bucket", int(row["bucket"])),
            ("file", name), ("level", entry.file.level), ("rows in file", n),
            ("cardinality (deleted rows)", int(row["cardinality"])),
            ("live rows", n - int(row["cardinality"]))])
        self._draw(positions, n, name)
        self._entry, self._positions = entry, positions
        self.rows_pager.reset(len(positions))

    def _show_rows(self, page: int) -> None:
        """The rows at one page of the chosen file's deleted positions."""
        entry = self._entry
        if entry is None:
            return
        positions = self._positions[self.rows_pager.slice()]
        try:
            self.rows = deleted_rows(self.table, entry.partition, entry.bucket, entry.file, positions, len(positions))
            self.rows_html.value = "<b>Rows at the deleted positions</b>" + html_table(self.rows)
        except Exception as e:  # noqa: BLE001
            self.rows_html.value = error_html(e)

    def _draw(self, positions: np.ndarray, n: int, name: str) -> None:
        heat = self._fig.data[0]
        if n <= GRID_MAX:
            width = max(1, min(64, n))
            height = max(1, math.ceil(n / width))
            cells = np.full(height * width, np.nan)
            cells[:n] = 0
            cells[positions[positions < n]] = 1
            grid = cells.reshape(height, width)
            # no NaN in widget state (it is not JSON): cells past the last row are None (gaps)
            z = [[None if v != v else int(v) for v in line] for line in grid.tolist()]
            text = [[f"row {r * width + c}" + (" · deleted" if z[r][c] == 1 else "") if r * width + c < n else ""
                     for c in range(width)] for r in range(height)]
            title = f"{name}: {len(positions)} of {n} rows deleted (one cell per row, {width} per line)"
            x = list(range(width))
            y = [r * width for r in range(height)]
            zmax = 1
        else:
            bins = BINS
            edges = np.linspace(0, n, bins + 1)
            counts, _ = np.histogram(positions, bins=edges)
            share = counts / np.maximum(np.diff(edges), 1)
            width = 64
            height = bins // width
            z = share.reshape(height, width).tolist()
            text = [[f"rows {int(edges[r * width + c])}–{int(edges[r * width + c + 1]) - 1}: "
                     f"{counts[r * width + c]} deleted" for c in range(width)] for r in range(height)]
            title = f"{name}: {len(positions)} of {n} rows deleted (share deleted per slice of {n // bins} rows)"
            x = [int(edges[c]) for c in range(width)]
            y = [int(edges[r * width]) for r in range(height)]
            zmax = max(float(share.max()), 1e-9)
        with self._fig.batch_update():
            heat.z = z
            heat.x = x
            heat.y = y
            heat.zmax = zmax
            heat.text = text
            heat.hovertemplate = "%{text}<extra></extra>"
            self._fig.layout.title = dict(text=title, font=dict(size=13))
            self._fig.layout.height = min(600, 120 + 14 * len(y))
            grid = n <= GRID_MAX
            self._fig.layout.xaxis.title = "position in line" if grid else "first row of slice"
            self._fig.layout.yaxis.title = "first row of line"
        self.figure = self._slot.show(self._fig)

    def __repr__(self) -> str:
        return f"DeletionVectorView({self.table.identifier!r})"
