"""``wide_cdc`` and ``wide_cdc_compacted``: reads of a wide primary-key table fed by CDC commits.

The table (issue #19, item 1): 17 columns of mixed types, ``id BIGINT`` the primary key, four
``DECIMAL(15,2)``, three ``DATE``, three ``STRING`` (one low-cardinality), three ``INT``, three
``DOUBLE``; unpartitioned, ``'bucket' = '4'``, Parquet zstd level 1. It is bulk-loaded with N rows
(one commit), then :data:`CDC_FRACTIONS` CDC commits each update a random 10-30% of the live keys
(every non-key column gets new values) and insert N/20 new keys, in random row order (seeds
``SEED + 3000 + k``). The model of every state is plain pyarrow: the previous state minus the
updated keys, plus the commit's rows.

``wide_cdc``: the full read after each CDC commit, each a lap (time = median of the laps).
Every system builds its table once (untimed setup) and reads each state as of that commit:

* paimon-lab: ``to_arrow(snapshot_id=...)`` of the snapshot each commit left (merge-on-read
  of the sorted runs, whatever compaction the writer did on its own, as Java would);
* delta-rs (copy-on-write): ``MERGE`` per commit, ``DeltaTable(path, version=v).to_pyarrow_table()``;
* pyarrow (floor): after each commit it writes the complete state sorted by ``id`` into 4 files
  (one per "bucket", zstd-1) and reads them with ``pyarrow.dataset`` (multi-threaded, files read
  concurrently): reading the latest rows with no merge at all.

``wide_cdc_compacted``: the same table after all commits and a full compaction (one file per
bucket): paimon-lab's ``to_arrow()``, pyarrow reading *exactly those Parquet files* (the 17
table columns; ``pyarrow.dataset``, multi-threaded), and delta-rs's read of its final table; each
after one untimed read of the same state in its process, as ``wide_cdc``'s laps.

Every read of every run (warm-up and timed) is kept and, after the run, compared whole with the
model of its state (row count, columns and types, every value, sorted by the key), so a timed run
that returns wrong rows fails the cell.
"""

from __future__ import annotations

import functools
import glob
import json
import os
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import data
from ..systems import COMPRESSION, ZSTD_LEVEL
from . import Context, Workload, register
from ._tables import _build_once

CDC_FRACTIONS = (0.10, 0.30, 0.20, 0.15)   # share of the live keys each CDC commit updates
INSERT_FRACTION = 0.05                     # new keys per commit, as a share of N
BUCKETS = 4
TABLE_ID = "bench.wide"
OPTIONS = {"bucket": str(BUCKETS), "file.format": "parquet", "file.compression": COMPRESSION,
           "file.compression.zstd-level": str(ZSTD_LEVEL)}

DEC = pa.decimal128(15, 2)
SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False)]
    + [pa.field(f"amount_{i}", DEC) for i in range(4)]
    + [pa.field(f"date_{i}", pa.date32()) for i in range(3)]
    + [pa.field("status", pa.string()), pa.field("name", pa.string()), pa.field("comment", pa.string())]
    + [pa.field(f"int_{i}", pa.int32()) for i in range(3)]
    + [pa.field(f"dbl_{i}", pa.float64()) for i in range(3)])
STATUSES = pa.array(["NEW", "OPEN", "PAID", "SHIPPED", "RETURNED", "CANCELLED", "ON_HOLD", "CLOSED"])


def _decimal(unscaled: np.ndarray) -> pa.Array:
    """DECIMAL(15,2) values from their unscaled int64 (little-endian 128-bit two's complement)."""
    words = np.empty((len(unscaled), 2), dtype=np.int64)
    words[:, 0] = unscaled
    words[:, 1] = unscaled >> 63
    return pa.Array.from_buffers(DEC, len(unscaled), [None, pa.py_buffer(words.tobytes())])


