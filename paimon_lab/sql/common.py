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


def text_table(**columns: list) -> pa.Table:
    """A result table of string columns."""
    return pa.table({k: pa.array(v, pa.string()) for k, v in columns.items()})


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

