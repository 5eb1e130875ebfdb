"""The benchmark harness (bench/): ``python -m bench --quick`` is CI's smoke test of it.

The quick run executes every workload on every system and exits non-zero if any data read back
differs from what was written; the other tests check that this verification is not vacuous.
"""

import json
import os
import re
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
        "planning", "planning_cold", "planning_first", "memory_bound", "spark", "pk_compact_fresh", "point_filter_sql",
        "count", "count_sql", "min_max", "min_max_sql",
        "wide_cdc", "wide_cdc_compacted"}
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
    # pypaimon-rust (native and SQL) takes part where it is installed; Java Paimon only when named
    rust = [r for r in doc["results"] if r["system"] in ("pypaimon_rust", "pypaimon_rust_sql")]
    assert all(r["status"] in ("ok", "n/a", "skipped") for r in rust), [(r["workload"], r["system"], r["reason"])
                                                                        for r in rust if r["status"] != "ok"]
    assert not [r for r in doc["results"] if r["system"] == "java_paimon"]
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


def test_wide_cdc_decode_checks_that_every_row_version_was_decoded():
    """wide_cdc_decode's floor read must return every row of the files (their footers' count)
    in the columns a merge reads; paimon-lab's merge read is checked as in wide_cdc."""
    from types import SimpleNamespace

    from bench.workloads import Context
    from bench.workloads import wide_cdc as w

    ctx = Context(rows=2000, data_path="", expected=None, cell_dir="", run_dir="")
    workload = w.WideCdcDecode()
    floor = SimpleNamespace(name="pyarrow")

    def read(n, columns=w.MERGE_COLUMNS):
        return pa.table({c: pa.nulls(n) for c in columns})

    assert not workload.check(ctx, floor, None, [(read(n), n) for n in (5, 6, 7, 8)])
    problems = workload.check(ctx, floor, None, [(read(5), 5), (read(5), 6), (read(7), 7), (read(8), 8)])
    assert len(problems) == 1 and problems[0].startswith("cdc2")
    assert workload.check(ctx, floor, None, [(read(5, w.MERGE_COLUMNS[:-1]), 5)] + [(read(n), n) for n in (6, 7, 8)])
    assert workload.check(ctx, floor, None, [(read(n), n) for n in (5, 6, 7)])      # a lap missing
    states = w.states(2000)
    assert not workload.check(ctx, SimpleNamespace(name="paimon_lab"), None, states[1:])
    assert workload.check(ctx, SimpleNamespace(name="paimon_lab"), None, [states[1]] * 4)


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


def test_step_targets_compare_one_lap_of_two_systems():
    from bench import report
    from bench.runner import Cell, Run
    from bench.workloads.spark import Spark

    def cell(system, reads):
        return Cell("spark", system, runs=[Run("ok", seconds=10.0, laps={"write": 5.0, "read": r}) for r in reads])

    for reads, outcome in (([1.4, 1.5, 9.0], "PASS"), ([1.6, 1.7, 1.0], "FAIL")):
        found = report.verdicts({"spark": Spark()}, {"spark": [cell("paimon_lab", reads), cell("spark_parquet", [1.0] * 3)]})
        step = [v for v in found if v.kind == "step"]
        assert [(v.step, v.peer, v.limit, v.outcome) for v in step] == [("read", "spark_parquet", 1.5, outcome)]
        assert "read vs Spark Parquet's" in step[0].describe()


def test_every_timed_run_is_verified(tmp_path):
    """Not only the warm-up: each timed run's output is fingerprinted (after its clock stopped)."""
    from bench.runner import Config, run_workload
    from bench.workloads import get

    rows = data.generate(500)
    path = str(tmp_path / "data.arrow")
    data.save(rows, path)
    config = Config(500, 2, True, str(tmp_path / "work"), 300)
    cells = run_workload(get("read"), ["pyarrow"], config, path, data.fingerprint(rows), lambda m: None)
    assert cells[0].status == "ok", cells[0].reason
    assert len(cells[0].runs) == 2 and all(r.fingerprints for r in [cells[0].warmup, *cells[0].runs])
    assert all(data.Fingerprint.from_json(fp) == data.fingerprint(rows)
               for r in cells[0].runs for fp in r.fingerprints.values())


def test_every_workload_verifies_its_runs():
    """Every registered workload fingerprints what its runs produced (the base verify returns
    nothing, which the worker reports as an error)."""
    from bench.workloads import Workload, all_workloads

    lazy = [name for name, w in all_workloads().items() if type(w).verify is Workload.verify]
    assert lazy == []


def test_streamed_data_set_matches_its_batches(monkeypatch, tmp_path):
    """Above BATCH_ROWS the data set is made, saved and fingerprinted batch by batch: the file holds
    exactly the generated batches, ids stay unique, and batch 0 is the unbatched data set."""
    monkeypatch.setattr(data, "BATCH_ROWS", 1000)
    path = str(tmp_path / "data.arrow")
    fp = data.write_data_set(2500, path)
    batches = list(data.read_batches(path))
    assert [b.num_rows for b in batches] == [1000, 1000, 500]
    whole = pa.concat_tables(batches)
    assert fp == data.fingerprint(whole) and fp.rows == 2500
    assert len(set(whole.column("id").to_pylist())) == 2500
    assert batches[0].equals(data.generate(1000))
    acc = data.Accumulator()
    for b in reversed(batches):  # any order, any piece sizes
        acc.add(b)
    assert acc.result() == fp


