"""The systems under test, each behind the same small adapter interface.

A workload only talks to :class:`System` methods, so adding a workload usually means adding a
method here (and implementing it per system); a system that does not implement a method raises
``NotImplementedError`` and the harness reports that cell as ``n/a`` instead of failing.

``"table"`` handles are whatever the system needs to find its table again (a ``Table`` object,
or a directory); :meth:`System.open` recreates one from the warehouse path in a new process.
"""

from __future__ import annotations

import functools
import glob
import importlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import crossrun, data, floor
from .inside import Inside
from .machine import REPO_ROOT

TABLE_ID = "bench.t"

# Parquet compression used by every system: Paimon's defaults, file.compression=zstd and
# file.compression.zstd-level=1. paimon_lab and pypaimon use them implicitly; the pyarrow floor
# is given them explicitly.
COMPRESSION = "zstd"
ZSTD_LEVEL = 1
APPEND_OPTIONS = {"bucket": "-1", "file.format": "parquet",
                  "file.compression": COMPRESSION, "file.compression.zstd-level": str(ZSTD_LEVEL)}
# Primary-key tables: two fixed buckets per partition. Fixed buckets need the partition inside the
# primary key, hence (id, dt); id alone is unique in the data set, so the key is still "id".
PK_OPTIONS = {**APPEND_OPTIONS, "bucket": "2"}
PRIMARY_KEYS = ["id", "dt"]
# paimon-lab's writer keeps at most this much per writer before it sorts and spills a level-0 file
# (Paimon's default, stated: the streamed scale sizes rely on it to bound memory).
LAB_PK_OPTIONS = {"write-buffer-size": "256 mb"}


@dataclass(frozen=True)
class Cond:
    """One conjunct of a filter: ``column op value`` with op '=' or 'between' (value = (lo, hi))."""

    column: str
    op: str
    value: Any

    def sql(self) -> str:
        lit = lambda v: f"'{v}'" if isinstance(v, str) else repr(v)  # noqa: E731
        if self.op == "between":
            return f"{self.column} BETWEEN {lit(self.value[0])} AND {lit(self.value[1])}"
        return f"{self.column} {self.op} {lit(self.value)}"

    def arrow(self):
        """The same condition as a pyarrow compute expression (also the model's filter)."""
        import pyarrow.compute as pc

        f = pc.field(self.column)
        if self.op == "between":
            return (f >= self.value[0]) & (f <= self.value[1])
        return f == self.value


def filter_sql(conds: Sequence[Cond]) -> str:
    return " AND ".join(c.sql() for c in conds)


def filter_arrow(conds: Sequence[Cond]):
    expr = conds[0].arrow()
    for c in conds[1:]:
        expr = expr & c.arrow()
    return expr


