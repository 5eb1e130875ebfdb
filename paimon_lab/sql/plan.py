"""Query planning: CTEs read once inlined, table names resolved (``resolve``) to relations and
views expanded as subqueries, WHERE conjuncts copied into the derived tables they filter, and
the projection, filters and limits pushed into the reads; the result is a :class:`Prepared`
query, whose DuckDB SQL runs over the Arrow tables read."""

from __future__ import annotations

import copy
import datetime as dt
from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from paimon_lab.core.predicate import Predicate, predicate_of
from paimon_lab.sql.catalogs import Scope
from paimon_lab.sql.duck import EXTERNAL_ACCESS
from paimon_lab.sql.prepared import Prepared, RelInfo
from paimon_lab.sql.relations import Relation
from paimon_lab.sql.resolve import lookup, view_ast
from paimon_lab.sql.rewrite import PLACEHOLDER, Rewritten
from paimon_lab.sql.timestamp_text import timestamp_strings

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext


def _from_sources(select: exp.Select) -> list[tuple[exp.Expression, str, str]]:
    """(source expression, join side, join kind) for FROM and each JOIN of a SELECT."""
    out = []
    frm = select.args.get("from") or select.args.get("from_")
    if frm is not None:
        out.append((frm.this, "", ""))
        for extra in frm.expressions or []:
            out.append((extra, "", ""))
    for j in select.args.get("joins") or []:
        out.append((j.this, (j.side or "").upper(), (j.kind or "").upper()))
    return out


# the node types of a condition that may become an engine predicate
PUSHABLE = (exp.Column, exp.Literal, exp.Boolean, exp.Null, exp.Paren, exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ,
           exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.In, exp.Between, exp.Like, exp.Neg, exp.Cast,
           exp.Identifier, exp.DataType, exp.Tuple, exp.Date, exp.TsOrDsToDate, exp.DataTypeParam, exp.Var)


def utc_session(ctx: SessionContext) -> bool:
    """Whether the session's zone is UTC all year: only then may a predicate read a TIMESTAMP_LTZ
    literal, which the engine reads in UTC (DuckDB, in the session's zone, filters otherwise)."""
    zone = ctx.local_tz()
    return all(zone.utcoffset(dt.datetime(2000, m, 1)) == dt.timedelta(0) for m in (1, 7))