def test_paused_time_is_left_out_of_a_lap():
    import time

    from bench.workloads import Context

    ctx = Context(rows=1, data_path="", expected=None, cell_dir="", run_dir="")
    with ctx.lap("step"):
        for _ in ctx.paused_iter(time.sleep(0.05) or i for i in range(2)):
            pass
    assert 0 <= ctx.laps["step"] < ctx.paused_seconds and ctx.paused_seconds >= 0.1


def test_scale_targets_check_flatness_and_peak():
    from bench import report
    from bench.runner import Cell, Run
    from bench.workloads import get

    def results(rows, seconds, peak):
        return {"pk_read": [Cell("pk_read", "paimon_lab", runs=[Run("ok", seconds, peak_rss=peak)])]}

    flat = report.scale_verdicts({"pk_read": get("pk_read")}, [(10, results(10, 1.0, 2 ** 20)),
                                                                (100, results(100, 12.0, 2 ** 30))])
    assert [(v.kind, v.outcome) for v in flat] == [("flat", "PASS"), ("scale_peak", "PASS")]
    steep = report.scale_verdicts({"pk_read": get("pk_read")}, [(10, results(10, 1.0, 2 ** 20)),
                                                                 (100, results(100, 16.0, 3 * 2 ** 30))])
    assert [(v.kind, v.outcome) for v in steep] == [("flat", "FAIL"), ("scale_peak", "FAIL")]
    assert round(steep[0].ratio, 2) == 1.6


@pytest.mark.slow
def test_streamed_pk_scale_run(tmp_path):
    """The PK workloads above BATCH_ROWS (lowered here) stream their input through one writer and
    read back partition by partition; every run verifies, and --strict-targets checks the curve."""
    env = {**os.environ, "PAIMON_BENCH_BATCH_ROWS": "2000"}
    out = tmp_path / "scale.json"
    proc = subprocess.run([sys.executable, "-m", "bench", "--scale", "2000,6000", "--only", "pk_upsert", "pk_read",
                           "pk_compact", "--systems", "paimon_lab", "--repeat", "1", "--json", str(out),
                           "--chart", str(tmp_path / "scale")], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=900, env=env)
    assert proc.returncode in (0, 3), proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    big = {r["workload"]: r for r in doc["sizes"][1]["results"]}
    assert all(r["status"] == "ok" and r["warmup"]["fingerprints"] and r["runs"][0]["fingerprints"]
               for r in big.values()), big
    assert {v["kind"] for v in doc["scale_targets"]} == {"flat", "scale_peak"}
    assert "Scale targets" in proc.stdout


def _headline_doc(rows=1000):
    from bench import machine

    info = {**machine.describe(), "load_average_after": [1.0, 1.0, 1.0]}

    def cell(workload, system, seconds, **extra):
        return {"workload": workload, "system": system, "status": "ok", "reason": "", "median_seconds": seconds,
                "median_cpu_seconds": seconds * 2 / 3, "median_laps": {}, "median_peak_rss": 2 ** 30, **extra}

    group1 = {"machine": info, "results": [cell("append", "paimon_lab", 0.3), cell("append", "pyarrow", 0.6)]}
    group2 = {"machine": info, "results": [cell("pk_upsert", "paimon_lab", 0.6), cell("pk_compact", "paimon_lab", 0.9),
                                           cell("memory_bound", "paimon_lab", 8.0)]}
    from bench import systems

    return {"commit": "abc1234-dirty", "date": "2026-11-27 07:00 UTC", "rows": rows, "repeat": 3,
            "floor": systems.floor_settings_text(),
            "groups": [{"workloads": ["append"], "excluded": [], "why": "", "exit_code": 0, "result": group1},
                       {"workloads": ["pk_upsert"], "excluded": ["pypaimon"], "why": "pypaimon left out", "exit_code": 0,
                        "result": group2}]}


HEADLINE_LINE = re.compile(r"Measured by `python -m bench --headline` at commit `[0-9a-f]{7,}(-dirty)?` on "
                           r"\d{4}-\d\d-\d\d \d\d:\d\d UTC: [\d,]+ rows, .*load average")


def _check_block(block):
    from bench import headline

    lines = block.splitlines()
    assert lines[0] == headline.START and lines[-1] == headline.END
    assert HEADLINE_LINE.search(lines[1]), lines[1]
    assert "pyarrow floor" in lines[1]
    table = [line for line in lines if line.startswith("|")]
    assert table[0].startswith("| workload | paimon-lab |") and table[1] == "|---|---|---|"
    assert len(table) >= 3 and all(line.count("|") == 4 for line in table)
    return table


def test_headline_block_renders_and_replaces(tmp_path):
    from bench import headline

    block = headline.render(_headline_doc())
    table = _check_block(block)
    assert "| append ingest | 0.30 s (cpu 0.20 s) | 0.50x pyarrow (floor) (cpu 0.50x) |" in table
    assert any("1.50x one upsert commit" in line for line in table)
    assert "pypaimon left out." in block
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{headline.START}\nold\n{headline.END}\n\nafter\n")
    headline.rewrite_readme(str(readme), block)
    assert readme.read_text() == f"# x\n\n{block}\n\nafter\n"
    assert headline.block_of(str(readme)) == block


def test_readme_headline_block_is_generated():
    """README.md's Benchmarks table is the output of `python -m bench --headline` (well-formed,
    naming the commit, date and load it was measured at), not hand-edited figures."""
    from bench import headline

    block = headline.block_of(str(REPO_ROOT / "README.md"))
    assert block is not None, "README.md has no (or more than one) headline block"
    _check_block(block)
    doc = json.loads((REPO_ROOT / headline.DEFAULT_JSON).read_text())
    assert block == headline.render(doc)  # the committed figures are the committed document's