class System:
    name = "?"
    label = "?"
    module = None  # import name whose absence makes the system unavailable
    table_format = "?"  # systems with the same format can read each other's tables
    # operations (method names) the system lacks, with why: the harness reports them as n/a
    # without starting a process (methods a system does not override count as lacking too)
    unsupported: dict[str, str] = {}
    # a system that takes part only in workloads naming it in ``Workload.systems`` (Spark Parquet)
    dedicated = False
    # part of ``--quick`` without ``--systems`` (False: only when named, e.g. a JVM per process)
    in_quick = True
    # reads back the tables other systems of its format wrote (verification; False where that
    # costs a runtime start per read-back, or duplicates another reader)
    reads_others = True
    # readers of the same format that cannot read this system's tables (name -> why)
    not_read_by: dict[str, str] = {}

    @classmethod
    def lacks(cls, operation: str) -> str | None:
        """Why the system cannot do ``operation`` (a method name), or None if it can."""
        if operation in cls.unsupported:
            return cls.unsupported[operation]
        if getattr(cls, operation) is getattr(System, operation):
            return f"{cls.label} has no {operation} here"
        return None

    @classmethod
    def python(cls) -> str:
        """The interpreter the system's worker processes run (a virtual environment of its own for
        a system whose pins clash with the harness's, see :class:`PyPaimon`)."""
        return crossrun.bench_python()

    @classmethod
    def runs_here(cls) -> bool:
        """Whether this process is the system's interpreter (else it is used through a subprocess)."""
        return os.path.abspath(cls.python()) == os.path.abspath(sys.executable)

    @classmethod
    def available(cls) -> str | None:
        """None if usable, else why not."""
        if cls.module is None:
            return None
        if not cls.runs_here():
            return _probe(cls.python(), cls.module)[0]
        try:
            importlib.import_module(cls.module)
        except Exception as e:  # ImportError, or a broken install
            return f"cannot import {cls.module}: {e}"
        return None

    @classmethod
    def version(cls) -> str:
        if cls.module is None:
            return ""
        if not cls.runs_here():
            return _probe(cls.python(), cls.module)[1]
        try:
            mod = importlib.import_module(cls.module)
        except Exception:
            return "missing"
        ver = getattr(mod, "__version__", None)
        if ver is None:
            from importlib.metadata import PackageNotFoundError, version
            try:
                ver = version(cls.module)
            except PackageNotFoundError:
                ver = "?"
        return str(ver)

    def inside(self) -> Inside | None:
        """For a system that times its operations inside a runtime of its own (Java Paimon in a
        JVM): a fresh :class:`Inside` that collects them from now on, which the worker reports as
        the run's time, CPU time and memory instead of its own clocks. None: the worker times."""
        return None

    # --- table lifecycle -------------------------------------------------------------------
    def create_append_table(self, warehouse: str, schema: pa.Schema, partition_keys: list[str]) -> Any:
        """Create an empty append-only table (bucket -1, parquet, zstd level 1)."""
        raise NotImplementedError

    def open(self, warehouse: str) -> Any:
        """The table created in ``warehouse`` by :meth:`create_append_table`."""
        raise NotImplementedError

    # --- operations (these are what gets timed) --------------------------------------------
    def write(self, table: Any, rows: pa.Table) -> None:
        """Write ``rows`` as exactly one commit."""
        raise NotImplementedError

    def read(self, table: Any) -> pa.Table:
        """Full scan of the latest snapshot."""
        raise NotImplementedError

    # --- primary-key tables ----------------------------------------------------------------
    def create_pk_table(self, warehouse: str, schema: pa.Schema, partition_keys: list[str]) -> Any:
        """Create an empty primary-key table (key (id, dt), partition dt, bucket 2, parquet zstd-1);
        :meth:`open` returns it again."""
        raise NotImplementedError

    def upsert(self, table: Any, rows: pa.Table) -> None:
        """Upsert ``rows`` into the primary-key table as exactly one commit (latest value wins)."""
        raise NotImplementedError

    def upsert_batches(self, table: Any, batches: Iterable[pa.Table]) -> None:
        """Upsert the rows of ``batches`` as exactly one commit, holding one batch at a time
        (streamed data sets)."""
        raise NotImplementedError(f"{self.label} has no streamed (batch by batch, one commit) upsert here")

    def read_partitions(self, table: Any, column: str, values: Sequence[str]) -> Iterator[pa.Table]:
        """The latest snapshot read one partition (``column = value``) at a time (streamed data sets)."""
        raise NotImplementedError(f"{self.label} has no partition-by-partition read here")

    def build_pk_state(self, table: Any, commits: Sequence[pa.Table]) -> None:
        """Bring the primary-key table to the state after ``commits`` (untimed setup). By default
        with :meth:`upsert`; a system without a usable upsert may get there another way."""
        for rows in commits:
            self.upsert(table, rows)

    def compact(self, table: Any) -> None:
        """Full compaction (rewrite the table's files into their final, merged form)."""
        raise NotImplementedError

    def delete_keys(self, table: Any, column: str, values: list) -> None:
        """Delete the rows whose ``column`` is in ``values`` as one commit."""
        raise NotImplementedError

    # --- reads -----------------------------------------------------------------------------
    def read_filtered(self, table: Any, conds: Sequence[Cond]) -> pa.Table:
        """Rows matching all ``conds`` (the system's own filter API, with its file skipping)."""
        raise NotImplementedError

    def read_first(self, table: Any) -> pa.Table:
        """Time travel: the table as of its first commit that wrote data."""
        raise NotImplementedError

    def count(self, table: Any, conds: Sequence[Cond]) -> int:
        """``count(*)`` of the rows matching ``conds`` (partition conditions), the cheapest way the
        system offers."""
        raise NotImplementedError

    def min_max(self, table: Any, column: str, conds: Sequence[Cond]) -> tuple[Any, Any]:
        """(min, max) of ``column`` over the rows matching ``conds`` (partition conditions)."""
        raise NotImplementedError

    def plan(self, warehouse: str) -> tuple[int, int]:
        """Open the table afresh and plan a full scan: (data files, rows) it would read."""
        raise NotImplementedError

    # --- through SQL ------------------------------------------------------------------------
    def sql_session(self, catalogs: dict[str, str]) -> Any:
        """An SQL session (untimed setup) with a catalog per name -> warehouse, so that
        ``<name>.bench.t`` is that warehouse's table."""
        raise NotImplementedError

    def sql(self, session: Any, query: str) -> pa.Table:
        """The result of ``query`` in ``session`` (from :meth:`sql_session`) as an Arrow table."""
        raise NotImplementedError

    # --- through Spark (the ``spark`` workload; ``spark`` is a SparkSession) -------------------
    def spark_create(self, spark: Any, warehouse: str, primary_key: bool) -> Any:
        """Create an empty table for a Spark write (untimed): the append table, or with
        ``primary_key`` the primary-key table (key (id, dt), bucket 2); returns its handle."""
        raise NotImplementedError

    def spark_write(self, spark: Any, df: Any, target: Any) -> None:
        """Write the DataFrame ``df`` into ``target`` (from :meth:`spark_create`) as one Spark job."""
        raise NotImplementedError

    def spark_upsert(self, spark: Any, df: Any, target: Any) -> None:
        """Write ``df`` into the primary-key ``target`` (rows shuffled by bucket, sorted by key)."""
        raise NotImplementedError

    def spark_read(self, spark: Any, target: Any) -> Any:
        """A DataFrame over everything in ``target`` (columns id, name, value, dt; lazy)."""
        raise NotImplementedError

    def spark_compact(self, spark: Any, target: Any) -> None:
        """Fully compact ``target`` with a Spark job (tables that have compaction)."""
        raise NotImplementedError

    def prime(self, scratch_dir: str) -> None:
        """Create, write and read a tiny append table and a tiny primary-key table (two upserts,
        so its read merges), so lazy imports and first-call costs are paid before the clock
        starts (every worker does this; the timed operation is steady-state)."""
        rows = data.generate(200, seed=1)
        try:
            table = self.create_append_table(os.path.join(scratch_dir, "append"), data.SCHEMA, data.PARTITION_KEYS)
            self.write(table, rows)
            self.read(self.open(os.path.join(scratch_dir, "append")))
        except NotImplementedError:
            pass
        try:
            table = self.create_pk_table(os.path.join(scratch_dir, "pk"), data.SCHEMA, data.PARTITION_KEYS)
            self.upsert(table, rows)
            self.upsert(table, rows)
            self.read(self.open(os.path.join(scratch_dir, "pk")))
        except NotImplementedError:
            pass


