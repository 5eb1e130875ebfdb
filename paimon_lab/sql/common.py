"""Helpers several statement handlers share: string-column results, database names, the scope a
rename resolves in, what a query parses to."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from paimon_lab.sql.catalogs import Scope
from paimon_lab.sql.lexer import Token, TokenStream

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext

QUERY_TYPES = (exp.Query, exp.Values)  # what a query statement parses to


TEXT_DISPLAY = (b"paimon_lab.display", b"text")   # schema metadata: show the one cell as text


def text_table(**columns: list) -> pa.Table:
    """A result table of string columns."""
    return pa.table({k: pa.array(v, pa.string()) for k, v in columns.items()})


def statement_text(text: str) -> pa.Table:
    """A one-cell ``result`` table holding a statement's text (SHOW CREATE), marked so that the
    notebook magic shows it as text with its line breaks rather than as a one-cell DataFrame."""
    return text_table(result=[text]).replace_schema_metadata(dict([TEXT_DISPLAY]))


def display_text(table: pa.Table) -> str | None:
    """The text of a :func:`statement_text` result (None for any other table)."""
    meta = table.schema.metadata or {}
    if meta.get(TEXT_DISPLAY[0]) != TEXT_DISPLAY[1] or table.num_rows != 1:
        return None
    return table.column(0)[0].as_py()


def db_name(ctx: SessionContext, parts: list[str], ts: TokenStream, tok: Token) -> tuple[str, str]:
    """(catalog, database) of a ``[catalog.]database`` name."""
    if len(parts) == 1:
        return ctx.current.catalog, parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ts.error("Invalid database name: use [catalog.]database", tok)


def rename_scope(ctx: SessionContext, catalog: str) -> Scope:
    """Where the new name of RENAME TO resolves: the renamed object's catalog."""
    return Scope(catalog, ctx.current.database)