class Planner:
    """Resolves the table names of a query in a context and plans the reads."""

    def __init__(self, ctx: SessionContext, scope: Scope, rw: Rewritten,
                 bindings: dict[str, Relation] | None = None, depth: int = 0):
        self.ctx = ctx
        self.scope = scope
        self.rw = rw
        self.bindings = {k.lower(): v for k, v in (bindings or {}).items()}
        self.depth = depth
        self.rels: list[RelInfo] = []

    def prepare(self, ast: exp.Expression, counter: list[int] | None = None) -> Prepared:
        ast = copy.deepcopy(ast)
        self._counter = counter if counter is not None else [0]
        _inline_ctes(ast)
        _flink_unix_timestamp(ast, self.rw)
        ast = self._resolve(ast)
        timestamp_strings(ast, self._column_precision)
        self._push_into_derived(ast)
        self._analyze(ast)
        prepared = Prepared(ast, self.rels, self.rw)
        prepared.external_access = (self.ctx.setting(EXTERNAL_ACCESS, "false") or "").strip().lower() == "true"
        return prepared

    def _column_precision(self, col: exp.Column) -> tuple[str, int] | None:
        """(DuckDB type, precision) of a TIMESTAMP / TIMESTAMP_LTZ column of the statement's
        Paimon tables (None: not one, or the name is ambiguous)."""
        found = set()
        for r in self.rels:
            schema = getattr(getattr(r.relation, "table", None), "schema", None)
            if (col.table and col.table != r.alias) or schema is None or col.name not in schema.field_names:
                continue
            t = schema.field(col.name).type
            if t.root == "TIMESTAMP_LTZ":
                found.add(("TIMESTAMP WITH TIME ZONE", t.precision))
            elif t.root == "TIMESTAMP":
                unit = "TIMESTAMP_S" if t.precision == 0 else "TIMESTAMP_MS" if t.precision <= 3 else \
                    "TIMESTAMP" if t.precision <= 6 else "TIMESTAMP_NS"
                found.add((unit, t.precision))
            else:
                found.add(None)
        return found.pop() if len(found) == 1 else None

    # ------------------------------------------------------------------ name resolution
    def _resolve(self, ast: exp.Expression) -> exp.Expression:
        ctes = {c.alias_or_name.lower() for c in ast.find_all(exp.CTE)}
        for node in list(ast.find_all(exp.Table)):
            if not isinstance(node.this, exp.Identifier):
                continue
            parts = [p.name for p in node.parts]
            options: dict[str, str] = {}
            if len(parts) == 1 and parts[0].startswith(PLACEHOLDER) and parts[0] in self.rw.refs:
                ref = self.rw.refs[parts[0]]
                parts, options = list(ref.parts), dict(ref.options)
            elif len(parts) == 1 and parts[0].lower() in ctes:
                continue
            if len(parts) == 1 and parts[0].lower() in self.bindings:
                target = self.bindings[parts[0].lower()]
            else:
                version = node.args.get("version")
                target = lookup(self.ctx, parts, self.scope, options=options, version=version,
                                             error=lambda msg, n=node: self.rw.node_error(msg, n))
            alias_node = node.args.get("alias")
            alias = alias_node.name if alias_node is not None and alias_node.name else parts[-1]
            if isinstance(target, Relation):
                idx = self._counter[0]
                self._counter[0] += 1
                new = exp.Table(this=exp.to_identifier(f"__t{idx}"))
                if alias_node is not None and alias_node.name:
                    new.set("alias", alias_node.copy())
                else:
                    new.set("alias", exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
                node.replace(new)
                self.rels.append(RelInfo(idx, target, alias, new))
            else:  # a view: (query text, context) -> expand as a subquery
                if self.depth > 20:
                    raise self.rw.node_error("Views nest too deeply (a view refers to itself?)", node)
                sub = view_ast(target, error=lambda msg, n=node: self.rw.node_error(msg, n))
                inner = Planner(self.ctx, target.scope, sub[1], depth=self.depth + 1)
                inner._counter = self._counter
                sub_ast = inner._resolve(copy.deepcopy(sub[0]))
                self.rels.extend(inner.rels)
                alias_expr = alias_node.copy() if alias_node is not None and alias_node.name else \
                    exp.TableAlias(this=exp.to_identifier(alias, quoted=True))
                if target.columns:
                    alias_expr.set("columns", [exp.to_identifier(c, quoted=True) for c in target.columns])
                node.replace(exp.Subquery(this=sub_ast, alias=alias_expr))
        return ast

    # ------------------------------------------------------------------ pushdown
    def _analyze(self, ast: exp.Expression) -> None:
        by_node = {id(r.node): r for r in self.rels}
        if not by_node:
            return
        by_alias: dict[str, list[RelInfo]] = {}
        for r in self.rels:
            by_alias.setdefault(r.alias.lower(), []).append(r)

        def need(r: RelInfo, name: str | None) -> None:
            if r.columns is None:
                return
            if name is None:
                r.columns = None
                return
            real = r.column_map().get(name.lower())
            if real is not None:
                r.columns.add(real)

        def unqualified(name: str) -> None:
            for r in self.rels:
                if name.lower() in r.column_map():
                    need(r, name)

        for col in ast.find_all(exp.Column):
            qual = col.table
            if isinstance(col.this, exp.Star):
                if self._star_prunable(col.find_ancestor(exp.Select)):
                    continue
                for r in by_alias.get(qual.lower(), []) if qual else self.rels:
                    need(r, None)
                continue
            if qual and qual.lower() in by_alias:
                for r in by_alias[qual.lower()]:
                    need(r, col.name)
            elif qual:  # struct field access (col.field) or an outer alias: be generous
                for part in col.parts:
                    unqualified(part.name)
            else:
                unqualified(col.name)
        for star in ast.find_all(exp.Star):
            if isinstance(star.parent, (exp.Column, exp.Count)):
                continue
            select = star.find_ancestor(exp.Select)
            if select is None:
                for r in self.rels:
                    need(r, None)
                continue
            if self._star_prunable(select):
                continue
            for src, _, _ in _from_sources(select):
                if id(src) in by_node:
                    need(by_node[id(src)], None)
        if any(type(n).__name__ == "Columns" for n in ast.walk()):  # COLUMNS('regex') picks by pattern
            for r in self.rels:
                need(r, None)
        for join in ast.find_all(exp.Join):
            for ident in join.args.get("using") or []:
                unqualified(ident.name)
            if (join.method or "").upper() == "NATURAL":
                for r in self.rels:
                    need(r, None)
        for select in ast.find_all(exp.Select):
            self._push_filters(select, by_node)

    def _star_prunable(self, select: exp.Select | None) -> bool:
        """Whether a ``*`` in ``select`` may read fewer columns than its sources have: the select
        is a derived table (a view, a subquery in FROM) whose consumer names every column it
        uses, and nothing depends on the number or order of its columns."""
        if select is None or not isinstance(select.parent, exp.Subquery):
            return False
        sub = select.parent
        if not isinstance(sub.parent, (exp.From, exp.Join)):
            return False
        alias = sub.args.get("alias")
        if alias is not None and alias.args.get("columns"):
            return False  # columns renamed by position
        if select.args.get("distinct") or select.args.get("group") or select.args.get("having"):
            return False  # DISTINCT / GROUP BY over the star's columns
        if any(p.find(exp.AggFunc, exp.Window) for p in select.expressions):
            return False
        outer = sub.parent.parent
        if not isinstance(outer, exp.Select):
            return False
        for j in outer.args.get("joins") or []:
            if (j.method or "").upper() == "NATURAL":
                return False
        name = sub.alias_or_name.lower()
        for node in outer.walk():
            if isinstance(node, exp.Column) and not node.table and node.name.lower() == name:
                return False  # the alias used as a value: the whole row (DuckDB)
            if (isinstance(node, exp.Anonymous) and str(node.this).upper() == "COLUMNS") or \
                    type(node).__name__ == "Columns":
                return False  # columns picked by pattern
        for p in outer.expressions:
            star = isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star)
                                               and (p.table or "").lower() in ("", name))
            if star:  # the consumer passes the columns on: prunable only if it is
                return self._star_prunable(outer)
        return True

    # ------------------------------------------------------------------ filters into derived tables
    def _push_into_derived(self, ast: exp.Expression) -> None:
        """Copy WHERE conjuncts of a select into the views / subqueries / inlined CTEs it reads
        (and through them down to the table reads), where that cannot change the result: the
        derived table has no LIMIT / OFFSET, window function, QUALIFY, DISTINCT ON, and either no
        aggregation or a filter on its GROUP BY columns only. The conjunct stays where it was."""
        by_node = {id(r.node): r for r in self.rels}
        for select in list(ast.find_all(exp.Select)):
            where = select.args.get("where")
            if where is None:
                continue
            direct = _direct_sources(select)
            if not any(isinstance(src, exp.Subquery) and not nullable for src, nullable in direct):
                continue
            names = {id(src): self._source_columns(src, by_node) for src, _ in direct}
            conjuncts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
            for conj in conjuncts:
                self._push_conjunct(conj, direct, names)

    def _push_conjunct(self, conj: exp.Expression, direct, names) -> None:
        if conj.find(exp.Select, exp.Subquery, exp.AggFunc, exp.Window, exp.Placeholder, exp.Parameter):
            return
        for node in conj.walk():
            if not isinstance(node, PUSHABLE):
                return
        cols = list(conj.find_all(exp.Column))
        if not cols:
            return
        target = None
        for col in cols:
            if col.args.get("db") or col.args.get("catalog") or isinstance(col.this, exp.Star):
                return
            if col.table:
                cands = [src for src, _ in direct if src.alias_or_name.lower() == col.table.lower()]
            else:
                if any(names[id(src)] is None for src, _ in direct):
                    return
                cands = [src for src, _ in direct if col.name.lower() in {n.lower() for n in names[id(src)]}]
            if len(cands) != 1 or (target is not None and cands[0] is not target):
                return
            target = cands[0]
        if not isinstance(target, exp.Subquery) or {id(s): n for s, n in direct}[id(target)]:
            return
        out = names[id(target)]
        if out is None:
            return
        lowered = [n.lower() for n in out]
        template = conj.copy()
        for col in list(template.find_all(exp.Column)):
            pos = [i for i, n in enumerate(lowered) if n == col.name.lower()]
            if len(pos) != 1:
                return
            col.replace(exp.column(f"__pos{pos[0]}"))
        _push_positional(target.this, template, self)

    def _source_columns(self, src: exp.Expression, by_node: dict[int, RelInfo]) -> list[str] | None:
        """The column names a FROM source gives, or None if not known."""
        rel = by_node.get(id(src))
        if rel is not None:
            return list(rel.relation.schema.names)
        if isinstance(src, exp.Subquery):
            alias = src.args.get("alias")
            if alias is not None and alias.args.get("columns"):
                return [c.name for c in alias.args["columns"]]
            outs = self._query_outputs(src.this, by_node)
            return None if outs is None else [n for n, _ in outs]
        return None

    def _query_outputs(self, query: exp.Expression, by_node=None) -> list[tuple[str, exp.Expression]] | None:
        """(name, expression in the select's scope) of each output column of a query."""
        if by_node is None:
            by_node = {id(r.node): r for r in self.rels}
        if isinstance(query, exp.Subquery):
            return self._query_outputs(query.this, by_node)
        if isinstance(query, exp.SetOperation):
            return self._query_outputs(query.this, by_node)
        if not isinstance(query, exp.Select):
            return None
        out: list[tuple[str, exp.Expression]] = []
        for proj in query.expressions:
            star = proj if isinstance(proj, exp.Star) else proj.this if (
                isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star)) else None
            if star is not None:
                if any(star.args.get(k) for k in ("except_", "replace", "rename", "ilike")):
                    return None
                if any(j.args.get("using") or (j.method or "").upper() == "NATURAL"
                       for j in query.args.get("joins") or []):
                    return None
                qual = proj.table.lower() if isinstance(proj, exp.Column) else ""
                for src, _, kind in _from_sources(query):
                    if kind in ("SEMI", "ANTI"):
                        continue
                    alias = src.alias_or_name
                    if qual and alias.lower() != qual:
                        continue
                    names = self._source_columns(src, by_node)
                    if names is None or not alias:
                        return None
                    for n in names:
                        out.append((n, exp.column(exp.to_identifier(n, quoted=True),
                                                  table=exp.to_identifier(alias, quoted=True))))
                continue
            name = proj.alias_or_name
            if not name:
                return None
            out.append((name, proj.this if isinstance(proj, exp.Alias) else proj))
        return out

    def _push_filters(self, select: exp.Select, by_node: dict[int, RelInfo]) -> None:
        direct = [(by_node.get(id(src)), nullable) for src, nullable in _direct_sources(select)]
        if not direct:
            return
        where = select.args.get("where")
        conjuncts = list(where.this.flatten()) if where is not None and isinstance(where.this, exp.And) else (
            [where.this] if where is not None else [])
        has_other_sources = any(r is None for r, _ in direct)
        for conj in conjuncts:
            target = self._conjunct_target(conj, direct, has_other_sources)
            if target is None:
                continue
            pred = self._to_predicate(conj, target)
            if pred is None:
                continue
            target.predicates.append(pred)
        # LIMIT straight into a single-table read
        limit = select.args.get("limit")
        if limit is not None and not conjuncts and len(direct) == 1 and direct[0][0] is not None and \
                not any(select.args.get(k) for k in ("group", "having", "order", "distinct", "qualify")) and \
                not select.find(exp.AggFunc, exp.Window) and not select.args.get("joins"):
            n = _int_literal(limit.expression if isinstance(limit, exp.Limit) else None)
            offset = select.args.get("offset")
            off = _int_literal(offset.expression) if offset is not None else 0
            if n is not None and off is not None:
                direct[0][0].limit = n + off

    def _conjunct_target(self, conj: exp.Expression, direct, has_other_sources: bool) -> RelInfo | None:
        if conj.find(exp.Select, exp.Subquery, exp.AggFunc, exp.Window, exp.Placeholder, exp.Parameter):
            return None
        for node in conj.walk():
            if not isinstance(node, PUSHABLE):
                return None
        target: RelInfo | None = None
        for col in conj.find_all(exp.Column):
            qual = col.table
            if qual:
                cands = [r for r, nullable in direct if r is not None and r.alias.lower() == qual.lower()]
            else:
                if has_other_sources:
                    return None
                cands = [r for r, _ in direct if r is not None and col.name.lower() in r.column_map()]
            if len(cands) != 1:
                return None
            if target is not None and cands[0] is not target:
                return None
            target = cands[0]
        if target is None:
            return None
        for r, nullable in direct:
            if r is target and nullable:
                return None
        if not target.relation.pushdown:
            return None
        return target

    def _to_predicate(self, conj: exp.Expression, rel: RelInfo) -> Predicate | None:
        cmap = rel.column_map()
        tree = conj.copy()
        for col in list(tree.find_all(exp.Column)):
            real = cmap.get(col.name.lower())
            if real is None:
                return None
            col.replace(exp.column(exp.to_identifier(real, quoted=True)))
            kind = rel.relation.schema.field(real).type
            if pa.types.is_timestamp(kind) and kind.tz and not utc_session(self.ctx):
                return None  # a predicate reads a TIMESTAMP_LTZ literal in UTC; DuckDB in the session's zone
        try:
            return predicate_of(tree, rel.relation.schema)
        except Exception:  # noqa: BLE001 - a conjunct that is no predicate stays with DuckDB
            return None


