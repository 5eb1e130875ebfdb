"""The benchmark's Java Paimon and pypaimon-rust peers (bench/javapaimon.py, bench/pypaimonrust.py)
and the harness's support for a system timed inside its own runtime (``System.inside``)."""

import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))  # bench/ is not an installed package

from bench import cli, data, systems, worker  # noqa: E402
from bench.inside import Inside  # noqa: E402
from bench.systems import Cond, filter_arrow  # noqa: E402

REPORTED = {"seconds": 1.5, "cpu_seconds": 0.25, "rss_before": 3 << 20, "peak_rss": 9 << 20,
            "peak_is_op_only": True, "heap_peak": 5 << 20}


class InsideFloor(systems.PyArrowFloor):
    """The pyarrow floor, but every read reports fixed figures as if measured in another runtime."""

    name = "inside_floor"

    def __init__(self):
        self._inside = None

    def inside(self):
        self._inside = Inside()
        return self._inside

    def _report(self):
        if self._inside is not None:
            self._inside.add(REPORTED)

    def read(self, table):
        self._report()
        return super().read(table)

    def read_filtered(self, table, conds):
        self._report()
        return super().read_filtered(table, conds)


def _spec(tmp_path, workload, rows=400):
    table = data.generate(rows)
    os.makedirs(tmp_path, exist_ok=True)
    path = str(tmp_path / "data.arrow")
    data.save(table, path)
    return {"workload": workload, "system": InsideFloor.name, "rows": rows, "data_path": path, "verify": True,
            "expected": data.fingerprint(table).to_json(), "cell_dir": str(tmp_path / "cell"),
            "run_dir": str(tmp_path / "run"), "shared_dir": str(tmp_path / "shared"), "phase": "run",
            "setup_first": True}


def test_a_system_timed_inside_its_runtime_reports_its_own_figures(tmp_path, monkeypatch):
    """The worker reports what the system measured inside (time, CPU, memory), not its own clocks,
    and multi-step runs take their laps from that clock too."""
    monkeypatch.setitem(systems.SYSTEMS, InsideFloor.name, InsideFloor)
    out = worker._work(_spec(tmp_path, "read"))
    assert out["errors"] == []
    assert (out["seconds"], out["cpu_seconds"]) == (1.5, 0.25)
    assert (out["rss_before"], out["peak_rss"], out["inside"]["heap_peak"]) == (3 << 20, 9 << 20, 5 << 20)
    assert out["inside"]["worker_seconds"] != 1.5

    out = worker._work(_spec(tmp_path / "f", "point_filter"))
    assert out["errors"] == []
    assert len(out["laps"]) == 6 and set(out["laps"].values()) == {1.5}
    assert out["seconds"] == 9.0 and out["cpu_seconds"] == 1.5  # the sum of the 6 inside-timed scans


def test_inside_adds_up_operations():
    inside = Inside()
    inside.add(REPORTED)
    inside.add({**REPORTED, "rss_before": 1, "peak_rss": 4 << 20, "heap_peak": 8 << 20, "peak_is_op_only": False})
    assert (inside.seconds, inside.cpu_seconds) == (3.0, 0.5)
    assert (inside.rss_before, inside.peak_rss, inside.heap_peak) == (3 << 20, 9 << 20, 8 << 20)
    assert inside.peak_is_op_only is False


def test_quick_leaves_java_out_unless_named():
    names, left_out = cli.select_systems(None, quick=True)
    assert "java_paimon" in left_out and "java_paimon" not in names and "pypaimon_rust" in names
    assert cli.select_systems(None, quick=False) == (list(systems.SYSTEMS), [])
    assert cli.select_systems(["paimon_lab", "java_paimon"], quick=True) == (["paimon_lab", "java_paimon"], [])


def test_readers_of_java_tables_leave_out_pypaimon(monkeypatch):
    """pypaimon 2.1.0 cannot read Java Paimon 0.9's manifests: it does not verify Java's tables."""
    from bench.javapaimon import JavaPaimon

    monkeypatch.setattr(systems.PyPaimon, "available", classmethod(lambda cls: None))
    assert "pypaimon" in systems.readers_of(systems.PaimonLab())
    assert "pypaimon" not in systems.readers_of(JavaPaimon()) and "paimon_lab" in systems.readers_of(JavaPaimon())


def test_pypaimon_rust_reads_and_filters_a_paimon_lab_table(tmp_path):
    pytest.importorskip("pypaimon_rust")
    from bench.pypaimonrust import PyPaimonRust, PyPaimonRustSql, predicate

    assert predicate([Cond("id", "=", 3)]) == {"method": "equal", "field": "id", "literals": [3]}
    rows = data.generate(3000)
    lab = systems.PaimonLab()
    lab.upsert(lab.create_pk_table(str(tmp_path), data.SCHEMA, data.PARTITION_KEYS), rows)
    conds = [Cond("id", "between", (100, 400)), Cond("dt", "=", "2024-01-03")]
    model = data.fingerprint(rows.filter(filter_arrow(conds)))
    for system in (PyPaimonRust(), PyPaimonRustSql()):
        table = system.open(str(tmp_path))
        assert not data.fingerprint(rows).diff(data.fingerprint_like(system.read(table), data.fingerprint(rows)))
        assert not model.diff(data.fingerprint_like(system.read_filtered(table, conds), model))
        assert system.count(table, conds) == model.rows and system.count(table) == rows.num_rows


@pytest.mark.java
def test_java_paimon_writes_reads_filters_and_compacts(tmp_path):
    """Java Paimon through the benchmark's driver: its tables read the same in paimon-lab, and its
    reads (rows out of the JVM as Arrow) match the model; every timed call is measured inside."""
    from bench.javapaimon import JavaPaimon, unavailable

    if unavailable():
        pytest.skip(unavailable())
    rows = data.generate(2000)
    later = rows.set_column(2, "value", pc.multiply(rows.column("value"), 2.0))
    java = JavaPaimon()
    inside = java.inside()
    wh = str(tmp_path / "pk")
    table = java.create_pk_table(wh, data.SCHEMA, data.PARTITION_KEYS)
    java.upsert(table, rows)
    java.upsert(table, later)
    expected = data.fingerprint(later)
    assert not expected.diff(data.fingerprint_like(java.read(table), expected))
    conds = [Cond("id", "between", (10, 500))]
    model = data.fingerprint(later.filter(filter_arrow(conds)))
    assert not model.diff(data.fingerprint_like(java.read_filtered(table, conds), model))
    assert java.count(table, [Cond("id", "=", 7)]) == 1
    java.compact(table)
    lab = systems.PaimonLab()
    assert not expected.diff(data.fingerprint_like(lab.read(lab.open(wh)), expected))
    assert inside.seconds > 0 and inside.peak_rss and inside.heap_peak  # every call reported its figures
    append = java.create_append_table(str(tmp_path / "append"), data.SCHEMA, data.PARTITION_KEYS)
    java.write(append, pa.Table.from_batches(rows.to_batches(max_chunksize=700)))  # several IPC batches
    assert not data.fingerprint(rows).diff(data.fingerprint_like(java.read(append), data.fingerprint(rows)))
    assert os.listdir(java._tmp) == []  # row files in and out of the JVM are removed
