"""The benchmark harness (bench/): ``python -m bench --quick`` is CI's smoke test of it.

The quick run executes every workload on every system and exits non-zero if any data read back
differs from what was written; the other tests check that this verification is not vacuous.
"""

import json
import os
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
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-5000:]}"
    assert "Verification:" in proc.stdout and "MISMATCH" not in proc.stdout
    doc = json.loads(out_json.read_text())
    assert doc["ok"] and doc["config"]["rows"] == 20_000
    assert {r["workload"] for r in doc["results"]} >= {
        "append", "read", "pk_upsert", "pk_read", "pk_compact", "point_filter", "pk_delete", "time_travel",
        "planning", "memory_bound", "spark", "pk_compact_fresh", "point_filter_sql", "wide_cdc",
        "wide_cdc_compacted"}
    assert "planning_large" not in {r["workload"] for r in doc["results"]}  # opt-in: not in CI's smoke run
    lab = {r["workload"]: r for r in doc["results"] if r["system"] == "paimon_lab"}
    # The Spark workload is n/a (with the reason) where there is no Java or PySpark >= 4.1.
    from bench import sparkenv

    no_spark = sparkenv.unavailable()
    assert all(r["status"] == "ok" for w, r in lab.items() if not (w == "spark" and no_spark))
    assert set(lab["pk_upsert"]["median_laps"]) == {"commit1", "commit2", "commit3"}
    spark = [r for r in doc["results"] if r["workload"] == "spark"]
    assert {r["system"] for r in spark} == {"paimon_lab", "spark_parquet"}
    if no_spark:
        assert all(r["status"] == "n/a" and r["reason"] == no_spark for r in spark)
    else:
        assert all(r["status"] == "ok" for r in spark)
        assert set(lab["spark"]["median_laps"]) == {"write", "pk_write", "read"}
    # pypaimon runs in its own venv (.venv-pypaimon or $PAIMON_LAB_PYPAIMON_PYTHON); CI builds it,
    # so there it must take part (each of its cells measured, or n/a for an operation it lacks)
    py = [r for r in doc["results"] if r["system"] == "pypaimon"]
    if os.environ.get("CI"):
        assert py and all(r["status"] in ("ok", "n/a") for r in py), [(r["workload"], r["status"], r["reason"])
                                                                      for r in py if r["status"] != "ok"]
    # Spark Parquet takes part in the Spark workload only
    assert not [r for r in doc["results"] if r["system"] == "spark_parquet" and r["workload"] != "spark"]
    # the saved run can be reported again
    again = subprocess.run([sys.executable, "-m", "bench", "--report", str(out_json)], cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "pk_upsert" in again.stdout, again.stderr[-3000:]


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


def test_wide_cdc_checks_every_read_against_its_state():
    """wide_cdc's check() compares each lap's read with the model of the state it read: a read of
    an older state, or one with a changed value, is reported."""
    from bench.workloads import Context
    from bench.workloads import wide_cdc as w

    ctx = Context(rows=2000, data_path="", expected=None, cell_dir="", run_dir="")
    states = w.states(2000)
    workload = w.WideCdc()
    assert states[1].num_rows < states[-1].num_rows                                 # inserts
    assert not workload.check(ctx, None, None, states[1:])
    reordered = [s.take(pa.array(range(s.num_rows - 1, -1, -1))) for s in states[1:]]
    assert not workload.check(ctx, None, None, reordered)                          # any row order
    assert workload.check(ctx, None, None, [states[1], states[1], states[3], states[4]])  # stale read
    amounts = states[4].column("amount_0").to_pylist()
    changed = states[4].set_column(1, "amount_0", pa.array(amounts[:-1] + [None], w.DEC))
    problems = workload.check(ctx, None, None, states[1:4] + [changed])
    assert problems and problems[0].startswith("cdc4")
    assert workload.check(ctx, None, None, states[1:4])                             # a lap missing


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


def test_filters_render_the_same_condition_for_every_system():
    from bench.systems import Cond, filter_arrow, filter_sql

    conds = [Cond("id", "between", (5, 9)), Cond("dt", "=", "2024-01-02")]
    assert filter_sql(conds) == "id BETWEEN 5 AND 9 AND dt = '2024-01-02'"
    rows = data.generate(1000)
    model = rows.filter(filter_arrow(conds))
    assert all(5 <= r["id"] <= 9 and r["dt"] == "2024-01-02" for r in model.to_pylist())


def test_fingerprint_pieces_equals_whole():
    rows = data.generate(3000)
    assert data.fingerprint_pieces([rows.slice(0, 1000), rows.slice(1000)]) == data.fingerprint(rows)


def test_scale_chart_is_written(tmp_path):
    pytest.importorskip("plotly")
    from bench import chart
    from bench.runner import Cell, Run

    def cells(rows):
        return {"append": [Cell("append", "paimon_lab", runs=[Run("ok", rows / 1e6, peak_rss=2 ** 27)]),
                           Cell("append", "pyarrow", runs=[Run("ok", rows / 2e6, peak_rss=2 ** 26)])]}

    out = str(tmp_path / "scale")
    message = chart.write([(1000, cells(1000)), (4000, cells(4000))], out, {"nproc": 2})
    assert (tmp_path / "scale.html").stat().st_size > 10_000 and (tmp_path / "scale.points.json").exists(), message


def test_an_unavailable_workload_is_na_without_a_process(tmp_path):
    """A workload that cannot run here (the Spark workload without Java) reports every cell as n/a
    with the reason, and dedicated systems (Spark Parquet) stay out of workloads not naming them."""
    from bench.runner import Config, run_workload
    from bench.workloads import Workload

    class NoJava(Workload):
        name = "no_java"
        systems = ("paimon_lab", "spark_parquet")

        def unavailable(self):
            return "Spark needs Java (test)"

        def run(self, ctx, system, state):  # pragma: no cover - must not be reached
            raise AssertionError("ran")

    class Everyone(Workload):
        name = "everyone"
        requires = ("compact",)  # n/a for most systems without a process; nothing is spawned here

    config = Config(10, 1, True, str(tmp_path), 60)
    fp = data.fingerprint(data.generate(10))
    cells = run_workload(NoJava(), ["paimon_lab", "pyarrow", "spark_parquet"], config, "", fp, lambda m: None)
    assert [(c.system, c.status, c.reason) for c in cells] == [
        ("paimon_lab", "n/a", "Spark needs Java (test)"), ("spark_parquet", "n/a", "Spark needs Java (test)")]
    cells = run_workload(Everyone(), ["pyarrow", "spark_parquet"], config, "", fp, lambda m: None)
    assert [c.system for c in cells] == ["pyarrow"] and cells[0].status == "n/a"
