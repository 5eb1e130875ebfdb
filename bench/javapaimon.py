"""Java Paimon as a peer: the real Apache Paimon (Java) library, timed inside its JVM.

The JVM runs ``bench/java/BenchDriver.java``, compiled against the shared Java oracle's Paimon
0.9.0 bundle (``~/.cache/paimon-java-oracle/0.9``: ``classpath`` and its jars, built by
``shared/java-oracle/build.sh``) into ``~/.cache/paimon-lab-bench/java/<hash>/``. Each worker
process starts one JVM (untimed, with the priming) and sends it one JSON command per operation.
The driver times the Paimon call only (``System.nanoTime``; process CPU time; RSS high-water mark
and heap peak), and :meth:`JavaPaimon.inside` hands those figures to the worker in place of its
own clocks, so JVM start-up, moving rows in (an Arrow IPC file loaded into ``BinaryRow``s before
the clock starts) and results out (an Arrow IPC file written after it stops, read here for the
verification) are not counted.
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from . import data
from .inside import Inside
from .systems import APPEND_OPTIONS, PK_OPTIONS, PRIMARY_KEYS, TABLE_ID, Cond, System

SOURCE = Path(__file__).resolve().parent / "java" / "BenchDriver.java"
ORACLE_VERSION = "0.9"
PAIMON_TYPES = {pa.int64(): "BIGINT", pa.int32(): "INT", pa.float64(): "DOUBLE", pa.string(): "STRING",
                pa.bool_(): "BOOLEAN"}
# Flags of every driver JVM: Arrow's memory needs java.nio opened on Java 17; the heap and the
# garbage collector are the JVM's defaults (PAIMON_LAB_BENCH_JAVA_OPTS adds flags).
JAVA_FLAGS = ["--add-opens=java.base/java.nio=ALL-UNNAMED", "-Xss4m", "-Duser.timezone=UTC",
              "-Dfile.encoding=UTF-8", "-Dlog4j2.statusLoggerLevel=OFF"]
# Rows of the priming workload: enough for the JIT to compile the write, merge and read paths.
PRIME_ROWS = 20_000


def oracle_dir() -> Path:
    return Path(os.environ.get("PAIMON_ORACLE_HOME") or Path.home() / ".cache" / "paimon-java-oracle") / ORACLE_VERSION


def cache_dir() -> Path:
    return Path(os.environ.get("PAIMON_LAB_BENCH_CACHE") or Path.home() / ".cache" / "paimon-lab-bench") / "java"


def unavailable() -> str | None:
    """Why Java Paimon cannot run here (no java/javac, the oracle's jars not built), or None."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return f"no {tool} on PATH (Java 17 is needed for Java Paimon)"
    cp = oracle_dir() / "classpath"
    if not cp.exists():
        return f"the Java oracle's Paimon {ORACLE_VERSION} jars are not built ({cp} missing: run shared/java-oracle/build.sh)"
    missing = [p for p in cp.read_text().strip().split(os.pathsep) if p and not os.path.exists(p)]
    if missing:
        return f"the Java oracle's classpath names missing jars: {missing[0]}"
    return None


def classpath() -> str:
    """The driver's classpath: its compiled class (built on first use) and the oracle's jars."""
    jars = (oracle_dir() / "classpath").read_text().strip()
    digest = hashlib.sha256(SOURCE.read_bytes() + jars.encode()).hexdigest()[:16]
    classes = cache_dir() / digest
    if not (classes / "BenchDriver.class").exists():
        classes.parent.mkdir(parents=True, exist_ok=True)
        with open(classes.parent / ".lock", "w") as lock:  # workers may start at once
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (classes / "BenchDriver.class").exists():
                tmp = Path(tempfile.mkdtemp(dir=classes.parent))
                proc = subprocess.run(["javac", "-nowarn", "-d", str(tmp), "-cp", jars, str(SOURCE)],
                                      capture_output=True, text=True, timeout=600, check=False)
                if proc.returncode != 0:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise RuntimeError(f"javac {SOURCE.name} failed:\n{proc.stderr[-3000:]}")
                tmp.rename(classes)
    return f"{classes}{os.pathsep}{jars}"


class Jvm:
    """One driver JVM: commands in as JSON lines on its stdin, replies out on its stdout."""

    def __init__(self):
        flags = JAVA_FLAGS + os.environ.get("PAIMON_LAB_BENCH_JAVA_OPTS", "").split()
        self.proc = subprocess.Popen(["java", *flags, "-cp", classpath(), "BenchDriver"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        atexit.register(self.close)

    def call(self, op: str, **args) -> dict:
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the Java driver exited (code {self.proc.wait()}) during {op!r}; see its stderr")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"Java Paimon failed in {op!r}:\n{reply['error']}")
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _conds_json(conds: Sequence[Cond]) -> list[dict]:
    return [{"column": c.column, "op": c.op, "value": list(c.value) if c.op == "between" else c.value} for c in conds]


class JavaPaimon(System):
    """Apache Paimon 0.9.0 (Java) through its Java API, one JVM per worker process.

    Tables are handles by warehouse path. ``write``/``upsert``: ``newBatchWriteBuilder()``,
    ``BatchTableWrite.write(row)`` for every row, ``prepareCommit``, ``commit``. ``read``:
    ``newReadBuilder()``, ``newScan().plan().splits()``, ``newRead().createReader(splits)`` and every
    row copied into a ``BinaryRow`` list (the rows in memory, as the Python readers build an Arrow
    table); ``read_filtered`` adds ``withFilter(predicate)`` and ``executeFilter()``. ``compact``:
    ``BatchTableWrite.compact(partition, bucket, fullCompaction=true)`` for every partition and
    bucket of the latest snapshot, then one commit.
    """

    name = "java_paimon"
    label = "Java Paimon"
    table_format = "paimon"
    in_quick = False     # a JVM per worker process and a 20,000-row priming: named only
    reads_others = False  # a JVM start per read-back; paimon-lab and pypaimon-rust read its tables
    not_read_by = {"pypaimon": "pypaimon 2.1.0 fails on Java Paimon 0.9's manifests (KeyError '_VALUE_STATS_COLS': "
                               "a data file field 0.9 does not write)"}
    unsupported = {"delete_keys": "not in Java Paimon's benchmark driver (issue #19 item 8 lists its workloads)",
                   "read_first": "not in Java Paimon's benchmark driver (issue #19 item 8 lists its workloads)",
                   "plan": "not in Java Paimon's benchmark driver (issue #19 item 8 lists its workloads)"}

    def __init__(self):
        self._jvm: Jvm | None = None
        self._inside: Inside | None = None
        self._tmp = tempfile.mkdtemp(prefix="bench-java-")
        self._loads = 0
        atexit.register(shutil.rmtree, self._tmp, True)

    @classmethod
    def available(cls):
        return unavailable()

    @classmethod
    def version(cls):
        if unavailable():
            return "missing"
        return _version()

    @property
    def jvm(self) -> Jvm:
        if self._jvm is None:
            self._jvm = Jvm()
        return self._jvm

    def inside(self):
        self._inside = Inside()
        return self._inside

    def _timed(self, op: str, **args) -> dict:
        reply = self.jvm.call(op, tmp=self._tmp, **args)
        if self._inside is not None:
            self._inside.add(reply)
        return reply

    def _create(self, warehouse: str, schema: pa.Schema, partition_keys, primary_keys, options) -> str:
        fields = [[f.name, PAIMON_TYPES[f.type]] for f in schema]
        self.jvm.call("create", warehouse=os.path.abspath(warehouse), table=TABLE_ID, fields=fields,
                      partition_keys=list(partition_keys), primary_keys=list(primary_keys), options=options)
        return os.path.abspath(warehouse)

    def create_append_table(self, warehouse, schema, partition_keys):
        return self._create(warehouse, schema, partition_keys, [], APPEND_OPTIONS)

    def create_pk_table(self, warehouse, schema, partition_keys):
        return self._create(warehouse, schema, partition_keys, PRIMARY_KEYS, PK_OPTIONS)

    def open(self, warehouse):
        return os.path.abspath(warehouse)

    def write(self, table, rows):
        # The rows go into the JVM before the clock starts: an IPC file, loaded as BinaryRows.
        self._loads += 1
        name = f"rows{self._loads}"
        path = os.path.join(self._tmp, name + ".arrow")
        data.save(rows, path)
        self.jvm.call("load", name=name, path=path)
        os.remove(path)
        try:
            self._timed("write", warehouse=table, table=TABLE_ID, rows=name)
        finally:
            self.jvm.call("drop", name=name)

    def upsert(self, table, rows):
        self.write(table, rows)  # a batch write into a primary-key table is an upsert

    def _read(self, table, conds: Sequence[Cond] | None) -> pa.Table:
        path = os.path.join(self._tmp, "read.arrow")
        self._timed("read", warehouse=table, table=TABLE_ID, filter=_conds_json(conds or []), out=path)
        try:
            return data.load(path)
        finally:
            os.remove(path)

    def read(self, table):
        return self._read(table, None)

    def read_filtered(self, table, conds):
        return self._read(table, conds)

    def count(self, table, conds: Sequence[Cond] = ()) -> int:
        """Rows matching ``conds`` (all rows without): a read that counts instead of keeping them."""
        return int(self._timed("count", warehouse=table, table=TABLE_ID, filter=_conds_json(conds))["rows"])

    def compact(self, table):
        self._timed("compact", warehouse=table, table=TABLE_ID)

    def prime(self, scratch_dir):
        """A 20,000-row priming (the base class primes with 200): the JIT compiles the hot write,
        merge and read paths before the clock starts, so the figures are the JVM's steady state."""
        rows = data.generate(PRIME_ROWS, seed=1)
        inside, self._inside = self._inside, None
        try:
            wh = self.create_append_table(os.path.join(scratch_dir, "append"), data.SCHEMA, data.PARTITION_KEYS)
            self.write(wh, rows)
            self.read(wh)
            self.read_filtered(wh, [Cond("id", "between", (0, PRIME_ROWS // 100))])
            pk = self.create_pk_table(os.path.join(scratch_dir, "pk"), data.SCHEMA, data.PARTITION_KEYS)
            self.upsert(pk, rows)
            self.upsert(pk, rows)
            self.read(pk)
            self.read_filtered(pk, [Cond("id", "=", 7)])
            self.count(pk)
            self.compact(pk)
        finally:
            self._inside = inside


def _version() -> str:
    """The Paimon version of the oracle's bundle (from its jar's Maven metadata)."""
    for jar in (oracle_dir() / "classpath").read_text().strip().split(os.pathsep):
        if "paimon" not in os.path.basename(jar):
            continue
        with zipfile.ZipFile(jar) as z:
            for name in ("META-INF/maven/org.apache.paimon/paimon-bundle/pom.properties",
                         "META-INF/maven/org.apache.paimon/paimon-core/pom.properties"):
                if name in z.namelist():
                    for line in z.read(name).decode().splitlines():
                        if line.startswith("version="):
                            return line.split("=", 1)[1]
    return "?"
