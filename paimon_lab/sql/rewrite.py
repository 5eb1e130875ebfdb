"""Turn Flink/Spark query text into text sqlglot's Databricks dialect parses, remembering what
it cannot express: ``/*+ OPTIONS(...) */`` table hints become placeholder table names, names such
as ``t$snapshots`` are quoted, and Flink string escapes ('') become Spark ones (\\')."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from paimon_lab.sql.errors import SqlError, position
from paimon_lab.sql.lexer import Token, tokenize

PLACEHOLDER = "__pl_ref_"
READ_DIALECT = "databricks"


@dataclass
class HintedRef:
    parts: list[str]
    options: dict[str, str]
    start: int  # offset of the table name in the original text


@dataclass
class Rewritten:
    original: str  # the statement text (offsets below are into it)
    text: str  # for sqlglot
    refs: dict[str, HintedRef] = field(default_factory=dict)
    emitted: list[int] = field(default_factory=list)  # emitted start of each piece
    sources: list[int] = field(default_factory=list)  # original start of each piece

    def original_offset(self, emitted_offset: int) -> int:
        i = bisect.bisect_right(self.emitted, emitted_offset) - 1
        if i < 0:
            return 0
        return self.sources[i]

    def error_at(self, message: str, emitted_offset: int | None) -> SqlError:
        if emitted_offset is None:
            return SqlError(message, statement=self.original)
        line, col = position(self.original, self.original_offset(emitted_offset))
        return SqlError(message, line, col, self.original)

    def node_error(self, message: str, node: exp.Expression) -> SqlError:
        meta = None
        for n in [node, *node.find_all(exp.Identifier)]:
            meta = getattr(n, "meta", None) or None
            if meta and "start" in meta:
                break
        return self.error_at(message, meta.get("start") if meta else None)


def parse_hint_options(hint: Token, original: str) -> dict[str, str] | None:
    """The options of ``/*+ OPTIONS('k'='v', ...) */``; None for other hints."""
    inner = hint.text[3:-2]
    toks = tokenize(inner, hint.start + 3)
    if not toks or not toks[0].is_kw("OPTIONS"):
        return None
    out: dict[str, str] = {}
    i = 1

    def err(msg: str, t: Token | None) -> SqlError:
        line, col = position(original, t.start if t else hint.start)
        return SqlError(msg, line, col, original)

    if i >= len(toks) or not toks[i].is_op("("):
        raise err("Expected '(' after OPTIONS in hint", toks[i] if i < len(toks) else None)
    i += 1
    while i < len(toks) and not toks[i].is_op(")"):
        k = toks[i]
        if i + 2 >= len(toks) or k.kind != "string" or not toks[i + 1].is_op("=") or \
                toks[i + 2].kind not in ("string", "number", "word"):
            raise err("Expected 'key' = 'value' in OPTIONS hint", k)
        out[k.value] = toks[i + 2].value
        i += 3
        if i < len(toks) and toks[i].is_op(","):
            i += 1
    return out


def _spark_string(tok: Token) -> str:
    return "'" + tok.value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def rewrite(text: str, tokens: list[Token] | None = None, start: int = 0) -> Rewritten:
    """Rewrite ``text`` (from token index ``start`` on) for sqlglot."""
    toks = tokens if tokens is not None else tokenize(text)
    toks = toks[start:]
    pieces: list[tuple[Token, Token, str]] = []  # (first token, last token, emitted text)
    refs: dict[str, HintedRef] = {}
    # Flink's MAP['k', v, ...] constructor -> Spark's MAP('k', v, ...)
    replaced: dict[int, str] = {}
    for i, t in enumerate(toks):
        if t.is_kw("MAP") and i + 1 < len(toks) and toks[i + 1].is_op("["):
            depth = 0
            for j in range(i + 1, len(toks)):
                if toks[j].is_op("["):
                    depth += 1
                elif toks[j].is_op("]"):
                    depth -= 1
                    if depth == 0:
                        replaced[i + 1] = "("
                        replaced[j] = ")"
                        break
    replaced.update(_timestamp_types(toks))
    for i, t in enumerate(toks):
        if i in replaced:
            pieces.append((t, t, replaced[i]))
            continue
        if t.kind == "hint":
            opts = parse_hint_options(t, text)
            if opts is None:
                continue
            # the table name right before the hint: ident (. ident)*
            j = len(pieces) - 1
            names: list[Token] = []
            while j >= 0 and pieces[j][0] is pieces[j][1] and pieces[j][0].kind in ("word", "qident"):
                names.insert(0, pieces[j][0])
                if j >= 1 and pieces[j - 1][0].is_op("."):
                    j -= 2
                else:
                    j -= 1
                    break
            if not names:
                line, col = position(text, t.start)
                raise SqlError("An OPTIONS hint must follow a table name", line, col, text)
            first = len(pieces) - (2 * len(names) - 1)
            name = f"{PLACEHOLDER}{len(refs)}"
            refs[name] = HintedRef([n.value for n in names], opts, names[0].start)
            pieces[first:] = [(names[0], names[-1], name)]
            continue
        if t.kind == "string":
            out = _spark_string(t)
        elif t.kind == "word" and "$" in t.text:
            out = _quote(t.text)
        else:
            out = t.text
        pieces.append((t, t, out))
    buf: list[str] = []
    emitted: list[int] = []
    sources: list[int] = []
    length = 0
    prev_end = None
    for first, last, out in pieces:
        if prev_end is not None:
            gap = text[prev_end:first.start]
            gap = gap if ("--" not in gap and "/*" not in gap) else " "
            if not gap:
                gap = ""
            buf.append(gap)
            length += len(gap)
        emitted.append(length)
        sources.append(first.start)
        buf.append(out)
        length += len(out)
        prev_end = last.end
    return Rewritten(text, "".join(buf), refs, emitted, sources)


def _timestamp_types(toks: list[Token]) -> dict[int, str]:
    """Flink's TIMESTAMP type has no time zone, but Spark's (the dialect sqlglot reads) has one:
    spell Flink's TIMESTAMP as TIMESTAMP_NTZ where it is a type (a literal ``TIMESTAMP '...'``, the
    type of a CAST / TRY_CAST or after ``::``), and ``TIMESTAMP[(p)] WITH LOCAL TIME ZONE`` as
    TIMESTAMP_LTZ[(p)]. Token index -> replacement text ('' drops the token)."""
    out: dict[int, str] = {}
    casts: list[int] = []  # paren depth of each open CAST( whose type has not started
    types: list[int] = []  # paren depth of each CAST( whose AS <type> is being read
    depth = 0
    for i, t in enumerate(toks):
        if t.is_op("("):
            depth += 1
            if i and toks[i - 1].is_kw("CAST", "TRY_CAST"):
                casts.append(depth)
            continue
        if t.is_op(")"):
            if casts and casts[-1] == depth:
                casts.pop()
            if types and types[-1] == depth:
                types.pop()
            depth -= 1
            continue
        if t.is_kw("AS") and casts and casts[-1] == depth:
            types.append(casts.pop())
            continue
        if not t.is_kw("TIMESTAMP"):
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if nxt is not None and nxt.kind == "string":
            out[i] = "TIMESTAMP_NTZ"
            continue
        if not (types or (i and toks[i - 1].is_op("::"))):
            continue
        j = i + 1
        if j + 2 < len(toks) and toks[j].is_op("(") and toks[j + 1].kind == "number" and toks[j + 2].is_op(")"):
            j += 3
        words = [w.upper for w in toks[j:j + 4]]
        if words == ["WITH", "LOCAL", "TIME", "ZONE"]:
            out[i] = "TIMESTAMP_LTZ"
            out.update({k: "" for k in range(j, j + 4)})
        elif words[:3] == ["WITHOUT", "TIME", "ZONE"]:
            out[i] = "TIMESTAMP_NTZ"
            out.update({k: "" for k in range(j, j + 3)})
        else:
            out[i] = "TIMESTAMP_NTZ"
    return out


_NTZ_UNITS = ((0, exp.DataType.Type.TIMESTAMP_S), (3, exp.DataType.Type.TIMESTAMP_MS),
              (6, exp.DataType.Type.TIMESTAMP), (9, exp.DataType.Type.TIMESTAMP_NS))


def _timestamp_precisions(tree: exp.Expression) -> None:
    """TIMESTAMP(p) as the DuckDB type of that precision (seconds, millis, micros or nanos), and a
    ``TIMESTAMP '...'`` literal with more than 6 fractional digits as nanoseconds, so that
    TIMESTAMP(9) values keep their nanoseconds."""
    for node in list(tree.find_all(exp.DataType)):
        params = node.expressions
        given = int(params[0].this.this) if params and isinstance(params[0], exp.DataTypeParam) and \
            params[0].this.is_int else None
        if node.this in (exp.DataType.Type.TIMESTAMPLTZ, exp.DataType.Type.TIMESTAMPTZ):
            node.meta["precision"] = 6 if given is None else given   # kept for casts to strings
            node.set("expressions", [])   # DuckDB's TIMESTAMPTZ takes no precision before 2.0 (micros)
            continue
        if node.this != exp.DataType.Type.TIMESTAMPNTZ:
            continue
        p = shown = given
        if p is None:
            p = shown = 6
            cast = node.parent
            if isinstance(cast, exp.Cast) and isinstance(cast.this, exp.Literal) and cast.this.is_string:
                frac = re.search(r"[.](\d+)", cast.this.this)
                p = 9 if frac and len(frac.group(1)) > 6 else 6
                shown = min(len(frac.group(1)), 9) if frac else 0  # Flink: a literal has the digits it gives
        node.meta["precision"] = shown
        node.set("this", next(unit for limit, unit in _NTZ_UNITS if p <= limit or limit == 9))
        node.set("expressions", [])


def parse(rw: Rewritten, into=None) -> exp.Expression:
    """Parse rewritten text with sqlglot; syntax errors become SqlError at the original position."""
    try:
        trees = sqlglot.parse(rw.text, read=READ_DIALECT, into=into) if into else \
            sqlglot.parse(rw.text, read=READ_DIALECT)
    except sqlglot.errors.ParseError as e:
        info = e.errors[0] if e.errors else {}
        desc = str(info.get("description") or e).split("<Token")[0].strip().rstrip(".")
        hl = info.get("highlight") or ""
        offset = end = None
        if info.get("line") is not None and info.get("col") is not None:
            lines = rw.text.split("\n")
            line_no = min(int(info["line"]), len(lines))
            end = sum(len(x) + 1 for x in lines[:line_no - 1]) + int(info["col"])
            offset = max(0, end - len(hl))
        at_end = end is not None and end >= len(rw.text.rstrip())
        error = rw.error_at(_syntax_message(desc, hl, at_end), offset)
        error.detail = f"sqlglot: {desc}" + (f" (at '{hl}')" if hl else "")
        raise error from None
    except sqlglot.errors.TokenError as e:
        raise SqlError(f"Syntax error: {e}", statement=rw.original) from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise SqlError("Expected one statement", statement=rw.original)
    _timestamp_precisions(trees[0])
    for node in trees[0].find_all(exp.Bracket):
        node.set("offset", 1)  # Flink's arrays count from 1 (the dialect sqlglot reads, Spark's, from 0)
    return trees[0]


def _syntax_message(desc: str, near: str, at_end: bool) -> str:
    """sqlglot's description of a parse error in words about the SQL, not sqlglot's classes."""
    if not near:
        return f"Syntax error: {desc}"
    where = f"after '{near}': the statement ends there" if at_end else f"at '{near}'"
    if desc.startswith(("Required keyword", "Invalid expression")):
        return f"Syntax error: something is missing {where}" if at_end else f"Syntax error: unexpected '{near}'"
    if desc.startswith(("Expecting ", "Expected ")):
        wanted = desc.split(" ", 1)[1]
        return f"Syntax error: expected {wanted} {where}"
    return f"Syntax error: {desc} {where}"
