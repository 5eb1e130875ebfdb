"""The house rules of ARCHITECTURE.md, checked: layers that point one way, no import cycles
(import-linter, counting every import, in functions and under TYPE_CHECKING too), imports inside
functions only where they defer an optional heavy dependency, and modules of a readable size."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "paimon_lab"

# In-function imports of our own modules that stay lazy, and why.
LAZY = {
    ("paimon_lab/__init__.py", "paimon_lab.magic"): "IPython loads the magics only on %load_ext",
    ("paimon_lab/magic.py", "paimon_lab"): "--engine spark imports PySpark on first use",
    ("paimon_lab/magic.py", "paimon_lab.spark.env"): "--engine spark imports PySpark on first use",
    ("paimon_lab/spark/env.py", "paimon_lab.spark.datasource"): "registering the data source imports PySpark",
}


def test_import_contracts_hold():
    """pyproject.toml's [tool.importlinter] contracts: the layers and no cycles."""
    exe = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "2 kept, 0 broken" in out.stdout, out.stdout[-2000:]


def _in_function_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom) and (sub.module or "").startswith("paimon_lab"):
                    found.add(sub.module)
                elif isinstance(sub, ast.ImportFrom) and sub.level:
                    found.add("." * sub.level + (sub.module or ""))
                elif isinstance(sub, ast.Import):
                    found.update(a.name for a in sub.names if a.name.startswith("paimon_lab"))
    return found


def test_own_modules_are_imported_at_module_level():
    stray = sorted((str(p.relative_to(ROOT)), m) for p in PACKAGE.rglob("*.py")
                   for m in _in_function_imports(p) if (str(p.relative_to(ROOT)), m) not in LAZY)
    assert not stray, f"import these at module level (or explain the laziness in LAZY): {stray}"


def test_modules_stay_readable():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    big = {p: n for p, n in sizes.items() if n > 800}
    assert not big, f"split these by concept: {big}"
