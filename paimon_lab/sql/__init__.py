"""Flink/Spark-flavoured SQL over Paimon tables.

    from paimon_lab.sql import Session
    s = Session()
    s.run('''
        CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = '/tmp/wh');
        USE CATALOG paimon;
        CREATE TABLE t (k INT PRIMARY KEY NOT ENFORCED, v STRING);
        INSERT INTO t VALUES (1, 'a'), (2, 'b');
    ''')
    s.execute("SELECT * FROM t WHERE k > 1")     # -> pyarrow.Table

    import paimon_lab
    paimon_lab.sql("SELECT * FROM t", catalog="/tmp/wh")   # the module is callable: see sql()

Statements are parsed with sqlglot (Databricks dialect) after a small pre-parser handles what it
cannot: CREATE/USE CATALOG, CALL sys.*, SET, ``/*+ OPTIONS(...) */`` hints, ``t$snapshots``.
Queries run in DuckDB over Arrow tables read from Paimon, with the projection, simple WHERE
conjuncts and LIMIT pushed into ``Table.to_arrow`` — also through views, subqueries and CTEs read
once, when that cannot change the result (not below a LIMIT, a window function or an aggregate
other than onto its GROUP BY columns). A query that is one filtered read is answered by the read.

The package is a pipeline; each module imports only modules of its own or an earlier line:

- parse: ``errors``, ``lexer`` (tokens, statements), ``params`` (bound values, ``{name}``
  interpolation), ``rewrite`` (query text for sqlglot), ``clauses`` (DDL clauses), ``spelling``
  (SQL text of names and types), ``feedback`` (what a statement did, for people);
- running a query: ``relations`` (what a name reads), ``datagen``, ``duck`` (DuckDB), ``plain``
  (a query that is one filtered read: answered without DuckDB), ``prepared`` (a planned query:
  its reads and its DuckDB SQL);
- session state: ``catalogs`` (in-memory and Paimon catalogs, views), ``context`` (what a
  statement handler sees of its session);
- tables: ``schemas`` (creating Paimon tables), ``writing`` (rows cast and written), the table
  kinds ``format_table``, ``object_table``, ``materialized_table``;
- plan: ``resolve`` (a table name -> a relation or a view), ``plan`` (pushdown);
- execute: ``common`` (handler helpers), ``handlers.*`` (one module per statement concept, none
  importing another), ``dispatch`` (statement kind -> handler), ``session`` (the Session);
- editing: ``complete`` (names for an editor's completion, from a session's catalogs).
"""

from __future__ import annotations

import sys
import threading
import types
import weakref
from typing import Any

import pyarrow as pa

from paimon_lab.catalog import Catalog, HiveCatalog, JdbcCatalog
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.lexer import split_statements
from paimon_lab.sql.params import bind
from paimon_lab.sql.session import Session

__all__ = ["Session", "SqlError", "default_session", "set_default_session", "sql"]

_default: Session | None = None
_by_catalog: weakref.WeakKeyDictionary[Any, Session] = weakref.WeakKeyDictionary()
_by_warehouse: dict[str, Session] = {}
_guard = threading.Lock()


def default_session() -> Session:
    """The process-wide session used by :func:`sql` (and the ``%%paimon`` magics)."""
    global _default
    with _guard:
        if _default is None:
            _default = Session()
        return _default


def set_default_session(session: Session | None) -> None:
    global _default
    with _guard:
        _default = session


def _session_for(catalog: Any) -> Session:
    if catalog is None:
        return default_session()
    if isinstance(catalog, Session):
        return catalog
    with _guard:
        if isinstance(catalog, (Catalog, HiveCatalog, JdbcCatalog)):
            s = _by_catalog.get(catalog)
            if s is None:
                s = _by_catalog[catalog] = Session(catalog)
            return s
        if isinstance(catalog, str):
            key = catalog.rstrip("/")
            s = _by_warehouse.get(key)
            if s is None:
                s = _by_warehouse[key] = Session(Catalog(key))
            return s
    raise SqlError(f"catalog must be a Catalog, a warehouse path or a Session, not {type(catalog).__name__}")


def sql(statement: str, catalog: Any = None, *, params: Any = None, script: bool = False) -> pa.Table | None:
    """Run one SQL statement (``script=True``: several, ';'-separated); returns the (last) query's
    result as a pyarrow.Table (None if no statement returned rows).

    ``params`` binds values to ``?`` placeholders (a sequence) or ``:name`` ones (a mapping) as
    literals, never as SQL text: ``sql("SELECT * FROM t WHERE id = ?", params=[7])``.

    ``catalog``: a :class:`~paimon_lab.Catalog` (or :class:`~paimon_lab.catalog.jdbc.JdbcCatalog`) or warehouse path (a session with that catalog
    current, kept for later calls with the same catalog), a :class:`Session`, or None for the
    process-wide default session (start it with CREATE CATALOG ... / USE CATALOG ...).
    """
    text = bind(statement, params)
    if not script:
        count = len(split_statements(text))
        if count > 1:
            raise SqlError(f"paimon_lab.sql() runs one statement and was given {count}; "
                           "pass script=True to run a ';'-separated script")
    return _session_for(catalog).run(text)


class _CallableModule(types.ModuleType):
    """Lets ``paimon_lab.sql("SELECT ...")`` call :func:`sql` while ``paimon_lab.sql.Session`` etc.
    stay reachable."""

    def __call__(self, statement: str, catalog: Any = None, *, params: Any = None,
                 script: bool = False) -> pa.Table | None:
        return sql(statement, catalog, params=params, script=script)


sys.modules[__name__].__class__ = _CallableModule
