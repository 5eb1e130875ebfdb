"""Rewrite imports for a module move: relative imports become absolute, then old dotted module
names are replaced by new ones (in code, strings, notebooks and docs). Used by the architecture
refactor; kept for branches that must be rebased over it.

    python scripts/move_modules.py absolutize FILE...
    python scripts/move_modules.py rename MAPFILE FILE...     (MAPFILE: lines "old.module new.module")
    python scripts/move_modules.py symbols MAPFILE FILE...    (MAPFILE: lines "old.module:Name new.module")
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PKG = "paimon_lab"


def module_of(path: Path) -> str:
    parts = list(path.with_suffix("").parts)
    i = parts.index(PKG)
    parts = parts[i:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def render(node: ast.ImportFrom, module: str, indent: str) -> str:
    names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
    line = f"{indent}from {module} import {names}"
    if len(line) <= 110:
        return line
    head = f"{indent}from {module} import ("
    rows, row = [], head
    for a in node.names:
        item = a.name + (f" as {a.asname}" if a.asname else "") + ", "
        if len(row) + len(item) > 105 and row.strip() != head.strip():
            rows.append(row.rstrip())
            row = " " * len(head)
        row += item
    rows.append(row.rstrip().rstrip(",") + ")")
    return "\n".join(rows)


def absolutize(path: Path) -> None:
    src = path.read_text()
    tree = ast.parse(src)
    mod = module_of(path)
    is_pkg = path.name == "__init__.py"
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    lines = src.split("\n")
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            anchor = base[: len(base) - (node.level - 1)]
            target = ".".join(anchor + ([node.module] if node.module else []))
            indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)
            edits.append((node.lineno, node.end_lineno, render(node, target, indent)))
    for start, end, text in sorted(edits, reverse=True):
        lines[start - 1:end] = [text]
    path.write_text("\n".join(lines))


def rename(mapping: dict[str, str], path: Path) -> None:
    src = path.read_text()
    if path.suffix == ".py":
        src = _split_module_imports(src, mapping)
    for old in sorted(mapping, key=len, reverse=True):
        new = mapping[old]
        src = re.sub(rf"(?<![\w.]){re.escape(old)}(?![\w])", new, src)
    path.write_text(src)


def _split_module_imports(src: str, mapping: dict[str, str]) -> str:
    """``from paimon_lab import types as T, errors`` imports modules by name: rewrite per name."""
    tree = ast.parse(src)
    lines = src.split("\n")
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            moved = [a for a in node.names if f"{node.module}.{a.name}" in mapping]
            if not moved:
                continue
            indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)
            out = []
            rest = [a for a in node.names if a not in moved]
            if rest:
                out.append(render(ast.ImportFrom(module=node.module, names=rest, level=0), node.module, indent))
            for a in moved:
                new = mapping[f"{node.module}.{a.name}"]
                parent, name = new.rsplit(".", 1)
                alias = a.asname or (a.name if name != a.name else None)
                out.append(f"{indent}from {parent} import {name}" + (f" as {alias}" if alias else ""))
            edits.append((node.lineno, node.end_lineno, "\n".join(out)))
    for start, end, text in sorted(edits, reverse=True):
        lines[start - 1:end] = [text]
    return "\n".join(lines)


def move_symbols(moves: dict[tuple[str, str], str], path: Path) -> None:
    """``from old import a, b``: names that moved (``(old, name) -> new``) import from their new module."""
    src = path.read_text()
    tree = ast.parse(src)
    lines = src.split("\n")
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not any((node.module, a.name) in moves for a in node.names):
                continue
            indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)
            groups: dict[str, list] = {}
            for a in node.names:
                groups.setdefault(moves.get((node.module, a.name), node.module), []).append(a)
            out = [render(ast.ImportFrom(module=m, names=ns, level=0), m, indent) for m, ns in groups.items()]
            edits.append((node.lineno, node.end_lineno, "\n".join(out)))
    for start, end, text in sorted(edits, reverse=True):
        lines[start - 1:end] = [text]
    path.write_text("\n".join(lines))


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "absolutize":
        for f in args:
            absolutize(Path(f))
    elif cmd == "rename":
        mapping = dict(l.split() for l in Path(args[0]).read_text().splitlines() if l.strip() and not l.startswith("#"))
        for f in args[1:]:
            rename(mapping, Path(f))
    elif cmd == "symbols":  # MAPFILE lines: "old.module:Name new.module"
        moves = {}
        for line in Path(args[0]).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                old, new = line.split()
                moves[tuple(old.split(":"))] = new
        for f in args[1:]:
            move_symbols(moves, Path(f))
