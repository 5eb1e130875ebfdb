"""Tables and expected results several workloads share (not a workload module: it starts with '_').

* :func:`upsert_commits`: the three commits of the primary-key workloads: the same N keys (the
  input rows' ``id`` and ``dt``) each time, with new ``value`` and ``name`` columns, so a reader
  that returns a stale version of any row fails verification.
* :func:`shared_pk_table` / :func:`shared_append_table`: a table built once per system and
  invocation (in ``ctx.shared_dir``), which read-only workloads open in place and mutating ones
  copy (:func:`fresh_copy`).
* The *model* of every expected result is plain pyarrow over the input rows (the last commit's
  rows, filtered with ``pyarrow.compute``): no table format involved.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import data
from ..systems import System
from . import Context

NUM_COMMITS = 3


def _commit_rows(rows: pa.Table, k: int, i: int = 0) -> pa.Table:
    """Batch ``i`` of commit ``k``: the input batch with ``value`` and ``name`` drawn from the seed
    ``batch_seed(SEED + 1000 + k, i)``."""
    rng = np.random.default_rng(data.batch_seed(data.SEED + 1000 + k, i))
    n = rows.num_rows
    values = pa.array(rng.standard_normal(n) * 1000.0)
    names = pc.binary_join_element_wise(f"v{k}-", pc.cast(pa.array(rng.integers(0, 10 ** 6, n)), pa.string()), "")
    return rows.set_column(2, "value", values).set_column(1, "name", names)


def upsert_commits(ctx: Context) -> list[pa.Table]:
    """Commit k (0-based) holds every input key with values drawn from seed ``SEED + 1000 + k``."""
    if ctx.streamed:
        raise NotImplementedError(f"{ctx.rows:,} rows are streamed: use commit_batches")
    return [_commit_rows(ctx.data, k) for k in range(NUM_COMMITS)]


def commit_batches(ctx: Context, k: int) -> Iterator[pa.Table]:
    """Commit ``k`` one input batch at a time (streamed data sets; the same rows as
    :func:`upsert_commits` when there is one batch)."""
    for i, rows in enumerate(data.read_batches(ctx.data_path)):
        yield _commit_rows(rows, k, i)


def pk_final(ctx: Context) -> pa.Table:
    """The model of the primary-key table after the commits: the last commit's rows."""
    return upsert_commits(ctx)[-1]


def pk_final_fingerprint(ctx: Context) -> data.Fingerprint:
    """The fingerprint of :func:`pk_final`; for streamed data sets made batch by batch and kept
    next to the data file (every run's verification needs it)."""
    if not ctx.streamed:
        return data.fingerprint(pk_final(ctx))
    path = f"{ctx.data_path}.pk_final.json"
    if not os.path.exists(path):
        fp = data.fingerprint_pieces(commit_batches(ctx, NUM_COMMITS - 1))
        with open(path + ".tmp", "w") as f:
            json.dump(fp.to_json(), f)
        os.replace(path + ".tmp", path)
    with open(path) as f:
        return data.Fingerprint.from_json(json.load(f))


def _build_once(directory: str, build: Callable[[str], None]) -> str:
    """Run ``build(directory)`` unless a completed build is there (marked by a ``_DONE`` file)."""
    done = os.path.join(directory, "_DONE")
    if not os.path.exists(done):
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        build(directory)
        open(done, "w").close()
    return directory


def shared_pk_table(ctx: Context, system: System) -> str:
    """Warehouse of the system's primary-key table after the three upsert commits."""
    def build(wh):
        table = system.create_pk_table(wh, data.SCHEMA, data.PARTITION_KEYS)
        if ctx.streamed:
            for k in range(NUM_COMMITS):
                system.upsert_batches(table, commit_batches(ctx, k))
        else:
            system.build_pk_state(table, upsert_commits(ctx))

    return _build_once(os.path.join(ctx.shared_dir, f"pk-{ctx.rows}"), build)


def adopt_pk_table(ctx: Context, system: System, warehouse: str) -> None:
    """Make a verified copy of a table in the state :func:`shared_pk_table` builds its shared table
    (unless it exists already)."""
    directory = os.path.join(ctx.shared_dir, f"pk-{ctx.rows}")
    if os.path.exists(os.path.join(directory, "_DONE")):
        return
    shutil.rmtree(directory, ignore_errors=True)
    shutil.copytree(warehouse, directory, ignore=shutil.ignore_patterns("_prime"))
    open(os.path.join(directory, "_DONE"), "w").close()


def shared_append_table(ctx: Context, system: System) -> str:
    """Warehouse of the system's append table holding the input rows (one commit, as ``append``)."""
    def build(wh):
        system.write(system.create_append_table(wh, data.SCHEMA, data.PARTITION_KEYS), ctx.data)

    return _build_once(os.path.join(ctx.shared_dir, f"append-{ctx.rows}"), build)


def fresh_copy(ctx: Context, system: System, source: str, dest: str) -> str:
    """A private copy of a shared primary-key table for a run that changes it (untimed).

    Paimon and Delta tables use relative file paths and are copied; an Iceberg table's metadata
    and catalog hold absolute paths, so it is rebuilt in place instead.
    """
    if system.table_format == "iceberg":
        table = system.create_pk_table(dest, data.SCHEMA, data.PARTITION_KEYS)
        system.build_pk_state(table, upsert_commits(ctx))
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("_DONE"))
    return dest


def read_back_all(system: System, warehouse: str, expected: data.Fingerprint,
                  ctx: Context | None = None) -> dict[str, data.Fingerprint]:
    """Fingerprints of the table in ``warehouse`` read by the system itself and, in the warm-up
    (``ctx.cross_check``, or without a ``ctx``), by every other available system of the same
    table format (each in its own interpreter, see :func:`bench.systems.read_back`). A streamed
    data set is read back by the system itself, one partition at a time."""
    from ..systems import read_back, readers_of

    if ctx is not None and ctx.streamed:
        table = system.open(warehouse)
        return {system.name: data.fingerprint_pieces(system.read_partitions(table, "dt", data.DATES))}
    names = readers_of(system) if ctx is None or ctx.cross_check else [system.name]
    return {name: data.fingerprint_like(system.read(system.open(warehouse)) if name == system.name
                                        else read_back(name, warehouse), expected)
            for name in names}