def _direct_sources(select: exp.Select) -> list[tuple[exp.Expression, bool]]:
    """The FROM / JOIN sources a WHERE filters, each with whether it is null-supplying (a
    WHERE conjunct on such a source cannot move below the join)."""
    direct: list[tuple[exp.Expression, bool]] = []
    for i, (src, side, kind) in enumerate(_from_sources(select)):
        nullable = side in ("LEFT", "FULL") and i > 0
        if side in ("RIGHT", "FULL"):
            direct = [(r, True) for r, _ in direct]
        if kind in ("SEMI", "ANTI"):
            continue
        direct.append((src, nullable))
    return direct


def _filterable(select: exp.Select, exprs: list[exp.Expression]) -> bool:
    """Whether a filter on output expressions ``exprs`` of ``select`` may go into its WHERE."""
    if any(select.args.get(k) for k in ("limit", "offset", "qualify", "connect", "sample")):
        return False
    distinct = select.args.get("distinct")
    if distinct is not None and distinct.args.get("on"):
        return False
    if any(p.find(exp.Window) for p in select.expressions):
        return False
    for e in exprs:
        if not isinstance(e, exp.Column) or isinstance(e.this, exp.Star) or e.find(exp.Window, exp.AggFunc):
            return False
    group = select.args.get("group")
    if group is not None:
        if any(group.args.get(k) for k in ("grouping_sets", "cube", "rollup", "all", "totals")):
            return False
        keys = {(k.name.lower(), (k.table or "").lower()) for k in group.expressions if isinstance(k, exp.Column)}
        return all((e.name.lower(), (e.table or "").lower()) in keys for e in exprs)
    # a global aggregate: a filter below it changes the one row it gives
    return not (select.args.get("having") or any(p.find(exp.AggFunc) for p in select.expressions))


