"""Move in-function ``from paimon_lab... import`` statements to module level (one-off refactor aid).

    python scripts/hoist_imports.py FILE...   (skips paimon_lab.sql/.spark/.magic targets)
"""

import ast
import re
import sys
from pathlib import Path

SKIP = ("paimon_lab.sql", "paimon_lab.spark", "paimon_lab.magic")


def hoist(path: Path) -> int:
    src = path.read_text()
    tree = ast.parse(src)
    lines = src.split("\n")
    found: list[ast.ImportFrom] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if (isinstance(sub, ast.ImportFrom) and sub.level == 0 and (sub.module or "").startswith("paimon_lab")
                        and not (sub.module or "").startswith(SKIP) and sub.module != "paimon_lab"):
                    found.append(sub)
    if not found:
        return 0
    found = sorted({id(n): n for n in found}.values(), key=lambda n: n.lineno)
    drop = set()
    for n in found:
        drop.update(range(n.lineno - 1, n.end_lineno))
    stmts = []
    for n in found:
        text = " ".join(l.strip() for l in lines[n.lineno - 1:n.end_lineno])
        stmts.append(re.sub(r"\s+", " ", text.replace("( ", "(").replace(" )", ")")))
    keep = [l for i, l in enumerate(lines) if i not in drop]
    # a function left with an empty line right after its docstring/def is fine; collapse double blanks
    out = "\n".join(keep)
    # insert after the last module-level import
    tree2 = ast.parse(out)
    last = max((n.end_lineno for n in tree2.body if isinstance(n, (ast.Import, ast.ImportFrom))), default=0)
    ls = out.split("\n")
    existing = set(ls[:last])
    new = [s for s in dict.fromkeys(stmts) if s not in existing]
    ls[last:last] = new
    path.write_text(re.sub(r"\n(\s*\n){2,}(?=\s+\S)", "\n\n", "\n".join(ls)))
    return len(new)


if __name__ == "__main__":
    for f in sys.argv[1:]:
        print(f, hoist(Path(f)))
