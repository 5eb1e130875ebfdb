"""The one error type of the SQL layer, and how its position reads to a person."""

from __future__ import annotations

from paimon_lab.errors import PaimonLabError


class SqlError(PaimonLabError):
    """A statement could not be run: a syntax error, an unknown table or column, an unsupported
    statement, or an engine error while running it. ``line`` and ``column`` (1-based) point into
    the statement's text where known; a failed statement changes nothing. ``detail`` keeps what
    the engine said in full when ``reason`` is a shortened form of it."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 statement: str | None = None, detail: str | None = None):
        self.reason = message
        self.line = line
        self.column = column
        self.statement = statement
        self.detail = detail
        where = f" (line {line}, column {column})" if line is not None and column is not None else ""
        super().__init__(message + where)

    @property
    def source(self) -> str | None:
        """The text ``line`` and ``column`` point into."""
        return self.statement

    def excerpt(self) -> str | None:
        """The offending line of :attr:`source` (and the one before it) with a caret under
        ``column``; None when the position is not known."""
        return excerpt_of(self.source, self.line, self.column)

    def _render_traceback_(self) -> list[str]:  # IPython: show the message, not a traceback wall
        shown = self.excerpt()
        return [f"SqlError: {self}"] + (shown.split("\n") if shown else [])


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset in ``text``."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def excerpt_of(text: str | None, line: int | None, column: int | None, before: int = 1) -> str | None:
    """Line ``line`` of ``text`` (with up to ``before`` lines above it), numbered, and a caret
    under ``column``::

          1 | SELECT k
          2 | FROM t WHERE v = = 3
            |                  ^
    """
    if text is None or line is None or column is None:
        return None
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    first = max(1, line - before)
    while first < line and not lines[first - 1].strip():
        first += 1
    width = len(str(line))
    out = [f"{n:>{width}} | {lines[n - 1].rstrip()}" for n in range(first, line + 1)]
    target = lines[line - 1]
    col = max(1, min(column, len(target) + 1))
    # keep tabs so the caret lines up under tab-indented text
    pad = "".join(ch if ch == "\t" else " " for ch in target[:col - 1])
    out.append(f"{'':>{width}} | {pad}^")
    return "\n".join(out)
