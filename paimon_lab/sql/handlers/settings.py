"""Session settings: SET and RESET (keys and values quoted or bare)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.sql.common import text_table
from paimon_lab.sql.duck import LOCAL_TIME_ZONE, connect, session_time_zone
from paimon_lab.sql.errors import SqlError
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
    old = ctx.settings.get(key)
    ctx.settings[key] = value
    if key == LOCAL_TIME_ZONE:  # refuse an unknown zone now, not at the next query
        try:
            session_time_zone.set(ctx.time_zone_name())
            connect().close()
        except SqlError:
            if old is None:
                ctx.settings.pop(key)
            else:
                ctx.settings[key] = old
            raise
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
