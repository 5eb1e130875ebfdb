"""LiveTail: follow a table's new commits in the background, like ``tail -f``."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Sequence

import pandas as pd
import plotly.graph_objects as go
import pyarrow as pa

from paimon_lab.errors import ArgumentError
from paimon_lab.widgets._common import CSS, W, error_html, esc, fmt_time, html_table, kv_table, FigureSlot

if TYPE_CHECKING:
    from paimon_lab.table import Table

ROW_KINDS = ("+I", "-U", "+U", "-D")
KIND_COLORS = {"+I": "#2ca02c", "-U": "#ff7f0e", "+U": "#1f77b4", "-D": "#d62728"}


class LiveTail(W.VBox):
    """Follow new commits of a table through :meth:`Table.stream` in a background thread.

    It shows the latest snapshot, how many rows of each kind (+I, -U, +U, -D) arrived, a chart of
    rows per commit, and the newest ``rows`` rows. It starts from the next commit (or from
    ``snapshot_id``, or with the whole current table when ``mode='latest-full'`` - only for
    small tables). ``start()`` / ``stop()`` or the toggle button control the thread.
    """

    def __init__(self, table: "Table", *, rows: int = 10, columns: Sequence[str] | None = None,
                 snapshot_id: int | None = None, mode: str = "latest", poll_interval: float = 0.5,
                 max_commits: int = 60, autostart: bool = True):
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        if snapshot_id is None and mode not in ("latest", "latest-full"):
            raise ArgumentError(f"LiveTail mode must be 'latest' or 'latest-full' (or give snapshot_id), not {mode!r}")
        self.table = table
        self.keep_rows = rows
        self.columns = list(columns) if columns is not None else None
        self.poll_interval = poll_interval
        self.max_commits = max_commits
        self.counts = {k: 0 for k in ROW_KINDS}
        self.commits: list[dict] = []       # one per snapshot that brought rows
        self.newest: pa.Table | None = None
        self.last_snapshot: int | None = None
        self.error: BaseException | None = None
        latest = table.snapshot_manager.latest_id()
        if snapshot_id is not None:
            self._mode, self._next = "from-snapshot", snapshot_id
        elif mode == "latest-full":
            self._mode, self._next = "latest-full", None
        else:
            self._mode, self._next = "from-snapshot", (latest or 0) + 1
        self._lock = threading.Lock()

        self.toggle = W.ToggleButton(description="Following", value=False, icon="play",
                                     layout=W.Layout(width="130px"))
        self.status = W.HTML()
        self.counts_html = W.HTML()
        self.rows_html = W.HTML()
        self._fig = go.Figure(layout=go.Layout(
            height=220, barmode="stack", margin=dict(l=50, r=20, t=30, b=40),
            title=dict(text="rows per commit", font=dict(size=13)), xaxis=dict(title="snapshot id"),
            yaxis=dict(title="rows"), legend=dict(orientation="h", y=1.15, x=1, xanchor="right")))
        for k in ROW_KINDS:
            self._fig.add_bar(x=[], y=[], name=k, marker_color=KIND_COLORS[k])
        self._slot = FigureSlot()
        self.figure = self._slot.show(self._fig)
        self._drawn_commits: tuple = ()
        self.toggle.observe(self._on_toggle, names="value")
        super().__init__([W.HTML(CSS), W.HTML(f"<b>Live tail of {esc(table.identifier)}</b>"),
                          W.HBox([self.toggle, self.status]), self.counts_html, self._slot.box, self.rows_html])
        self._render()
        if autostart:
            self.start()

    # ------------------------------------------------------------------ control
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"LiveTail-{self.table.identifier}", daemon=True)
        self._thread.start()
        if not self.toggle.value:
            self.toggle.value = True

    def stop(self, timeout: float = 5.0) -> None:
        self._halt(timeout)
        if self.toggle.value:
            self.toggle.value = False
        self._render()

    def _halt(self, timeout: float) -> None:
        if not hasattr(self, "_stop"):   # a constructor that failed before its thread existed
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def close(self) -> None:
        # no redraw of a widget going away: ipywidgets also closes it from __del__, even while the
        # interpreter shuts down, when rendering fails with "sys.meta_path is None"
        self._halt(5.0)
        super().close()

    def _on_toggle(self, change) -> None:
        if change["new"] and not self.running:
            self.start()
        elif not change["new"] and self.running:
            self.stop()
        self.toggle.icon = "pause" if change["new"] else "play"
        self.toggle.description = "Following" if change["new"] else "Paused"

    def wait_for(self, snapshot_id: int, timeout: float = 10.0) -> bool:
        """Block until the tail has processed ``snapshot_id`` (for scripts and tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._next is not None and self._next > snapshot_id:
                return True
            if self.error is not None:
                return False
            time.sleep(0.05)
        return False

    # ------------------------------------------------------------------ the thread
    def _run(self) -> None:
        sm = self.table.snapshot_manager
        try:
            while not self._stop.is_set():
                # Every snapshot up to `seen` is visited by the stream below before it stops.
                seen = sm.latest_id()
                earliest = sm.earliest_id()
                if self._next is not None and earliest is not None and self._next < earliest:
                    self._next = earliest  # what we had not read yet has expired meanwhile
                if self._mode == "latest-full":
                    batches = self.table.stream(mode="latest-full", columns=self.columns, timeout=0,
                                                poll_interval=self.poll_interval)
                    self._mode = "from-snapshot"
                    self._next = (seen or 0) + 1
                else:
                    batches = self.table.stream(mode="from-snapshot", snapshot_id=self._next, columns=self.columns,
                                                timeout=0, poll_interval=self.poll_interval)
                for batch in batches:
                    self._take(batch)
                    if batch.snapshot_id >= self._next:
                        self._next = batch.snapshot_id + 1
                    if self._stop.is_set():
                        break
                if seen is not None and not self._stop.is_set():
                    self._next = max(self._next or 1, seen + 1)
                self._render()
                self._stop.wait(self.poll_interval)
        except Exception as e:  # noqa: BLE001 - shown in the widget
            self.error = e
            self._render()

    def _take(self, batch) -> None:
        rows = batch.rows
        kinds = rows.column("rowkind").to_pylist() if rows.num_rows else []
        per_kind = {k: 0 for k in ROW_KINDS}
        for k in kinds:
            per_kind[k] = per_kind.get(k, 0) + 1
        with self._lock:
            for k, n in per_kind.items():
                self.counts[k] = self.counts.get(k, 0) + n
            self.commits.append({"snapshot_id": batch.snapshot_id, "commit_kind": batch.commit_kind, **per_kind})
            self.commits = self.commits[-self.max_commits:]
            tail = rows.slice(max(0, rows.num_rows - self.keep_rows))
            if self.newest is None or self.newest.schema != tail.schema:
                self.newest = tail
            else:
                both = pa.concat_tables([self.newest, tail])
                self.newest = both.slice(max(0, both.num_rows - self.keep_rows))
        self._render()

    # ------------------------------------------------------------------ display
    def _render(self) -> None:
        with self._lock:
            commits = list(self.commits)
            counts = dict(self.counts)
            newest = self.newest
        latest = None
        try:
            latest = self.table.latest_snapshot()
        except Exception:  # noqa: BLE001 - the status line is best effort
            pass
        self.last_snapshot = latest.id if latest is not None else None
        if self.error is not None:
            self.status.value = error_html(self.error)
        else:
            state = "following" if self.running and not self._stop.is_set() else "stopped"
            self.status.value = (f"&nbsp;{state} · next snapshot {self._next if self._next else '-'}")
        pairs = [("latest snapshot", "-" if latest is None else
                  f"{latest.id} ({latest.commit_kind}, {fmt_time(latest.time_millis)})"),
                 ("total records", "-" if latest is None else latest.total_record_count),
                 ("commits received", len(commits))] + [(f"rows {k}", counts.get(k, 0)) for k in ROW_KINDS]
        self.counts_html.value = kv_table(pairs)
        drawn = tuple(c["snapshot_id"] for c in commits)
        if drawn != self._drawn_commits:          # a new figure only when a commit arrived
            self._drawn_commits = drawn
            with self._fig.batch_update():
                for trace, k in zip(self._fig.data, ROW_KINDS):
                    trace.x = [c["snapshot_id"] for c in commits]
                    trace.y = [c.get(k, 0) for c in commits]
            self.figure = self._slot.show(self._fig)
        if newest is not None and newest.num_rows:
            self.rows_html.value = "<b>Newest rows</b>" + html_table(newest.to_pandas())
        else:
            self.rows_html.value = "<span class='plab-muted'>Waiting for commits…</span>"

    @property
    def newest_rows(self) -> pd.DataFrame:
        with self._lock:
            return self.newest.to_pandas() if self.newest is not None else pd.DataFrame()

    def __repr__(self) -> str:
        return f"LiveTail({self.table.identifier!r})"
