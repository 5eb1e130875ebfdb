"""SnapshotBrowser: a table's history (snapshots and tags), and the table as of any point in it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

import pandas as pd
import plotly.graph_objects as go

from paimon_lab.widgets._common import (CSS, W, error_html, esc, fmt_time, hidden, html_table, kv_table,
                                        ok_html, plain_text, pre, read_kwargs, ref_label, resolve,
                                        snapshot_refs, FigureSlot)

if TYPE_CHECKING:
    from paimon_lab.table import Table

KIND_COLORS = {"APPEND": "#1f77b4", "COMPACT": "#ff7f0e", "OVERWRITE": "#d62728", "ANALYZE": "#2ca02c"}


def timeline_frame(table: "Table", max_snapshots: int | None = None) -> pd.DataFrame:
    """One row per snapshot still present (and per tag whose snapshot has expired): id, commit
    kind, time, record counts, schema id and the tags on it."""
    snaps = table.snapshots()
    if max_snapshots is not None and len(snaps) > max_snapshots:
        snaps = snaps[-max_snapshots:]
    tags: dict[int, list[str]] = {}
    tag_snaps = {}
    for t in table.tags():
        tags.setdefault(t.snapshot.id, []).append(t.name)
        tag_snaps[t.snapshot.id] = t.snapshot
    present = {s.id for s in snaps}
    rows = []
    for s in sorted(list(snaps) + [s for i, s in tag_snaps.items() if i not in present], key=lambda s: s.id):
        rows.append({
            "snapshot_id": s.id, "commit_kind": s.commit_kind, "commit_time": fmt_time(s.time_millis),
            "total_record_count": s.total_record_count, "delta_record_count": s.delta_record_count,
            "changelog_record_count": s.changelog_record_count, "schema_id": s.schema_id,
            "tags": ", ".join(sorted(tags.get(s.id, []))),
            "expired": s.id not in present,
        })
    cols = ["snapshot_id", "commit_kind", "commit_time", "total_record_count", "delta_record_count",
            "changelog_record_count", "schema_id", "tags", "expired"]
    return pd.DataFrame(rows, columns=cols)


class SnapshotBrowser(W.VBox):
    """Browse a table's snapshots and tags.

    The timeline (a chart and a table) lists every snapshot with its commit kind, time, total /
    delta / changelog record counts, schema id and tags. Choosing one in ``selector`` shows the
    table as of it (``page_size`` rows per page, read with ``limit=``), its schema, its manifest
    lists and its JSON. ``tag_button`` and ``rollback_button`` ask for confirmation
    (``confirm_button`` / ``cancel_button``) before tagging the chosen snapshot or rolling the
    table back to it.
    """

    def __init__(self, table: "Table", *, page_size: int = 20, columns: Sequence[str] | None = None,
                 max_snapshots: int | None = 500):
        self.table = table
        self.page_size = page_size
        self.columns = list(columns) if columns is not None else None
        self.max_snapshots = max_snapshots
        self.page = 0
        self.rows: pd.DataFrame = pd.DataFrame()
        self.timeline: pd.DataFrame = pd.DataFrame()
        self._pending: Callable[[], str] | None = None

        self.title = W.HTML()
        self._fig = go.Figure(layout=go.Layout(
            height=230, margin=dict(l=50, r=20, t=30, b=40), title=dict(text="Snapshots", font=dict(size=13)),
            xaxis=dict(title="snapshot id", dtick=1), yaxis=dict(title="total records"), showlegend=True,
            legend=dict(orientation="h", y=1.15, x=1, xanchor="right")))
        self._slot = FigureSlot()
        self.figure = self._slot.show(self._fig)
        self.timeline_html = W.HTML()
        self.selector = W.Dropdown(description="As of", layout=W.Layout(width="420px"))
        self.refresh_button = W.Button(description="Refresh", icon="refresh", layout=W.Layout(width="100px"))
        self.rows_html = W.HTML()
        self.prev_button = W.Button(description="◀ Prev", layout=W.Layout(width="90px"))
        self.next_button = W.Button(description="Next ▶", layout=W.Layout(width="90px"))
        self.page_label = W.Label()
        self.schema_html = W.HTML()
        self.manifests_html = W.HTML()
        self.json_html = W.HTML()
        self.tabs = W.Tab(children=[
            W.VBox([self.rows_html, W.HBox([self.prev_button, self.next_button, self.page_label])]),
            self.schema_html, self.manifests_html, self.json_html])
        for i, name in enumerate(["Rows", "Schema", "Manifests", "Snapshot JSON"]):
            self.tabs.set_title(i, name)
        self.tag_name = W.Text(placeholder="tag name", description="Tag", layout=W.Layout(width="260px"))
        self.tag_button = W.Button(description="Create tag…", icon="tag")
        self.rollback_button = W.Button(description="Roll back…", icon="undo", button_style="warning")
        self.confirm_message = W.HTML()
        self.confirm_button = W.Button(description="Confirm", button_style="danger")
        self.cancel_button = W.Button(description="Cancel")
        self.confirm_box = W.HBox([self.confirm_message, self.confirm_button, self.cancel_button])
        self.status = W.HTML()
        hidden(self.confirm_box)

        self.selector.observe(self._on_select, names="value")
        self.refresh_button.on_click(lambda _: self.refresh())
        self.prev_button.on_click(lambda _: self.show_page(self.page - 1))
        self.next_button.on_click(lambda _: self.show_page(self.page + 1))
        self.tag_button.on_click(lambda _: self._ask_tag())
        self.rollback_button.on_click(lambda _: self._ask_rollback())
        self.confirm_button.on_click(lambda _: self._confirm())
        self.cancel_button.on_click(lambda _: self._cancel())

        super().__init__([
            W.HTML(CSS), self.title, self._slot.box, self.timeline_html,
            W.HBox([self.selector, self.refresh_button]), self.tabs,
            W.HBox([self.tag_name, self.tag_button, self.rollback_button]), self.confirm_box, self.status])
        self.refresh()

    # ------------------------------------------------------------------ history
    def refresh(self) -> None:
        """Re-read snapshots and tags (keeping the selection when it still exists)."""
        self.table.refresh()
        self.timeline = timeline_frame(self.table, self.max_snapshots)
        present = self.timeline[~self.timeline["expired"]] if len(self.timeline) else self.timeline
        self.title.value = (f"<b>{esc(self.table.identifier)}</b> <span class='plab-muted'>"
                            f"{len(present)} snapshots, {len(self.table.tags())} tags</span>")
        self.timeline_html.value = html_table(self.timeline.drop(columns=["expired"]), empty="no snapshots yet")
        self._draw_timeline()
        old = self.selector.value
        options = snapshot_refs(self.table, self.max_snapshots)
        values = [v for _, v in options]
        self.selector.options = options
        if old in values:
            self.selector.value = old
        elif values:
            snaps = [v for v in values if v[0] == "snapshot"]
            self.selector.value = snaps[-1] if snaps else values[-1]
        else:
            self._show(None)

    def _draw_timeline(self) -> None:
        df = self.timeline
        with self._fig.batch_update():
            self._fig.data = ()
            for kind in (df["commit_kind"].unique() if len(df) else []):
                part = df[df["commit_kind"] == kind]
                self._fig.add_scatter(
                    x=part["snapshot_id"].tolist(), y=part["total_record_count"].tolist(), mode="markers",
                    name=kind, marker=dict(size=11, color=KIND_COLORS.get(kind, "#7f7f7f"),
                                           symbol=["circle-open" if e else "circle" for e in part["expired"]]),
                    customdata=part[["commit_time", "delta_record_count", "changelog_record_count", "schema_id",
                                     "tags"]].astype(str).values.tolist(),
                    hovertemplate=("snapshot %{x} · " + kind + "<br>%{customdata[0]}<br>total %{y}"
                                   "<br>delta %{customdata[1]}, changelog %{customdata[2]}"
                                   "<br>schema %{customdata[3]}<br>tags: %{customdata[4]}<extra></extra>"))
            tagged = df[df["tags"] != ""] if len(df) else df
            self._fig.layout.annotations = [
                dict(x=int(r.snapshot_id), y=r.total_record_count, text="⚑ " + r.tags, showarrow=True, arrowhead=0,
                     ay=-28, font=dict(size=11)) for r in tagged.itertuples()]
        self.figure = self._slot.show(self._fig)
        for trace in self.figure.data:
            trace.on_click(self._on_point_click)

    def _on_point_click(self, trace, points, state) -> None:
        if points.point_inds:
            sid = int(trace.x[points.point_inds[0]])
            if ("snapshot", sid) in [v for _, v in self.selector.options]:
                self.selector.value = ("snapshot", sid)

    # ------------------------------------------------------------------ the chosen snapshot
    @property
    def selected(self):
        """The chosen ("snapshot", id) or ("tag", name)."""
        return self.selector.value

    def _on_select(self, change) -> None:
        self._cancel()
        self._show(change["new"])

    def _show(self, ref) -> None:
        self.page = 0
        if ref is None:
            for w in (self.rows_html, self.schema_html, self.manifests_html, self.json_html):
                w.value = "<span class='plab-muted'>The table has no snapshot yet.</span>"
            self.page_label.value = ""
            return
        try:
            snap = resolve(self.table, ref)
            if ref[0] == "snapshot" and not self.tag_name.value:
                self.tag_name.placeholder = f"e.g. v{snap.id}"
            self.schema_html.value = self._schema_html(snap.schema_id)
            self.manifests_html.value = self._manifests_html(snap)
            self.json_html.value = pre(snap.to_json())
            self.show_page(0)
        except Exception as e:  # noqa: BLE001 - show any failure in the widget
            self.rows_html.value = error_html(e)

    def show_page(self, page: int) -> None:
        """Show rows ``page * page_size`` .. of the chosen snapshot (reads only up to that page)."""
        ref = self.selector.value
        if ref is None or page < 0:
            return
        n = self.page_size
        try:
            data = self.table.to_arrow(columns=self.columns, limit=(page + 1) * n + 1, **read_kwargs(ref))
        except Exception as e:  # noqa: BLE001
            self.rows_html.value = error_html(e)
            return
        if page > 0 and data.num_rows <= page * n:
            return  # no such page
        self.page = page
        has_next = data.num_rows > (page + 1) * n
        self.rows = data.slice(page * n, n).to_pandas()
        self.rows_html.value = html_table(self.rows, empty="no rows")
        first = page * n + 1 if len(self.rows) else 0
        self.page_label.value = f"rows {first}–{page * n + len(self.rows)}" + (" of more" if has_next else "")
        self.prev_button.disabled = page == 0
        self.next_button.disabled = not has_next

    def _schema_html(self, schema_id: int) -> str:
        s = self.table.store.schema_for(schema_id)
        fields = pd.DataFrame([(f.id, f.name, str(f.type), f.description or "") for f in s.fields],
                              columns=["id", "name", "type", "comment"])
        info = kv_table([("schema id", s.id), ("partition keys", ", ".join(s.partition_keys) or "-"),
                         ("primary keys", ", ".join(s.primary_keys) or "-"),
                         ("options", ", ".join(f"{k}={v}" for k, v in sorted(s.options.items())) or "-")])
        return info + "<br>" + html_table(fields)

    def _manifests_html(self, snap) -> str:
        parts = []
        lists = [("base", snap.base_manifest_list), ("delta", snap.delta_manifest_list),
                 ("changelog", snap.changelog_manifest_list)]
        for kind, name in lists:
            if not name:
                parts.append(f"<div><b>{kind}</b>: <span class='plab-muted'>none</span></div>")
                continue
            try:
                metas = self.table.store.manifest_io.read_manifest_list(name)
            except Exception as e:  # noqa: BLE001
                parts.append(f"<div><b>{kind}</b> {esc(name)}: {error_html(e)}</div>")
                continue
            df = pd.DataFrame([(m.file_name, m.file_size, m.num_added_files, m.num_deleted_files, m.schema_id,
                                "" if m.min_bucket is None else f"{m.min_bucket}–{m.max_bucket}",
                                "" if m.min_level is None else f"{m.min_level}–{m.max_level}") for m in metas],
                              columns=["manifest", "size", "added files", "deleted files", "schema id", "buckets",
                                       "levels"])
            parts.append(f"<div><b>{kind}</b> {esc(name)}</div>" + html_table(df, empty="empty manifest list"))
        return "".join(parts)

    # ------------------------------------------------------------------ actions
    def _ask(self, message: str, action: Callable[[], str]) -> None:
        self._pending = action
        self.confirm_message.value = f"<b>{esc(message)}</b>"
        hidden(self.confirm_box, False)

    def _ask_tag(self) -> None:
        ref = self.selector.value
        name = self.tag_name.value.strip()
        if ref is None:
            self.status.value = error_html(ValueError("choose a snapshot first"))
            return
        if not name:
            self.status.value = error_html(ValueError("type a tag name first"))
            return
        snap = resolve(self.table, ref)

        def action() -> str:
            self.table.create_tag(name, snapshot_id=snap.id)
            self.tag_name.value = ""
            return f"Created tag '{name}' on snapshot {snap.id}."
        self._ask(f"Create tag '{name}' on snapshot {snap.id}?", action)

    def _ask_rollback(self) -> None:
        ref = self.selector.value
        if ref is None:
            self.status.value = error_html(ValueError("choose a snapshot first"))
            return
        snap = resolve(self.table, ref)
        latest = self.table.snapshot_manager.latest_id()
        if latest and latest > snap.id + 1:
            newer, they = f"snapshots {snap.id + 1}–{latest}", ("they use", "them")
        elif latest and latest > snap.id:
            newer, they = f"snapshot {latest}", ("it uses", "it")
        else:
            newer, they = "no snapshot", None
        kind, value = ref

        def action() -> str:
            if kind == "tag":
                self.table.rollback_to(tag=value)
            else:
                self.table.rollback_to(snap.id)
            return f"Rolled back to {ref_label(ref)}."
        effect = f"{newer}, the files only {they[0]} and tags on {they[1]}" if they else "nothing"
        self._ask(f"Roll back to {ref_label(ref)}? This deletes {effect}.", action)

    @property
    def question(self) -> str:
        """The confirmation asked for (plain text; empty when none is pending)."""
        return plain_text(self.confirm_message.value) if self._pending is not None else ""

    @property
    def message(self) -> str:
        """What the last action said: done, or why not (plain text)."""
        return plain_text(self.status.value)

    def _confirm(self) -> None:
        action, self._pending = self._pending, None
        hidden(self.confirm_box)
        if action is None:
            return
        try:
            message = action()
        except Exception as e:  # noqa: BLE001
            self.status.value = error_html(e)
            return
        self.refresh()
        self.status.value = ok_html(message)

    def _cancel(self) -> None:
        self._pending = None
        hidden(self.confirm_box)

    def __repr__(self) -> str:
        return f"SnapshotBrowser({self.table.identifier!r})"
