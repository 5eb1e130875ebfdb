"""Shared pieces of the notebook widgets: snapshot/tag choices, HTML tables, value formatting.

Everything here goes through the engine's public API (``Table`` and the format-core modules);
the widgets never read more rows than they show.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import pandas as pd
from paimon_lab.core.predicate import col
from paimon_lab.errors import ArgumentError, SnapshotNotExistError

try:  # the widgets are an optional extra: pip install 'paimon-lab[notebook]'
    import ipywidgets as W
    import plotly.graph_objects  # noqa: F401 - every widget module draws with it
    import anywidget  # noqa: F401 - plotly's FigureWidget is built on it
except ImportError as e:
    missing = e.name.split(".")[0] if e.name else str(e)
    raise ImportError(f"paimon_lab.widgets needs ipywidgets, plotly and anywidget ({missing} is missing): "
                      "pip install 'paimon-lab[notebook]'") from e

if TYPE_CHECKING:
    from paimon_lab.core.snapshot import Snapshot
    from paimon_lab.table import Table

# A reference to a point in a table's history: ("snapshot", id) or ("tag", name).
Ref = tuple

CSS = """<style>
.plab-table {border-collapse: collapse; font-size: 12px; font-family: var(--jp-code-font-family, monospace);}
.plab-table th, .plab-table td {border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top;}
.plab-table th {background: #f4f4f4;}
.plab-muted {color: #777;}
.plab-error {color: #b00020; font-weight: bold;}
.plab-ok {color: #1b7f3b;}
.plab-pre {font-size: 12px; max-height: 420px; overflow: auto; background: #fafafa; padding: 6px;}
.plab-scroll {max-height: 320px; overflow: auto; max-width: 100%;}
.plab-scroll-tall {max-height: 480px; overflow: auto; max-width: 100%;}
.plab-raw summary {color: #777; cursor: pointer;}
</style>"""


def esc(value: Any) -> str:
    return html.escape(str(value))


def fmt_time(millis: int | None) -> str:
    """Epoch millis as local wall-clock time, the way Paimon's system tables show commit times."""
    if millis is None:
        return ""
    return dt.datetime.fromtimestamp(millis / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def fmt_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bytes):
        return java_bytes(value)
    if isinstance(value, float) and value != value:
        return "NaN"
    return str(value)


def fmt_key(key: Any) -> str:
    """A primary key tuple as text: ``1`` for one column, ``(1, a)`` for several."""
    if key is None:
        return ""
    if isinstance(key, (tuple, list)):
        if len(key) == 1:
            return fmt_value(key[0])
        return "(" + ", ".join(fmt_value(v) for v in key) + ")"
    return fmt_value(key)


def fmt_partition(partition: dict | None) -> str:
    """``dt=2024-05-01/hh=08`` (Paimon's partition path form), or ``(unpartitioned)``."""
    if not partition:
        return "(unpartitioned)"
    return "/".join(f"{k}={fmt_value(v)}" for k, v in partition.items())


def java_bytes(data: bytes) -> str:
    """Bytes the way ``avro-tools tojson`` prints them (each byte one ISO-8859-1 character, JSON
    escapes such as ``\\u0000`` and ``\\b``): the form Paimon's docs show BinaryRows in."""
    return json.dumps(data.decode("latin-1"), ensure_ascii=False)


def html_table(df: pd.DataFrame, max_rows: int | None = None, empty: str = "(none)") -> str:
    """A small DataFrame as an HTML table (values escaped, nothing truncated but rows) in a box
    that scrolls when it is taller than a notebook cell should be."""
    if df is None or len(df) == 0:
        return f"<span class='plab-muted'>{esc(empty)}</span>"
    shown = df if max_rows is None else df.head(max_rows)
    head = "".join(f"<th>{esc(c)}</th>" for c in shown.columns)
    body = []
    for row in shown.itertuples(index=False):
        body.append("<tr>" + "".join(f"<td>{esc(fmt_cell(v))}</td>" for v in row) + "</tr>")
    more = ""
    if max_rows is not None and len(df) > max_rows:
        more = f"<div class='plab-muted'>… {len(df) - max_rows} more rows</div>"
    return (f"<div class='plab-scroll'><table class='plab-table'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>{more}")


def fmt_cell(v: Any) -> str:
    if isinstance(v, dict):
        return fmt_partition(v) if v else ""
    if isinstance(v, tuple):
        return fmt_key(v)
    try:
        if pd.isna(v):
            return "null"
    except (TypeError, ValueError):
        pass
    return fmt_value(v)


def kv_table(pairs: Iterable[tuple[str, Any]]) -> str:
    """Two-column HTML table of (name, value) pairs."""
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v) if not isinstance(v, Raw) else v.html}</td></tr>"
                   for k, v in pairs)
    return f"<table class='plab-table'>{rows}</table>"


class Raw:
    """Pre-rendered HTML inside :func:`kv_table`."""

    def __init__(self, html_text: str):
        self.html = html_text


def raw_bytes(data: bytes | None, label: str = "raw bytes") -> str:
    """A BinaryRow's bytes as Paimon's docs print them, folded away under its decoded value."""
    if not data:
        return ""
    return (f"<details class='plab-raw'><summary>{esc(label)} ({len(data)})</summary>"
            f"<code>{esc(java_bytes(data))}</code></details>")


class Pager:
    """Prev / Next buttons and a "rows 1–50 of 120" label over a list of ``size`` items shown
    ``page_size`` at a time; ``on_page(page)`` draws a page."""

    def __init__(self, page_size: int, on_page, noun: str = "rows"):
        self.page_size, self.on_page, self.noun = max(1, int(page_size)), on_page, noun
        self.page, self.size = 0, 0
        self.prev_button = W.Button(description="◀ Prev", layout=W.Layout(width="90px"))
        self.next_button = W.Button(description="Next ▶", layout=W.Layout(width="90px"))
        self.label = W.Label()
        self.box = W.HBox([self.prev_button, self.next_button, self.label])
        self.prev_button.on_click(lambda _: self.go(self.page - 1))
        self.next_button.on_click(lambda _: self.go(self.page + 1))

    @property
    def pages(self) -> int:
        return max(1, -(-self.size // self.page_size))

    def slice(self) -> slice:
        start = self.page * self.page_size
        return slice(start, min(start + self.page_size, self.size))

    def reset(self, size: int) -> None:
        """A new list of ``size`` items, shown from its first page."""
        self.size, self.page = int(size), 0
        self._label()
        self.on_page(0)

    def go(self, page: int) -> None:
        if 0 <= page < self.pages and page != self.page:
            self.page = page
            self._label()
            self.on_page(page)

    def _label(self) -> None:
        s = self.slice()
        self.label.value = (f"{self.noun} {s.start + 1}–{s.stop} of {self.size:,}" if self.size else "")
        self.prev_button.disabled = self.page == 0
        self.next_button.disabled = self.page >= self.pages - 1
        hidden(self.box, self.size <= self.page_size)


def pre(text: str) -> str:
    return f"<pre class='plab-pre'>{esc(text)}</pre>"


def plain_text(html_text: str) -> str:
    """The text a small piece of widget HTML shows (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]*>", "", html_text or ""))


def error_html(e: BaseException) -> str:
    return f"<span class='plab-error'>{esc(type(e).__name__)}: {esc(e)}</span>"


def ok_html(text: str) -> str:
    return f"<span class='plab-ok'>{esc(text)}</span>"


def snapshot_refs(table: "Table", max_snapshots: int | None = None) -> list[tuple[str, Ref]]:
    """Dropdown options for every snapshot still present (newest last) and every tag."""
    snaps = table.snapshots()
    if max_snapshots is not None and len(snaps) > max_snapshots:
        snaps = snaps[-max_snapshots:]
    options = [(f"snapshot {s.id} · {s.commit_kind}", ("snapshot", s.id)) for s in snaps]
    options += [(f"tag {t.name} → snapshot {t.snapshot.id}", ("tag", t.name)) for t in table.tags()]
    return options


def check_snapshot_id(snapshot_id: int | None, ids: Sequence[int]) -> None:
    """A snapshot id asked for by code must exist: it is never swapped for the latest."""
    if snapshot_id is not None and snapshot_id not in ids:
        raise SnapshotNotExistError(
            f"Snapshot {snapshot_id} does not exist (snapshots: {', '.join(map(str, ids)) or 'none'})")


def choose(selector: "W.Widget", value: Any, what: str) -> None:
    """Set ``selector`` to ``value``, or an :class:`ArgumentError` naming the choices."""
    values = [o[1] if isinstance(o, tuple) else o for o in selector.options]
    if value not in values:
        raise ArgumentError(f"No {what} {value!r}; the choices are {values}")
    selector.value = value


def resolve(table: "Table", ref: Ref) -> "Snapshot":
    kind, value = ref
    if kind == "tag":
        return table.snapshot(tag=value)
    return table.snapshot(snapshot_id=value)


def read_kwargs(ref: Ref) -> dict:
    """Keyword arguments of ``Table.to_arrow`` reading as of ``ref``."""
    kind, value = ref
    return {"tag": value} if kind == "tag" else {"snapshot_id": value}


def ref_label(ref: Ref) -> str:
    kind, value = ref
    return f"tag {value}" if kind == "tag" else f"snapshot {value}"


def partition_filter(table: "Table", partitions: Sequence[dict]):
    """A predicate selecting exactly the given partitions (None: no restriction)."""
    from functools import reduce

    if not table.partition_keys or not partitions:
        return None
    terms = [reduce(lambda a, b: a & b, [col(k).is_null() if v is None else col(k) == v for k, v in p.items()])
             for p in partitions]
    return reduce(lambda a, b: a | b, terms)


def sync_figure(fig) -> None:
    """Copy a plotly FigureWidget's current data and layout into its synced widget state.

    plotly does this only when the figure itself is displayed; a figure inside a container
    (VBox) would otherwise show its initial, empty state in views created later (a cell rendered
    after scrolling, a reopened notebook with saved widget state). Updates to live views still
    go through plotly's restyle/relayout messages."""
    from copy import deepcopy

    if hasattr(fig, "_widget_data") and hasattr(fig, "_layout_obj"):
        fig._widget_layout = deepcopy(fig._layout_obj._props)
        fig._widget_data = deepcopy(fig._data)


class FigureSlot:
    """Where a widget shows its plotly figure. ``show(fig)`` puts a *new* FigureWidget with
    ``fig``'s data and layout into ``box`` (and closes the old one).

    A FigureWidget inside a container does not reliably redraw from plotly's restyle/relayout
    messages (a view created while they are in flight, or after scrolling, shows the initial
    empty figure), so every redraw is a fresh widget whose synced state already holds the figure.
    """

    def __init__(self, height: int | None = None):
        self.box = W.VBox(layout=W.Layout(width="100%", min_height=f"{height}px" if height else None))
        self.figure = None

    def show(self, fig):
        import plotly.graph_objects as go

        new = go.FigureWidget(fig)
        sync_figure(new)
        old, self.figure = self.figure, new
        self.box.children = (new,)
        if old is not None:
            old.close()
        return new


def hidden(widget: "W.Widget", hide: bool = True) -> None:
    widget.layout.display = "none" if hide else None


def hashable_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with nested values (lists, dicts, arrays) turned into their text, for comparing."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object:
            sample = out[c].dropna()
            if len(sample) and not all(isinstance(v, (str, bytes, int, float, bool, dt.date, dt.datetime,
                                                          dt.time, dt.timedelta))
                                       or hasattr(v, "as_tuple") for v in sample.head(50)):
                out[c] = out[c].map(lambda v: None if v is None else repr(v))
    return out


__all__ = ["W", "CSS", "Raw", "Ref", "esc", "fmt_time", "fmt_value", "fmt_key", "fmt_partition", "java_bytes",
           "html_table", "kv_table", "pre", "raw_bytes", "Pager", "error_html", "ok_html", "plain_text", "snapshot_refs", "resolve", "read_kwargs",
           "ref_label", "partition_filter", "hidden", "sync_figure", "FigureSlot", "hashable_frame"]