# ----------------------------------------------------------------------------- paimon-lab

class PaimonLab(System):
    name = "paimon_lab"
    label = "paimon-lab"
    module = "paimon_lab"
    table_format = "paimon"

    def create_append_table(self, warehouse, schema, partition_keys):
        from paimon_lab import Catalog

        catalog = Catalog(warehouse)
        catalog.create_database(TABLE_ID.split(".")[0], ignore_if_exists=True)
        return catalog.create_table(TABLE_ID, schema, partition_keys=partition_keys, options=APPEND_OPTIONS)

    def open(self, warehouse):
        from paimon_lab import Catalog

        return Catalog(warehouse).get_table(TABLE_ID)

    def write(self, table, rows):
        table.write(rows)

    def read(self, table):
        return table.to_arrow()

    def create_pk_table(self, warehouse, schema, partition_keys):
        from paimon_lab import Catalog

        catalog = Catalog(warehouse)
        catalog.create_database(TABLE_ID.split(".")[0], ignore_if_exists=True)
        return catalog.create_table(TABLE_ID, schema, primary_keys=PRIMARY_KEYS,
                                    partition_keys=partition_keys, options={**PK_OPTIONS, **LAB_PK_OPTIONS})

    def upsert(self, table, rows):
        table.write(rows)

    def upsert_batches(self, table, batches):
        with table.writer() as w:
            for rows in batches:
                w.write(rows)

    def read_partitions(self, table, column, values):
        for value in values:
            yield table.to_arrow(filter=f"{column} = '{value}'")

    def compact(self, table):
        table.compact(full=True)

    def delete_keys(self, table, column, values):
        table.delete(f"{column} IN ({', '.join(map(repr, values))})")

    def read_filtered(self, table, conds):
        return table.to_arrow(filter=filter_sql(conds))

    def read_first(self, table):
        return table.to_arrow(snapshot_id=table.snapshots()[0].id)

    def count(self, table, conds):
        return table.count(filter=filter_sql(conds) if conds else None)

    def min_max(self, table, column, conds):
        return tuple(table.min_max(column, filter=filter_sql(conds) if conds else None)[column])

    def plan(self, warehouse):
        from paimon_lab import Catalog

        splits = Catalog(warehouse).get_table(TABLE_ID).plan()
        return sum(len(s.files) for s in splits), sum(s.row_count for s in splits)

    # Through Spark: the "paimon" Python data source (paimon_lab.spark; reads through
    # paimon_lab.spark.read_table, which hands files needing no merge to Spark), registered by the
    # workload; the table is created beforehand with the same options as everywhere else.
    def spark_create(self, spark, warehouse, primary_key):
        create = self.create_pk_table if primary_key else self.create_append_table
        create(warehouse, data.SCHEMA, data.PARTITION_KEYS)
        return warehouse

    def spark_write(self, spark, df, target):
        df.write.format("paimon").mode("append").option("warehouse", target).save(TABLE_ID)

    def spark_upsert(self, spark, df, target):
        from paimon_lab import spark as ps

        # write_table = df.write.format("paimon") after a shuffle by (partition, bucket): one
        # task per bucket, so fewer level-0 files than a plain write (which works as well).
        ps.write_table(df, TABLE_ID, warehouse=target, mode="append")

    def spark_read(self, spark, target):
        from paimon_lab import spark as ps

        return ps.read_table(spark, TABLE_ID, target)

    def spark_compact(self, spark, target):
        from paimon_lab import spark as ps

        ps.compact(spark, TABLE_ID, warehouse=target, full=True)

    def sql_session(self, catalogs):
        from paimon_lab.sql import Session

        session = Session()
        for name, wh in catalogs.items():
            session.run(f"CREATE CATALOG {name} WITH ('type' = 'paimon', 'warehouse' = '{wh}')")
        session.execute("SELECT 1")  # DuckDB's import and first connection: not the queries' cost
        return session

    def sql(self, session, query):
        return session.execute(query)