def _push_positional(query: exp.Expression, template: exp.Expression, planner: Planner) -> None:
    """Add ``template`` (columns named ``__posN`` = output column N) to the WHERE of ``query``
    (every branch of a set operation)."""
    if isinstance(query, exp.Subquery):
        _push_positional(query.this, template, planner)
        return
    if isinstance(query, exp.SetOperation):
        if any(query.args.get(k) for k in ("limit", "offset")):
            return
        _push_positional(query.this, template, planner)
        _push_positional(query.expression, template, planner)
        return
    if not isinstance(query, exp.Select):
        return
    outs = planner._query_outputs(query)
    if outs is None:
        return
    cols = list(template.find_all(exp.Column))
    try:
        exprs = [outs[int(c.name[len("__pos"):])][1] for c in cols]
    except (IndexError, ValueError):
        return
    if not _filterable(query, exprs):
        return
    cond = template.copy()
    for col, e in zip(list(cond.find_all(exp.Column)), exprs):
        col.replace(e.copy())
    query.where(cond, copy=False)


def _inline_ctes(ast: exp.Expression) -> None:
    """Replace each CTE that is read once by a subquery in its place, so filters and column
    pruning reach into it like into any derived table."""
    ctes = list(ast.find_all(exp.CTE))
    counts: dict[str, int] = {}
    for c in ctes:
        counts[c.alias_or_name.lower()] = counts.get(c.alias_or_name.lower(), 0) + 1
    for with_ in list(ast.find_all(exp.With)):
        if with_.args.get("recursive") or with_.parent is None:
            continue
        scope = with_.parent
        for cte in list(with_.expressions):
            name = cte.alias_or_name
            if not name or counts.get(name.lower()) != 1 or cte.args.get("materialized") is not None:
                continue
            refs = [t for t in scope.find_all(exp.Table) if isinstance(t.this, exp.Identifier)
                    and not t.args.get("db") and not t.args.get("catalog") and t.name.lower() == name.lower()]
            if len(refs) != 1:
                continue
            ref = refs[0]
            if any(ref.args.get(k) for k in ("version", "pivots", "hints", "sample", "joins", "laterals")):
                continue
            home, node = None, ref
            while node is not None and node is not with_:
                if isinstance(node, exp.CTE) and node.parent is with_:
                    home = node
                    break
                node = node.parent
            siblings = list(with_.expressions)
            if home is not None and siblings.index(home) <= siblings.index(cte):
                continue  # refers to an earlier (or the same) CTE: not this name
            cte_alias = cte.args.get("alias")
            ref_alias = ref.args.get("alias")
            alias = ref_alias.copy() if ref_alias is not None and ref_alias.name else \
                exp.TableAlias(this=exp.to_identifier(name))
            if cte_alias is not None and cte_alias.args.get("columns"):
                if alias.args.get("columns"):
                    continue
                alias.set("columns", [c.copy() for c in cte_alias.args["columns"]])
            body = cte.this
            cte.pop()
            ref.replace(exp.Subquery(this=body, alias=alias))
        if not with_.expressions:
            with_.pop()


