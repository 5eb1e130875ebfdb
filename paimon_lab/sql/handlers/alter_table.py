"""ALTER TABLE: rename the table, set or reset options, add, drop, rename, retype, comment or
move columns, set the table comment (one schema change, all or nothing); drop partitions."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.errors import PaimonLabError
from paimon_lab.core.schema import SchemaChange
from paimon_lab.sql.clauses import (ColumnDef, parse_column, parse_data_type, parse_key_list,
                                    parse_name_list, parse_options)
from paimon_lab.sql.common import rename_scope
from paimon_lab.sql.schemas import LEGACY_OPTIONS

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext, Statement


def alter(ctx: SessionContext, st: Statement) -> None:
    """ALTER TABLE t: RENAME TO, SET / RESET options, ADD / DROP / RENAME / MODIFY columns, COMMENT."""
    ts = st.ts
    ts.accept_kw("IF", "EXISTS")
    parts, tok = ts.qualified_name()
    err = ts.error_at(tok)
    table = ctx.get_table(parts, error=err)
    ctx.feedback.target = ".".join(ctx.qualify(parts))
    changes: list[SchemaChange] = []
    field_names = table.schema.field_names
    if ts.accept_kw("RENAME", "TO"):
        new_parts, ntok = ts.qualified_name()
        ts.expect_end()
        return _rename_table(ctx, ts, parts, new_parts, tok, ntok)
    if ts.accept_kw("SET", "TBLPROPERTIES") or ts.accept_kw("SET"):
        if ts.peek() is not None and ts.peek().is_op("("):
            for k, v in parse_options(ts).items():
                if k in LEGACY_OPTIONS:
                    warnings.warn(f"Option '{k}' is obsolete in Paimon; ignored", stacklevel=2)
                    continue
                changes.append(SchemaChange.set_option(k, v))
        else:
            raise ts.error("Expected ( 'key' = 'value', ... ) after SET")
    elif ts.accept_kw("RESET") or ts.accept_kw("UNSET", "TBLPROPERTIES"):
        ts.accept_kw("IF", "EXISTS")
        changes += [SchemaChange.remove_option(k) for k in parse_key_list(ts)]
    elif ts.accept_kw("ADD"):
        ts.accept_kw("COLUMNS") or ts.accept_kw("COLUMN")
        cols = []
        if ts.accept_op("("):
            while True:
                cols.append(parse_column(ts, allow_position=True))
                if ts.accept_op(")"):
                    break
                ts.expect_op(",")
        else:
            cols.append(parse_column(ts, allow_position=True))
        for c in cols:
            if getattr(c, "inline_pk", False):
                raise ts.error("Cannot add a primary key column to an existing table", c.token)
            changes.append(SchemaChange.add_column(c.name, c.type, c.comment, first=c.first, after=c.after))
    elif ts.accept_kw("DROP"):
        if_exists = ts.accept_kw("IF", "EXISTS")
        if ts.accept_kw("PARTITION"):
            return _drop_partitions(ctx, ts, table, tok)
        ts.accept_kw("COLUMNS") or ts.accept_kw("COLUMN")
        if not if_exists:
            ts.accept_kw("IF", "EXISTS")
        if ts.peek() is not None and ts.peek().is_op("("):
            names = parse_name_list(ts)
        else:
            names = [ts.identifier("a column name")]
            while ts.accept_op(","):
                names.append(ts.identifier("a column name"))
        changes += [SchemaChange.drop_column(n) for n in names]
    elif ts.accept_kw("RENAME"):
        ts.accept_kw("COLUMN")
        old = ts.identifier("a column name")
        ts.expect_kw("TO")
        changes.append(SchemaChange.rename_column(old, ts.identifier("a column name")))
    elif ts.accept_kw("MODIFY") or ts.accept_kw("ALTER") or ts.accept_kw("CHANGE"):
        ts.accept_kw("COLUMN")
        if ts.accept_op("("):
            mods = []
            while True:
                mods.append(parse_column(ts, allow_position=True))
                if ts.accept_op(")"):
                    break
                ts.expect_op(",")
            for c in mods:
                changes += _modify(table, c, c.token, ts)
        else:
            ctok = ts.peek()
            name = ts.identifier("a column name")
            if name not in field_names:
                raise ts.error(f"Column '{name}' does not exist; columns are {field_names}", ctok)
            current = table.schema.field(name)
            # Spark: ALTER COLUMN c TYPE t | COMMENT 'x' | FIRST | AFTER c | SET/DROP NOT NULL
            if ts.accept_kw("TYPE"):
                changes.append(SchemaChange.update_column_type(name, parse_data_type(ts)))
            elif ts.accept_kw("COMMENT"):
                changes.append(SchemaChange.update_column_comment(name, ts.string()))
            elif ts.accept_kw("FIRST"):
                changes.append(SchemaChange.move_column(name, first=True))
            elif ts.accept_kw("AFTER"):
                changes.append(SchemaChange.move_column(name, after=ts.identifier()))
            elif ts.accept_kw("DROP", "NOT", "NULL"):
                changes.append(SchemaChange.update_column_type(name, current.type.copy(True)))
            else:
                ts.i -= 1
                c = parse_column(ts, allow_position=True)
                changes += _modify(table, c, ctok, ts)
            while not ts.at_end():
                if ts.accept_kw("COMMENT"):
                    changes.append(SchemaChange.update_column_comment(name, ts.string()))
                elif ts.accept_kw("FIRST"):
                    changes.append(SchemaChange.move_column(name, first=True))
                elif ts.accept_kw("AFTER"):
                    changes.append(SchemaChange.move_column(name, after=ts.identifier()))
                else:
                    break
    elif ts.accept_kw("COMMENT"):
        ts.accept_op("=")
        changes.append(SchemaChange.update_comment(ts.string()))
    else:
        raise ts.error("Unsupported ALTER TABLE clause" + (f" '{ts.peek().text}'" if ts.peek() else ""))
    ts.expect_end()
    if changes:
        try:
            table.alter(*changes)
        except PaimonLabError as e:
            raise ts.error(str(e), tok) from None
    return None


def _drop_partitions(ctx: SessionContext, ts, table, tok) -> None:
    """DROP [IF EXISTS] PARTITION (k = v, ...)[, PARTITION (...)]: one OVERWRITE snapshot without
    the partitions' files, as CALL sys.drop_partition."""
    specs = []
    while True:
        ts.expect_op("(")
        spec = {}
        while True:
            ktok = ts.peek()
            key = ts.identifier("a partition column")
            if key not in table.partition_keys:
                raise ts.error(f"'{key}' is not a partition column of {table.identifier}; partition columns are "
                               f"{table.partition_keys}", ktok)
            ts.expect_op("=")
            spec[key] = ts.literal("a partition value")
            if ts.accept_op(")"):
                break
            ts.expect_op(",")
        specs.append(spec)
        if not ts.accept_op(","):
            break
        ts.expect_kw("PARTITION")
    ts.expect_end()
    try:
        ctx.last_snapshot_id = table.drop_partitions(specs)
    except PaimonLabError as e:
        raise ts.error(str(e), tok) from None