# ----------------------------------------------------------------------------- pypaimon

def pypaimon_python() -> str:
    """pypaimon's interpreter: ``$PAIMON_LAB_PYPAIMON_PYTHON``, else ``<repo>/.venv-pypaimon``.

    pypaimon 2.1.0 pins pyarrow<20 and pandas<3, so it has a virtual environment of its own (the
    one the tests' oracle uses, built by test.sh). Its workers import only this bench package,
    pyarrow, numpy and pypaimon there; whatever needs paimon-lab goes through :mod:`crossrun`."""
    return os.environ.get("PAIMON_LAB_PYPAIMON_PYTHON") or str(REPO_ROOT / ".venv-pypaimon" / "bin" / "python")


class PyPaimon(System):
    name = "pypaimon"
    label = "pypaimon"
    module = "pypaimon"
    table_format = "paimon"

    @classmethod
    def python(cls) -> str:
        return pypaimon_python()

    @staticmethod
    def _catalog(warehouse):
        from pypaimon import CatalogFactory

        return CatalogFactory.create({"warehouse": warehouse})

    def create_append_table(self, warehouse, schema, partition_keys):
        from pypaimon import Schema

        catalog = self._catalog(warehouse)
        catalog.create_database(TABLE_ID.split(".")[0], True)
        catalog.create_table(TABLE_ID, Schema.from_pyarrow_schema(
            schema, partition_keys=partition_keys, options=APPEND_OPTIONS), False)
        return catalog.get_table(TABLE_ID)

    def open(self, warehouse):
        return self._catalog(warehouse).get_table(TABLE_ID)

    def write(self, table, rows):
        builder = table.new_batch_write_builder()
        writer = builder.new_write()
        committer = builder.new_commit()
        try:
            writer.write_arrow(rows)
            committer.commit(writer.prepare_commit())
        finally:
            writer.close()
            committer.close()

    def read(self, table):
        builder = table.new_read_builder()
        splits = builder.new_scan().plan().splits()
        return builder.new_read().to_arrow(splits)

    def create_pk_table(self, warehouse, schema, partition_keys):
        from pypaimon import Schema

        catalog = self._catalog(warehouse)
        catalog.create_database(TABLE_ID.split(".")[0], True)
        catalog.create_table(TABLE_ID, Schema.from_pyarrow_schema(
            schema, partition_keys=partition_keys, primary_keys=PRIMARY_KEYS, options=PK_OPTIONS), False)
        return catalog.get_table(TABLE_ID)

    def upsert(self, table, rows):
        self.write(table, rows)  # the batch write of a primary-key table is an upsert

    unsupported = {"compact": "pypaimon 2.1.0 has no compaction API",
                   "delete_keys": "pypaimon 2.1.0 writes -D rows only through a 'rowkind.field' column in the "
                                  "table schema (a different table)"}

    def read_filtered(self, table, conds):
        builder = table.new_read_builder()
        pb = builder.new_predicate_builder()
        preds = [pb.between(c.column, *c.value) if c.op == "between" else pb.equal(c.column, c.value)
                 for c in conds]
        builder = builder.with_filter(pb.and_predicates(preds) if len(preds) > 1 else preds[0])
        return builder.new_read().to_arrow(builder.new_scan().plan().splits())

    def _read_columns(self, table, columns, conds):
        builder = table.new_read_builder()
        if conds:  # the predicate builder knows only the projected fields: filter first
            pb = builder.new_predicate_builder()
            preds = [pb.between(c.column, *c.value) if c.op == "between" else pb.equal(c.column, c.value)
                     for c in conds]
            builder = builder.with_filter(pb.and_predicates(preds) if len(preds) > 1 else preds[0])
        builder = builder.with_projection(list(columns))
        return builder.new_read().to_arrow(builder.new_scan().plan().splits())

    def count(self, table, conds):
        return self._read_columns(table, ["id"], conds).num_rows  # pypaimon 2.1 has no count

    def min_max(self, table, column, conds):
        mm = pc.min_max(self._read_columns(table, [column], conds).column(column))
        return mm["min"].as_py(), mm["max"].as_py()

    def read_first(self, table):
        earliest = table.snapshot_manager().try_get_earliest_snapshot()
        first = earliest.id if earliest is not None else 1
        return self.read(table.copy({"scan.snapshot-id": str(first)}))

    def plan(self, warehouse):
        splits = self.open(warehouse).new_read_builder().new_scan().plan().splits()
        return sum(len(s.files) for s in splits), sum(s.row_count for s in splits)


