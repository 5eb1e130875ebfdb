"""INSERT, DELETE, UPDATE and MERGE INTO: DuckDB evaluates the expressions, the engine writes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from paimon_lab.operation.row_dml import delete_rows_counted, rewrite_append, update_rows_counted
from paimon_lab.core import types as T
from paimon_lab.errors import PaimonLabError
from paimon_lab.core.predicate import And, Leaf, Or, Predicate, bind, parse_filter
from paimon_lab.sql.catalogs import memory_table
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.format_table import format_insert
from paimon_lab.sql.plan import PUSHABLE, utc_session
from paimon_lab.sql.relations import ArrowRelation, FunctionRelation, PaimonRelation
from paimon_lab.sql.rewrite import PLACEHOLDER, parse, parse_hint_options, rewrite
from paimon_lab.sql.spelling import duck_type
from paimon_lab.sql.writing import cast_rows, cast_values, write_rows

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext, Statement

TARGET = "__target"


# ================================================================================== casting

# ================================================================================== INSERT

def insert(ctx: SessionContext, st: Statement) -> None:
    """INSERT INTO | OVERWRITE [TABLE] t [PARTITION (...)] [(columns)] <query>."""
    ts = st.ts
    overwrite = False
    if ts.accept_kw("OVERWRITE"):
        overwrite = True
    else:
        ts.expect_kw("INTO")
    ts.accept_kw("TABLE")
    parts, tok = ts.qualified_name()
    hints: list = []
    while ts.peek() is not None and ts.peek().kind == "hint":
        hints.append(ts.next())  # checked against the table below
    static: dict[str, Any] = {}
    dynamic_parts: list[str] = []
    if ts.accept_kw("PARTITION"):
        ts.expect_op("(")
        while True:
            key = ts.identifier("a partition column")
            if ts.accept_op("="):
                t = ts.peek()
                if t is not None and t.is_kw("NULL"):
                    ts.next()
                    static[key] = None
                else:
                    static[key] = ts.literal("a partition value")
            else:
                dynamic_parts.append(key)
            if ts.accept_op(")"):
                break
            ts.expect_op(",")
    columns = None
    if ts.peek() is not None and ts.peek().is_op("(") and not (
            ts.peek(1) is not None and ts.peek(1).upper in ("SELECT", "WITH", "VALUES")):
        ts.next()
        columns = [ts.identifier("a column name")]
        while ts.accept_op(","):
            columns.append(ts.identifier("a column name"))
        ts.expect_op(")")
    if ts.at_end():
        raise ts.error("Expected a query (SELECT ... or VALUES ...) after the INSERT target")
    query_tok = ts.peek()
    err = ts.error_at(tok)
    cat, db, name = ctx.qualify(parts, error=err)
    ctx.feedback.target = f"{cat}.{db}.{name}"
    entry = ctx.catalog_entry(cat, err)
    rw = rewrite(ts.text, ts.tokens, ts.i)
    ast = parse(rw)
    prepared = ctx.prepare_query(rw, ast)

    # sinks of the in-memory catalog
    mt = memory_table(ctx.temporary, entry, cat, db, name)
    if mt is None and entry.kind == "memory":
        raise err(f"Table '{cat}.{db}.{name}' does not exist")
    if mt is not None:
        if mt.kind not in ("print", "blackhole"):
            raise err(f"Cannot write to '{cat}.{db}.{name}': it is a {mt.kind} table")
        for data in _source_batches(ctx, prepared):
            rows = _shape(data, mt.fields, columns, static, ts, query_tok, f"{cat}.{db}.{name}")
            ctx.feedback.add_rows(rows.num_rows)
            if mt.kind == "print":
                print(rows.to_pandas().to_string(index=False))
        return None

    table = ctx.get_table([cat, db, name], error=err)
    for hint in hints:  # the write sees the table with the hint's options, as Java's copy
        try:
            table = table.copy(parse_hint_options(hint, ts.text) or {})
        except PaimonLabError as e:
            raise ts.error_at(hint)(f"OPTIONS hint on '{cat}.{db}.{name}': {e}") from None
    ttype = table.options.get("type", "table")
    if ttype == "format-table":
        data = prepared.execute()
        rows = _shape(data, list(table.schema.fields), columns, static, ts, query_tok, table.identifier)
        format_insert(table, rows, overwrite, static)
        ctx.feedback.add_rows(rows.num_rows)
        return None
    if ttype in ("object-table", "materialized-table"):
        what = "an object table (CALL sys.refresh_object_table)" if ttype == "object-table" else \
            "a materialized table (ALTER MATERIALIZED TABLE ... REFRESH)"
        raise err(f"'{table.identifier}' is {what}; it cannot be written with INSERT")
    for k in list(static) + dynamic_parts:
        if k not in table.partition_keys:
            raise err(f"'{k}' is not a partition column of {table.identifier}; partition columns are "
                      f"{table.partition_keys}")
    if columns is not None:
        unknown = [c for c in columns if c not in table.schema.field_names]
        if unknown:
            raise err(f"Column(s) {unknown} do not exist in {table.identifier}; columns are "
                      f"{table.schema.field_names}")
    fields = list(table.schema.fields)
    mode: Any = False
    if overwrite:
        mode = {k: v for k, v in static.items()} if static else True
    values = _values_fields(ast, fields, columns, static)
    for data in _source_batches(ctx, prepared, rw, ast, values):
        rows = _shape(data, fields, columns, static, ts, query_tok, table.identifier)
        if mode is False and rows.num_rows == 0:
            continue
        try:
            write_rows(ctx, table, rows, overwrite=mode)
            ctx.feedback.add_rows(rows.num_rows)
        except SqlError:
            raise
        except PaimonLabError as e:
            raise ts.error(f"INSERT INTO {table.identifier}: {e}", tok) from e
    return None


def _values_fields(ast, fields: list[T.DataField], columns, static) -> list[T.DataField] | None:
    """The fields a ``VALUES`` source's columns go to, by position (None for another query, or
    when its width matches no target list: ``_shape`` then says so)."""
    if not isinstance(ast, exp.Values) or not ast.expressions:
        return None
    first = ast.expressions[0]
    width = len(first.expressions) if isinstance(first, exp.Tuple) else 1
    by_name = {f.name: f for f in fields}
    if columns is not None:
        targets = [by_name[c] for c in columns if c in by_name]
    else:
        targets = [f for f in fields if f.name not in static]
        if static and width == len(fields):
            targets = fields
    return targets if len(targets) == width else None


def _source_batches(ctx: SessionContext, prepared, rw=None, ast=None, values: list[T.DataField] | None = None):
    """The query result once, or per checkpoint when it reads a datagen source in streaming mode.
    A ``VALUES`` list whose rows' types DuckDB cannot unify is cast value by value to ``values``."""
    gens = [r for r in prepared.rels if isinstance(r.relation, FunctionRelation) and r.relation.info.get("datagen")]
    interval = ctx.checkpoint_interval()
    if not gens or ctx.batch_mode or interval is None:
        try:
            data = prepared.execute()
        except SqlError as e:
            if values is None:
                raise
            data = cast_values(rw, ast, values, e)
        yield data
        ctx.last_scans = prepared.scans
        return
    rel = gens[0]
    spec = rel.relation.info["datagen"]
    total = ctx.datagen_total(spec)
    rows = spec.generate(total, ctx.seed())
    per = max(1, spec.rows_per_second * interval)
    for start in range(0, total, per):
        yield prepared.execute(overrides={rel.index: rows.slice(start, per)})
    ctx.last_scans = prepared.scans


