"""Completion of SQL text for an editor: what may stand at the cursor, from the session's
catalogs. After FROM / JOIN / INTO / UPDATE / TABLE a table (or a database or catalog to qualify
it), after ``t$`` a system table, after ``CALL sys.`` a procedure, after USE a database or
catalog, after ``alias.`` that table's columns, elsewhere in a statement the columns of the
tables it names. Nothing here runs a statement or reads data."""

from __future__ import annotations

import re
from dataclasses import dataclass

from paimon_lab import system as st
from paimon_lab.errors import PaimonLabError
from paimon_lab.sql.catalogs import SYSTEM_DB, memory_table
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.handlers.procedures import PROCEDURES
from paimon_lab.sql.lexer import Token, tokenize
from paimon_lab.sql.spelling import quote, type_sql

# the words after which a table name comes
_TABLE_WORDS = {"FROM", "JOIN", "INTO", "UPDATE", "TABLE", "DESCRIBE", "DESC", "USING", "ANALYZE", "OVERWRITE"}
# words that end a table reference (so are no alias)
_CLAUSE_WORDS = {
    "WHERE", "JOIN", "ON", "GROUP", "ORDER", "LIMIT", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "OUTER",
    "UNION", "EXCEPT", "INTERSECT", "SET", "VALUES", "SELECT", "USING", "HAVING", "WINDOW", "FOR",
    "PARTITION", "OVERWRITE", "WHEN", "MATCHED", "NATURAL", "LATERAL", "QUALIFY", "OFFSET", "FETCH",
    "COMPACT", "COMPUTE", "RENAME", "ADD", "DROP", "MODIFY", "RESET", "WITH", "IF", "AS", "LIKE", "TO",
}
_NAME_KINDS = ("word", "qident", "dstring")
# offered after the names when a typed word matches them
_KEYWORD_TEXT = """SELECT FROM WHERE GROUP BY ORDER LIMIT OFFSET HAVING DISTINCT AS AND OR NOT IN IS NULL LIKE
BETWEEN CASE WHEN THEN ELSE END JOIN LEFT RIGHT INNER FULL OUTER CROSS ON UNION ALL EXCEPT INTERSECT WITH
INSERT INTO OVERWRITE VALUES UPDATE SET RESET DELETE MERGE USING MATCHED CREATE TABLE DATABASE CATALOG VIEW
TEMPORARY DROP ALTER RENAME TO ADD MODIFY COLUMN SHOW TABLES DATABASES CATALOGS VIEWS FUNCTIONS PROCEDURES
DESCRIBE EXPLAIN USE CALL PARTITION PARTITIONED PRIMARY KEY ENFORCED IF EXISTS COMMENT OPTIONS TRUNCATE
ANALYZE COMPUTE STATISTICS FOR SYSTEM_TIME VERSION TIMESTAMP OF CAST TRUE FALSE BOOLEAN TINYINT SMALLINT INT
INTEGER BIGINT FLOAT DOUBLE DECIMAL STRING CHAR VARCHAR BYTES BINARY VARBINARY DATE TIME TIMESTAMP_LTZ ARRAY
MAP MULTISET ROW"""
KEYWORDS = tuple(_KEYWORD_TEXT.split())
_SIMPLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# a dotted name chain ending at the cursor: qualifiers, then the part being typed
_CHAIN = re.compile(r"((?:(?:`(?:[^`]|``)*`|[^\W\d][\w$]*)\.)*)([\w$]*)$")


@dataclass(frozen=True)
class Completion:
    """One candidate: the ``text`` that replaces the fragment and what it is (``kind``:
    catalog, database, table, view, system table, column, procedure), with a ``detail`` such
    as a column's type."""

    text: str
    kind: str
    detail: str = ""


def complete(session, text: str, cursor: int) -> tuple[int, list[Completion]]:
    """The candidates at ``cursor`` in ``text`` (a script of ';'-separated statements) and the
    offset where the fragment they replace starts (the fragment runs to ``cursor``)."""
    cursor = max(0, min(cursor, len(text)))
    try:
        head = tokenize(text[:cursor])
    except SqlError:  # the cursor is in a string, a quoted name or a comment
        return cursor, []
    start = max((t.end for t in head if t.is_op(";")), default=0)
    before = text[start:cursor]
    end = _statement_end(text, cursor)
    m = _CHAIN.search(before)
    qualifiers = [_unquote(q) for q in _split_chain(m.group(1))]
    prefix = m.group(2)
    frag_start = start + m.start(2)
    toks = tokenize(before[:m.start()])  # the text before the cursor tokenized, so this part does too
    try:
        statement = tokenize(text[start:end])
    except SqlError:  # an unfinished quote after the cursor: the statement up to it
        statement = head[next((i for i, t in enumerate(head) if t.start >= start), len(head)):]
    try:
        if "$" in prefix:
            base, _, sys_prefix = prefix.partition("$")
            return frag_start + len(base) + 1, _system_tables(session, qualifiers + [base], sys_prefix)
        items = _candidates(session, toks, statement, qualifiers)
    except (PaimonLabError, OSError, KeyError, ValueError):  # a catalog that cannot be listed: no candidates
        return frag_start, []
    low = prefix.lower()
    out = [c for c in items if c.text.lower().startswith(low)]
    if prefix and not qualifiers:
        out += [Completion(k, "keyword") for k in dict.fromkeys(KEYWORDS) if k.lower().startswith(low)
                and k.lower() != low]
    return frag_start, out


