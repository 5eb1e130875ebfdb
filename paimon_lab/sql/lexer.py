"""A small SQL lexer: statement splitting, keyword parsing of the statements sqlglot cannot
handle, and the rewriting of query text (hints, ``t$snapshots`` names, string escapes) before
sqlglot sees it. Tokens keep their offsets so errors can name a line and column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from paimon_lab.sql.errors import SqlError, position

_OPS = ("<=>", "<>", "<=", ">=", "!=", "==", "||", "=>", "::", "->")


@dataclass(frozen=True)
class Token:
    kind: str  # word qident string dstring number op hint
    text: str  # the raw text
    start: int
    end: int

    @property
    def value(self) -> str:
        """Identifier or string content, unquoted and unescaped."""
        if self.kind == "qident":
            return self.text[1:-1].replace("``", "`")
        if self.kind == "string":
            return self.text[1:-1].replace("''", "'")
        if self.kind == "dstring":
            return self.text[1:-1].replace('""', '"')
        return self.text

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else ""

    def is_kw(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words

    def is_op(self, *ops: str) -> bool:
        return self.kind == "op" and self.text in ops


def tokenize(text: str, base: int = 0) -> list[Token]:
    """Tokens of ``text`` (comments dropped, ``/*+ ... */`` hints kept). Offsets are into ``text``
    plus ``base``."""
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                line, col = position(text, i)
                raise SqlError("Unterminated comment", line, col)
            if text.startswith("/*+", i):
                out.append(Token("hint", text[i:j + 2], base + i, base + j + 2))
            i = j + 2
            continue
        if c in "'\"`":
            j = i + 1
            while True:
                k = text.find(c, j)
                if k < 0:
                    line, col = position(text, i)
                    what = {"'": "string literal", '"': "quoted name", "`": "quoted identifier"}[c]
                    raise SqlError(f"Unterminated {what}", line, col)
                if k + 1 < n and text[k + 1] == c:
                    j = k + 2
                    continue
                break
            kind = {"'": "string", '"': "dstring", "`": "qident"}[c]
            out.append(Token(kind, text[i:k + 1], base + i, base + k + 1))
            i = k + 1
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            j = i
            while j < n and (text[j].isdigit() or text[j] == "."):
                j += 1
            if j < n and text[j] in "eE" and j + 1 < n and (text[j + 1].isdigit() or
                                                              (text[j + 1] in "+-" and j + 2 < n and text[j + 2].isdigit())):
                j += 2
                while j < n and text[j].isdigit():
                    j += 1
            # 1e3 done; a trailing letter makes it a word (e.g. 1d, 2L are rare: keep as word)
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append(Token("number", text[i:j], base + i, base + j))
            i = j
            continue
        if c.isalpha() or c == "_" or ord(c) > 127:
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "_$" or ord(text[j]) > 127):
                j += 1
            out.append(Token("word", text[i:j], base + i, base + j))
            i = j
            continue
        for op in _OPS:
            if text.startswith(op, i):
                out.append(Token("op", op, base + i, base + i + len(op)))
                i += len(op)
                break
        else:
            out.append(Token("op", c, base + i, base + i + 1))
            i += 1
    return out


def split_statements(script: str) -> list[tuple[int, str]]:
    """Split a script on top-level semicolons: [(offset, statement text)], empty ones dropped."""
    tokens = tokenize(script)
    out: list[tuple[int, str]] = []
    start = 0
    for t in tokens:
        if t.is_op(";"):
            piece = script[start:t.start]
            if tokenize(piece):
                out.append((start, piece))
            start = t.end
    piece = script[start:]
    if tokenize(piece):
        out.append((start, piece))
    return out


class TokenStream:
    """Cursor over a statement's tokens with keyword helpers and positioned errors."""

    def __init__(self, text: str, tokens: list[Token] | None = None):
        self.text = text
        self.tokens = tokens if tokens is not None else tokenize(text)
        self.i = 0

    # ---------------------------------------------------------------- cursor
    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.tokens[j] if 0 <= j < len(self.tokens) else None

    def at_end(self) -> bool:
        return self.i >= len(self.tokens)

    def next(self) -> Token:
        t = self.peek()
        if t is None:
            raise self.error("Unexpected end of statement")
        self.i += 1
        return t

    def error(self, message: str, token: Token | None = None) -> SqlError:
        tok = token if token is not None else self.peek()
        offset = tok.start if tok is not None else len(self.text.rstrip())
        line, col = position(self.text, offset)
        return SqlError(message, line, col, self.text)

    def error_at(self, token: Token | None = None) -> Callable[[str], SqlError]:
        """An error factory positioning its messages at ``token`` (for lookups that take one)."""
        return lambda message: self.error(message, token)

    # ---------------------------------------------------------------- keywords
    def at_kw(self, *words: str) -> bool:
        """True if the next tokens are the keywords ``words`` in order."""
        for k, w in enumerate(words):
            t = self.peek(k)
            if t is None or not t.is_kw(w):
                return False
        return True

    def accept_kw(self, *words: str) -> bool:
        if self.at_kw(*words):
            self.i += len(words)
            return True
        return False

    def expect_kw(self, *words: str) -> None:
        if not self.accept_kw(*words):
            got = self.peek()
            raise self.error(f"Expected {' '.join(words)}" + (f", found '{got.text}'" if got else ""))

    def accept_op(self, *ops: str) -> Token | None:
        t = self.peek()
        if t is not None and t.is_op(*ops):
            self.i += 1
            return t
        return None

    def expect_op(self, op: str) -> Token:
        t = self.accept_op(op)
        if t is None:
            got = self.peek()
            raise self.error(f"Expected '{op}'" + (f", found '{got.text}'" if got else ""))
        return t

    def expect_end(self) -> None:
        if not self.at_end():
            raise self.error(f"Unexpected '{self.peek().text}'")

    # ---------------------------------------------------------------- values
    def identifier(self, what: str = "a name") -> str:
        t = self.peek()
        if t is None or t.kind not in ("word", "qident", "dstring"):
            raise self.error(f"Expected {what}" + (f", found '{t.text}'" if t else ""))
        self.i += 1
        return t.value

    def qualified_name(self, what: str = "a table name") -> tuple[list[str], Token]:
        first = self.peek()
        parts = [self.identifier(what)]
        while self.peek() is not None and self.peek().is_op(".") and self.peek(1) is not None \
                and self.peek(1).kind in ("word", "qident", "dstring"):
            self.i += 1
            parts.append(self.identifier(what))
        return parts, first

    def string(self, what: str = "a string literal") -> str:
        t = self.peek()
        if t is None or t.kind != "string":
            raise self.error(f"Expected {what}" + (f", found '{t.text}'" if t else ""))
        self.i += 1
        return t.value

    def literal(self, what: str = "a value") -> str:
        """A string, number, or bare word as text."""
        t = self.peek()
        if t is None:
            raise self.error(f"Expected {what}")
        if t.kind in ("string", "number", "word", "qident", "dstring"):
            self.i += 1
            return t.value
        if t.is_op("-") and self.peek(1) is not None and self.peek(1).kind == "number":
            self.i += 2
            return "-" + self.peek(-1).text
        raise self.error(f"Expected {what}, found '{t.text}'")

    def rest_text(self) -> str:
        """The statement text from the current token to the end."""
        t = self.peek()
        return "" if t is None else self.text[t.start:]

    def balanced(self) -> tuple[int, int]:
        """Skip a parenthesized group starting at '('; return its inner (start, end) offsets."""
        open_ = self.expect_op("(")
        depth = 1
        while True:
            t = self.next()
            if t.is_op("("):
                depth += 1
            elif t.is_op(")"):
                depth -= 1
                if depth == 0:
                    return open_.end, t.start