def _shape(data: pa.Table, fields: list[T.DataField], columns, static, ts, query_tok, ident) -> pa.Table:
    """Match query output to table columns: by position, to the listed columns, or to the columns
    left after static partition values."""
    names = [f.name for f in fields]
    if columns is not None:
        bad = [c for c in columns if c in static]
        if bad:
            raise ts.error(f"Column(s) {bad} are given a static value in PARTITION", query_tok)
        targets = list(columns)
    else:
        targets = [n for n in names if n not in static]
        if static and data.num_columns == len(names) and len(targets) != len(names):
            targets = names  # the query also yields the partition columns: take them positionally
    if data.num_columns != len(targets):
        raise ts.error(f"INSERT INTO {ident}: the query produces {data.num_columns} column(s) but "
                       f"{len(targets)} are expected ({', '.join(targets)})", query_tok)
    by_name = {t: data.column(i) for i, t in enumerate(targets)}
    present = [n for n in names if n in by_name]
    src = pa.table({f"c{i}": by_name[n] for i, n in enumerate(present)}) if present else pa.table({})
    src_fields = [f for f in fields if f.name in by_name]
    const = {k: v for k, v in static.items() if k not in by_name}
    other = [f for f in fields if f.name not in by_name]
    shaped = cast_rows(src, src_fields + other, const, ts.text) if present or other else src
    return shaped.select(names)


