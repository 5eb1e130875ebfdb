"""The widgets in a real JupyterLab, in a real browser.

JupyterLab is served on 127.0.0.1 (a free port, a random token) from a temporary copy of the
tutorial notebooks; Debian's chromium, driven by Playwright, runs a tour notebook (the magic's
help, a cut result, a failing cell, a table's display, every widget, Tab completion) and checks
what is on screen. Screenshots are saved as artifacts (their paths are printed; set
PAIMON_LAB_ARTIFACTS to choose the directory).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SHARE = Path(__file__).resolve().parent.parent / "share" / "jupyter"   # holds labextensions/paimon-lab
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _requirements() -> str | None:
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    for module, package in [("playwright.sync_api", "playwright"), ("jupyterlab", "jupyterlab"),
                            ("ipywidgets", "ipywidgets"), ("plotly", "plotly"), ("anywidget", "anywidget")]:
        try:
            __import__(module)
        except ImportError:
            return f"the Python package {package} is not installed"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def artifacts() -> Path:
    root = os.environ.get("PAIMON_LAB_ARTIFACTS")
    path = Path(root) if root else Path(tempfile.mkdtemp(prefix="paimon-lab-browser-"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server over a copy of the notebooks: yields (base url, token)."""
    reason = _requirements()
    if reason:
        pytest.skip(f"browser test skipped: {reason}")
    root = tmp_path_factory.mktemp("lab")
    notebooks = root / "notebooks"
    shutil.copytree(NOTEBOOKS, notebooks, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    home = root / "home"
    for d in ("config", "data", "runtime", "workspaces", "settings"):
        (home / d).mkdir(parents=True)
    # no news prompt over the notebook
    for plugin, settings in [("apputils-extension/notification", '{"fetchNews": "false"}')]:
        path = home / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(settings)
    port, token = _free_port(), secrets.token_hex(16)
    # this checkout's lab extension first (an installed paimon-lab has it in {prefix}/share/jupyter)
    env = dict(os.environ, JUPYTER_PATH=os.pathsep.join([str(SHARE), os.environ.get("JUPYTER_PATH", "")]),
               JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"), JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
               PAIMON_LAB_PROGRESS="0")
    log = open(root / "jupyter.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.token={token}", f"--ServerApp.root_dir={notebooks}", "--ServerApp.port_retries=0",
         f"--LabApp.workspaces_dir={home / 'workspaces'}", "--LabApp.news_url=",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly"]
        + (["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        cwd=notebooks, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail("JupyterLab did not start:\n" + (root / "jupyter.log").read_text()[-3000:])
            time.sleep(0.5)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


# The notebook the tour runs: the magic's help, a cut result, SHOW CREATE, a table's display, each
# widget, a live tail that sees a later commit, a cell that fails at its third statement (last:
# Run All stops there) and an empty cell to type a completion into.
TOUR = [
    """%load_ext paimon_lab
import tempfile
import pyarrow as pa
from paimon_lab import Catalog
from paimon_lab.widgets import (DeletionVectorView, LiveTail, LsmView, ManifestExplorer, SnapshotBrowser,
                                SnapshotDiff)
wh = tempfile.mkdtemp(prefix="paimon-browser-")""",
    "%paimon --help",
    """catalog = Catalog(wh)
catalog.create_database("db")
schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
t = catalog.create_table("db.events", schema, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true"})
def rows(keys, tag):
    return pa.table({"k": keys, "v": [f"{tag}{k}" for k in keys], "dt": ["2024-05-01"] * len(keys)}, schema=schema)
t.write(rows(list(range(300)), "a"))
t.create_tag("v1")
t.compact(full=True)
t.write(rows(list(range(0, 300, 2)), "b"))   # 150 updates: a deletion vector of 150 rows
t""",
    """%%paimon
CREATE CATALOG lab WITH ('type' = 'paimon', 'warehouse' = {wh});
USE CATALOG lab;
SELECT k, v FROM db.events ORDER BY k""",
    "%paimon SHOW CREATE TABLE db.events",
    "SnapshotBrowser(t)",
    "SnapshotDiff(t, 'v1', t.latest_snapshot().id)",
    "LsmView(t, {'dt': '2024-05-01'}, 0)",
    "DeletionVectorView(t)",
    "ManifestExplorer(t)",
    "tail = LiveTail(t, poll_interval=0.2)\ntail",
    """t.write(rows([1000], "tail"))
assert tail.wait_for(t.latest_snapshot().id)
tail.stop()""",
    """%%paimon
USE CATALOG lab;
SELECT count(*) FROM db.events;
SELECT * FROM db.nope""",
    "",
]
HEADINGS = {5: "db.events", 6: "Diff of db.events", 7: "LSM tree of db.events", 8: "Deletion vectors of db.events",
            9: "Manifests of db.events", 10: "Live tail of db.events"}   # each widget's cell: its heading
COMPLETION_CELL = len(TOUR) - 1
MAX_WIDGET_HEIGHT = 1800   # px: a widget fits a notebook cell (tables and lists scroll or page inside it)


FIGURES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(p => [
    p.closest('.jp-Cell') ? [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell')].indexOf(p.closest('.jp-Cell')) : -1,
    (p.data || []).length, (p.data || []).reduce((n, t) => n + ((t.x || t.z || []).length), 0)])"""

DRAWN = """(i) => [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell')[i].querySelectorAll('.js-plotly-plot')]
    .every(p => (p.data || []).some(t => (t.x || t.z || []).length > 0))"""


def _put_notebook(base: str, token: str, name: str, cells: list[str]) -> None:
    """Save a notebook of code cells through JupyterLab's contents API."""
    import json

    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "source": c, "outputs": [],
                     "execution_count": None} for i, c in enumerate(cells)]}
    req = urllib.request.Request(f"{base}/api/contents/{name}?token={token}", method="PUT",
                                 data=json.dumps({"type": "notebook", "content": nb}).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req).close()


def test_notebook_tour_in_jupyterlab(lab, artifacts, tmp_path):
    """Run the tour notebook in JupyterLab and check what is on screen: the help, "showing N of M
    rows", SHOW CREATE line by line, the table's display, every widget drawn and fitting its cell
    (a pager clicked), the live tail updated from its thread, the failed cell's progress line,
    and Tab completing a table name in a %%paimon cell."""
    from playwright.sync_api import sync_playwright

    base, token = lab
    name = "browser_tour.ipynb"
    _put_notebook(base, token, name, TOUR)
    shots = []

    def shot(target, label):
        path = artifacts / f"{label}.png"
        if hasattr(target, "goto"):
            target.screenshot(path=str(path), full_page=True)
        else:
            target.scroll_into_view_if_needed()
            target.screenshot(path=str(path))
        shots.append(path)
        print(f"screenshot: {path}")

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        try:
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/tree/{name}?token={token}&reset")
            page.wait_for_function(f"() => document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell').length "
                                   f"== {len(TOUR)}", timeout=120_000)
            kernel_idle = page.locator(".jp-StatusBar-Widget", has_text=re.compile(r"\|\s*Idle"))
            kernel_idle.first.wait_for(timeout=120_000)

            page.locator(".lm-MenuBar-item", has_text="Run").first.click()
            page.locator(".lm-Menu-item:visible", has_text="Run All Cells").first.click()
            # every cell up to the failing one has run (Run All stops at its error)
            page.wait_for_function(
                """(n) => {
                    const prompts = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')]
                        .slice(0, n).map(e => e.textContent.trim());
                    return prompts.length === n && prompts.every(t => /^\\[\\d+\\]:$/.test(t));
                }""", arg=COMPLETION_CELL, timeout=240_000)
            kernel_idle.first.wait_for(timeout=120_000)
            cells = page.locator(".jp-NotebookPanel .jp-CodeCell")

            def output(i):
                """Cell i's outputs, scrolled into view (JupyterLab draws only the cells in view)."""
                cells.nth(i).scroll_into_view_if_needed()
                out = cells.nth(i).locator(".jp-Cell-outputArea")
                out.locator(".jp-OutputArea-output").first.wait_for(timeout=60_000)
                return out

            shot(page, "tour-01-run-all")

            def shows(i, text):
                """Cell i's outputs, once ``text`` is on screen in them."""
                out = output(i)
                out.get_by_text(text).first.wait_for(timeout=30_000)
                return out

            # text_content, not inner_text: Chromium gives '' for the inner text of a cell JupyterLab
            # is not painting at that moment (content-visibility), though its text is on the page
            help_text = shows(1, "--out NAME").text_content()
            assert "displaylimit" in help_text and "autopandas" in help_text
            sql = shows(3, "showing 10 of 300 rows")
            assert sql.locator("table tbody tr").count() == 10
            create = shows(4, "CREATE TABLE").locator("pre").text_content()
            assert "\n  `v` STRING,\n" in create and "\n  'deletion-vectors.enabled' = 'true'" in create
            shows(2, "Table db.events")

            for i, heading in HEADINGS.items():
                out = shows(i, heading)
                page.wait_for_function(DRAWN, arg=i, timeout=60_000)    # plotly draws a figure once in view
                assert out.locator(".jupyter-widgets").count() > 0
                height = out.bounding_box()["height"]
                assert height < MAX_WIDGET_HEIGHT, f"{heading}: {height:.0f} px tall"
                shot(out, f"tour-widget-{i:02d}")
                figures = [f for f in page.evaluate(FIGURES) if f[0] == i]
                assert i in (6, 9) or figures, f"{heading}: no figure"   # all but the diff and the manifests draw one
            # the deletion-vector view: its 50-row page of deleted rows scrolls inside a 320 px box; Next asks
            # the kernel for the next page
            dv = output(8)
            scrolls = dv.locator(".plab-scroll").evaluate_all(
                "els => els.map(e => [getComputedStyle(e).maxHeight, e.scrollHeight > e.clientHeight])")
            assert scrolls and all(h == "320px" for h, _ in scrolls) and any(s for _, s in scrolls)
            assert "deleted rows 1–50 of 150" in dv.text_content()
            dv.get_by_role("button", name="Next ▶").click()
            dv.get_by_text("deleted rows 51–100 of 150").wait_for(timeout=30_000)

            # the live tail's thread drew the commit made after it was shown
            output(10).get_by_text("tail1000").wait_for(timeout=30_000)

            error = shows(COMPLETION_CELL - 1, "statements 1-2 ran; statement 3 failed").text_content()
            assert "db.nope" in error
            body = page.inner_text("body")
            assert "Error displaying widget" not in body and "Traceback" not in body

            # Tab completes a table name in a %%paimon cell (one match: inserted; several: listed)
            editor = cells.nth(COMPLETION_CELL).locator(".cm-content")
            editor.click()
            page.keyboard.type("%%paimon\nSELECT * FROM db.ev")
            page.keyboard.press("Tab")
            page.wait_for_function("""(i) => {
                const cell = document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell')[i];
                const completer = document.querySelector('.jp-Completer:not(.lm-mod-hidden)');
                return cell.querySelector('.cm-content').innerText.includes('db.events')
                    || (completer !== null && completer.innerText.includes('events'));
            }""", arg=COMPLETION_CELL, timeout=30_000)
            shot(page, "tour-02-completion")
        except BaseException:
            try:
                print("figures (cell, traces, points):", page.evaluate(FIGURES))
                shot(page, "tour-99-failure")
            except Exception:  # noqa: BLE001 - the page may be gone
                pass
            raise
        finally:
            context.close()
    assert all(p.exists() and p.stat().st_size > 1000 for p in shots)


def test_paimon_cells_are_highlighted_as_sql(lab, artifacts, tmp_path):
    """paimon-lab's labextension: a %%paimon cell's SQL keywords take the editor's keyword colour
    (as Python's `import` does); the same word in a Python cell does not."""
    import json

    from playwright.sync_api import sync_playwright

    base, token = lab
    cells = ["%%paimon --out rows\nSELECT k FROM t WHERE k > 1", "SELECT = 1", "import os"]
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                          "language": "python"}},
          "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "source": c, "outputs": [],
                     "execution_count": None} for i, c in enumerate(cells)]}
    name = "sql_highlighting.ipynb"
    req = urllib.request.Request(f"{base}/api/contents/{name}?token={token}", method="PUT",
                                 data=json.dumps({"type": "notebook", "content": nb}).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req).close()
    color = """([cell, word]) => {
        const editor = document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .cm-content')[cell];
        const walker = document.createTreeWalker(editor, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            const i = n.textContent.indexOf(word);
            if (i >= 0 && n.textContent.trim() === word) return getComputedStyle(n.parentElement).color;
            if (i >= 0) return 'not a token: ' + n.textContent;
        }
        return null;
    }"""
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1200, "height": 800})
        try:
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/tree/{name}?token={token}&reset")
            page.wait_for_function("() => document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell').length == 3",
                                   timeout=120_000)
            # the kernel's language arrives and resets every cell's language; %%paimon's stays SQL
            page.locator(".jp-StatusBar-Widget", has_text=re.compile(r"\|\s*Idle")).first.wait_for(timeout=120_000)
            page.wait_for_function(f"() => ({color})([0, 'SELECT']) === ({color})([2, 'import'])", timeout=30_000)
            path = artifacts / "10-sql-highlighting.png"
            page.screenshot(path=str(path))
            print(f"screenshot: {path}")
            keyword = page.evaluate(color, [2, "import"])
            assert page.evaluate(color, [0, "SELECT"]) == keyword and page.evaluate(color, [0, "WHERE"]) == keyword
            assert page.evaluate(color, [1, "SELECT"]) != keyword   # a Python name
        finally:
            context.close()