def _int_literal(node) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    return None


def _flink_unix_timestamp(ast: exp.Expression, rw: Rewritten) -> None:
    """Flink's UNIX_TIMESTAMP as Flink has it, not as sqlglot reads Spark's: whole seconds as a
    BIGINT, a string read in the session time zone, and without an argument the current time
    (sqlglot parses a time from it); and Flink's TO_TIMESTAMP_LTZ(epoch, 0 | 3)."""
    for node in list(ast.find_all(exp.StrToUnix)):
        if isinstance(node.this, exp.CurrentTimestamp):
            value = exp.TimeToUnix(this=exp.CurrentTimestamp())
        else:  # STRPTIME gives a TIMESTAMP; as TIMESTAMP_LTZ it is a time in the session's zone
            parsed = exp.StrToTime(this=node.this.copy(), format=node.args["format"].copy())
            value = exp.TimeToUnix(this=exp.Cast(this=parsed, to=exp.DataType.build("TIMESTAMPTZ")))
        node.replace(exp.Cast(this=exp.Floor(this=value), to=exp.DataType.build("BIGINT")))
    for node in list(ast.find_all(exp.Anonymous)):
        if str(node.this).upper() != "TO_TIMESTAMP_LTZ":
            continue
        args = node.expressions
        precision = args[1] if len(args) == 2 else exp.Literal.number(3) if len(args) == 1 else None
        if precision is None or not (isinstance(precision, exp.Literal) and precision.this in ("0", "3")) or \
                (isinstance(args[0], exp.Literal) and args[0].is_string):
            raise rw.node_error("TO_TIMESTAMP_LTZ takes an epoch number and a precision of 0 (seconds) or "
                                "3 (milliseconds): TO_TIMESTAMP_LTZ(epoch, 0 | 3)", node)
        scale = 1_000_000 if precision.this == "0" else 1000
        epoch = exp.Cast(this=args[0].copy(), to=exp.DataType.build("DECIMAL(38, 6)"))
        micros = exp.Cast(this=exp.Mul(this=epoch, expression=exp.Literal.number(scale)),
                          to=exp.DataType.build("BIGINT"))
        ltz = exp.Anonymous(this="TIMEZONE", expressions=[
            exp.Literal.string("UTC"), exp.Anonymous(this="MAKE_TIMESTAMP", expressions=[micros])])
        ltz.meta["timestamp"] = ("TIMESTAMP WITH TIME ZONE", 3)  # Flink's TO_TIMESTAMP_LTZ is LTZ(3)
        node.replace(ltz)