# ================================================================================== DELETE / UPDATE / MERGE

def row_level(ctx: SessionContext, st: Statement) -> None:
    """DELETE FROM, UPDATE and MERGE INTO (parsed whole by sqlglot)."""
    ts = st.ts
    rw = rewrite(ts.text, ts.tokens, 0)
    node = parse(rw)
    if isinstance(node, exp.Delete):
        return _delete(ctx, rw, node)
    if isinstance(node, exp.Update):
        return _update(ctx, rw, node)
    if isinstance(node, exp.Merge):
        return _merge(ctx, rw, node)
    raise SqlError("Unsupported statement", statement=ts.text)


def _target(ctx: SessionContext, rw, node: exp.Table):
    parts = [p.name for p in node.parts]
    if len(parts) == 1 and parts[0].startswith(PLACEHOLDER) and parts[0] in rw.refs:
        parts = rw.refs[parts[0]].parts
    table = ctx.get_table(parts, error=lambda m: rw.node_error(m, node))
    ctx.feedback.target = ".".join(ctx.qualify(parts))
    ttype = table.options.get("type", "table")
    if ttype != "table":
        raise rw.node_error(f"'{table.identifier}' is a {ttype}; row-level changes apply to Paimon tables", node)
    alias = node.alias or parts[-1]
    table.refresh()
    return table, alias


def _target_node(alias: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(TARGET), alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))


def _exact_predicate(ctx: SessionContext, cond: exp.Expression, alias: str, table) -> Predicate | None:
    """``cond`` as an engine predicate when that is exactly equivalent, else None."""
    if cond.find(exp.Select, exp.Subquery, exp.AggFunc, exp.Window):
        return None
    for n in cond.walk():
        if not isinstance(n, PUSHABLE):
            return None
        if isinstance(n, exp.In) and any(isinstance(e, exp.Null) for e in n.expressions):
            return None
    cmap = {n.lower(): n for n in table.schema.field_names}
    tree = cond.copy()
    for col in list(tree.find_all(exp.Column)):
        if col.table and col.table.lower() not in (alias.lower(), table.identifier.split(".")[-1].lower()):
            return None
        real = cmap.get(col.name.lower())
        if real is None:
            return None
        if table.schema.field(real).type.root == "TIMESTAMP_LTZ" and not utc_session(ctx):
            return None
        col.replace(exp.column(exp.to_identifier(real, quoted=True)))
    try:
        return parse_filter(tree.sql(), table.schema.arrow_schema())
    except Exception:
        return None


def _comparable(t: T.DataType) -> bool:
    return not t.is_nested


def identity_predicate(rows: pa.Table, table) -> Predicate | None:
    """A predicate selecting exactly the rows equal to one of ``rows`` (None if there are none)."""
    if rows.num_rows == 0:
        return None
    schema = table.schema.arrow_schema()
    cols = [f.name for f in table.schema.fields if _comparable(f.type)]
    if not cols:
        raise SqlError(f"Cannot identify rows of {table.identifier}: it has no plain columns")
    distinct = rows.select(cols).group_by(cols, use_threads=False).aggregate([]).to_pylist()
    if len(cols) == 1:
        c = cols[0]
        values = tuple(r[c] for r in distinct if r[c] is not None)
        parts: list[Predicate] = []
        if values:
            parts.append(Leaf("in", c, values))
        if any(r[c] is None for r in distinct):
            parts.append(Leaf("is_null", c))
        pred = parts[0] if len(parts) == 1 else Or(tuple(parts))
    else:
        pred = Or(tuple(And(tuple(Leaf("is_null", c) if r[c] is None else Leaf("=", c, (r[c],)) for c in cols))
                        for r in distinct))
        if len(distinct) == 1:
            pred = pred.children[0]
    pred = bind(pred, schema)
    # every row equal on the compared columns must be one of ``rows``
    matched = table.to_arrow(columns=[cols[0]], filter=pred).num_rows
    if matched != rows.num_rows:
        raise SqlError(f"Cannot change exactly the matched rows of {table.identifier}: other rows agree with them "
                       "on every comparable column (an ARRAY/MAP/ROW or NaN value differs); use a condition on "
                       "plain columns")
    return pred


