"""Parsing of DDL clauses with the token stream: column definitions (Paimon types through
``types.parse_type``), WITH options, key and name lists, PARTITIONED BY."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from paimon_lab.core import types as T
from paimon_lab.errors import UnsupportedTypeError
from paimon_lab.sql.lexer import Token, TokenStream


@dataclass
class ColumnDef:
    name: str
    type: T.DataType
    comment: str | None = None
    token: Token | None = None
    first: bool = False
    after: str | None = None


@dataclass
class TableDef:
    parts: list[str]
    token: Token
    if_not_exists: bool = False
    temporary: bool = False
    columns: list[ColumnDef] = field(default_factory=list)
    primary_keys: list[str] = field(default_factory=list)
    partition_keys: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    like: tuple[list[str], Token] | None = None
    as_query: int | None = None  # token index where AS <query> starts
    has_columns: bool = False
    using: str | None = None


_TYPE_STOP = {"COMMENT", "PRIMARY", "CONSTRAINT", "METADATA", "DEFAULT", "FIRST", "AFTER", "AS"}


def parse_data_type(ts: TokenStream, stop: set[str] = _TYPE_STOP) -> T.DataType:
    """A type up to ',' or ')' at depth 0 or a stop keyword (NOT NULL stays part of the type)."""
    first = ts.peek()
    if first is None:
        raise ts.error("Expected a data type")
    depth = 0
    last = None
    while not ts.at_end():
        t = ts.peek()
        if depth == 0 and (t.is_op(",", ")") or (t.kind == "word" and t.upper in stop)):
            break
        if t.is_op("(", "<"):
            depth += 1
        elif t.is_op(")", ">"):
            depth -= 1
        elif t.is_op(">>"):
            depth -= 2
        last = ts.next()
    if last is None:
        raise ts.error("Expected a data type")
    text = ts.text[first.start:last.end]
    # Spark spellings: STRUCT<a: INT> -> ROW<a INT>
    text = re.sub(r"(?i)\bSTRUCT\s*<", "ROW<", text)
    text = re.sub(r"(\w|`)\s*:\s*(?=[A-Za-z])", r"\1 ", text)
    try:
        return T.parse_type(text)
    except UnsupportedTypeError as e:
        hint = ""
        head = text.split("\n", 1)[0].strip()
        if head != text.strip():
            try:
                T.parse_type(head)
                hint = f"; is a ',' missing after '{head}'?"  # the next line is the next column
            except UnsupportedTypeError:
                pass
        raise ts.error(f"Invalid data type '{text}': {e}{hint}", first) from None


def parse_options(ts: TokenStream) -> dict[str, str]:
    """( 'k' = 'v', ... ) — keys may also be bare dotted names (Spark)."""
    ts.expect_op("(")
    out: dict[str, str] = {}
    if ts.accept_op(")"):
        return out
    while True:
        key = _option_key(ts)
        ts.expect_op("=")
        out[key] = ts.literal("an option value")
        if ts.accept_op(")"):
            return out
        ts.expect_op(",")
        if ts.accept_op(")"):  # a trailing comma (as in Paimon's own examples)
            return out


def parse_key_list(ts: TokenStream) -> list[str]:
    """( 'k1', 'k2' ) or ( k1, k2 ) — for RESET / UNSET."""
    ts.expect_op("(")
    out = []
    while True:
        out.append(_option_key(ts))
        if ts.accept_op(")"):
            return out
        ts.expect_op(",")


def _option_key(ts: TokenStream) -> str:
    t = ts.peek()
    if t is not None and t.kind == "string":
        ts.next()
        return t.value
    start = ts.peek()
    end = None
    while not ts.at_end() and not ts.peek().is_op("=", ",", ")"):
        end = ts.next()
    if end is None:
        raise ts.error("Expected an option key")
    return ts.text[start.start:end.end].replace(" ", "")


def parse_name_list(ts: TokenStream) -> list[str]:
    ts.expect_op("(")
    out = [ts.identifier("a column name")]
    while ts.accept_op(","):
        out.append(ts.identifier("a column name"))
    ts.expect_op(")")
    return out


def parse_column(ts: TokenStream, allow_position: bool = False) -> ColumnDef:
    tok = ts.peek()
    name = ts.identifier("a column name")
    if ts.at_kw("AS"):
        raise ts.error("Computed columns are not supported by Paimon tables")
    dtype = parse_data_type(ts)
    col = ColumnDef(name, dtype, token=tok)
    while not ts.at_end() and not ts.peek().is_op(",", ")"):
        if ts.accept_kw("COMMENT"):
            col.comment = ts.string("a comment")
        elif ts.accept_kw("PRIMARY", "KEY"):
            ts.accept_kw("NOT", "ENFORCED")
            col.type = col.type.copy(False)
            col.inline_pk = True  # the caller turns it into the table's primary key
        elif ts.at_kw("METADATA"):
            raise ts.error("Metadata columns are not supported by Paimon tables")
        elif allow_position and ts.accept_kw("FIRST"):
            col.first = True
        elif allow_position and ts.accept_kw("AFTER"):
            col.after = ts.identifier("a column name")
        else:
            break
    return col


def parse_table_elements(ts: TokenStream, d: TableDef) -> None:
    """Inside ( ... ) of CREATE TABLE: columns, PRIMARY KEY, WATERMARK, CONSTRAINT."""
    ts.expect_op("(")
    d.has_columns = True
    while True:
        if ts.accept_kw("CONSTRAINT"):
            ts.identifier("a constraint name")
        if ts.accept_kw("PRIMARY", "KEY"):
            if d.primary_keys:
                raise ts.error("Only one PRIMARY KEY may be defined")
            d.primary_keys = parse_name_list(ts)
            ts.accept_kw("NOT", "ENFORCED")
        elif ts.accept_kw("WATERMARK", "FOR"):
            ts.identifier("a column name")
            ts.expect_kw("AS")
            depth = 0
            while not ts.at_end() and not (depth == 0 and ts.peek().is_op(",", ")")):
                t = ts.next()
                depth += 1 if t.is_op("(") else -1 if t.is_op(")") else 0
        elif ts.at_kw("PERIOD", "FOR") or ts.at_kw("LIKE"):
            raise ts.error("Unsupported table element")
        else:
            col = parse_column(ts)
            if getattr(col, "inline_pk", False):
                if d.primary_keys:
                    raise ts.error("Only one PRIMARY KEY may be defined", col.token)
                d.primary_keys = [col.name]
            d.columns.append(col)
        if ts.accept_op(")"):
            return
        ts.expect_op(",")


def parse_partitioned_by(ts: TokenStream, d: TableDef) -> None:
    """PARTITIONED BY (a, b) — Spark/Hive may give types: (a STRING) declares a new column."""
    ts.expect_op("(")
    while True:
        tok = ts.peek()
        name = ts.identifier("a partition column")
        if not ts.peek().is_op(",", ")"):
            dtype = parse_data_type(ts)
            if not any(c.name == name for c in d.columns):
                d.columns.append(ColumnDef(name, dtype, token=tok))
        d.partition_keys.append(name)
        if ts.accept_op(")"):
            return
        ts.expect_op(",")
