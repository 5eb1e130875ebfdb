"""Statement dispatch: a statement's kind from its leading keywords (:func:`classify`), and the
one table from kind to handler (:data:`HANDLERS`)."""

from __future__ import annotations

from typing import Callable

import pyarrow as pa

from paimon_lab.sql.context import SessionContext, Statement
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.handlers import (alter_table, catalogs, describe, dml, materialized, procedures,
                                     query, settings, show, tables, views)
from paimon_lab.sql.lexer import TokenStream, tokenize

Handler = Callable[[SessionContext, Statement], "pa.Table | None"]

HANDLERS: dict[str, Handler] = {
    "QUERY": query.run, "EXPLAIN": query.explain,
    "CREATE CATALOG": catalogs.create_catalog, "DROP CATALOG": catalogs.drop_catalog,
    "USE CATALOG": catalogs.use_catalog,
    "CREATE DATABASE": catalogs.create_database, "DROP DATABASE": catalogs.drop_database,
    "USE DATABASE": catalogs.use_database,
    "CREATE TABLE": tables.create, "DROP TABLE": tables.drop, "TRUNCATE TABLE": tables.truncate,
    "ANALYZE TABLE": tables.analyze, "ALTER TABLE": alter_table.alter,
    "CREATE VIEW": views.create, "ALTER VIEW": views.alter, "DROP VIEW": tables.drop,
    "CREATE MATERIALIZED TABLE": materialized.create, "ALTER MATERIALIZED TABLE": materialized.alter,
    "SHOW CATALOGS": show.catalogs, "SHOW CURRENT CATALOG": show.current_catalog,
    "SHOW CURRENT DATABASE": show.current_database, "SHOW DATABASES": show.databases,
    "SHOW TABLES": show.tables, "SHOW VIEWS": show.tables, "SHOW CREATE": show.create,
    "SHOW PARTITIONS": show.partitions, "SHOW TBLPROPERTIES": show.properties,
    "SHOW COLUMNS": describe.describe, "DESCRIBE": describe.describe,
    "SHOW PROCEDURES": procedures.show, "CALL": procedures.call,
    "SET": settings.set_, "RESET": settings.reset,
    "INSERT": dml.insert, "DELETE": dml.row_level, "UPDATE": dml.row_level, "MERGE": dml.row_level,
}

_QUERY_START = {"SELECT", "WITH", "VALUES", "FROM", "TABLE"}
_DATABASE = "DATABASE|SCHEMA|NAMESPACE"

# verb -> (keywords after it, kind) in the order tried; alternatives are '|'-separated, "" always
# matches; a verb whose keywords all fail raises its error (a string, or keywords it expects)
_GRAMMAR: dict[str, list[tuple[str, str]]] = {
    "CREATE": [("CATALOG", "CREATE CATALOG"), (_DATABASE, "CREATE DATABASE"),
               ("MATERIALIZED TABLE", "CREATE MATERIALIZED TABLE"), ("VIEW", "CREATE VIEW"),
               ("TABLE", "CREATE TABLE")],
    "DROP": [("CATALOG", "DROP CATALOG"), (_DATABASE, "DROP DATABASE"), ("VIEW", "DROP VIEW"),
             ("MATERIALIZED TABLE", "DROP TABLE"), ("TABLE", "DROP TABLE")],
    "ALTER": [("MATERIALIZED TABLE", "ALTER MATERIALIZED TABLE"), ("VIEW", "ALTER VIEW"),
              ("TABLE", "ALTER TABLE")],
    "USE": [("CATALOG", "USE CATALOG"), (_DATABASE, "USE DATABASE"), ("", "USE DATABASE")],
    "SHOW": [("CATALOGS", "SHOW CATALOGS"), ("CURRENT CATALOG", "SHOW CURRENT CATALOG"),
             ("CURRENT DATABASE", "SHOW CURRENT DATABASE"), ("DATABASES|SCHEMAS|NAMESPACES", "SHOW DATABASES"),
             ("TABLES", "SHOW TABLES"), ("VIEWS", "SHOW VIEWS"), ("CREATE", "SHOW CREATE"),
             ("PARTITIONS", "SHOW PARTITIONS"), ("TBLPROPERTIES", "SHOW TBLPROPERTIES"),
             ("COLUMNS", "SHOW COLUMNS"), ("PROCEDURES", "SHOW PROCEDURES")],
    "TRUNCATE": [("TABLE", "TRUNCATE TABLE"), ("", "TRUNCATE TABLE")],
    "ANALYZE": [("TABLE", "ANALYZE TABLE")],
    "DESCRIBE": [("", "DESCRIBE")], "DESC": [("", "DESCRIBE")],
    **{verb: [("", verb)] for verb in ("SET", "RESET", "EXPLAIN", "CALL", "INSERT", "DELETE", "UPDATE", "MERGE")},
}
_ERRORS = {"CREATE": "Expected CATALOG, DATABASE, TABLE, VIEW or MATERIALIZED TABLE after CREATE",
           "DROP": ("TABLE",), "ALTER": ("TABLE",), "ANALYZE": ("TABLE",), "SHOW": "Unsupported SHOW statement"}
# CREATE [OR REPLACE] and CREATE / DROP [TEMPORARY] come right after the verb; the kinds TEMPORARY allows
_TEMPORARY_KINDS = {"CREATE TABLE", "CREATE VIEW", "CREATE MATERIALIZED TABLE", "DROP TABLE", "DROP VIEW",
                    "DROP CATALOG", "DROP DATABASE"}


def dispatch(ctx: SessionContext, text: str) -> pa.Table | None:
    """Run one statement's text in ``ctx``."""
    st = classify(TokenStream(text, tokenize(text)))
    ctx.feedback.kind = st.kind
    return HANDLERS[st.kind](ctx, st)


def classify(ts: TokenStream) -> Statement:
    """The statement's kind and modifiers; ``ts`` is left after the keywords that name them."""
    first = ts.peek()
    if first is None:
        raise SqlError("Empty statement")
    if first.upper in _QUERY_START or first.is_op("("):
        return Statement("QUERY", ts)
    verb = first.upper
    if verb not in _GRAMMAR:
        raise ts.error(f"Unsupported statement '{first.text}'", first)
    ts.next()
    or_replace = verb == "CREATE" and ts.accept_kw("OR", "REPLACE")
    temporary = False
    if verb in ("CREATE", "DROP"):
        temporary = ts.accept_kw("TEMPORARY") or (verb == "CREATE" and ts.accept_kw("TEMP"))
    for words, kind in _GRAMMAR[verb]:
        if (not temporary or kind in _TEMPORARY_KINDS) and _accept(ts, words):
            return Statement(kind, ts, temporary=temporary, or_replace=or_replace)
    error = _ERRORS[verb]
    if isinstance(error, tuple):
        if verb == "DROP":
            ts.accept_kw("MATERIALIZED")
        ts.expect_kw(*error)  # raises "Expected TABLE, found ..."
    raise ts.error(error)


def _accept(ts: TokenStream, words: str) -> bool:
    """Accept one of the '|'-separated keyword sequences ``words``."""
    return any(ts.accept_kw(*alt.split()) for alt in words.split("|"))