def _delete(ctx: SessionContext, rw, node: exp.Delete):
    table, alias = _target(ctx, rw, node.this)
    where = node.args.get("where")
    if where is None:
        return _delete_counted(ctx, table, None)
    pred = _exact_predicate(ctx, where.this, alias, table)
    if pred is not None:
        return _delete_counted(ctx, table, pred)
    select = exp.select("*").from_(_target_node(alias)).where(where.this.copy())
    rows = ctx.query(rw, select, bindings={TARGET: PaimonRelation(table)})
    if rows.num_rows == 0:
        ctx.last_snapshot_id = None
        return None
    ctx.feedback.add_rows(rows.num_rows)
    if table.primary_keys:
        ctx.last_snapshot_id = table.write(rows.select(table.schema.field_names), row_kinds=["-D"] * rows.num_rows)
    else:
        ctx.last_snapshot_id = table.delete(filter=identity_predicate(rows, table))
    return None


def _assignments(rw, node, table) -> dict[str, exp.Expression]:
    out = {}
    cmap = {n.lower(): n for n in table.schema.field_names}
    for a in node.expressions:
        if not isinstance(a, exp.EQ) or not isinstance(a.this, exp.Column):
            raise rw.node_error("Expected column = expression in SET", a)
        real = cmap.get(a.this.name.lower())
        if real is None:
            raise rw.node_error(f"Column '{a.this.name}' does not exist in {table.identifier}; columns are "
                                f"{table.schema.field_names}", a.this)
        value = a.expression
        if isinstance(value, exp.Column) and value.name.upper() == "DEFAULT" and not value.table:
            value = exp.Null()
        out[real] = value
    return out


def _check_keys(rw, node, table, names) -> None:
    keys = set(table.primary_keys) | (set(table.partition_keys) if table.primary_keys else set())
    bad = [n for n in names if n in keys]
    if bad:
        raise rw.node_error(f"Cannot change primary or partition key column(s) {bad} of {table.identifier}", node)


def _typed(expr: exp.Expression, f: T.DataField) -> exp.Expression:
    return exp.Cast(this=expr.copy(), to=exp.DataType.build(duck_type(f.type), dialect="duckdb"))


def _update(ctx: SessionContext, rw, node: exp.Update):
    table, alias = _target(ctx, rw, node.this)
    sets = _assignments(rw, node, table)
    _check_keys(rw, node, table, list(sets))
    where = node.args.get("where")
    fields = {f.name: f for f in table.schema.fields}
    if table.primary_keys:
        projections = [exp.alias_(_typed(sets[n], fields[n]), exp.to_identifier(n, quoted=True)) if n in sets else
                       exp.column(exp.to_identifier(n, quoted=True), table=exp.to_identifier(alias, quoted=True))
                       for n in table.schema.field_names]
        select = exp.select(*projections).from_(_target_node(alias))
        if where is not None:
            select = select.where(where.this.copy())
        rows = ctx.query(rw, select, bindings={TARGET: PaimonRelation(table)})
        if rows.num_rows == 0:
            ctx.last_snapshot_id = None
            return None
        rows = cast_rows(rows, list(table.schema.fields))
        ctx.last_snapshot_id = table.write(rows, row_kinds=["+U"] * rows.num_rows)
        ctx.feedback.add_rows(rows.num_rows)
        return None
    pred = None
    if where is not None:
        pred = _exact_predicate(ctx, where.this, alias, table)
        if pred is None:
            select = exp.select("*").from_(_target_node(alias)).where(where.this.copy())
            matched = ctx.query(rw, select, bindings={TARGET: PaimonRelation(table)})
            if matched.num_rows == 0:
                ctx.last_snapshot_id = None
                return None
            pred = identity_predicate(matched, table)

    def evaluator(expr: exp.Expression, f: T.DataField):
        def compute(rows: pa.Table):
            select = exp.select(exp.alias_(_typed(expr, f), "v")).from_(_target_node(alias))
            return ctx.query(rw, select, bindings={TARGET: ArrowRelation("target", rows)}).column(0)
        return compute

    values = {n: evaluator(e, fields[n]) for n, e in sets.items()}
    table.refresh()
    ctx.last_snapshot_id, n = update_rows_counted(table.store, values,
                                                  None if pred is None else bind(pred, table.schema.arrow_schema()))
    ctx.feedback.add_rows(n)
    return None


