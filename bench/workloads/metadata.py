"""``count`` and ``min_max``: aggregates a table's metadata can answer, through the API and SQL.

Three laps per run (time = their sum), each on a table that needs no merge:

* ``append:all``: the whole append table (``append``'s, all input rows in one commit);
* ``append:partition``: one partition of it (``dt = D``);
* ``pk:compacted``: the primary-key table after the three upsert commits and a full compaction
  (untimed; systems without compaction use the table as it is, whose rows are the same).

``count`` is ``count(*)``, ``min_max`` is ``min(id), max(id)``. Each system uses the cheapest way
it offers: paimon-lab ``Table.count()`` / ``Table.min_max()`` (manifests and file statistics),
delta-rs the Delta log's ``num_records`` and min/max statistics (``get_add_actions``), the floor
``pyarrow.dataset`` ``count_rows`` (Parquet footers) and a read of the column, pypaimon a read of
the column (it has no count). The ``_sql`` variants run the same through ``paimon_lab.sql``
(``SELECT count(*) FROM t WHERE dt = 'D'``) in one session set up untimed, and check that every
query was answered from metadata. The model is pyarrow over the input rows.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc

from .. import data
from ..systems import LAB, TABLE_ID, Cond, PyPaimonRust, PyPaimonRustSql, filter_sql
from . import Context, Workload, register
from ._tables import _build_once, fresh_copy, pk_final, shared_append_table, shared_pk_table


def compacted_pk_table(ctx: Context, system) -> str:
    """Warehouse of the system's primary-key table after the upsert commits and a full compaction
    (the uncompacted table for a system that cannot compact)."""
    source = shared_pk_table(ctx, system)
    if system.lacks("compact") is not None:
        return source

    def build(wh):
        fresh_copy(ctx, system, source, wh)
        system.compact(system.open(wh))

    return _build_once(os.path.join(ctx.shared_dir, f"pkc-{ctx.rows}"), build)


def _partition(ctx: Context) -> str:
    return min(pc.unique(ctx.data.column("dt")).to_pylist())


def queries(ctx: Context) -> list[tuple[str, str, list[Cond]]]:
    """(label, table kind, conditions) of the three laps."""
    return [("append:all", "append", []), ("append:partition", "append", [Cond("dt", "=", _partition(ctx))]),
            ("pk:compacted", "pk", [])]


class _MetadataWorkload(Workload):
    needs_setup = True
    summary = "sum"
    # three metadata answers (one of them the first, cold plan of the PK table) < half of one full scan
    workload_targets = {"read": 0.5}
    column: str | None = None  # min_max's column; None: count

    def _tables(self, ctx: Context, system) -> dict[str, str]:
        return {"append": shared_append_table(ctx, system), "pk": compacted_pk_table(ctx, system)}

    def setup(self, ctx: Context, system):
        self._tables(ctx, system)

    def prepare(self, ctx: Context, system):
        return {kind: system.open(wh) for kind, wh in self._tables(ctx, system).items()}

    def answer(self, system, table, conds):
        if self.column is None:
            return (system.count(table, conds),)
        return tuple(system.min_max(table, self.column, conds))

    def run(self, ctx: Context, system, tables):
        out = []
        for label, kind, conds in queries(ctx):
            with ctx.lap(label):
                got = self.answer(system, tables[kind], conds)
            out.append((label, got))
        return out

    def _table(self, rows) -> pa.Table:
        names = ["count"] if self.column is None else ["min", "max"]
        return pa.table({"label": [label for label, _ in rows],
                         **{n: pa.array([v[i] for _, v in rows], pa.int64()) for i, n in enumerate(names)}})

    def expected(self, ctx: Context) -> data.Fingerprint:
        sources = {"append": ctx.data, "pk": pk_final(ctx)}
        rows = []
        for label, kind, conds in queries(ctx):
            source = sources[kind]
            for c in conds:
                source = source.filter(c.arrow())
            if self.column is None:
                rows.append((label, (source.num_rows,)))
            else:
                mm = pc.min_max(source.column(self.column))
                rows.append((label, (mm["min"].as_py(), mm["max"].as_py())))
        return data.fingerprint(self._table(rows))

    def verify(self, ctx: Context, system, tables, result):
        return {system.name: data.fingerprint(self._table(result))}


@register
class Count(_MetadataWorkload):
    name = "count"
    description = "count(*) of the append table, of one partition, of the compacted primary-key table; time = sum"
    order = 62
    requires = ("count",)
    targets = {PyPaimonRust.name: 1.0}


@register
class MinMax(_MetadataWorkload):
    name = "min_max"
    description = ("min(id), max(id) of the append table, of one partition, of the compacted primary-key "
                   "table; time = sum")
    order = 64
    requires = ("min_max",)
    targets = {PyPaimonRust.name: 1.0}
    column = "id"


class _SqlMixin:
    """The same laps through SQL in one session per run (set up and primed untimed): paimon-lab's
    :class:`paimon_lab.sql.Session`, whose answers must come from metadata, and pypaimon-rust's
    DataFusion."""

    systems = (LAB, PyPaimonRustSql.name)
    requires = ("sql",)
    targets = {PyPaimonRustSql.name: 1.0}

    def prepare(self, ctx: Context, system):
        return system.sql_session(self._tables(ctx, system))

    def run(self, ctx: Context, system, session):
        out = []
        select = "count(*)" if self.column is None else f"min({self.column}), max({self.column})"
        self.metadata_only = True
        for label, kind, conds in queries(ctx):
            where = f" WHERE {filter_sql(conds)}" if conds else ""
            with ctx.lap(label):
                got = system.sql(session, f"SELECT {select} FROM {kind}.{TABLE_ID}{where}")
            if system.name == LAB:
                self.metadata_only &= all(s.metadata for s in session.last_scans)
            out.append((label, tuple(got.to_pylist()[0].values())))
        return out

    def check(self, ctx, system, session, result):
        return [] if self.metadata_only else ["a query was not answered from metadata"]


@register
class CountSql(_SqlMixin, Count):
    name = "count_sql"
    description = "count's 3 laps through SQL (SELECT count(*) FROM t [WHERE dt = D]): paimon-lab and pypaimon-rust's DataFusion; time = sum"
    order = 63


@register
class MinMaxSql(_SqlMixin, MinMax):
    requires = ("sql", "min_max")  # pypaimon-rust SQL's min/max is unreliable (bench/pypaimonrust.py)
    targets = {}
    name = "min_max_sql"
    description = "min_max's 3 laps through SQL (SELECT min(id), max(id) FROM t ...): paimon-lab (pypaimon-rust's DataFusion n/a: wrong answers); time = sum"
    order = 65
