"""The README's Java compatibility table is generated (scripts/compat_table.py) from what the
Java-oracle suite recorded (tests/java/compat.py -> tests/java/compat.json)."""

from __future__ import annotations

import importlib.util
import json
import os
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name: str, *path: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, *path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


script = _load("compat_table", "scripts", "compat_table.py")
recorder = _load("java_compat", "tests", "java", "compat.py")


def test_readme_table_is_the_recorded_results():
    assert script.main(["--check"]) == 0
    with open(script.JSON_PATH, encoding="utf-8") as f:
        rows = json.load(f)
    assert {r["version"] for r in rows} >= {"Java 0.9.0"}
    assert {r["outcome"] for r in rows} <= set(script.CELL)


def test_render_and_check(tmp_path):
    rows = [{"table": "primary-key", "feature": "dv", "direction": "both", "version": "Java 0.9.0", "outcome": "passed"},
            {"table": "append", "feature": "types", "direction": "both", "version": "Java 1.0", "outcome": "failed"},
            {"table": "append", "feature": "types", "direction": "both", "version": "Java 0.9.0", "outcome": "xfailed"}]
    table = script.render(rows).splitlines()
    assert table[0] == "| table | feature | direction | Java 0.9.0 | Java 1.0 |"
    assert table[2:] == ["| append | types | both | no (known, see test) | **FAILS** |",
                         "| primary-key | dv | both | yes | - |"]
    js, readme = tmp_path / "c.json", tmp_path / "README.md"
    js.write_text(json.dumps(rows))
    readme.write_text(f"intro\n{script.BEGIN}\nstale\n{script.END}\nrest\n")
    args = ["--json", str(js), "--readme", str(readme)]
    assert script.main(args + ["--check"]) == 1
    assert script.main(args) == 0
    assert script.main(args + ["--check"]) == 0
    text = readme.read_text()
    assert text.startswith(f"intro\n{script.BEGIN}\n| table |") and text.endswith(f"{script.END}\nrest\n")


def test_recorder_keeps_the_worst_outcome_and_merges(tmp_path):
    path = tmp_path / "compat.json"
    path.write_text(json.dumps([{"table": "t", "feature": "f", "direction": "d", "version": "Java 1.0-SNAPSHOT",
                                 "outcome": "passed"}]))
    rec = recorder.Recorder(str(path))
    row = {"table": "t", "feature": "f", "direction": "d", "version": "Java 0.9.0"}
    for result in ("passed", "failed", "passed"):
        rec.add(row, result)
    rec.save()
    saved = json.loads(path.read_text())
    assert [(r["version"], r["outcome"]) for r in saved] == [("Java 0.9.0", "failed"), ("Java 1.0-SNAPSHOT", "passed")]
    xfail = SimpleNamespace(wasxfail="why", skipped=True, when="call", failed=False, outcome="skipped")
    setup = SimpleNamespace(skipped=False, when="setup", failed=False, outcome="passed")
    assert recorder.outcome(xfail) == "xfailed" and recorder.outcome(setup) is None
