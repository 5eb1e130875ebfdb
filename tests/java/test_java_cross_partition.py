"""Java writes a cross-partition-update table (primary key without the partition key, dynamic
bucket), paimon-lab reads and writes it, and Java writes on top of paimon-lab's files.

The oracle's ``write`` cannot route such tables, so Java writes through our own small program,
``xpart/CrossPartitionWrite.java``: Java Paimon's ``GlobalIndexAssigner`` (a RocksDB index key ->
(partition, bucket), bootstrapped from the table's rows by ``IndexBootstrap``, as Java's Flink and
Spark sinks do) assigns each row its bucket and retracts a moving key's old row (a ``-D`` in its old
partition). RocksDB's Java binding is not in the oracle's bundles: pyspark's ``rocksdbjni`` jar is
used. The chain, one table:

1. Java writes two commits (an empty table: the assigner's bulk-load path, keys moving within the
   batch; then keys moving partition, updates in place, deletes, new keys): it retracts each moved
   key in its old partition, and paimon-lab reads the model's rows (each key once, in its newest
   partition);
2. paimon-lab moves keys again, deletes, inserts and compacts fully: Java reads the same rows;
3. Java writes again on top of paimon-lab's files (its bootstrap reads our index of keys): it
   retracts keys in the partitions paimon-lab put them in, and both sides read the model's rows.

Java writes no HASH index for these tables; step 2 once failed because paimon-lab looked its keys'
buckets up there (it now reads them from the data): its updates landed in other buckets and keys
showed twice.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import subprocess
import tempfile

import pyarrow as pa
import pytest

from .java_rows import arrow_schema

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "xpart", "CrossPartitionWrite.java")
FIELDS = [("k", "BIGINT NOT NULL"), ("part", "INT NOT NULL"), ("v", "STRING"), ("n", "INT")]
OPTIONS = {"bucket": "-1", "dynamic-bucket.target-row-num": "4"}  # several buckets per partition
VERSIONS = ("0.9", "1.0") if os.environ.get("PAIMON_JAVA_ORACLE_FULL") else ("0.9",)


def _rocksdbjni() -> str:
    spec = importlib.util.find_spec("pyspark")
    jars = sorted(glob.glob(os.path.join(os.path.dirname(spec.origin), "jars", "rocksdbjni-*.jar"))) if spec else []
    if not jars:
        if os.environ.get("CI"):
            pytest.fail("no rocksdbjni jar in pyspark's jars/ (pip install pyspark)", pytrace=False)
        pytest.skip("no rocksdbjni jar (pyspark is not installed)")
    return jars[-1]


@pytest.fixture(scope="session")
def xpart_write(jo, oracle, tmp_path_factory):
    """``xpart_write(version, wh, ident, batches)``: one JVM; each batch (dicts with an optional
    ``_row_kind``) is one commit of CrossPartitionWrite. Returns the records Java's assigner
    emitted: dicts with ``commit``, ``kind``, ``bucket``, ``row``."""
    compiled: dict[str, str] = {}

    def classpath(version: str) -> str:
        if version not in compiled:
            oracle(version)
            with open(os.path.join(jo.home(), version, "classpath")) as f:
                cp = f.read().strip() + os.pathsep + _rocksdbjni()
            out = str(tmp_path_factory.mktemp(f"xpart-{version}"))
            r = subprocess.run(["javac", "-nowarn", "-d", out, "-cp", cp, SOURCE], check=False, capture_output=True,
                               text=True)
            assert r.returncode == 0, f"javac {SOURCE} failed:\n{r.stderr}"
            compiled[version] = out + os.pathsep + cp
        return compiled[version]

    def write(version: str, wh: str, ident: str, batches: list[list[dict]]) -> list[dict]:
        cp = classpath(version)
        with tempfile.TemporaryDirectory() as d:
            files = []
            for i, batch in enumerate(batches):
                files.append(os.path.join(d, f"{i}.jsonl"))
                with open(files[-1], "w", encoding="utf-8") as f:
                    f.writelines(json.dumps(r) + "\n" for r in batch)
            r = subprocess.run(["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Duser.timezone=UTC",
                                "-Djava.io.tmpdir=" + d, "-cp", cp, "CrossPartitionWrite", wh, ident, *files],
                               check=False, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        return [json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()]

    return write


class Model:
    """Each key's newest row (the deduplicate engine): the table a cross-partition update keeps."""

    def __init__(self):
        self.rows: dict[int, dict] = {}

    def apply(self, batch: list[dict]) -> None:
        for r in batch:
            row = {f: r[f] for f, _ in FIELDS}
            if r.get("_row_kind", "+I") in ("-D", "-U"):
                self.rows.pop(r["k"], None)
            else:
                self.rows[r["k"]] = row

    def part(self, k: int) -> int:
        return self.rows[k]["part"]

    def sorted(self) -> list[dict]:
        return [self.rows[k] for k in sorted(self.rows)]


