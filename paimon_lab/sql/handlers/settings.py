"""Session settings: SET and RESET (keys and values quoted or bare)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.sql.common import text_table
from paimon_lab.sql.lexer import TokenStream

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext, Statement


def set_(ctx: SessionContext, st: Statement) -> pa.Table | None:
    """SET: list the settings; SET 'key' = 'value': set one."""
    ts = st.ts
    if ts.at_end():
        items = sorted(ctx.settings.items())
        return text_table(key=[k for k, _ in items], value=[v for _, v in items])
    key = _setting_part(ts, stop="=")
    if not ts.accept_op("="):
        raise ts.error("Expected SET 'key' = 'value'")
    value = _setting_part(ts, stop=None)
    ctx.settings[key] = value
    ctx.feedback.target = f"'{key}' = '{value}'"
    return None


def reset(ctx: SessionContext, st: Statement) -> None:
    """RESET: clear every setting; RESET 'key': clear one."""
    ts = st.ts
    if ts.at_end():
        ctx.settings.clear()
        ctx.feedback.target = "all settings"
        return None
    key = _setting_part(ts, stop=None)
    ctx.settings.pop(key, None)
    ctx.feedback.target = f"'{key}'"
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