# ----------------------------------------------------------------------------- the floor

class PyArrowFloor(System):
    """Plain pyarrow: the same per-partition Parquet files with no table format around them.

    Write: split rows by partition (one stable sort of the dictionary codes, one ``take``) and
    ``pq.write_table`` one file per partition into ``dt=<value>/``, the partitions written
    concurrently on a thread pool (``pq.write_table`` encodes one file on one thread; it releases
    the GIL). Same compression and encoding rule as paimon-lab (:data:`FLOOR_SETTINGS`).
    Read: ``pyarrow.dataset`` over the list of those files, ``use_threads=True`` and
    ``pre_buffer=True``. No snapshot, manifest or schema files: this is the lower bound a table
    format's overhead is measured against.
    """

    name = "pyarrow"
    label = "pyarrow (floor)"
    module = "pyarrow"
    table_format = "parquet-dirs"
    unsupported = {"compact": "plain Parquet files have nothing to compact",
                   "delete_keys": "plain Parquet files have no delete (it would be a rewrite)",
                   "read_first": "plain Parquet files keep no history"}

    def create_append_table(self, warehouse, schema, partition_keys):
        if partition_keys != ["dt"]:
            raise NotImplementedError("the pyarrow floor only partitions by a single 'dt' column")
        path = os.path.join(warehouse, "floor")
        os.makedirs(path, exist_ok=True)
        return path

    def open(self, warehouse):
        return os.path.join(warehouse, "floor")

    def write(self, table, rows):
        encoded = rows.column("dt").combine_chunks().dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=len(encoded.dictionary))
        grouped = rows.take(pa.array(order))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).tolist()
        floor.write_partitions(grouped, [(os.path.join(table, f"dt={value}"), start, count) for value, start, count
                                         in zip(encoded.dictionary.to_pylist(), starts, counts.tolist()) if count],
                               COMPRESSION, ZSTD_LEVEL)

    def _files(self, table):
        # A primary-key "table" keeps every upsert commit in its own commit-<k>/ directory; the
        # latest one holds the current rows (the floor does no merging: each commit writes the
        # complete, key-sorted state).
        commits = sorted(glob.glob(os.path.join(table, "commit-*")), key=lambda p: int(p.rsplit("-", 1)[1]))
        root = commits[-1] if commits else table
        return sorted(glob.glob(os.path.join(root, "dt=*", "*.parquet")))

    def read(self, table):
        files = self._files(table)
        if not files:
            return data.SCHEMA.empty_table()
        # dt is a column inside the files, so no partition discovery.
        return floor.dataset(files).to_table(use_threads=FLOOR_SETTINGS["read_threads"])

    def create_pk_table(self, warehouse, schema, partition_keys):
        return self.create_append_table(warehouse, schema, partition_keys)

    def upsert(self, table, rows):
        """The floor of an upsert commit: sort the rows by (dt, id) and write one Parquet file per
        partition into a new commit-<k>/ directory (no merge with earlier commits: the rows of
        every commit here are the complete new state)."""
        order = pc.sort_indices(rows, [("dt", "ascending"), ("id", "ascending")])
        rows = rows.take(order)
        k = len(glob.glob(os.path.join(table, "commit-*"))) + 1
        jobs, start = [], 0
        for value, count in floor.runs(rows.column("dt")):
            jobs.append((os.path.join(table, f"commit-{k}", f"dt={value}"), start, count))
            start += count
        floor.write_partitions(rows, jobs, COMPRESSION, ZSTD_LEVEL)

    def read_filtered(self, table, conds):
        files = self._files(table)
        # Row-group statistics let pyarrow skip row groups (and files) that cannot match.
        return floor.dataset(files).to_table(filter=filter_arrow(conds), use_threads=FLOOR_SETTINGS["read_threads"])


    def count(self, table, conds):
        # From the Parquet footers' row counts where the filter allows (pyarrow.dataset.count_rows).
        return floor.dataset(self._files(table)).count_rows(filter=filter_arrow(conds) if conds else None)

    def min_max(self, table, column, conds):
        rows = floor.dataset(self._files(table)).to_table(
            columns=[column], filter=filter_arrow(conds) if conds else None, use_threads=FLOOR_SETTINGS["read_threads"])
        mm = pc.min_max(rows.column(column))
        return mm["min"].as_py(), mm["max"].as_py()