def _candidates(session, toks: list[Token], statement: list[Token], qualifiers: list[str]) -> list[Completion]:
    last = toks[-1] if toks else None
    words = [t.upper for t in toks[-2:]]
    if last is not None and last.is_kw("CALL") and not qualifiers:
        return [Completion(f"sys.{p}", "procedure") for p in sorted(PROCEDURES)] + \
            [Completion(SYSTEM_DB, "database")]
    if qualifiers and qualifiers[-1].lower() == SYSTEM_DB and len(toks) >= 1 and toks[-1].is_kw("CALL"):
        return [Completion(p, "procedure") for p in sorted(PROCEDURES)]
    if words[-2:] == ["USE", "CATALOG"] or (words[-1:] == ["CATALOG"] and not qualifiers):
        return _catalogs(session)
    if last is not None and last.is_kw("USE"):
        if qualifiers:
            return _databases(session, qualifiers[0])
        return _databases(session, session.current.catalog) + _catalogs(session)
    if last is not None and last.upper in ("DESC", "DESCRIBE") and len(toks) > 1:
        last = None  # ORDER BY k DESC
    if last is not None and (last.upper in _TABLE_WORDS or (last.is_op(",") and _in_from(toks))):
        return _tables(session, qualifiers)
    refs = _table_refs(statement)
    if qualifiers:
        target = _ref_named(refs, qualifiers)
        if target is not None:
            return _columns(session, target)
        return _tables(session, qualifiers) if len(qualifiers) < 3 and _in_from(toks) else []
    seen: set[str] = set()
    out = []
    for parts in refs.values():
        for c in _columns(session, parts):
            if c.text not in seen:
                seen.add(c.text)
                out.append(c)
    return out


# ---------------------------------------------------------------------------------- names

def _catalogs(session) -> list[Completion]:
    return [Completion(_name(c), "catalog") for c in sorted(session.catalogs)]


def _databases(session, catalog: str) -> list[Completion]:
    entry = session.catalogs.get(catalog)
    if entry is None:
        return []
    if entry.kind == "memory":
        names = sorted(entry.databases)
    else:
        names = sorted(entry.catalog.list_databases()) + [SYSTEM_DB]
    return [Completion(_name(d), "database") for d in names]


def _tables(session, qualifiers: list[str]) -> list[Completion]:
    """Tables and views under ``qualifiers`` (none: the current database's, then the current
    catalog's databases and the catalogs, to qualify a name)."""
    cur = session.current
    if not qualifiers:
        return _tables_in(session, cur.catalog, cur.database) + _databases(session, cur.catalog) + \
            _catalogs(session)
    if len(qualifiers) == 1:
        q = qualifiers[0]
        out = _tables_in(session, cur.catalog, q) if _has_database(session, cur.catalog, q) else []
        if q in session.catalogs:
            out += _databases(session, q)
        return out
    if len(qualifiers) == 2:
        return _tables_in(session, qualifiers[0], qualifiers[1])
    return []


def _has_database(session, catalog: str, db: str) -> bool:
    entry = session.catalogs.get(catalog)
    if entry is None:
        return False
    if entry.kind == "memory":
        return db in entry.databases
    return db.lower() == SYSTEM_DB or entry.catalog.database_exists(db)


def _tables_in(session, catalog: str, db: str) -> list[Completion]:
    entry = session.catalogs.get(catalog)
    if entry is None:
        return []
    temporary = [Completion(_name(n), "table") for (c, d, n) in sorted(session.temporary) if (c, d) == (catalog, db)]
    if entry.kind == "memory":
        tables = entry.databases.get(db, {})
        return temporary + [Completion(_name(n), "view" if t.kind == "view" else "table")
                            for n, t in sorted(tables.items())]
    if db.lower() == SYSTEM_DB:
        return [Completion(n, "system table") for n in st.GLOBAL_SYSTEM_TABLES]
    if not entry.catalog.database_exists(db):
        return temporary
    return temporary + [Completion(_name(n), "table") for n in sorted(entry.catalog.list_tables(db))] + \
        [Completion(_name(n), "view") for n in entry.list_views(db)]


def _system_tables(session, parts: list[str], prefix: str) -> list[Completion]:
    """System tables of the table ``parts`` (``t$`` + prefix); none if it is not a Paimon table."""
    cat, db, name = session.qualify(parts)
    entry = session.catalogs.get(cat)
    if entry is None or entry.kind != "paimon" or not entry.catalog.database_exists(db):
        return []
    if not entry.catalog.table_exists(f"{db}.{name}"):
        return []
    low = prefix.lower()
    return [Completion(n, "system table") for n in st.SYSTEM_TABLES if n.startswith(low)]


