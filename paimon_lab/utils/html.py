"""Small, self-contained HTML for the notebook reprs of tables, snapshots, schemas and plans.

No scripts and no stylesheets: inline styles only, every value escaped, long lists in a
scrolling box, so an output stays readable in JupyterLab, nbviewer and exported HTML.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

MAX_HEIGHT = 360          # px: taller tables scroll inside their box
MAX_ROWS = 200            # rows drawn at most; the rest are counted

# Cells take the notebook's own table style (JupyterLab's, as for DataFrames); only borders are
# asked for, for renderers without one.
_TABLE = "border-collapse:collapse;font-size:12px"


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def fmt_bytes(n: int | None) -> str:
    """``1.5 MiB``-style sizes (exact bytes below 1 KiB)."""
    if n is None:
        return "?"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def title(text: str, note: str = "") -> str:
    """A bold heading line with an optional muted note."""
    muted = f" <span style='color:#777'>{esc(note)}</span>" if note else ""
    return f"<div style='margin:2px 0 4px 0'><b>{esc(text)}</b>{muted}</div>"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], *, total: int | None = None,
          max_rows: int = MAX_ROWS, empty: str = "(none)") -> str:
    """An HTML table of escaped cells in a box that scrolls past ``MAX_HEIGHT`` px. At most
    ``max_rows`` rows are drawn; ``total`` (default: the rows given) is what a note counts."""
    body, n = [], 0
    for row in rows:
        n += 1
        if n <= max_rows:
            body.append("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>")
    total = n if total is None else total
    if not total:
        return f"<div style='color:#777'>{esc(empty)}</div>"
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    more = (f"<div style='color:#777'>showing {len(body):,} of {total:,} rows</div>"
            if len(body) < total else "")
    return (f"<div style='max-height:{MAX_HEIGHT}px;overflow:auto;display:inline-block;max-width:100%'>"
            f"<table border='1' style='{_TABLE}'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            f"</div>{more}")


def pairs(items: Iterable[tuple[str, Any]]) -> str:
    """A two-column table of (name, value) pairs."""
    rows = "".join(f"<tr><th style='text-align:left'>{esc(k)}</th><td style='text-align:left'>{esc(v)}</td></tr>"
                   for k, v in items)
    return f"<table border='1' style='{_TABLE}'>{rows}</table>"


def details(summary: str, body_html: str, *, open_: bool = False) -> str:
    """A collapsible section (``<details>``, no script needed)."""
    return (f"<details{' open' if open_ else ''}><summary>{esc(summary)}</summary>"
            f"<div style='margin:4px 0 4px 12px'>{body_html}</div></details>")


def pre(text: str) -> str:
    return (f"<pre style='font-size:12px;max-height:{MAX_HEIGHT}px;overflow:auto;margin:2px 0;"
            f"white-space:pre'>{esc(text)}</pre>")


def options_block(options: dict[str, str]) -> str:
    """Table options one per line, as ``'key' = 'value'``, sorted by key."""
    if not options:
        return "<div style='color:#777'>(no options)</div>"
    return pre("\n".join(f"'{k}' = '{v}'" for k, v in sorted(options.items())))


def box(*parts: str) -> str:
    return "<div>" + "".join(parts) + "</div>"


class Text(str):
    """Text that notebooks show as it is, line breaks kept (a ``<pre>`` block; plain text without
    quotes), e.g. the CREATE TABLE statement of ``SHOW CREATE TABLE``."""

    def _repr_html_(self) -> str:
        return pre(self)

    def _repr_pretty_(self, p, cycle: bool) -> None:
        p.text(str(self))

