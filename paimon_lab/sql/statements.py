"""Statement dispatch: which statement a text is, and the DDL / session statements."""

from __future__ import annotations

import fnmatch
import warnings
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.catalog import Catalog
from paimon_lab.errors import OptionError, PaimonLabError, TableAlreadyExistError
from paimon_lab.core.options import validate_options
from paimon_lab.core.schema import SchemaChange, new_schema
from paimon_lab.sql.ddl import (ColumnDef, TableDef, create_table_sql, parse_column, parse_data_type,
                                parse_key_list, parse_name_list, parse_options, parse_partitioned_by,
                                parse_table_elements, quote, sql_string, type_sql)
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.lexer import TokenStream, tokenize
from paimon_lab.sql.rewrite import parse, rewrite

if TYPE_CHECKING:
    from paimon_lab.sql.session import Session

_QUERY_START = {"SELECT", "WITH", "VALUES", "FROM", "TABLE"}


def dispatch(session: "Session", text: str) -> pa.Table | None:
    tokens = tokenize(text)
    ts = TokenStream(text, tokens)
    first = ts.peek()
    if first is None:
        raise SqlError("Empty statement")
    kw = first.upper
    if kw in _QUERY_START or first.is_op("("):
        return run_query(session, ts)
    handler = _HANDLERS.get(kw)
    if handler is None:
        raise ts.error(f"Unsupported statement '{first.text}'", first)
    return handler(session, ts)


def run_query(session: "Session", ts: TokenStream, start: int | None = None) -> pa.Table:
    rw = rewrite(ts.text, ts.tokens, ts.i if start is None else start)
    ast = parse(rw)
    if not isinstance(ast, (exp_query_types())):
        raise SqlError("Expected a query", statement=ts.text)
    return session.query(rw, ast)


def exp_query_types():
    from sqlglot import exp

    return (exp.Query, exp.Values)


def _result(**columns) -> pa.Table:
    return pa.table({k: pa.array(v, pa.string()) for k, v in columns.items()})


# =========================================================================== catalogs / databases

def _create(session: "Session", ts: TokenStream):
    ts.expect_kw("CREATE")
    or_replace = ts.accept_kw("OR", "REPLACE")
    if ts.accept_kw("CATALOG"):
        return create_catalog(session, ts)
    if ts.accept_kw("DATABASE") or ts.accept_kw("SCHEMA") or ts.accept_kw("NAMESPACE"):
        return create_database(session, ts)
    temporary = ts.accept_kw("TEMPORARY") or ts.accept_kw("TEMP")
    if ts.accept_kw("MATERIALIZED", "TABLE"):
        from paimon_lab.sql.special import create_materialized_table

        return create_materialized_table(session, ts)
    if ts.accept_kw("VIEW"):
        return create_view(session, ts, temporary, or_replace)
    if ts.accept_kw("TABLE"):
        return create_table(session, ts, temporary)
    raise ts.error("Expected CATALOG, DATABASE, TABLE, VIEW or MATERIALIZED TABLE after CREATE")


def create_catalog(session: "Session", ts: TokenStream):
    from paimon_lab.sql.session import MemoryCatalog

    if_not_exists = ts.accept_kw("IF", "NOT", "EXISTS")
    name_tok = ts.peek()
    name = ts.identifier("a catalog name")
    options = {}
    if ts.accept_kw("WITH"):
        options = parse_options(ts)
    ts.expect_end()
    if name in session.catalogs:
        if if_not_exists:
            return None
        raise ts.error(f"Catalog '{name}' already exists", name_tok)
    ctype = options.get("type", "paimon").lower()
    if ctype == "generic_in_memory":
        session.catalogs[name] = MemoryCatalog(name)
        return None
    if ctype != "paimon":
        raise ts.error(f"Catalog type '{options.get('type')}' is not supported (use 'type'='paimon')", name_tok)
    metastore = options.get("metastore", "filesystem").lower()
    warehouse = options.get("warehouse")
    if not warehouse:
        raise ts.error(f"Catalog '{name}' needs a 'warehouse' option"
                       + (f" (metastore '{metastore}' is not available here)" if metastore != "filesystem" else ""),
                       name_tok)
    if metastore == "jdbc" and _jdbc_supported(options.get("uri")):
        catalog = _jdbc_catalog(ts, name, name_tok, options)
    else:
        if metastore == "jdbc":
            warnings.warn(f"Catalog '{name}': metastore 'jdbc' with uri '{options.get('uri')}' is not available in "
                          "paimon-lab (SQLite and PostgreSQL are); using the filesystem catalog at "
                          f"{warehouse}", stacklevel=2)
        elif metastore != "filesystem":
            warnings.warn(f"Catalog '{name}': metastore '{metastore}' is not available in paimon-lab; "
                          f"using the filesystem catalog at {warehouse}", stacklevel=2)
        try:
            catalog = Catalog(warehouse, options={k: v for k, v in options.items()})
        except (OSError, ValueError, pa.ArrowException) as e:
            raise ts.error(f"Cannot open warehouse '{warehouse}': {e}", name_tok) from None
    try:
        session.add_catalog(name, catalog, options=options)
    except PaimonLabError as e:
        raise ts.error(f"Cannot open catalog '{name}': {e}", name_tok) from None
    return None


def _jdbc_supported(uri: str | None) -> bool:
    """Whether a JDBC catalog uri names a database paimon-lab can use (SQLite, PostgreSQL)."""
    u = (uri or "").strip().lower()
    if u.startswith("jdbc:"):
        u = u[5:]
    return u == "" or u.startswith(("sqlite:", "postgresql:", "postgres:")) or "://" not in u and ":" not in u


