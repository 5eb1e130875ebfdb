"""``point_filter``: point and range filters with file skipping, on an append and a primary-key table.

Six filtered scans per run, each timed as a lap (the run's time is their sum):

* on the append table of ``append`` (all input rows in one commit) and on the primary-key table
  after the three upsert commits (``pk_read``'s table);
* ``id = K`` (a point: one row), ``id BETWEEN A AND B`` (1% of the key range) and
  ``id = K AND dt = D`` (a point on the whole primary key: partition pruning, and for Paimon
  primary-key tables bucket pruning, can skip all other files).

Each system uses its own filter API: paimon-lab ``to_arrow(filter="id = 12345")``, pypaimon's
predicate builder (``with_filter``), delta-rs ``to_pyarrow_table(filters=[("id", "=", K)])``,
pyiceberg ``scan(row_filter=EqualTo(...))``, the floor ``pyarrow.dataset`` with a filter
expression (row-group statistics pruning). The model of the expected rows is the same filter as
a ``pyarrow.compute`` expression over the input rows (append) or the last commit (pk). Ids are a
shuffled 0..n-1, so every file of the append table spans the whole id range (min/max statistics
cannot skip files there); in the primary-key tables files are sorted by key within a bucket.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .. import data
from ..pypaimonrust import PyPaimonRust, PyPaimonRustSql
from ..systems import LAB, TABLE_ID, Cond, filter_arrow, filter_sql
from . import Context, Workload, register
from ._tables import pk_final, shared_append_table, shared_pk_table


def queries(ctx: Context) -> list[tuple[str, list[Cond]]]:
    n = ctx.rows
    key = n // 2 + 7 if n > 20 else 0
    dts = ctx.data.column("dt").filter(pc.equal(ctx.data.column("id"), key))
    dt = dts[0].as_py()
    lo, hi = n // 3, n // 3 + max(1, n // 100) - 1
    return [("point", [Cond("id", "=", key)]),
            ("range", [Cond("id", "between", (lo, hi))]),
            ("key", [Cond("id", "=", key), Cond("dt", "=", dt)])]


def _tag(result: pa.Table, label: str) -> pa.Table:
    cols = [c for c in data.SCHEMA.names]
    result = result.select(cols) if set(cols) <= set(result.column_names) else result
    return result.append_column("query", pa.array([label] * result.num_rows, pa.string()))


@register
class PointFilter(Workload):
    name = "point_filter"
    description = ("point (id = K), range (id BETWEEN, 1%) and key (id = K AND dt = D) filter scans on the "
                   "append table and on the primary-key table; time = sum of the 6 scans")
    order = 60
    needs_setup = True
    summary = "sum"
    requires = ("read_filtered",)
    targets = {PyPaimonRust.name: 1.0}  # issue #19: selective reads no slower than pypaimon-rust's

    def _tables(self, ctx: Context, system):
        tables = [("append", shared_append_table(ctx, system))]
        if system.lacks("upsert") is None or system.lacks("build_pk_state") is None:
            tables.append(("pk", shared_pk_table(ctx, system)))
        return tables

    def setup(self, ctx: Context, system):
        self._tables(ctx, system)

    def prepare(self, ctx: Context, system):
        return [(kind, system.open(wh)) for kind, wh in self._tables(ctx, system)]

    def run(self, ctx: Context, system, tables):
        out = []
        for kind, table in tables:
            for label, conds in queries(ctx):
                with ctx.lap(f"{kind}:{label}"):
                    result = system.read_filtered(table, conds)
                out.append((f"{kind}:{label}", result))
        return out

    def expected(self, ctx: Context) -> data.Fingerprint:
        pieces = []
        for kind, source in (("append", ctx.data), ("pk", pk_final(ctx))):
            for label, conds in queries(ctx):
                pieces.append(_tag(source.filter(filter_arrow(conds)), f"{kind}:{label}"))
        return data.fingerprint(pa.concat_tables(pieces))

    def verify(self, ctx: Context, system, tables, result):
        pieces = [_tag(r, label) for label, r in result]
        return {system.name: data.fingerprint(pa.concat_tables(pieces, promote_options="permissive"))}

    def check(self, ctx, system, tables, result):
        problems = []
        for label, r in result:
            if label.endswith("point") or label.endswith("key"):
                if r.num_rows != 1:
                    problems.append(f"{label}: {r.num_rows} rows, expected 1")
        return problems


@register
class PointFilterSql(PointFilter):
    """``point_filter`` through SQL: the same six scans as ``SELECT * FROM <kind>.bench.t WHERE
    <filter>`` in one SQL session per run (set up and primed untimed): paimon-lab's
    :class:`paimon_lab.sql.Session` (the filter is pushed into the table read, which applies it
    exactly, so the read's rows are the answer: no DuckDB, see ``paimon_lab/sql/plain.py``) and
    pypaimon-rust's DataFusion ``SQLContext``."""

    name = "point_filter_sql"
    description = ("point_filter's 6 scans through SQL (SELECT * FROM t WHERE ...): paimon-lab and "
                   "pypaimon-rust's DataFusion; time = sum of the 6 scans")
    order = 61
    systems = (LAB, PyPaimonRustSql.name)
    requires = ("sql",)
    targets = {PyPaimonRustSql.name: 1.0}  # issue #19: selective SQL no slower than pypaimon-rust's

    def prepare(self, ctx: Context, system):
        return system.sql_session({kind: wh for kind, wh in self._tables(ctx, system)})

    def run(self, ctx: Context, system, session):
        out = []
        for kind, _ in self._tables(ctx, system):
            for label, conds in queries(ctx):
                with ctx.lap(f"{kind}:{label}"):
                    result = system.sql(session, f"SELECT * FROM {kind}.{TABLE_ID} WHERE {filter_sql(conds)}")
                out.append((f"{kind}:{label}", result))
        return out
