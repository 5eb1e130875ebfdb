"""The benchmark harness (bench/): ``python -m bench --quick`` is CI's smoke test of it.

The quick run executes every workload on every system and exits non-zero if any data read back
differs from what was written; the other tests check that this verification is not vacuous.
"""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))  # bench/ is not an installed package

from bench import data, worker  # noqa: E402


@pytest.mark.slow
def test_bench_quick_runs_and_verifies(tmp_path):
    out_json = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--json", str(out_json)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-5000:]}"
    assert "Verification:" in proc.stdout and "MISMATCH" not in proc.stdout
    doc = json.loads(out_json.read_text())
    assert doc["ok"] and doc["config"]["rows"] == 20_000
    assert {r["workload"] for r in doc["results"]} >= {"append", "read"}


def test_fingerprint_is_order_free_but_content_sensitive():
    table = data.generate(1000)
    expected = data.fingerprint(table)
    assert not expected.diff(data.fingerprint(table.take(pa.array(range(999, -1, -1)))))
    assert not expected.diff(data.fingerprint(table.cast(pa.schema(
        [pa.field(f.name, pa.large_string() if f.type == pa.string() else f.type) for f in table.schema]))))
    assert expected.diff(data.fingerprint(table.slice(1)))                      # a lost row
    assert expected.diff(data.fingerprint(pa.concat_tables([table, table.slice(0, 1)])))  # a duplicate
    values = table.column("value").to_pylist()
    changed = table.set_column(2, "value", pa.array([values[0] + 1e-9] + values[1:]))
    assert expected.diff(data.fingerprint(changed))                              # a changed value
    assert data.generate(1000).equals(table)                                     # fixed seed


def test_worker_reports_a_mismatch(tmp_path):
    """A read whose result differs from the expected fingerprint comes back as errors."""
    rows = data.generate(500)
    path = str(tmp_path / "data.arrow")
    data.save(rows, path)
    good = data.fingerprint(rows)
    spec = {"workload": "read", "system": "pyarrow", "rows": 500, "data_path": path, "verify": True,
            "expected": good.to_json(), "cell_dir": str(tmp_path / "cell"), "run_dir": str(tmp_path / "run")}
    worker._work({**spec, "phase": "setup"})
    assert worker._work({**spec, "phase": "run"})["errors"] == []
    bad = replace(good, checksum="0" * 16).to_json()
    errors = worker._work({**spec, "phase": "run", "expected": bad})["errors"]
    assert errors and "checksum" in errors[0]