def _jdbc_catalog(ts, name: str, name_tok, options: dict[str, str]):
    from paimon_lab.catalog import JdbcCatalog

    try:
        return JdbcCatalog(options.get("uri") or None, options["warehouse"],
                           options={k: v for k, v in options.items() if k not in ("type", "metastore", "uri")})
    except PaimonLabError as e:
        raise ts.error(f"Cannot open JDBC catalog '{name}': {e}", name_tok) from None
    except (OSError, ValueError, pa.ArrowException) as e:
        raise ts.error(f"Cannot open warehouse '{options['warehouse']}': {e}", name_tok) from None


def create_database(session: "Session", ts: TokenStream):
    if_not_exists = ts.accept_kw("IF", "NOT", "EXISTS")
    parts, tok = ts.qualified_name("a database name")
    if ts.accept_kw("COMMENT"):
        ts.string()
    if ts.accept_kw("WITH") or ts.accept_kw("WITH", "DBPROPERTIES"):
        parse_options(ts)
    ts.expect_end()
    cat, db = _db_name(session, parts, ts, tok)
    entry = session.catalog_entry(cat, lambda m: ts.error(m, tok))
    if entry.kind == "memory":
        if db in entry.databases:
            if if_not_exists:
                return None
            raise ts.error(f"Database '{cat}.{db}' already exists", tok)
        entry.databases[db] = {}
        return None
    if db.lower() == "sys":
        raise ts.error("'sys' is the system database", tok)
    if entry.catalog.database_exists(db):
        if if_not_exists:
            return None
        raise ts.error(f"Database '{cat}.{db}' already exists", tok)
    entry.catalog.create_database(db)
    return None


def _db_name(session, parts, ts, tok) -> tuple[str, str]:
    if len(parts) == 1:
        return session.current.catalog, parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ts.error("Invalid database name: use [catalog.]database", tok)


def _use(session: "Session", ts: TokenStream):
    from paimon_lab.sql.session import Context

    ts.expect_kw("USE")
    if ts.accept_kw("CATALOG"):
        tok = ts.peek()
        name = ts.identifier("a catalog name")
        ts.expect_end()
        entry = session.catalog_entry(name, lambda m: ts.error(m, tok))
        if entry.kind == "memory":
            db = "default_database" if "default_database" in entry.databases else sorted(entry.databases)[0]
        else:
            db = entry.options.get("default-database", "default")
        session.current = Context(name, db)
        return None
    ts.accept_kw("DATABASE") or ts.accept_kw("SCHEMA") or ts.accept_kw("NAMESPACE")
    parts, tok = ts.qualified_name("a database name")
    ts.expect_end()
    cat, db = _db_name(session, parts, ts, tok)
    entry = session.catalog_entry(cat, lambda m: ts.error(m, tok))
    if entry.kind == "memory":
        if db not in entry.databases:
            raise ts.error(f"Database '{cat}.{db}' does not exist", tok)
    elif db.lower() != "sys" and not entry.catalog.database_exists(db):
        raise ts.error(f"Database '{cat}.{db}' does not exist", tok)
    session.current = Context(cat, db if db.lower() != "sys" else "sys")
    return None


def _drop(session: "Session", ts: TokenStream):
    ts.expect_kw("DROP")
    temporary = ts.accept_kw("TEMPORARY")
    if ts.accept_kw("CATALOG"):
        if_exists = ts.accept_kw("IF", "EXISTS")
        tok = ts.peek()
        name = ts.identifier("a catalog name")
        ts.expect_end()
        if name not in session.catalogs:
            if if_exists:
                return None
            raise ts.error(f"Catalog '{name}' does not exist", tok)
        if name == session.current.catalog:
            raise ts.error(f"Cannot drop the current catalog '{name}'", tok)
        session.catalogs.pop(name)
        return None
    if ts.accept_kw("DATABASE") or ts.accept_kw("SCHEMA") or ts.accept_kw("NAMESPACE"):
        if_exists = ts.accept_kw("IF", "EXISTS")
        parts, tok = ts.qualified_name("a database name")
        cascade = ts.accept_kw("CASCADE")
        ts.accept_kw("RESTRICT")
        ts.expect_end()
        cat, db = _db_name(session, parts, ts, tok)
        entry = session.catalog_entry(cat, lambda m: ts.error(m, tok))
        if entry.kind == "memory":
            if db not in entry.databases:
                if if_exists:
                    return None
                raise ts.error(f"Database '{cat}.{db}' does not exist", tok)
            if entry.databases[db] and not cascade:
                raise ts.error(f"Database '{cat}.{db}' is not empty; use CASCADE", tok)
            entry.databases.pop(db)
            return None
        if not entry.catalog.database_exists(db):
            if if_exists:
                return None
            raise ts.error(f"Database '{cat}.{db}' does not exist", tok)
        if not cascade and (entry.catalog.list_tables(db) or entry.list_views(db)):
            raise ts.error(f"Database '{cat}.{db}' is not empty; use CASCADE", tok)
        if session.current.catalog == cat and session.current.database == db:
            raise ts.error(f"Cannot drop the current database '{db}'", tok)
        for name in entry.catalog.list_tables(db):
            session.stop_refresh(cat, db, name)
        entry.catalog.drop_database(db, cascade=True)
        return None
    is_view = ts.accept_kw("VIEW")
    if not is_view:
        ts.accept_kw("MATERIALIZED")
        ts.expect_kw("TABLE")
    if_exists = ts.accept_kw("IF", "EXISTS")
    parts, tok = ts.qualified_name()
    ts.accept_kw("PURGE")
    ts.expect_end()
    cat, db, name = session.qualify(parts, error=lambda m: ts.error(m, tok))
    entry = session.catalog_entry(cat, lambda m: ts.error(m, tok))
    full = f"{cat}.{db}.{name}"
    if entry.kind == "memory" or (temporary and (cat, db, name) in session.temporary):
        store = session.temporary if temporary and (cat, db, name) in session.temporary else \
            entry.databases.get(db, {}) if entry.kind == "memory" else {}
        key = (cat, db, name) if store is session.temporary else name
        mt = store.get(key)
        if mt is None or (is_view != (mt.kind == "view")):
            if if_exists:
                return None
            raise ts.error(f"{'View' if is_view else 'Table'} '{full}' does not exist", tok)
        store.pop(key)
        return None
    if is_view:
        view = entry.get_view(db, name) if entry.catalog.database_exists(db) else None
        if view is None:
            if if_exists:
                return None
            raise ts.error(f"View '{full}' does not exist", tok)
        entry.drop_view(db, name)
        return None
    if not entry.catalog.table_exists(f"{db}.{name}"):
        if if_exists:
            return None
        raise ts.error(f"Table '{full}' does not exist", tok)
    session.stop_refresh(cat, db, name)  # a materialized table's timer, if any
    entry.catalog.drop_table(f"{db}.{name}")
    return None