def _columns(session, parts: list[str]) -> list[Completion]:
    """The columns of the table, view or system table ``parts`` (none if unknown)."""
    if not 1 <= len(parts) <= 3:
        return []
    cat, db, name = session.qualify(parts)
    entry = session.catalogs.get(cat)
    if entry is None:
        return []
    mt = memory_table(session.temporary, entry, cat, db, name)
    if mt is not None:
        schema = mt.schema if mt.schema is not None else (mt.data.schema if mt.data is not None else
                                                          (mt.spec.schema if mt.spec is not None else None))
        if schema is not None:
            return [Completion(_name(f.name), "column", str(f.type)) for f in schema]
        return [Completion(_name(c), "column") for c in (mt.view.columns or [])] if mt.view else []
    if entry.kind != "paimon":
        return []
    catalog = entry.catalog
    if db.lower() == SYSTEM_DB:
        schema = st.SCHEMAS.get(name.lower())
        return [Completion(_name(f.name), "column", str(f.type)) for f in schema] if schema is not None else []
    base, _, system = name.partition("$")
    if not catalog.database_exists(db) or not catalog.table_exists(f"{db}.{base}"):
        view = entry.get_view(db, name) if catalog.database_exists(db) else None
        return [Completion(_name(c), "column") for c in (view.columns or [])] if view is not None else []
    fields = [(f.name, type_sql(f.type)) for f in catalog.get_table(f"{db}.{base}").schema.fields]
    system = system.lower()
    if system in st.SCHEMAS:
        fields = [(f.name, str(f.type)) for f in st.SCHEMAS[system]]
    elif system in ("audit_log", "binlog"):
        fields = [("rowkind", "STRING")] + fields
    return [Completion(_name(n), "column", t) for n, t in fields]


# ---------------------------------------------------------------------------------- the statement

def _table_refs(tokens: list[Token]) -> dict[str, list[str]]:
    """The tables a statement names (after FROM, JOIN, INTO, UPDATE, USING, TABLE and the commas
    of a FROM list): alias (or the table's own last name part, lower-cased) -> name parts."""
    refs: dict[str, list[str]] = {}
    i, n = 0, len(tokens)
    while i < n:
        t = tokens[i]
        after_comma = t.is_op(",") and _in_from(tokens[:i])
        if not (t.upper in _TABLE_WORDS or after_comma) or i + 1 >= n or tokens[i + 1].kind not in _NAME_KINDS:
            i += 1
            continue
        parts, j = [tokens[i + 1].value], i + 2
        while j + 1 < n and tokens[j].is_op(".") and tokens[j + 1].kind in _NAME_KINDS:
            parts.append(tokens[j + 1].value)
            j += 2
        if parts[0].upper() in _CLAUSE_WORDS or parts[0].upper() in ("SELECT", "IF", "TABLE"):
            i += 1
            continue
        if j < n and tokens[j].kind == "hint":
            j += 1
        alias = None
        if j < n and tokens[j].is_kw("AS") and j + 1 < n and tokens[j + 1].kind in _NAME_KINDS:
            alias = tokens[j + 1].value
        elif j < n and tokens[j].kind in _NAME_KINDS and tokens[j].upper not in _CLAUSE_WORDS:
            alias = tokens[j].value
        refs[(alias or parts[-1]).lower()] = parts
        i = j
    return refs


def _ref_named(refs: dict[str, list[str]], qualifiers: list[str]) -> list[str] | None:
    """The table ``qualifiers`` (``t.`` / ``db.t.``) names among a statement's references."""
    if len(qualifiers) == 1 and qualifiers[0].lower() in refs:
        return refs[qualifiers[0].lower()]
    for parts in refs.values():
        if [p.lower() for p in parts[-len(qualifiers):]] == [q.lower() for q in qualifiers] and \
                len(qualifiers) <= len(parts):
            return parts
    return None


def _in_from(tokens: list[Token]) -> bool:
    """Whether the last of ``tokens`` is in a FROM list (at its parenthesis depth)."""
    depth = 0
    for t in reversed(tokens):
        if t.is_op(")"):
            depth += 1
        elif t.is_op("("):
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and t.kind == "word":
            if t.upper == "FROM":
                return True
            if t.upper in _CLAUSE_WORDS and t.upper not in ("AS",):
                return False
    return False


def _statement_end(text: str, cursor: int) -> int:
    try:
        rest = tokenize(text[cursor:], cursor)
    except SqlError:
        return len(text)
    return next((t.start for t in rest if t.is_op(";")), len(text))


def _split_chain(chain: str) -> list[str]:
    return [m.group(0) for m in re.finditer(r"`(?:[^`]|``)*`|[^.`]+", chain)]


def _unquote(part: str) -> str:
    return part[1:-1].replace("``", "`") if part.startswith("`") else part


def _name(name: str) -> str:
    return name if _SIMPLE.fullmatch(name) else quote(name)