def _delete_counted(ctx: SessionContext, table, pred: Predicate | None) -> None:
    """Table.delete, counting the rows deleted."""
    table.refresh()
    ctx.last_snapshot_id, n = delete_rows_counted(table.store,
                                                  None if pred is None else bind(pred, table.schema.arrow_schema()))
    ctx.feedback.add_rows(n)
    return None


def _merge(ctx: SessionContext, rw, node: exp.Merge):
    table, alias = _target(ctx, rw, node.this)
    using = node.args.get("using")
    on = node.args.get("on")
    if using is None or on is None:
        raise SqlError("MERGE INTO needs USING ... ON ...", statement=rw.original)
    s_alias = using.alias_or_name
    whens = node.args.get("whens")
    clauses = whens.expressions if whens is not None else []
    fields = list(table.schema.fields)
    fmap = {f.name: f for f in fields}
    names = [f.name for f in fields]
    cmap = {n.lower(): n for n in names}
    current = table.to_arrow()
    with_rid = current.append_column("__rid", pa.array(np.arange(current.num_rows, dtype=np.int64)))
    bindings = {TARGET: ArrowRelation("target", with_rid)}
    tcol = lambda n: exp.column(exp.to_identifier(n, quoted=True), table=exp.to_identifier(alias, quoted=True))  # noqa
    scol = lambda n: exp.column(exp.to_identifier(n, quoted=True), table=exp.to_identifier(s_alias, quoted=True))  # noqa

    matched = [c for c in clauses if c.args.get("matched") and not c.args.get("source")]
    not_matched = [c for c in clauses if not c.args.get("matched") and not c.args.get("source")]
    by_source = [c for c in clauses if not c.args.get("matched") and c.args.get("source")]

    def case_of(group) -> exp.Expression:
        case = exp.Case()
        for k, c in enumerate(group):
            cond = c.args.get("condition")
            case = case.when(cond.copy() if cond is not None else exp.true(), exp.Literal.number(k))
        return case.else_(exp.Literal.number(-1))

    def update_sets(c) -> dict[str, exp.Expression] | None:
        then = c.args.get("then")
        if isinstance(then, exp.Update):
            if not then.expressions or isinstance(then.expressions[0], exp.Star):
                return {n: scol(n) for n in names}
            return _assignments(rw, then, table)
        return None

    def is_delete(c) -> bool:
        then = c.args.get("then")
        return isinstance(then, exp.Var) and then.name.upper() == "DELETE"

    for c in matched + by_source:
        sets = update_sets(c)
        if sets is None and not is_delete(c):
            raise rw.node_error("WHEN MATCHED supports UPDATE SET ... or DELETE", c)
        then = c.args.get("then")
        if sets is not None and isinstance(then, exp.Update) and then.expressions and \
                not isinstance(then.expressions[0], exp.Star):
            _check_keys(rw, c, table, list(sets))
    deleted: list[np.ndarray] = []
    updated_rids: list[np.ndarray] = []
    updated: list[pa.Table] = []
    inserted: list[pa.Table] = []

    def run(select) -> pa.Table:
        return ctx.query(rw, select, bindings=bindings)

    def apply_target_clauses(group, source_rows_select_builder):
        if not group:
            return
        projections = [tcol("__rid").as_("__rid"), case_of(group).as_("__clause")]
        for k, c in enumerate(group):
            for n, e in (update_sets(c) or {}).items():
                projections.append(exp.alias_(_typed(e, fmap[n]), f"__u{k}_{n}"))
        out = run(source_rows_select_builder(projections))
        clause = out.column("__clause").to_numpy(zero_copy_only=False)
        rids = out.column("__rid").to_numpy(zero_copy_only=False)
        hit = clause >= 0
        if len(np.unique(rids[hit])) != int(hit.sum()):
            raise SqlError("MERGE: a target row matches more than one source row", statement=rw.original)
        for k, c in enumerate(group):
            mask = clause == k
            if not mask.any():
                continue
            if is_delete(c):
                deleted.append(rids[mask])
            else:
                sets = update_sets(c)
                base = current.take(pa.array(rids[mask]))
                part = out.filter(pa.array(mask))
                original = base
                for n in sets:
                    base = base.set_column(base.schema.get_field_index(n), n, part.column(f"__u{k}_{n}"))
                base = cast_rows(base, fields)
                keys = list(table.primary_keys) + (list(table.partition_keys) if table.primary_keys else [])
                for key in keys:
                    if not original.column(key).equals(base.column(key).cast(original.column(key).type)):
                        raise SqlError(f"MERGE cannot change primary or partition key column '{key}' of "
                                       f"{table.identifier}", statement=rw.original)
                updated_rids.append(rids[mask])
                updated.append(base)

    target = _target_node(alias)
    apply_target_clauses(matched, lambda proj: exp.select(*proj).from_(target.copy())
                         .join(using.copy(), on=on.copy(), join_type="inner"))
    apply_target_clauses(by_source, lambda proj: exp.select(*proj).from_(target.copy()).where(
        exp.Not(this=exp.Exists(this=exp.select("1").from_(using.copy()).where(on.copy())))))
    if not_matched:
        projections = [case_of(not_matched).as_("__clause")]
        layouts = []
        for k, c in enumerate(not_matched):
            then = c.args.get("then")
            if not isinstance(then, exp.Insert):
                raise rw.node_error("WHEN NOT MATCHED supports INSERT", c)
            if isinstance(then.this, exp.Star) or (then.this is None and then.expression is None):
                cols, vals = names, [scol(n) for n in names]
            else:
                cols = [cmap.get(x.name.lower(), x.name) for x in then.this.expressions] if then.this is not None \
                    else names
                vals = list(then.expression.expressions) if then.expression is not None else []
                if len(cols) != len(vals):
                    raise rw.node_error("INSERT column and value counts differ", then)
                bad = [x for x in cols if x not in fmap]
                if bad:
                    raise rw.node_error(f"Column(s) {bad} do not exist in {table.identifier}", then)
            for n, v in zip(cols, vals):
                projections.append(exp.alias_(_typed(v, fmap[n]), f"__i{k}_{n}"))
            layouts.append(cols)
        select = exp.select(*projections).from_(using.copy()).where(
            exp.Not(this=exp.Exists(this=exp.select("1").from_(target.copy()).where(on.copy()))))
        out = run(select)
        clause = out.column("__clause").to_numpy(zero_copy_only=False)
        for k, cols in enumerate(layouts):
            mask = clause == k
            if not mask.any():
                continue
            part = out.filter(pa.array(mask))
            data = pa.table({n: part.column(f"__i{k}_{n}") for n in cols})
            inserted.append(cast_rows(data, [fmap[n] for n in cols] + [f for f in fields if f.name not in cols])
                            .select(names))
    del_rids = np.concatenate(deleted) if deleted else np.array([], dtype=np.int64)
    new_rows = updated + inserted
    ctx.feedback.add_rows(len(del_rids) + sum(p.num_rows for p in new_rows))
    if table.primary_keys:
        parts, kinds = [], []
        if len(del_rids):
            parts.append(current.take(pa.array(del_rids)))
            kinds += ["-D"] * len(del_rids)
        for u in updated:
            parts.append(u)
            kinds += ["+U"] * u.num_rows
        for i in inserted:
            parts.append(i)
            kinds += ["+I"] * i.num_rows
        if not kinds:
            ctx.last_snapshot_id = None
            return None
        data = pa.concat_tables([p.select(names).cast(T.arrow_schema(fields)) for p in parts])
        ctx.last_snapshot_id = table.write(data, row_kinds=kinds)
        return None
    # append table: rewrite the files holding affected rows and add the new rows, in one commit
    affected = np.concatenate([del_rids] + updated_rids) if (len(del_rids) or updated_rids) else del_rids
    schema = T.arrow_schema(fields)
    extra = [p.select(names).cast(schema) for p in new_rows if p.num_rows]
    if not len(affected) and not extra:
        ctx.last_snapshot_id = None
        return None
    if not len(affected):
        ctx.last_snapshot_id = table.write(pa.concat_tables(extra))
        return None
    pred = identity_predicate(current.take(pa.array(affected)), table)
    ctx.last_snapshot_id = rewrite_append(table.store, pred, None, extra)[0]
    return None