def make_rows(ids: np.ndarray, seed: int) -> pa.Table:
    """Rows for the keys ``ids``: every non-key column drawn from ``seed`` (about 5% nulls in
    ``comment`` and ``amount_3``)."""
    rng = np.random.default_rng(seed)
    n = len(ids)
    cols: list[pa.Array] = [pa.array(ids.astype(np.int64))]
    for i in range(4):
        unscaled = rng.integers(-10 ** (7 + i), 10 ** (7 + i), n)
        arr = _decimal(unscaled)
        if i == 3:
            arr = pc.if_else(pa.array(rng.random(n) < 0.05), pa.scalar(None, DEC), arr)
        cols.append(arr)
    for _ in range(3):
        cols.append(pa.array(rng.integers(18000, 21000, n).astype(np.int32), pa.date32()))
    cols.append(STATUSES.take(pa.array(rng.integers(0, len(STATUSES), n))))
    cols.append(pc.binary_join_element_wise("customer-", pc.cast(pa.array(rng.integers(0, 10 ** 7, n)), pa.string()), ""))
    comment = pc.binary_join_element_wise(
        "order note ", pc.cast(pa.array(rng.integers(0, 10 ** 9, n)), pa.string()), " / batch ",
        pc.cast(pa.array(rng.integers(0, 1000, n)), pa.string()), "")
    cols.append(pc.if_else(pa.array(rng.random(n) < 0.05), pa.scalar(None, pa.string()), comment))
    for i in range(3):
        cols.append(pa.array(rng.integers(-2 ** 31, 2 ** 31 - 1, n, dtype=np.int64).astype(np.int32)
                             if i == 0 else rng.integers(0, 10 ** (2 + i), n).astype(np.int32)))
    for i in range(3):
        cols.append(pa.array(rng.standard_normal(n) * 10 ** (i + 1)))
    return pa.Table.from_arrays(cols, schema=SCHEMA)


def bulk(rows: int) -> pa.Table:
    """The bulk load: keys 0..N-1 in random order."""
    return make_rows(np.random.default_rng(data.SEED + 3000).permutation(rows), data.SEED + 3001)


def cdc_commits(rows: int) -> list[pa.Table]:
    """The CDC commits: commit k updates a random ``CDC_FRACTIONS[k]`` of the live keys and inserts
    ``INSERT_FRACTION * N`` new keys, rows in random order."""
    out = []
    live = rows
    for k, fraction in enumerate(CDC_FRACTIONS, 1):
        rng = np.random.default_rng(data.SEED + 3000 + 10 * k)
        updated = rng.choice(live, size=max(1, int(live * fraction)), replace=False)
        inserted = np.arange(live, live + max(1, int(rows * INSERT_FRACTION)))
        ids = rng.permutation(np.concatenate([updated, inserted]))
        out.append(make_rows(ids, data.SEED + 3001 + 10 * k))
        live += len(inserted)
    return out


@functools.lru_cache(maxsize=1)
def states(rows: int) -> list[pa.Table]:
    """The model: the table's content after the bulk load and after each CDC commit."""
    state = bulk(rows)
    out = [state]
    for commit in cdc_commits(rows):
        stale = pc.is_in(state.column("id"), value_set=commit.column("id"))
        state = pa.concat_tables([state.filter(pc.invert(stale)), commit])
        out.append(state)
    return out


@functools.lru_cache(maxsize=1)
def _sorted_states(rows: int) -> list[pa.Table]:
    return [s.sort_by("id").combine_chunks() for s in states(rows)]


def differences(got: pa.Table, want: pa.Table) -> list[str]:
    """How a read differs from the model of its state (empty if equal), whatever the row order.

    Both are in this process, so they are compared whole (sorted by the key), not by checksum:
    hashing 17 columns of Python objects (``Decimal``, ``date``, ``str``) through pandas would
    take most of a run."""
    if got.num_rows != want.num_rows:
        return [f"{got.num_rows} rows, expected {want.num_rows}"]
    if sorted(got.column_names) != sorted(want.column_names):
        return [f"columns {got.column_names}, expected {want.column_names}"]
    got = got.select(want.column_names)
    got = got.cast(pa.schema([pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) else f.type)
                              for f in got.schema]))
    if got.schema.types != want.schema.types:
        return [f"types {[str(t) for t in got.schema.types]}, expected {[str(t) for t in want.schema.types]}"]
    got = got.sort_by("id").combine_chunks()
    wrong = [name for name in want.column_names if not got.column(name).equals(want.column(name))]
    return [f"values differ in {wrong}"] if wrong else []


