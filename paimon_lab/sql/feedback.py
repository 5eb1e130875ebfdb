"""What a statement did, for people: :class:`Feedback` is filled while a statement runs (the
session sets its kind and snapshot, handlers the object it touched and how many rows) and reads
as one line, e.g. ``created table lab.default.t`` or ``inserted 1,000 rows into lab.default.t —
snapshot 7``. :class:`StatementResult` pairs it with the statement and its result table;
:class:`ScriptError` says which statements of a script ran before one failed."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from paimon_lab.sql.errors import SqlError

# statement verb -> past tense; the object word is the rest of the kind ("CREATE TABLE" -> table)
_PAST = {"CREATE": "created", "DROP": "dropped", "ALTER": "altered", "USE": "using", "TRUNCATE": "truncated",
         "ANALYZE": "analyzed", "INSERT": "inserted", "DELETE": "deleted", "UPDATE": "updated",
         "MERGE": "merged", "SET": "set", "RESET": "reset"}
_ROWS_INTO = {"INSERT": "into", "DELETE": "from", "UPDATE": "in", "MERGE": "into"}


@dataclass
class Feedback:
    """One statement's effect: its ``kind`` (``"INSERT"``, ``"CREATE TABLE"``...), the ``target``
    it touched, ``rows`` written/deleted/updated (None: not counted), the ``snapshot_id`` it
    committed (None: none) and a ``note``: why IF [NOT] EXISTS skipped it."""

    kind: str = ""
    target: str | None = None
    rows: int | None = None
    snapshot_id: int | None = None
    note: str | None = None

    def add_rows(self, n: int) -> None:
        self.rows = (self.rows or 0) + int(n)

    @property
    def message(self) -> str | None:
        """One line, or None for statements whose result is their answer (queries, SHOW...)."""
        verb, _, what = self.kind.partition(" ")
        past = _PAST.get(verb)
        if past is None:
            return None
        if self.note:
            return " ".join(p for p in ("skipped", self.kind, self.target) if p) + f" ({self.note})"
        if verb in _ROWS_INTO:
            n = self.rows or 0
            text = f"{past} {n:,} row{'' if n == 1 else 's'}"
            if self.target:
                text += f" {_ROWS_INTO[verb]} {self.target}"
        elif verb in ("SET", "RESET"):
            text = f"{past} {self.target}" if self.target else past
        else:
            what = what.lower()
            text = " ".join(p for p in (past, what, self.target) if p)
        if self.rows is not None and verb not in _ROWS_INTO:
            text += f" ({self.rows:,} row{'' if self.rows == 1 else 's'})"
        if self.snapshot_id is not None:
            text += f" — snapshot {self.snapshot_id}"
        return text


@dataclass
class StatementResult:
    """A statement of a script that ran: its 1-based ``index``, ``text``, ``result`` table (None
    for statements that return none) and :class:`Feedback`."""

    index: int
    text: str
    result: pa.Table | None
    feedback: Feedback = field(default_factory=Feedback)


class ScriptError(SqlError):
    """A statement of a script failed: the :class:`SqlError` of that statement (positioned in the
    script), with ``done``, the statements that ran before it, ``index``, the failed one's, and
    ``script``, the text ``line`` and ``column`` point into."""

    def __init__(self, error: SqlError, index: int, done: list[StatementResult], script: str | None = None):
        super().__init__(error.reason, error.line, error.column, error.statement, error.detail)
        self.index = index
        self.done = done
        self.script = script

    @property
    def source(self) -> str | None:
        return self.script if self.script is not None else self.statement

    @property
    def progress(self) -> str:
        """``statements 1-2 ran; statement 3 failed`` (or ``statement 1 failed``)."""
        ran = "" if self.index == 1 else \
            ("statement 1 ran; " if self.index == 2 else f"statements 1-{self.index - 1} ran; ")
        return f"{ran}statement {self.index} failed"