# =========================================================================== CREATE TABLE / VIEW

def parse_create_table(ts: TokenStream, temporary: bool) -> TableDef:
    if_not_exists = ts.accept_kw("IF", "NOT", "EXISTS")
    parts, tok = ts.qualified_name()
    d = TableDef(parts, tok, if_not_exists, temporary)
    if ts.peek() is not None and ts.peek().is_op("("):
        # a column list, unless it is a parenthesized query for CTAS
        nxt = ts.peek(1)
        if not (nxt is not None and nxt.upper in ("SELECT", "WITH", "VALUES")):
            parse_table_elements(ts, d)
    while not ts.at_end():
        if ts.accept_kw("COMMENT"):
            d.comment = ts.string("a comment")
        elif ts.accept_kw("PARTITIONED", "BY"):
            parse_partitioned_by(ts, d)
        elif ts.accept_kw("WITH"):
            d.options.update(parse_options(ts))
        elif ts.accept_kw("TBLPROPERTIES") or ts.accept_kw("OPTIONS"):
            d.options.update(parse_options(ts))
        elif ts.accept_kw("USING"):
            d.using = ts.identifier("a table provider")
        elif ts.accept_kw("LOCATION"):
            d.options["path"] = ts.string("a location")
        elif ts.accept_kw("LIKE"):
            like_parts, like_tok = ts.qualified_name()
            d.like = (like_parts, like_tok)
            if ts.peek() is not None and ts.peek().is_op("("):
                ts.balanced()  # (INCLUDING ALL ...) like options: everything is copied
        elif ts.at_kw("AS"):
            ts.next()
            d.as_query = ts.i
            break
        else:
            raise ts.error(f"Unexpected '{ts.peek().text}' in CREATE TABLE")
    return d


def create_table(session: "Session", ts: TokenStream, temporary: bool):
    d = parse_create_table(ts, temporary)
    cat, db, name = session.qualify(d.parts, error=lambda m: ts.error(m, d.token))
    entry = session.catalog_entry(cat, lambda m: ts.error(m, d.token))
    connector = d.options.get("connector")
    full = f"{cat}.{db}.{name}"
    if d.using is not None and d.using.lower() != "paimon":
        raise ts.error(f"USING {d.using}: only paimon tables can be created", d.token)
    if entry.kind == "memory" or temporary or (connector and connector.lower() != "paimon"):
        if connector is None or connector.lower() == "paimon":
            raise ts.error(f"'{cat}' is Flink's in-memory catalog: it holds connector tables ('connector'='datagen', "
                           "'print', 'blackhole') and views. Create a Paimon catalog (CREATE CATALOG c WITH "
                           "('type'='paimon', 'warehouse'='...')) and USE CATALOG c", d.token)
        if entry.kind == "paimon" and not temporary:
            raise ts.error(f"A Paimon catalog holds Paimon tables only; create the '{connector}' table in "
                           "default_catalog or as CREATE TEMPORARY TABLE", d.token)
        return _create_connector_table(session, ts, d, cat, db, name, entry)
    if d.as_query is not None and (d.like is not None):
        raise ts.error("CREATE TABLE cannot have both LIKE and AS", d.token)
    ttype = d.options.get("type", "table").lower()
    if ttype in ("format-table", "object-table"):
        from paimon_lab.sql.special import create_format_table, create_object_table

        fn = create_format_table if ttype == "format-table" else create_object_table
        return fn(session, ts, d, entry, db, name)
    if ttype == "materialized-table":
        raise ts.error("Create materialized tables with CREATE MATERIALIZED TABLE ... AS SELECT", d.token)
    if not entry.catalog.database_exists(db):
        raise ts.error(f"Database '{cat}.{db}' does not exist", d.token)
    if entry.get_view(db, name) is not None:
        raise ts.error(f"A view named '{full}' exists", d.token)
    if entry.catalog.table_exists(f"{db}.{name}"):
        if d.if_not_exists:
            return None
        raise ts.error(f"Table '{full}' already exists", d.token)
    if d.like is not None:
        src = session.get_table(d.like[0], error=lambda m: ts.error(m, d.like[1]))
        sch = src.schema
        if d.columns:
            raise ts.error("CREATE TABLE ... LIKE cannot add columns here; ALTER TABLE ADD them after", d.token)
        d.columns = [ColumnDef(f.name, f.type, f.description) for f in sch.fields]
        d.primary_keys = d.primary_keys or list(sch.primary_keys)
        d.partition_keys = d.partition_keys or list(sch.partition_keys)
        d.options = {**{k: v for k, v in sch.options.items() if k != "path"}, **d.options}
        d.comment = d.comment if d.comment is not None else sch.comment
    if d.as_query is not None:
        return _ctas(session, ts, d, entry, db, name)
    if not d.columns:
        raise ts.error("CREATE TABLE needs columns (or LIKE / AS SELECT)", d.token)
    create_paimon_table(session, ts, entry, db, name, d.columns, d.primary_keys, d.partition_keys, d.options,
                        d.comment, d.token)
    return None


