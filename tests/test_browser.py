"""The widgets in a real JupyterLab, in a real browser.

JupyterLab is served on 127.0.0.1 (a free port, a random token) from a temporary copy of the
tutorial notebooks; Debian's chromium, driven by Playwright, opens the widget tutorial, runs all
cells and checks that ipywidgets and plotly figures rendered. Screenshots are saved as
artifacts (their paths are printed; set PAIMON_LAB_ARTIFACTS to choose the directory).
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
NOTEBOOK = "07_deletion_vectors_and_lsm.ipynb"
LABEXTENSION = Path(__file__).resolve().parent.parent / "paimon_lab" / "labextension"
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
    # this checkout's labextension first (an installed paimon-lab has it in share/jupyter/labextensions)
    shutil.copytree(LABEXTENSION, home / "data" / "labextensions" / "paimon-lab")
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_PATH=os.pathsep.join([str(home / "data"), os.environ.get("JUPYTER_PATH", "")]),
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


def test_widget_notebook_renders_in_jupyterlab(lab, artifacts, tmp_path):
    from playwright.sync_api import sync_playwright

    base, token = lab
    shots = []

    def shot(page, name):
        path = artifacts / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        shots.append(path)
        print(f"screenshot: {path}")

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000})
        try:
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}&reset")
            # the notebook is loaded and its kernel started
            page.wait_for_function("() => document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell').length >= 10",
                                   timeout=120_000)
            kernel_idle = page.locator(".jp-StatusBar-Widget", has_text=re.compile(r"\|\s*Idle"))
            kernel_idle.first.wait_for(timeout=120_000)
            shot(page, "01-opened")

            page.locator(".lm-MenuBar-item", has_text="Run").first.click()
            page.locator(".lm-Menu-item:visible", has_text="Run All Cells").first.click()
            # running: some prompt shows [*] ...
            page.wait_for_function(
                "() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]"
                ".some(e => e.textContent.includes('*'))", timeout=60_000)
            # ... until every code cell has run: all prompts numbered, the kernel idle again
            page.wait_for_function(
                """() => {
                    const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                        .map(e => e.textContent.trim());
                    return prompts.length > 0 && prompts.every(t => /^\\[\\d+\\]:$/.test(t));
                }""", timeout=300_000)
            kernel_idle.first.wait_for(timeout=120_000)
            page.wait_for_selector(".js-plotly-plot", state="attached", timeout=120_000)
            page.wait_for_timeout(2000)   # let plotly finish drawing
            shot(page, "02-run-all")

            widgets = page.locator(".jupyter-widgets").count()
            plots = page.locator(".js-plotly-plot").count()
            print(f"rendered: {widgets} .jupyter-widgets elements, {plots} .js-plotly-plot figures")
            # each figure, scrolled into view (plotly draws visible plots), as its own screenshot
            for i in range(plots):
                fig = page.locator(".js-plotly-plot").nth(i)
                fig.scroll_into_view_if_needed()
                page.wait_for_timeout(1500)
                path = artifacts / f"03-figure-{i}.png"
                fig.screenshot(path=str(path))
                shots.append(path)
                print(f"screenshot: {path}")
            assert widgets > 10
            assert plots >= 3            # two LSM views and the deletion-vector bitmap, each a plotly figure
            assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                                ).filter(has_text="Error").count() == 0
            body = page.inner_text("body")
            assert "Error displaying widget" not in body and "Traceback" not in body
            drawn = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
                .map(p => (p.data || []).reduce((n, t) => n + ((t.x || t.z || []).length), 0))""")
            print("data points per figure:", drawn)
            assert all(n > 0 for n in drawn)                  # every figure has its bars / heatmap data
            assert page.locator(".js-plotly-plot .bars .point path, .js-plotly-plot .hm image, "
                                ".js-plotly-plot .heatmaplayer image").count() > 0   # and drew them
            assert page.locator(".widget-slider, .widget-hslider").count() >= 1   # the snapshot slider
        except BaseException:
            try:
                shot(page, "99-failure")
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