def _row(k: int, part: int, step: int, kind: str | None = None) -> dict:
    r = {"k": k, "part": part, "v": f"v{k}-{step}", "n": None if (k + step) % 5 == 0 else k * 10 + step}
    return r if kind is None else {**r, "_row_kind": kind}


def _retractions(emitted: list[dict], commit: int) -> list[tuple[int, int]]:
    """(key, partition) of the -D records Java emitted in one commit."""
    return sorted((e["row"]["k"], e["row"]["part"]) for e in emitted if e["commit"] == commit and e["kind"] == "-D")


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["k"])


@pytest.mark.compat("primary-key", "Java writes cross-partition", "both")
@pytest.mark.parametrize("version", [pytest.param(v, marks=[pytest.mark.slow] if v == "1.0" else [])
                                     for v in VERSIONS], ids=[f"java{v}" for v in VERSIONS])
def test_java_writes_cross_partition(jo, lab, wh, xpart_write, version):
    jo.create(wh, "db.t", FIELDS, partition_keys=["part"], primary_keys=["k"], options=OPTIONS, version=version)
    model = Model()

    # 1. Java: an empty table (keys 0-3 move within the batch: the last row wins, nothing to
    # retract), then a commit moving keys 4-11 and 0, updating 12-15 in place, deleting 16-17 and
    # 23, inserting 24-29
    first = [_row(k, k % 3, 1) for k in range(24)] + [_row(k, (k + 1) % 3, 1) for k in range(4)]
    model.apply(first)
    second = ([_row(k, (k + 1) % 3, 2) for k in range(4, 12)]
              + [_row(0, 2, 2), _row(0, 0, 2)]  # key 0 moves twice in one commit
              + [_row(k, k % 3, 2) for k in range(12, 16)]
              + [_row(k, model.part(k), 1, "-D") for k in (16, 17, 23)]
              + [_row(k, k % 3, 2) for k in range(24, 30)])
    before = {k: model.part(k) for k in model.rows}
    model.apply(second)
    emitted = xpart_write(version, wh, "db.t", [first, second])
    assert _retractions(emitted, 0) == []
    assert sorted(e["row"]["k"] for e in emitted if e["commit"] == 0) == list(range(24))  # each key once
    moved = {k: before[k] for k in range(4, 12)}
    # key 0: out of its partition 1, then out of the 2 it moved to in the same commit
    assert _retractions(emitted, 1) == sorted([*moved.items(), (0, 1), (0, 2)]
                                              + [(k, before[k]) for k in (16, 17, 23)])
    assert {e["row"]["k"]: e["row"]["part"] for e in emitted if e["commit"] == 1 and e["kind"] == "+I"
            and e["row"]["k"] in moved} == {k: (k + 1) % 3 for k in moved}
    assert len({(e["row"]["part"], e["bucket"]) for e in emitted}) > 3  # several buckets per partition

    def ours() -> list[dict]:
        return _sorted(jo.canonical(lab.get_table("db.t").to_arrow()))

    assert ours() == model.sorted(), "paimon-lab reading Java's cross-partition commits"

    # 2. paimon-lab moves keys (some Java moved), deletes, inserts, and compacts fully
    t = lab.get_table("db.t")
    third = ([_row(k, (model.part(k) + 1) % 3, 3) for k in (4, 5, 6, 18, 19, 20)]
             + [_row(12, model.part(12), 3, "-D")] + [_row(k, k % 3, 3) for k in range(30, 34)])
    model.apply(third)
    kinds = [r.get("_row_kind", "+I") for r in third]
    t.write(_arrow(third), row_kinds=kinds)
    assert lab.get_table("db.t").compact(full=True) is not None
    assert ours() == model.sorted(), "paimon-lab after its own upserts and full compaction"
    assert _sorted(jo.read(wh, "db.t", version=version)) == model.sorted(), "Java reading paimon-lab's files"

    # 3. Java on top of paimon-lab's files: it must find the keys where paimon-lab put them
    fourth = ([_row(k, (model.part(k) + 2) % 3, 4) for k in (4, 5, 30)]
              + [_row(13, model.part(13), 4), _row(31, model.part(31), 3, "-D"), _row(12, 1, 4), _row(40, 1, 4)])
    before = {k: model.part(k) for k in model.rows}
    model.apply(fourth)
    emitted = xpart_write(version, wh, "db.t", [fourth])
    assert _retractions(emitted, 0) == [(k, before[k]) for k in (4, 5, 30, 31)]
    assert ours() == model.sorted(), "paimon-lab reading Java's commit over its files"
    assert _sorted(jo.read(wh, "db.t", version=version)) == model.sorted(), "Java reading both sides' files"


def _arrow(rows: list[dict]) -> pa.Table:
    schema = arrow_schema(FIELDS)
    return pa.Table.from_pylist([{f: r[f] for f in schema.names} for r in rows], schema=schema)
