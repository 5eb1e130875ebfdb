"""pyflakes' rules over the code (through ruff): undefined names, names used before assignment,
unused imports and variables. A shadowed name once made ``$files`` of a TIMESTAMP_LTZ-partitioned
table raise; this is the test that would have caught it."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def test_pyflakes_rules_pass():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "F", "--ignore", "F403,F405",
         "--output-format", "concise", "paimon_lab", "bench", "tests", "scripts"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