FLOOR_SETTINGS = floor.SETTINGS


def floor_settings_text() -> str:
    return floor.settings_text(f"{COMPRESSION} level {ZSTD_LEVEL}")


# ----------------------------------------------------------------------------- delta-rs


@functools.lru_cache(maxsize=None)
def _probe(python: str, module: str) -> tuple[str | None, str]:
    """(why ``module`` is unusable in interpreter ``python`` or None, its version or "missing")."""
    if not os.path.exists(python):
        return f"no interpreter {python} for {module} (./test.sh builds it)", "missing"
    code = ("import importlib, importlib.metadata as m\nmod = importlib.import_module({0!r})\n"
            "try:\n    print(m.version({0!r}))\n"
            "except m.PackageNotFoundError:\n    print(getattr(mod, '__version__', '?'))").format(module)
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120,
                              cwd=REPO_ROOT, env=crossrun.worker_env())
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot run {python}: {e}", "missing"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return f"cannot import {module} in {python}: {last}", "missing"
    return None, proc.stdout.strip()


def read_back(name: str, warehouse: str) -> pa.Table:
    """System ``name``'s full read of the table in ``warehouse`` (verification), in this process
    when it is the system's interpreter, else in a subprocess of that interpreter."""
    cls = SYSTEMS[name]
    if cls.runs_here():
        reader = cls()
        return reader.read(reader.open(warehouse))
    with tempfile.TemporaryDirectory(prefix="bench-readback-") as tmp:
        path = os.path.join(tmp, "rows.arrow")
        crossrun.call(cls.python(), "bench.systems:_read_to_file", name, warehouse, path)
        with pa.memory_map(path) as source:
            return pa.ipc.open_file(source).read_all()


