"""Bind parameters into SQL text as literals: ``?`` (a sequence of values) or ``:name`` (a mapping).

Placeholders are found by the lexer, so a ``?`` or ``:x`` inside a string literal, a quoted name or
a comment is left alone; values become SQL literals (strings quoted and escaped), never SQL text.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any, Mapping, Sequence

from paimon_lab.sql.errors import SqlError, position
from paimon_lab.sql.lexer import tokenize


def literal(value: Any) -> str:
    """A Python value as a SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f"CAST('{'NaN' if math.isnan(value) else ('Infinity' if value > 0 else '-Infinity')}' AS DOUBLE)"
        return repr(value)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise SqlError(f"Cannot bind the decimal {value}: not a finite number")
        return format(value, "f")
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "X'" + bytes(value).hex().upper() + "'"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:  # an instant: TIMESTAMP_LTZ, whatever the session's zone
            return f"CAST('{value.astimezone(dt.timezone.utc).isoformat(sep=' ')}' AS TIMESTAMP_LTZ)"
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, dt.time):
        return f"TIME '{value.isoformat()}'"
    raise SqlError(f"Cannot bind a value of type {type(value).__name__} as a SQL parameter")


def bind(text: str, params: Sequence[Any] | Mapping[str, Any] | None) -> str:
    """``text`` with its placeholders replaced by ``params`` as literals."""
    if params is None:
        return text
    tokens = tokenize(text)
    spots: list[tuple[int, int, str | None]] = []   # (start, end, name or None for '?')
    for i, t in enumerate(tokens):
        if t.is_op("?"):
            spots.append((t.start, t.end, None))
        elif t.is_op(":") and i + 1 < len(tokens) and tokens[i + 1].kind == "word" and tokens[i + 1].start == t.end:
            spots.append((t.start, tokens[i + 1].end, tokens[i + 1].text))
    named = isinstance(params, Mapping)
    if isinstance(params, (str, bytes)) or not (named or isinstance(params, Sequence)):
        raise SqlError("params must be a sequence (for ?) or a mapping (for :name)")
    wrong = [s for s in spots if (s[2] is None) == named]
    if wrong:
        line, col = position(text, wrong[0][0])
        kind = "'?'" if named else "':name'"
        raise SqlError(f"The statement mixes {kind} placeholders with {'named' if named else 'positional'} params",
                       line, col)
    if not named and len(spots) != len(params):
        raise SqlError(f"The statement has {len(spots)} '?' placeholder(s) but {len(params)} parameter(s) were given")
    if named:
        missing = sorted({s[2] for s in spots} - set(params))
        if missing:
            raise SqlError(f"No value for parameter(s) {', '.join(':' + m for m in missing)}")
    out, last = [], 0
    for k, (start, end, name) in enumerate(spots):
        out.append(text[last:start])
        out.append(literal(params[name] if named else params[k]))
        last = end
    out.append(text[last:])
    return "".join(out)


def interpolate(text: str, namespace: Mapping[str, Any]) -> str:
    """``text`` with ``{name}`` replaced by the value of ``name`` in ``namespace`` as a SQL literal
    (a str quoted and escaped, numbers, bools, None, dates, times, bytes, decimals; a list or
    tuple as ``(v1, v2, ...)`` for ``IN``), and ``{{name}}`` by ``str(value)`` as raw SQL text (a
    table or column name; never user input: nothing is quoted). Braces inside string literals,
    quoted names and comments are left alone, and so is anything other than ``{identifier}``."""
    if "{" not in text:
        return text
    tokens = tokenize(text)
    out, last, i = [], 0, 0
    while i < len(tokens):
        raw = _spot(tokens, i, 2)
        if not raw and not _spot(tokens, i, 1):
            i += 1
            continue
        width = 2 if raw else 1
        name_tok = tokens[i + width]
        start, end = tokens[i].start, tokens[i + 2 * width].end
        if name_tok.text not in namespace:
            line, col = position(text, start)
            raise SqlError(f"{text[start:end]}: no variable '{name_tok.text}' in the notebook", line, col)
        value = namespace[name_tok.text]
        out.append(text[last:start])
        if raw:
            out.append(str(value))
        elif isinstance(value, (list, tuple)):
            if not value:
                line, col = position(text, start)
                raise SqlError(f"{text[start:end]}: '{name_tok.text}' is empty", line, col)
            out.append("(" + ", ".join(literal(v) for v in value) + ")")
        else:
            try:
                out.append(literal(value))
            except SqlError as e:
                line, col = position(text, start)
                raise SqlError(f"{text[start:end]}: {e.reason} (use {{{{{name_tok.text}}}}} for raw SQL text)",
                               line, col) from None
        last = end
        i += 2 * width + 1
    out.append(text[last:])
    return "".join(out)


def _spot(tokens, i: int, width: int) -> bool:
    """Whether tokens[i:] start with ``{``*width, an identifier, ``}``*width, all adjacent."""
    n = 2 * width + 1
    if i + n > len(tokens):
        return False
    run = tokens[i:i + n]
    if not (all(t.is_op("{") for t in run[:width]) and run[width].kind == "word" and run[width].text.isidentifier()
            and all(t.is_op("}") for t in run[width + 1:])):
        return False
    return all(a.end == b.start for a, b in zip(run, run[1:]))
