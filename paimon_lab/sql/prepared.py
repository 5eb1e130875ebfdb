"""A planned query: the relations it reads (with the columns, filters and limits pushed into
each read) and the DuckDB SQL over them; executing it reads the relations and runs the SQL."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
from sqlglot import exp

from paimon_lab.core.predicate import And, Predicate
from paimon_lab.errors import PaimonLabError
from paimon_lab.sql import plain
from paimon_lab.sql.duck import connect, duckdb_error, fetch_arrow
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.relations import Relation
from paimon_lab.sql.rewrite import Rewritten


@dataclass
class RelInfo:
    index: int
    relation: Relation
    alias: str
    node: exp.Table
    columns: set[str] | None = field(default_factory=set)  # None: all
    predicates: list[Predicate] = field(default_factory=list)
    limit: int | None = None

    @property
    def name(self) -> str:
        return f"__t{self.index}"

    def column_map(self) -> dict[str, str]:
        return {n.lower(): n for n in self.relation.schema.names}

    @property
    def predicate(self) -> Predicate | None:
        """The conjunction of the predicates pushed into this read."""
        if not self.predicates:
            return None
        return self.predicates[0] if len(self.predicates) == 1 else And(tuple(self.predicates))


@dataclass
class Scan:
    """What one read of a query did (for EXPLAIN and tests)."""

    table: str
    columns: list[str] | None
    filter: str | None
    limit: int | None
    rows: int | None = None
    metadata: bool = False  # answered from the table's metadata, no data file read


class Prepared:
    """A resolved query: DuckDB SQL over registered relations."""

    def __init__(self, ast: exp.Expression, rels: list[RelInfo], rw: Rewritten):
        self.ast = ast
        self.rels = rels
        self.rw = rw
        self.scans: list[Scan] = []
        self.external_access = False

    @property
    def sql(self) -> str:
        return self.ast.sql(dialect="duckdb")

    def read_relations(self, overrides: dict[int, pa.Table] | None = None,
                       pushdown: bool = True) -> dict[str, pa.Table]:
        out = {}
        self.scans = []
        for r in self.rels:
            if overrides and r.index in overrides:
                data = overrides[r.index]
                out[r.name] = data
                continue
            cols = None
            if pushdown and r.columns is not None:
                cmap = r.column_map()
                cols = [n for n in r.relation.schema.names if n in r.columns]
                if not cols and cmap:
                    cols = [r.relation.schema.names[0]]
            pred = limit = None
            if pushdown and r.relation.pushdown:
                pred, limit = r.predicate, r.limit
            try:
                data = r.relation.read(cols, pred, limit)
            except SqlError:
                raise
            except PaimonLabError as e:
                raise self.rw.node_error(f"Cannot read {r.relation.describe()}: {e}", r.node) from e
            self.scans.append(Scan(r.relation.describe(), cols, _pred_text(pred), limit, data.num_rows))
            out[r.name] = data
        return out

    def plain_columns(self) -> list[tuple[str, str]] | None:
        """(output name, column) of each result column when the query is one filtered read whose
        rows are the answer as they are (:mod:`paimon_lab.sql.plain`), else None."""
        return plain.outputs(self.ast, self.rels[0]) if len(self.rels) == 1 else None

    def _aggregate_from_metadata(self, con) -> pa.Table | None:
        """``SELECT count(*) | min(c) | max(c), ... FROM t [WHERE <filter>]`` (count(1) alike, any
        aliases) over one table whose metadata knows the answer (see ``Relation.metadata_count`` and
        ``Relation.metadata_min_max``): the answer, else None."""
        select = self.ast
        if not isinstance(select, exp.Select) or len(self.rels) != 1 or not select.expressions:
            return None
        if any(select.args.get(k) for k in ("joins", "group", "having", "qualify", "distinct", "order",
                                              "limit", "offset", "with", "windows")):
            return None
        (rel,) = self.rels
        wanted = []  # per output column: None for count, else ("min" | "max", column)
        for item in select.expressions:
            agg = item.this if isinstance(item, exp.Alias) else item
            if isinstance(agg, exp.Count) and agg.args.get("big_int") is not False:
                arg = agg.this
                if not (isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not arg.is_string)):
                    return None
                wanted.append(None)
            elif isinstance(agg, (exp.Min, exp.Max)) and isinstance(agg.this, exp.Column) and \
                    not agg.expressions and agg.this.name.lower() in rel.column_map() and \
                    agg.this.table in ("", rel.alias, rel.node.name):
                wanted.append(("min" if isinstance(agg, exp.Min) else "max", rel.column_map()[agg.this.name.lower()]))
            else:
                return None
        frm = select.args.get("from") or select.args.get("from_")
        if frm is None or frm.expressions or frm.this is not rel.node:
            return None  # the table must be the direct source (not a subquery or view over it)
        where = select.args.get("where")
        conjuncts = list(where.this.flatten()) if where is not None and isinstance(where.this, exp.And) else \
            ([where.this] if where is not None else [])
        if len(rel.predicates) != len(conjuncts) or not rel.relation.pushdown:
            return None  # some condition could not become a table predicate
        columns = sorted({w[1] for w in wanted if w is not None})
        try:
            n = rel.relation.metadata_count(rel.predicate) if None in wanted else None
            bounds = rel.relation.metadata_min_max(columns, rel.predicate) if columns else {}
        except PaimonLabError as e:
            raise self.rw.node_error(f"Cannot read {rel.relation.describe()}: {e}", rel.node) from e
        if (n is None and None in wanted) or bounds is None:
            return None
        # DuckDB names and types the columns: run the query over an empty table, then fill in
        shape = select.copy()
        shape.set("where", None)
        con.register(rel.name, rel.relation.schema.empty_table())
        empty = fetch_arrow(con, shape.sql(dialect="duckdb"))
        values = [n if w is None else getattr(bounds[w[1]], w[0]) for w in wanted]
        self.scans = [Scan(rel.relation.describe(), columns, _pred_text(rel.predicate), None, n, metadata=True)]
        return pa.table([pa.array([v], f.type) for v, f in zip(values, empty.schema)], schema=empty.schema)

    def execute(self, overrides: dict[int, pa.Table] | None = None) -> pa.Table:
        if not overrides:
            columns = self.plain_columns()
            if columns is not None:  # one filtered read is the whole answer
                return plain.answer(self.read_relations()[self.rels[0].name], columns)
        import duckdb  # heavy, imported when a query runs

        sql = self.sql
        if not overrides:
            con = connect(self.external_access)
            try:
                counted = self._aggregate_from_metadata(con)
            except duckdb.Error as e:
                raise duckdb_error(e, self.rw.original) from None
            finally:
                con.close()
            if counted is not None:
                return counted
        for attempt in (True, False):
            tables = self.read_relations(overrides, pushdown=attempt)
            con = connect(self.external_access)
            try:
                for name, data in tables.items():
                    con.register(name, data)
                return fetch_arrow(con, sql)
            except duckdb.Error as e:
                text = str(e)
                if attempt and ("not found" in text or "does not have a column" in text) and any(
                        r.columns is not None or r.predicates for r in self.rels):
                    continue  # pruned too much: read everything and retry
                raise duckdb_error(e, self.rw.original) from None
            finally:
                con.close()
        raise AssertionError("unreachable")  # pragma: no cover


def _pred_text(pred: Predicate | None) -> str | None:
    return None if pred is None else repr(pred)