def _create_connector_table(session, ts, d: TableDef, cat, db, name, entry):
    from paimon_lab.sql.datagen import DatagenSpec
    from paimon_lab.sql.session import MemTable

    connector = (d.options.get("connector") or "").lower()
    fields = [T.DataField(i, c.name, c.type, c.comment) for i, c in enumerate(d.columns)]
    if not fields:
        raise ts.error("A connector table needs columns", d.token)
    schema = T.arrow_schema(fields)
    if connector == "datagen":
        mt = MemTable("datagen", schema, spec=DatagenSpec(name, fields, dict(d.options)), options=dict(d.options),
                      fields=fields, primary_keys=d.primary_keys)
        mt.spec.bound()  # validates sequence fields
    elif connector in ("print", "blackhole"):
        mt = MemTable(connector, schema, options=dict(d.options), fields=fields)
    else:
        raise ts.error(f"Connector '{connector}' is not available (datagen, print, blackhole are)", d.token)
    if d.temporary:
        key = (cat, db, name)
        if key in session.temporary:
            if d.if_not_exists:
                return None
            raise ts.error(f"Temporary table '{cat}.{db}.{name}' already exists", d.token)
        session.temporary[key] = mt
        return None
    tables = entry.databases.get(db)
    if tables is None:
        raise ts.error(f"Database '{cat}.{db}' does not exist", d.token)
    if name in tables:
        if d.if_not_exists:
            return None
        raise ts.error(f"Table '{cat}.{db}.{name}' already exists", d.token)
    tables[name] = mt
    return None


# Options Paimon once had and no longer uses: dropped (with a warning) when a table is created.
LEGACY_OPTIONS = {"write-mode"}


def normalize_options(ts, options: dict[str, str], token, pks: list[str], parts: list[str]):
    """Move 'primary-key' / 'partition' options into keys, drop 'connector'='paimon' and legacy options."""
    options = dict(options)
    if options.get("connector", "").lower() == "paimon":
        options.pop("connector")
    if "primary-key" in options:
        listed = [k.strip() for k in options.pop("primary-key").split(",") if k.strip()]
        if pks and pks != listed:
            raise ts.error("PRIMARY KEY and the 'primary-key' option disagree", token)
        pks = listed
    if "partition" in options:
        listed = [k.strip() for k in options.pop("partition").split(",") if k.strip()]
        if parts and parts != listed:
            raise ts.error("PARTITIONED BY and the 'partition' option disagree", token)
        parts = listed
    for key in list(options):
        if key in LEGACY_OPTIONS:
            try:
                validate_options({key: options[key]})
            except OptionError:
                warnings.warn(f"Option '{key}' is obsolete in Paimon (the table's write mode follows from its "
                              "primary key); ignored", stacklevel=3)
                options.pop(key)
    try:
        options = validate_options(options)
    except OptionError as e:
        raise ts.error(str(e), token) from None
    return options, pks, parts


def build_schema(ts, columns: list[ColumnDef], pks, parts, options, comment, token, raw_options=None):
    """A validated schema-0 with the exact Paimon types of ``columns``."""
    options, pks, parts = normalize_options(ts, options, token, list(pks), list(parts))
    arrow = pa.schema([pa.field(c.name, c.type.to_arrow(), nullable=c.type.nullable) for c in columns])
    try:
        base = new_schema(arrow, partition_keys=parts, primary_keys=pks, options=options, comment=comment)
    except PaimonLabError as e:
        raise ts.error(str(e), token) from None
    counter = iter(range(1 << 30))
    fields = []
    for c in columns:
        fid = next(counter)
        dtype = T.assign_field_ids(c.type, counter)
        if c.name in pks:
            dtype = dtype.copy(False)
        fields.append(T.DataField(fid, c.name, dtype, c.comment))
    schema = replace(base, fields=tuple(fields), highest_field_id=T.max_field_id(fields),
                     options={**base.options, **(raw_options or {})})
    if schema.primary_keys:
        try:
            from paimon_lab.core.key_value import KeyValueLayout
            from paimon_lab.mergetree.merge_engine import merge_function_for

            KeyValueLayout(schema)
            merge_function_for(schema)
        except PaimonLabError as e:
            raise ts.error(str(e), token) from None
    return schema


def create_paimon_table(session, ts, entry, db, name, columns, pks, parts, options, comment, token,
                        raw_options=None):
    schema = build_schema(ts, columns, pks, parts, options, comment, token, raw_options)
    try:
        return entry.catalog.create_table(f"{db}.{name}", schema)
    except TableAlreadyExistError:
        raise ts.error(f"Table '{entry.name}.{db}.{name}' already exists", token) from None
    except PaimonLabError as e:
        raise ts.error(str(e), token) from None