def _modify(table, c: ColumnDef, tok, ts) -> list[SchemaChange]:
    if c.name not in table.schema.field_names:
        raise ts.error(f"Column '{c.name}' does not exist; columns are {table.schema.field_names}", tok)
    current = table.schema.field(c.name)
    out = []
    if c.type != current.type:
        out.append(SchemaChange.update_column_type(c.name, c.type))
    if c.comment is not None and c.comment != current.description:
        out.append(SchemaChange.update_column_comment(c.name, c.comment))
    if c.first or c.after:
        out.append(SchemaChange.move_column(c.name, first=c.first, after=c.after))
    return out


def _rename_table(ctx, ts, parts, new_parts, tok, ntok):
    cat, db, name = ctx.qualify(parts, error=ts.error_at(tok))
    ncat, ndb, nname = ctx.qualify(new_parts if len(new_parts) > 1 else [db, new_parts[0]],
                                       rename_scope(ctx, cat), ts.error_at(ntok))
    if ncat != cat:
        raise ts.error("A table cannot be renamed into another catalog", ntok)
    entry = ctx.paimon_catalog(cat, ts.error_at(tok))
    catalog = entry.catalog
    if catalog.table_exists(f"{ndb}.{nname}") or entry.get_view(ndb, nname) is not None:
        raise ts.error(f"Table '{ncat}.{ndb}.{nname}' already exists", ntok)
    if not catalog.database_exists(ndb):
        raise ts.error(f"Database '{ncat}.{ndb}' does not exist", ntok)
    ctx.stop_refresh(cat, db, name)
    try:
        catalog.rename_table(f"{db}.{name}", f"{ndb}.{nname}")
    except (OSError, pa.ArrowException, PaimonLabError) as e:
        raise ts.error(f"Cannot rename table: {e}", tok) from None
    return None
