"""The one error type of the SQL layer."""

from __future__ import annotations

from paimon_lab.errors import PaimonLabError


class SqlError(PaimonLabError):
    """A statement could not be run: a syntax error, an unknown table or column, an unsupported
    statement, or an engine error while running it. ``line`` and ``column`` (1-based) point into
    the statement's text where known; a failed statement changes nothing."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 statement: str | None = None):
        self.reason = message
        self.line = line
        self.column = column
        self.statement = statement
        where = f" (line {line}, column {column})" if line is not None and column is not None else ""
        super().__init__(message + where)

    def _render_traceback_(self) -> list[str]:  # IPython: show the message, not a traceback wall
        return [f"SqlError: {self}"]


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset in ``text``."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col