def _ctas(session, ts, d: TableDef, entry, db, name):
    from paimon_lab.sql.dml import write_rows

    rw = rewrite(ts.text, ts.tokens, d.as_query)
    ast = parse(rw)
    data = session.query(rw, ast)
    if d.columns:
        raise ts.error("CREATE TABLE ... AS SELECT takes its columns from the query", d.token)
    columns = []
    for f in data.schema:
        try:
            dtype = T.from_arrow(f.type, True)
        except PaimonLabError:
            if pa.types.is_null(f.type):
                dtype = T.parse_type("STRING")
            else:
                raise ts.error(f"Column '{f.name}' of type {f.type} cannot be stored", d.token) from None
        columns.append(ColumnDef(f.name, dtype))
    table = create_paimon_table(session, ts, entry, db, name, columns, d.primary_keys, d.partition_keys,
                                d.options, d.comment, d.token)
    try:
        write_rows(session, table, data)
    except BaseException:
        entry.catalog.drop_table(f"{db}.{name}", ignore_if_not_exists=True)
        raise
    return None


def create_view(session: "Session", ts: TokenStream, temporary: bool, or_replace: bool):
    from paimon_lab.sql.session import MemTable, ViewDef

    if_not_exists = ts.accept_kw("IF", "NOT", "EXISTS")
    parts, tok = ts.qualified_name("a view name")
    columns = None
    if ts.peek() is not None and ts.peek().is_op("("):
        columns = parse_name_list(ts)
    comment = None
    if ts.accept_kw("COMMENT"):
        comment = ts.string()
    ts.expect_kw("AS")
    query_text = ts.rest_text().strip()
    schema = _view_schema(session, ts, columns, tok)  # every name must resolve now
    cat, db, name = session.qualify(parts, error=lambda m: ts.error(m, tok))
    entry = session.catalog_entry(cat, lambda m: ts.error(m, tok))
    view = ViewDef(cat, db, name, query_text, session.current, columns, comment)
    full = f"{cat}.{db}.{name}"
    if temporary or entry.kind == "memory":
        store = entry.databases.get(db) if entry.kind == "memory" and not temporary else None
        key = name if store is not None else (cat, db, name)
        store = store if store is not None else session.temporary
        if key in store and not or_replace:
            if if_not_exists:
                return None
            raise ts.error(f"View '{full}' already exists", tok)
        store[key] = MemTable("view", view=view)
        return None
    if not entry.catalog.database_exists(db):
        raise ts.error(f"Database '{cat}.{db}' does not exist", tok)
    if entry.catalog.table_exists(f"{db}.{name}"):
        raise ts.error(f"A table named '{full}' exists", tok)
    exists = entry.get_view(db, name) is not None
    if exists and not or_replace:
        if if_not_exists:
            return None
        raise ts.error(f"View '{full}' already exists", tok)
    try:
        entry.put_view(view, schema, exists=exists)
    except PaimonLabError as e:
        raise ts.error(f"Cannot store view '{full}': {e}", tok) from None
    return None


def _view_schema(session: "Session", ts: TokenStream, columns: list[str] | None, tok) -> pa.Schema:
    """The result schema of the view query starting at the current token (no data is read)."""
    rw = rewrite(ts.text, ts.tokens, ts.i)
    ast = parse(rw)
    if not isinstance(ast, exp_query_types()):
        raise ts.error("A view is defined by a query (AS SELECT ...)", tok)
    prepared = session.prepare_query(rw, ast)
    empty = {r.index: r.relation.schema.empty_table() for r in prepared.rels}
    schema = prepared.execute(overrides=empty).schema
    if columns is not None:
        if len(columns) != len(schema.names):
            raise ts.error(f"The view names {len(columns)} columns but its query gives {len(schema.names)} "
                           f"({', '.join(schema.names)})", tok)
        schema = pa.schema([f.with_name(c) for f, c in zip(schema, columns)])
    if len(set(schema.names)) != len(schema.names):
        dup = sorted({n for n in schema.names if schema.names.count(n) > 1})
        raise ts.error(f"The view query gives duplicate column names {dup}; name them with AS", tok)
    return schema


