"""The ``--scale`` chart: median time and peak memory vs rows, per workload and system (plotly).

Writes ``OUT.html`` (self-contained: plotly.js is embedded, so it opens offline), ``OUT.points.json``
(the plotted numbers) and, where Playwright and Chromium are installed, ``OUT.png``.
"""

from __future__ import annotations

import json
import os

from . import systems
from .runner import Cell

MIB = 2 ** 20


def points(runs: list[tuple[int, dict[str, list[Cell]]]]) -> list[dict]:
    """One record per (rows, workload, system) that was measured."""
    out = []
    for rows, results in runs:
        for workload, cells in results.items():
            for c in cells:
                if c.measured and c.median_seconds is not None:
                    out.append({"rows": rows, "workload": workload, "system": c.system,
                                "label": systems.SYSTEMS[c.system].label, "seconds": c.median_seconds,
                                "cpu_seconds": c.median_cpu_seconds,
                                "peak_rss_mib": None if c.median_peak_rss is None else c.median_peak_rss / MIB,
                                "status": c.status})
    return out


def write(runs: list[tuple[int, dict[str, list[Cell]]]], out: str, machine: dict | None = None) -> str:
    """Write the chart files; returns a message saying what was written."""
    pts = points(runs)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".points.json", "w") as f:
        json.dump({"machine": machine, "points": pts}, f, indent=2)
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError as e:
        return f"Wrote {out}.points.json; no chart: plotly is not installed ({e}); pip install -r bench/requirements.txt"

    workloads = list(dict.fromkeys(p["workload"] for p in pts))
    labels = list(dict.fromkeys(p["label"] for p in pts))
    palette = ["#d62728", "#1f77b4", "#7f7f7f", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    color = {label: palette[i % len(palette)] for i, label in enumerate(labels)}
    titles = [t for w in workloads for t in (f"{w}: median time (s)", f"{w}: peak RSS (MiB)")]
    fig = make_subplots(rows=max(1, len(workloads)), cols=2, subplot_titles=titles,
                        horizontal_spacing=0.1, vertical_spacing=0.25 / max(1, len(workloads)))
    for r, w in enumerate(workloads, 1):
        for label in labels:
            sel = sorted((p for p in pts if p["workload"] == w and p["label"] == label), key=lambda p: p["rows"])
            if not sel:
                continue
            x = [p["rows"] for p in sel]
            for col, key in ((1, "seconds"), (2, "peak_rss_mib")):
                fig.add_trace(go.Scatter(x=x, y=[p[key] for p in sel], mode="lines+markers", name=label,
                                         legendgroup=label, showlegend=(r == 1 and col == 1),
                                         line={"color": color[label]}), row=r, col=col)
        for col in (1, 2):
            fig.update_xaxes(type="log", title_text="rows", row=r, col=col)
            fig.update_yaxes(type="log", row=r, col=col)
    sub = ""
    if machine:
        bits = [f"{machine['nproc']} CPUs" if machine.get("nproc") else None,
                f"{machine['ram_gib']} GiB" if machine.get("ram_gib") else None,
                f"Python {machine['python']}" if machine.get("python") else None,
                f"load average before {machine['load_average']}" if machine.get("load_average") else None]
        sub = "<br><sup>" + ", ".join(b for b in bits if b) + "</sup>"
    fig.update_layout(title=f"paimon-lab benchmark: time and peak memory vs rows{sub}",
                      height=320 * max(1, len(workloads)) + 120, width=1100, template="plotly_white")
    fig.write_html(out + ".html", include_plotlyjs=True)
    written = [out + ".points.json", out + ".html"]
    note = ""
    try:
        html_to_png(out + ".html", out + ".png", width=1100, height=320 * max(1, len(workloads)) + 120)
        written.append(out + ".png")
    except Exception as e:  # Playwright or a Chromium missing
        note = f" (no PNG: {type(e).__name__}: {str(e).strip().splitlines()[0][:120]})"
    return "Wrote " + ", ".join(written) + note


def html_to_png(html: str, png: str, *, width: int, height: int) -> None:
    """Screenshot a chart page with Playwright in Chromium (Debian's /usr/bin/chromium when present)
    rather than kaleido, whose last self-contained release needs a plotly older than ours."""
    import os
    from playwright.sync_api import sync_playwright

    exe = "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto("file://" + os.path.abspath(html))
            page.wait_for_selector(".main-svg", timeout=30_000)
            page.screenshot(path=png, full_page=True)
        finally:
            browser.close()
