"""Catalogs and databases: CREATE / DROP / USE CATALOG and CREATE / DROP / USE DATABASE."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.catalog import Catalog
from paimon_lab.errors import PaimonLabError
from paimon_lab.catalog import HiveCatalog, JdbcCatalog
from paimon_lab.sql.catalogs import MemoryCatalog, Scope
from paimon_lab.sql.clauses import parse_options
from paimon_lab.sql.common import db_name

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext, Statement


def create_catalog(ctx: SessionContext, st: Statement) -> None:
    """CREATE CATALOG [IF NOT EXISTS] c [WITH ('type' = 'paimon', 'warehouse' = ..., ...)]."""
    ts = st.ts

    if_not_exists = ts.accept_kw("IF", "NOT", "EXISTS")
    name_tok = ts.peek()
    name = ts.identifier("a catalog name")
    options = {}
    if ts.accept_kw("WITH"):
        options = parse_options(ts)
    ts.expect_end()
    ctx.feedback.target = name
    if name in ctx.catalogs:
        if if_not_exists:
            ctx.feedback.note = "already exists"
            return None
        raise ts.error(f"Catalog '{name}' already exists", name_tok)
    ctype = options.get("type", "paimon").lower()
    if ctype == "generic_in_memory":
        ctx.catalogs[name] = MemoryCatalog(name)
        return None
    if ctype != "paimon":
        raise ts.error(f"Catalog type '{options.get('type')}' is not supported (use 'type'='paimon')", name_tok)
    metastore = options.get("metastore", "filesystem").lower()
    warehouse = options.get("warehouse")
    if metastore == "hive":
        try:
            catalog = HiveCatalog(options.get("uri") or None, warehouse or None,
                                  options={k: v for k, v in options.items() if k not in ("type", "metastore", "uri")})
        except PaimonLabError as e:
            raise ts.error(f"Cannot open Hive catalog '{name}': {e}", name_tok) from None
        except (OSError, ValueError, pa.ArrowException) as e:
            raise ts.error(f"Cannot open warehouse '{warehouse}': {e}", name_tok) from None
    elif not warehouse:
        raise ts.error(f"Catalog '{name}' needs a 'warehouse' option"
                       + (f" (metastore '{metastore}' is not available here)" if metastore != "filesystem" else ""),
                       name_tok)
    elif metastore == "jdbc" and _jdbc_supported(options.get("uri")):
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
            catalog = Catalog(warehouse, options={k: v for k, v in options.items() if k != "metastore"})
        except (OSError, ValueError, pa.ArrowException) as e:
            raise ts.error(f"Cannot open warehouse '{warehouse}': {e}", name_tok) from None
    try:
        ctx.add_catalog(name, catalog, options=options)
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
    try:
        return JdbcCatalog(options.get("uri") or None, options["warehouse"],
                           options={k: v for k, v in options.items() if k not in ("type", "metastore", "uri")})
    except PaimonLabError as e:
        raise ts.error(f"Cannot open JDBC catalog '{name}': {e}", name_tok) from None
    except (OSError, ValueError, pa.ArrowException) as e:
        raise ts.error(f"Cannot open warehouse '{options['warehouse']}': {e}", name_tok) from None


def use_catalog(ctx: SessionContext, st: Statement) -> None:
    """USE CATALOG c."""
    ts = st.ts
    tok = ts.peek()
    name = ts.identifier("a catalog name")
    ts.expect_end()
    entry = ctx.catalog_entry(name, ts.error_at(tok))
    ctx.feedback.target = name
    if entry.kind == "memory":
        db = "default_database" if "default_database" in entry.databases else sorted(entry.databases)[0]
    else:
        db = entry.options.get("default-database", "default")
    ctx.current = Scope(name, db)
    return None


def drop_catalog(ctx: SessionContext, st: Statement) -> None:
    """DROP CATALOG [IF EXISTS] c."""
    ts = st.ts
    if_exists = ts.accept_kw("IF", "EXISTS")
    tok = ts.peek()
    name = ts.identifier("a catalog name")
    ts.expect_end()
    ctx.feedback.target = name
    if name not in ctx.catalogs:
        if if_exists:
            ctx.feedback.note = "does not exist"
            return None
        raise ts.error(f"Catalog '{name}' does not exist", tok)
    if name == ctx.current.catalog:
        raise ts.error(f"Cannot drop the current catalog '{name}'", tok)
    ctx.catalogs.pop(name)
    return None


def create_database(ctx: SessionContext, st: Statement) -> None:
    """CREATE DATABASE [IF NOT EXISTS] [c.]db [COMMENT ...] [WITH (...)]."""
    ts = st.ts

    if_not_exists = ts.accept_kw("IF", "NOT", "EXISTS")
    parts, tok = ts.qualified_name("a database name")
    if ts.accept_kw("COMMENT"):
        ts.string()
    if ts.accept_kw("WITH") or ts.accept_kw("WITH", "DBPROPERTIES"):
        parse_options(ts)
    ts.expect_end()
    cat, db = db_name(ctx, parts, ts, tok)
    ctx.feedback.target = f"{cat}.{db}"
    entry = ctx.catalog_entry(cat, ts.error_at(tok))
    if entry.kind == "memory":
        if db in entry.databases:
            if if_not_exists:
                ctx.feedback.note = "already exists"
                return None
            raise ts.error(f"Database '{cat}.{db}' already exists", tok)
        entry.databases[db] = {}
        return None
    if db.lower() == "sys":
        raise ts.error("'sys' is the system database", tok)
    if entry.catalog.database_exists(db):
        if if_not_exists:
            ctx.feedback.note = "already exists"
            return None
        raise ts.error(f"Database '{cat}.{db}' already exists", tok)
    entry.catalog.create_database(db)
    return None


def use_database(ctx: SessionContext, st: Statement) -> None:
    """USE [DATABASE] [c.]db."""
    ts = st.ts
    parts, tok = ts.qualified_name("a database name")
    ts.expect_end()
    cat, db = db_name(ctx, parts, ts, tok)
    ctx.feedback.target = f"{cat}.{db}"
    entry = ctx.catalog_entry(cat, ts.error_at(tok))
    if entry.kind == "memory":
        if db not in entry.databases:
            raise ts.error(f"Database '{cat}.{db}' does not exist", tok)
    elif db.lower() != "sys" and not entry.catalog.database_exists(db):
        raise ts.error(f"Database '{cat}.{db}' does not exist", tok)
    ctx.current = Scope(cat, db if db.lower() != "sys" else "sys")
    return None


def drop_database(ctx: SessionContext, st: Statement) -> None:
    """DROP DATABASE [IF EXISTS] [c.]db [CASCADE | RESTRICT]."""
    ts = st.ts
    if_exists = ts.accept_kw("IF", "EXISTS")
    parts, tok = ts.qualified_name("a database name")
    cascade = ts.accept_kw("CASCADE")
    ts.accept_kw("RESTRICT")
    ts.expect_end()
    cat, db = db_name(ctx, parts, ts, tok)
    ctx.feedback.target = f"{cat}.{db}"
    entry = ctx.catalog_entry(cat, ts.error_at(tok))
    if entry.kind == "memory":
        if db not in entry.databases:
            if if_exists:
                ctx.feedback.note = "does not exist"
                return None
            raise ts.error(f"Database '{cat}.{db}' does not exist", tok)
        if entry.databases[db] and not cascade:
            raise ts.error(f"Database '{cat}.{db}' is not empty; use CASCADE", tok)
        entry.databases.pop(db)
        return None
    if not entry.catalog.database_exists(db):
        if if_exists:
            ctx.feedback.note = "does not exist"
            return None
        raise ts.error(f"Database '{cat}.{db}' does not exist", tok)
    if not cascade and (entry.catalog.list_tables(db) or entry.list_views(db)):
        raise ts.error(f"Database '{cat}.{db}' is not empty; use CASCADE", tok)
    if ctx.current.catalog == cat and ctx.current.database == db:
        raise ts.error(f"Cannot drop the current database '{db}'", tok)
    for name in entry.catalog.list_tables(db):
        ctx.stop_refresh(cat, db, name)
    entry.catalog.drop_database(db, cascade=True)
    return None