def alter_view(session: "Session", ts: TokenStream):
    """ALTER VIEW v AS <query> | ALTER VIEW v RENAME TO w."""
    from paimon_lab.sql.session import MemTable, ViewDef

    parts, tok = ts.qualified_name("a view name")
    cat, db, name = session.qualify(parts, error=lambda m: ts.error(m, tok))
    entry = session.catalog_entry(cat, lambda m: ts.error(m, tok))
    full = f"{cat}.{db}.{name}"
    # where the view is: a temporary view, the in-memory catalog, or a Paimon catalog
    store = key = None
    current = None
    if (cat, db, name) in session.temporary and session.temporary[(cat, db, name)].kind == "view":
        store, key = session.temporary, (cat, db, name)
    elif entry.kind == "memory":
        mt = entry.databases.get(db, {}).get(name)
        if mt is not None and mt.kind == "view":
            store, key = entry.databases[db], name
    if store is not None:
        current = store[key].view
    elif entry.kind == "paimon" and entry.catalog.database_exists(db):
        current = entry.get_view(db, name)
    if current is None:
        raise ts.error(f"View '{full}' does not exist", tok)
    if ts.accept_kw("RENAME", "TO"):
        new_parts, ntok = ts.qualified_name("a view name")
        ts.expect_end()
        ncat, ndb, nname = session.qualify(new_parts if len(new_parts) > 1 else [db, new_parts[0]],
                                           Context_of(session, cat), lambda m: ts.error(m, ntok))
        if ncat != cat:
            raise ts.error("A view cannot be renamed into another catalog", ntok)
        nfull = f"{ncat}.{ndb}.{nname}"
        if store is not None:
            nkey = (ncat, ndb, nname) if store is session.temporary else nname
            if store is not session.temporary and ndb != db:
                raise ts.error("A view of the in-memory catalog cannot move to another database", ntok)
            if nkey in store:
                raise ts.error(f"'{nfull}' already exists", ntok)
            mt = store.pop(key)
            mt.view.database, mt.view.name = ndb, nname
            store[nkey] = mt
            return None
        if not entry.catalog.database_exists(ndb):
            raise ts.error(f"Database '{ncat}.{ndb}' does not exist", ntok)
        if entry.catalog.table_exists(f"{ndb}.{nname}") or entry.get_view(ndb, nname) is not None:
            raise ts.error(f"'{nfull}' already exists", ntok)
        try:
            entry.rename_view(db, name, ndb, nname)
        except PaimonLabError as e:
            raise ts.error(f"Cannot rename view '{full}': {e}", tok) from None
        return None
    if ts.accept_kw("AS"):
        query_text = ts.rest_text().strip()
        schema = _view_schema(session, ts, current.columns, tok)
        view = ViewDef(current.catalog, current.database, current.name, query_text, session.current,
                       current.columns, current.comment)
        if store is not None:
            store[key] = MemTable("view", view=view)
            return None
        try:
            entry.put_view(view, schema, exists=True)
        except PaimonLabError as e:
            raise ts.error(f"Cannot alter view '{full}': {e}", tok) from None
        return None
    raise ts.error("ALTER VIEW supports AS <query> and RENAME TO <name>")


# =========================================================================== ALTER

def _alter(session: "Session", ts: TokenStream):
    ts.expect_kw("ALTER")
    if ts.accept_kw("MATERIALIZED", "TABLE"):
        from paimon_lab.sql.special import alter_materialized_table

        return alter_materialized_table(session, ts)
    if ts.accept_kw("VIEW"):
        return alter_view(session, ts)
    ts.expect_kw("TABLE")
    ts.accept_kw("IF", "EXISTS")
    parts, tok = ts.qualified_name()
    err = lambda m: ts.error(m, tok)  # noqa: E731
    table = session.get_table(parts, error=err)
    changes: list[SchemaChange] = []
    field_names = table.schema.field_names
    if ts.accept_kw("RENAME", "TO"):
        new_parts, ntok = ts.qualified_name()
        ts.expect_end()
        return _rename_table(session, ts, parts, new_parts, tok, ntok)
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
        ts.accept_kw("COLUMNS") or ts.accept_kw("COLUMN")
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


def _rename_table(session, ts, parts, new_parts, tok, ntok):
    cat, db, name = session.qualify(parts, error=lambda m: ts.error(m, tok))
    ncat, ndb, nname = session.qualify(new_parts if len(new_parts) > 1 else [db, new_parts[0]],
                                       Context_of(session, cat), lambda m: ts.error(m, ntok))
    if ncat != cat:
        raise ts.error("A table cannot be renamed into another catalog", ntok)
    entry = session.paimon_catalog(cat, lambda m: ts.error(m, tok))
    catalog = entry.catalog
    if catalog.table_exists(f"{ndb}.{nname}") or entry.get_view(ndb, nname) is not None:
        raise ts.error(f"Table '{ncat}.{ndb}.{nname}' already exists", ntok)
    if not catalog.database_exists(ndb):
        raise ts.error(f"Database '{ncat}.{ndb}' does not exist", ntok)
    session.stop_refresh(cat, db, name)
    try:
        catalog.rename_table(f"{db}.{name}", f"{ndb}.{nname}")
    except (OSError, pa.ArrowException, PaimonLabError) as e:
        raise ts.error(f"Cannot rename table: {e}", tok) from None
    return None


def Context_of(session, cat):
    from paimon_lab.sql.session import Context

    return Context(cat, session.current.database)


# =========================================================================== SHOW / DESCRIBE

def _show(session: "Session", ts: TokenStream):
    from paimon_lab import system as st

    ts.expect_kw("SHOW")
    if ts.accept_kw("CATALOGS"):
        ts.expect_end()
        return _result(catalog_name=sorted(session.catalogs))
    if ts.accept_kw("CURRENT", "CATALOG"):
        return _result(**{"current catalog name": [session.current.catalog]})
    if ts.accept_kw("CURRENT", "DATABASE"):
        return _result(**{"current database name": [session.current.database]})
    if ts.accept_kw("DATABASES") or ts.accept_kw("SCHEMAS") or ts.accept_kw("NAMESPACES"):
        cat = session.current.catalog
        if ts.accept_kw("FROM") or ts.accept_kw("IN"):
            cat = ts.identifier("a catalog name")
        pattern = _like(ts)
        entry = session.catalog_entry(cat, lambda m: ts.error(m))
        names = sorted(entry.databases) if entry.kind == "memory" else entry.catalog.list_databases()
        return _result(database_name=_filter(names, pattern))
    if ts.accept_kw("TABLES") or ts.accept_kw("VIEWS"):
        views = ts.tokens[ts.i - 1].upper == "VIEWS"
        ctx = session.current
        cat, db = ctx.catalog, ctx.database
        if ts.accept_kw("FROM") or ts.accept_kw("IN"):
            parts, tok = ts.qualified_name("a database name")
            cat, db = _db_name(session, parts, ts, tok)
        pattern = _like(ts)
        entry = session.catalog_entry(cat, lambda m: ts.error(m))
        temp = sorted(n for (c, d, n), mt in session.temporary.items()
                      if c == cat and d == db and (mt.kind == "view") == views)
        if entry.kind == "memory":
            names = sorted(n for n, mt in entry.databases.get(db, {}).items() if (mt.kind == "view") == views)
        elif db.lower() == "sys":
            names = [] if views else list(st.GLOBAL_SYSTEM_TABLES)
        else:
            if not entry.catalog.database_exists(db):
                raise ts.error(f"Database '{cat}.{db}' does not exist")
            names = entry.list_views(db) if views else entry.catalog.list_tables(db)
        col = "view name" if views else "table name"
        return _result(**{col: _filter(sorted(set(names) | set(temp)), pattern)})
    if ts.accept_kw("CREATE"):
        is_view = ts.accept_kw("VIEW")
        if not is_view:
            ts.accept_kw("MATERIALIZED")
            ts.expect_kw("TABLE")
        parts, tok = ts.qualified_name()
        ts.expect_end()
        return _show_create(session, ts, parts, tok, is_view)
    if ts.accept_kw("PARTITIONS"):
        parts, tok = ts.qualified_name()
        table = session.get_table(parts, error=lambda m: ts.error(m, tok))
        if not table.partition_keys:
            raise ts.error(f"Table '{table.identifier}' is not partitioned", tok)
        data = table.to_arrow(columns=table.partition_keys)
        rows = sorted({tuple(r.values()) for r in data.to_pylist()}, key=lambda r: tuple(str(x) for x in r))
        text = ["/".join(f"{k}={v}" for k, v in zip(table.partition_keys, r)) for r in rows]
        return _result(partition=text)
    if ts.accept_kw("TBLPROPERTIES"):
        parts, tok = ts.qualified_name()
        table = session.get_table(parts, error=lambda m: ts.error(m, tok))
        props = dict(table.options)
        if props.get("type") == "materialized-table":
            from paimon_lab.sql.special import MT, last_refresh_millis

            last = last_refresh_millis(table)
            if last is not None:  # derived from the snapshots, shown with the stored state
                import datetime as dt

                props[MT + "last-refresh-time"] = dt.datetime.fromtimestamp(
                    last / 1000, session.local_tz()).isoformat(sep=" ", timespec="milliseconds")
        items = sorted(props.items())
        return _result(key=[k for k, _ in items], value=[v for _, v in items])
    if ts.accept_kw("COLUMNS"):
        ts.accept_kw("FROM") or ts.accept_kw("IN")
        parts, tok = ts.qualified_name()
        return _describe_parts(session, ts, parts, tok)
    if ts.accept_kw("PROCEDURES"):
        from paimon_lab.sql.procedures import PROCEDURES

        return _result(**{"procedure name": sorted(f"sys.{p}" for p in PROCEDURES)})
    raise ts.error("Unsupported SHOW statement")


def _like(ts: TokenStream) -> str | None:
    if ts.accept_kw("LIKE") or ts.accept_kw("ILIKE"):
        return ts.string("a LIKE pattern")
    return None


def _filter(names: list[str], pattern: str | None) -> list[str]:
    if pattern is None:
        return list(names)
    glob = pattern.replace("*", "\x00").replace("%", "*").replace("_", "?").replace("\x00", "*")
    return [n for n in names if fnmatch.fnmatchcase(n, glob)]


def _show_create(session, ts, parts, tok, is_view):
    cat, db, name = session.qualify(parts, error=lambda m: ts.error(m, tok))
    entry = session.catalog_entry(cat, lambda m: ts.error(m, tok))
    full = f"{quote(cat)}.{quote(db)}.{quote(name)}"
    view = None
    mt = session.temporary.get((cat, db, name))
    if mt is None and entry.kind == "memory":
        mt = entry.databases.get(db, {}).get(name)
    if mt is not None:
        if mt.kind == "view":
            view = mt.view
        elif not is_view:
            cols = ",\n".join(f"  {quote(f.name)} {type_sql(f.type)}" for f in mt.fields)
            opts = ",\n".join(f"  {sql_string(k)} = {sql_string(v)}" for k, v in sorted(mt.options.items()))
            return _result(result=[f"CREATE TEMPORARY TABLE {full} (\n{cols}\n) WITH (\n{opts}\n)"])
    elif entry.kind == "paimon":
        view = entry.get_view(db, name) if entry.catalog.database_exists(db) else None
    if is_view or view is not None:
        if view is None:
            raise ts.error(f"View '{cat}.{db}.{name}' does not exist", tok)
        text = f"CREATE VIEW {full}"
        if view.columns:
            text += " (" + ", ".join(quote(c) for c in view.columns) + ")"
        if view.comment:
            text += f" COMMENT {sql_string(view.comment)}"
        return _result(result=[text + f" AS\n{view.query}"])
    table = session.get_table([cat, db, name], error=lambda m: ts.error(m, tok))
    schema = table.schema
    if schema.options.get("type") == "materialized-table":
        from paimon_lab.sql.special import show_create_materialized

        return _result(result=[show_create_materialized(full, schema)])
    return _result(result=[create_table_sql(full, schema)])


def _describe(session: "Session", ts: TokenStream):
    ts.next()  # DESCRIBE / DESC
    ts.accept_kw("EXTENDED") or ts.accept_kw("FORMATTED")
    ts.accept_kw("TABLE")
    parts, tok = ts.qualified_name()
    ts.expect_end()
    return _describe_parts(session, ts, parts, tok)


def _describe_parts(session, ts, parts, tok):
    cat, db, name = session.qualify(parts, error=lambda m: ts.error(m, tok))
    entry = session.catalog_entry(cat, lambda m: ts.error(m, tok))
    table = None
    if entry.kind == "paimon" and db.lower() != "sys" and "$" not in name and entry.catalog.database_exists(db) \
            and entry.catalog.table_exists(f"{db}.{name}"):
        table = session.get_table([cat, db, name])
    if table is not None:
        sch = table.schema
        pk = ", ".join(sch.primary_keys)
        rows = [(f.name, type_sql(f.type.copy(True)), "TRUE" if f.type.nullable else "FALSE",
                 f"PRI({pk})" if f.name in sch.primary_keys else None,
                 "PARTITION KEY" if f.name in sch.partition_keys else None, None, f.description)
                for f in sch.fields]
    else:
        # views, system tables, connector tables: the schema of a read
        ident = ".".join(quote(p) for p in (cat, db, name))
        data = dispatch(session, f"SELECT * FROM {ident} LIMIT 0")
        rows = []
        for f in data.schema:
            try:
                tname = type_sql(T.from_arrow(f.type, True))
            except PaimonLabError:
                tname = str(f.type)
            rows.append((f.name, tname, "TRUE" if f.nullable else "FALSE", None, None, None, None))
    cols = list(zip(*rows)) if rows else [[]] * 7
    names = ["name", "type", "null", "key", "extras", "watermark", "comment"]
    return pa.table({n: pa.array(list(c), pa.string()) for n, c in zip(names, cols)})


# =========================================================================== SET / RESET

def _set(session: "Session", ts: TokenStream):
    ts.expect_kw("SET")
    if ts.at_end():
        items = sorted(session.settings.items())
        return _result(key=[k for k, _ in items], value=[v for _, v in items])
    key = _setting_part(ts, stop="=")
    if not ts.accept_op("="):
        raise ts.error("Expected SET 'key' = 'value'")
    value = _setting_part(ts, stop=None)
    session.settings[key] = value
    return None


def _setting_part(ts: TokenStream, stop: str | None) -> str:
    t = ts.peek()
    if t is None:
        raise ts.error("Expected a setting")
    if t.kind == "string":
        ts.next()
        return t.value
    start = t
    end = None
    while not ts.at_end() and not (stop and ts.peek().is_op(stop)):
        end = ts.next()
    return ts.text[start.start:end.end].strip() if end is not None else ""


def _reset(session: "Session", ts: TokenStream):
    ts.expect_kw("RESET")
    if ts.at_end():
        session.settings.clear()
        return None
    key = _setting_part(ts, stop=None)
    session.settings.pop(key, None)
    return None


# =========================================================================== misc

def _explain(session: "Session", ts: TokenStream):
    ts.expect_kw("EXPLAIN")
    ts.accept_kw("PLAN", "FOR")
    ts.accept_kw("EXTENDED")
    rw = rewrite(ts.text, ts.tokens, ts.i)
    ast = parse(rw)
    prepared = session.prepare_query(rw, ast)
    lines = []
    for r in prepared.rels:
        cols = None if r.columns is None else [n for n in r.relation.schema.names if n in r.columns]
        pred = None
        if r.predicates and r.relation.pushdown:
            from paimon_lab.core.predicate import And

            pred = r.predicates[0] if len(r.predicates) == 1 else And(tuple(r.predicates))
        lines.append((f"scan {r.relation.describe()} AS {r.alias}",
                      "*" if cols is None else ", ".join(cols),
                      repr(pred) if pred is not None else "", "" if r.limit is None else str(r.limit)))
    lines.append(("duckdb", prepared.sql, "", ""))
    step, cols, filt, lim = zip(*lines)
    return _result(step=list(step), columns=list(cols), filter=list(filt), limit=list(lim))


def _truncate(session: "Session", ts: TokenStream):
    ts.expect_kw("TRUNCATE")
    ts.accept_kw("TABLE")
    parts, tok = ts.qualified_name()
    ts.expect_end()
    table = session.get_table(parts, error=lambda m: ts.error(m, tok))
    session.last_snapshot_id = table.delete()
    return None


def _analyze(session: "Session", ts: TokenStream):

    ts.expect_kw("ANALYZE")
    ts.expect_kw("TABLE")
    parts, tok = ts.qualified_name()
    ts.expect_kw("COMPUTE", "STATISTICS")
    columns: list[str] | None = []
    if ts.accept_kw("FOR", "ALL", "COLUMNS"):
        columns = None
    elif ts.accept_kw("FOR", "COLUMNS"):
        columns = [ts.identifier("a column name")]
        while ts.accept_op(","):
            columns.append(ts.identifier("a column name"))
    ts.expect_end()
    table = session.get_table(parts, error=lambda m: ts.error(m, tok))
    session.last_snapshot_id = table.analyze(columns)
    return None


def _call(session, ts):
    from paimon_lab.sql.procedures import call

    return call(session, ts)


def _insert(session, ts):
    from paimon_lab.sql.dml import insert

    return insert(session, ts)


def _row_dml(session, ts):
    from paimon_lab.sql.dml import row_level

    return row_level(session, ts)


_HANDLERS = {
    "CREATE": _create, "DROP": _drop, "USE": _use, "ALTER": _alter, "SHOW": _show, "DESCRIBE": _describe,
    "DESC": _describe, "SET": _set, "RESET": _reset, "EXPLAIN": _explain, "TRUNCATE": _truncate,
    "ANALYZE": _analyze, "CALL": _call, "INSERT": _insert, "DELETE": _row_dml, "UPDATE": _row_dml,
    "MERGE": _row_dml,
}