def _read_to_file(name: str, warehouse: str, path: str) -> None:
    """The other side of :func:`read_back`: read and save as an Arrow IPC file."""
    table = read_back(name, warehouse)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)


def readers_of(system: System) -> list[str]:
    """``system`` and every other available system of its table format that reads others' tables
    (Paimon: paimon-lab, pypaimon and pypaimon-rust read each other's tables), by name."""
    return [name for name, cls in SYSTEMS.items()
            if name == system.name or (cls.table_format == system.table_format and cls.reads_others
                                       and name not in system.not_read_by and cls.available() is None)]


# Peers in modules of their own (they subclass System, hence imported here, after it).
from .javapaimon import JavaPaimon
from .otherformats import DeltaLake, PyIceberg, SparkParquet
from .pypaimonrust import PyPaimonRust, PyPaimonRustSql

SYSTEMS: dict[str, type[System]] = {cls.name: cls for cls in (PaimonLab, PyPaimon, PyArrowFloor, DeltaLake,
                                                                PyIceberg, SparkParquet, JavaPaimon,
                                                                PyPaimonRust, PyPaimonRustSql)}
LAB = PaimonLab.name


def get(name: str) -> System:
    return SYSTEMS[name]()


def reader_label(reader: str) -> str:
    """The label of a verification reader: a system name, or ``system:what`` (one of several
    tables or paths a system read back, e.g. ``spark_parquet:write``)."""
    name, _, what = reader.partition(":")
    label = SYSTEMS[name].label if name in SYSTEMS else name
    return f"{label} ({what})" if what else label


__all__ = ["System", "Inside", "SYSTEMS", "LAB", "get", "reader_label", "read_back", "readers_of", "pypaimon_python",
           "COMPRESSION", "ZSTD_LEVEL", "Cond", "filter_sql", "filter_arrow", "PK_OPTIONS", "PRIMARY_KEYS"]