# ----------------------------------------------------------------------------- per system

def _lab_create(warehouse: str):
    from paimon_lab import Catalog

    catalog = Catalog(warehouse)
    catalog.create_database(TABLE_ID.split(".")[0], ignore_if_exists=True)
    return catalog.create_table(TABLE_ID, SCHEMA, primary_keys=["id"], options=OPTIONS)


def _lab_open(warehouse: str):
    from paimon_lab import Catalog

    return Catalog(warehouse).get_table(TABLE_ID)


def build(system_name: str, directory: str, rows: int) -> None:
    """The system's table after the bulk load and every CDC commit, and ``versions.json``: what
    identifies each state (paimon snapshot id, delta version, floor directory)."""
    commits = [bulk(rows)] + cdc_commits(rows)
    versions = []
    if system_name == "paimon_lab":
        table = _lab_create(directory)
        for rows_k in commits:
            table.write(rows_k)
            versions.append(_lab_open(directory).latest_snapshot().id)
    elif system_name == "deltalake":
        from deltalake import DeltaTable, WriterProperties, write_deltalake

        path = os.path.join(directory, "delta")
        wp = WriterProperties(compression="ZSTD", compression_level=ZSTD_LEVEL)
        DeltaTable.create(path, SCHEMA)
        write_deltalake(path, commits[0], mode="append", writer_properties=wp)
        versions.append(DeltaTable(path).version())
        for rows_k in commits[1:]:
            (DeltaTable(path).merge(rows_k, predicate="t.id = s.id", source_alias="s", target_alias="t",
                                    writer_properties=wp)
             .when_matched_update_all().when_not_matched_insert_all().execute())
            versions.append(DeltaTable(path).version())
    elif system_name == "pyarrow":
        import pyarrow.parquet as pq

        for k, state in enumerate(states(rows)):
            state = state.take(pc.sort_indices(state, [("id", "ascending")]))
            target = os.path.join(directory, f"state-{k}")
            os.makedirs(target)
            step = -(-state.num_rows // BUCKETS)
            for b in range(BUCKETS):
                pq.write_table(state.slice(b * step, step), os.path.join(target, f"bucket-{b}.parquet"),
                               compression=COMPRESSION, compression_level=ZSTD_LEVEL)
            versions.append(k)
    else:
        raise NotImplementedError(f"{system_name} takes no part in wide_cdc")
    with open(os.path.join(directory, "versions.json"), "w") as f:
        json.dump(versions, f)


def read_state(system_name: str, directory: str, version: int) -> pa.Table:
    """The system's full read of its table as of ``version`` (an entry of ``versions.json``)."""
    if system_name == "paimon_lab":
        return _lab_open(directory).to_arrow(snapshot_id=version)
    if system_name == "deltalake":
        from deltalake import DeltaTable

        return DeltaTable(os.path.join(directory, "delta"), version=version).to_pyarrow_table()
    import pyarrow.dataset as ds

    files = sorted(glob.glob(os.path.join(directory, f"state-{version}", "*.parquet")))
    return ds.dataset(files, format="parquet").to_table()


PYPAIMON_NA = ("pypaimon 2.1.0's merge-on-read takes ~25 s per 1,000,000 narrow rows (pk_read); "
               "four wide reads per run would make this workload tens of minutes long")


class _Wide(Workload):
    needs_setup = True
    max_repeat = 5
    systems = ("paimon_lab", "pypaimon", "deltalake", "pyarrow")

    def expected(self, ctx: Context) -> data.Fingerprint:
        # check() compares every read of every run with its own model; verify() reports the
        # number of reads so checked
        return data.Fingerprint(len(self.lap_names(ctx)), ("reads",), ("checked",), "-")

    def models(self, ctx: Context) -> list[pa.Table]:
        """The model of the state each lap reads (sorted by ``id``)."""
        raise NotImplementedError

    def check(self, ctx: Context, system, state, result):
        """Every read of the run (kept by :meth:`run`) against the model of its state."""
        models = self.models(ctx)
        problems = []
        for lap, rows, want in zip(self.lap_names(ctx), result, models):
            problems += [f"{lap}: {d}" for d in differences(rows, want)]
        if len(result) != len(models):
            problems.append(f"{len(result)} reads, expected {len(models)}")
        return problems

    def verify(self, ctx: Context, system, state, result):
        return {system.name: data.Fingerprint(len(result), ("reads",), ("checked",), "-")}

    def lap_names(self, ctx: Context) -> list[str]:
        raise NotImplementedError


@register
class WideCdc(_Wide):
    name = "wide_cdc"
    description = ("full read of a 17-column primary-key table (BIGINT key, DECIMAL, DATE, STRING, INT, DOUBLE) "
                   "after each of 4 CDC commits (10-30% of keys updated, 5% inserted); time = median of the reads")
    order = 44
    # paimon-lab's merge-on-read no slower than delta-rs reading its copy-on-write table, and
    # within 1.3x of paimon-lab's own read of the fully compacted table.
    targets: ClassVar[dict[str, float]] = {"deltalake": 1.0}
    workload_targets: ClassVar[dict[str, float]] = {"wide_cdc_compacted": 1.3}

    def _dir(self, ctx: Context, system) -> str:
        if system.name == "pypaimon":
            raise NotImplementedError(PYPAIMON_NA)
        return _build_once(os.path.join(ctx.shared_dir, f"wide-{ctx.rows}"),
                           lambda d: build(system.name, d, ctx.rows))

    def setup(self, ctx: Context, system):
        self._dir(ctx, system)

    def prepare(self, ctx: Context, system):
        directory = self._dir(ctx, system)
        with open(os.path.join(directory, "versions.json")) as f:
            versions = json.load(f)
        read_state(system.name, directory, versions[0])  # untimed: first wide-type decode paths warmed
        return directory, versions[1:]

    def run(self, ctx: Context, system, state):
        directory, versions = state
        out = []
        for k, version in enumerate(versions, 1):
            with ctx.lap(f"cdc{k}"):
                out.append(read_state(system.name, directory, version))
        return out   # every read is checked against its model (check)

    def lap_names(self, ctx):
        return [f"cdc{k}" for k in range(1, len(CDC_FRACTIONS) + 1)]

    def models(self, ctx):
        return _sorted_states(ctx.rows)[1:]


def compacted_files(warehouse: str) -> list[str]:
    """The data files of the latest snapshot of the paimon-lab table in ``warehouse``."""
    table = _lab_open(warehouse)
    store = table.store
    return [f.external_path or os.path.join(store.bucket_path(s.partition, s.bucket), f.file_name)
            for s in table.plan() for f in s.files]


@register
class WideCdcCompacted(_Wide):
    name = "wide_cdc_compacted"
    description = ("full read of the wide_cdc table after all commits and a full compaction; pyarrow reads "
                   "exactly the compacted Parquet files")
    order = 45
    systems = ("paimon_lab", "deltalake", "pyarrow")
    # After full compaction: at least as fast as pyarrow reading the same files.
    targets: ClassVar[dict[str, float]] = {"pyarrow": 1.0}

    def _dir(self, ctx: Context, system) -> str:
        def make(d):
            if system.name == "deltalake":
                build("deltalake", d, ctx.rows)
                return
            # paimon-lab's table, fully compacted; the floor reads the same table's files
            build("paimon_lab", d, ctx.rows)
            _lab_open(d).compact(full=True)
            with open(os.path.join(d, "files.json"), "w") as f:
                json.dump(compacted_files(d), f)

        return _build_once(os.path.join(ctx.shared_dir, f"wide-compacted-{ctx.rows}"), make)

    def setup(self, ctx: Context, system):
        self._dir(ctx, system)

    def prepare(self, ctx: Context, system):
        directory = self._dir(ctx, system)
        files = None
        if system.name == "pyarrow":
            with open(os.path.join(directory, "files.json")) as f:
                files = json.load(f)
        # untimed, as wide_cdc's prepare: the lap is a warm read, like the merge reads the 1.3x
        # target sets against it (a fresh process's first large read also pays the kernel's
        # page allocation, 0.05-0.7 s of system time at random, for every system alike)
        self._read(system.name, directory, files)
        return directory, files

    @staticmethod
    def _read(system_name: str, directory: str, files: list[str] | None) -> pa.Table:
        if system_name == "paimon_lab":
            return _lab_open(directory).to_arrow()
        if system_name == "deltalake":
            from deltalake import DeltaTable

            return DeltaTable(os.path.join(directory, "delta")).to_pyarrow_table()
        import pyarrow.dataset as ds

        # the 17 table columns of the compacted files (not Paimon's _KEY_id, _SEQUENCE_NUMBER,
        # _VALUE_KIND), files read concurrently, columns on Arrow's threads
        return ds.dataset(files, format="parquet").to_table(columns=SCHEMA.names)

    def run(self, ctx: Context, system, state):
        directory, files = state
        with ctx.lap("read"):
            rows = self._read(system.name, directory, files)
        return [rows]

    def lap_names(self, ctx):
        return ["read"]

    def models(self, ctx):
        return _sorted_states(ctx.rows)[-1:]


MERGE_COLUMNS = ["_KEY_id", "_VALUE_KIND"] + [n for n in SCHEMA.names if n != "id"]


def snapshot_files(warehouse: str, snapshot_id: int) -> list[str]:
    """The data files of snapshot ``snapshot_id`` of the paimon-lab table in ``warehouse``."""
    table = _lab_open(warehouse)
    store = table.store
    return [f.external_path or os.path.join(store.bucket_path(s.partition, s.bucket), f.file_name)
            for s in table.plan(snapshot_id=snapshot_id) for f in s.files]


@register
class WideCdcDecode(WideCdc):
    """The decode floor of ``wide_cdc``'s merge read (opt-in)."""

    name = "wide_cdc_decode"
    description = ("wide_cdc's decode floor: pyarrow decodes every row version in the data files of each "
                   "state (the columns a merge reads), no merge; paimon-lab does its merge read")
    order = 46
    opt_in = True
    systems = ("paimon_lab", "pyarrow")
    targets: ClassVar[dict[str, float]] = {}
    workload_targets: ClassVar[dict[str, float]] = {}

    def _dir(self, ctx: Context, system) -> str:
        def make(d):
            build("paimon_lab", d, ctx.rows)
            with open(os.path.join(d, "versions.json")) as f:
                versions = json.load(f)
            files = {str(v): snapshot_files(d, v) for v in versions}
            with open(os.path.join(d, "files.json"), "w") as f:
                json.dump(files, f)

        # paimon-lab reads the table wide_cdc reads; pyarrow the files of an identical table
        if system.name == "paimon_lab":
            return super()._dir(ctx, system)
        return _build_once(os.path.join(ctx.shared_dir, f"wide-decode-{ctx.rows}"), make)

    def run(self, ctx: Context, system, state):
        if system.name == "paimon_lab":
            return super().run(ctx, system, state)
        import pyarrow.dataset as ds

        directory, versions = state
        with open(os.path.join(directory, "files.json")) as f:
            files = json.load(f)
        out = []
        for k, version in enumerate(versions, 1):
            with ctx.lap(f"cdc{k}"):
                # files read concurrently, columns on Arrow's threads: every version of every key
                rows = ds.dataset(files[str(version)], format="parquet").to_table(columns=MERGE_COLUMNS)
            out.append((rows, sum(pq_rows(p) for p in files[str(version)])))
        return out

    def check(self, ctx: Context, system, state, result):
        if system.name == "paimon_lab":
            return super().check(ctx, system, state, result)
        problems = []
        for lap, (rows, on_disk) in zip(self.lap_names(ctx), result):
            if rows.num_rows != on_disk or rows.column_names != MERGE_COLUMNS:
                problems.append(f"{lap}: {rows.num_rows} rows of {rows.column_names}, expected {on_disk} "
                                f"rows (the files' row counts) of {MERGE_COLUMNS}")
        if len(result) != len(self.lap_names(ctx)):
            problems.append(f"{len(result)} reads, expected {len(self.lap_names(ctx))}")
        return problems


def pq_rows(path: str) -> int:
    """Rows in a Parquet file, from its footer."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows
