"""Regenerate paimon_lab/core/option_registry.json from Java Paimon's option classes.

    python scripts/gen_option_registry.py /path/to/apache-paimon[.git]

The path is an apache/paimon checkout or bare git directory; the option classes are read from its
HEAD (key, type, default, fallback keys) and the release tags give each key's first version.
paimon-lab's own columns (status, reason, description) are kept from the existing JSON; a key new
in Java comes in as "refused: not yet implemented". The JSON has one option a line so that flipping
an option's status is a one-line change. Then run scripts/gen_option_table.py for the README.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "paimon_lab" / "core" / "option_registry.json"

# Java class file -> the "source" column. Paths differ between releases; each is tried in turn.
SOURCES = {
    "core": ["paimon-api/src/main/java/org/apache/paimon/CoreOptions.java",
             "paimon-common/src/main/java/org/apache/paimon/CoreOptions.java",
             "paimon-core/src/main/java/org/apache/paimon/CoreOptions.java"],
    "orc": ["paimon-format/src/main/java/org/apache/paimon/format/OrcOptions.java"],
    "catalog": ["paimon-api/src/main/java/org/apache/paimon/options/CatalogOptions.java",
                "paimon-common/src/main/java/org/apache/paimon/options/CatalogOptions.java"],
}
RELEASES = ["release-0.8.0", "release-0.9.0", "release-1.0.0", "release-1.1.0", "release-1.2.0",
            "release-1.3.0", "release-2.0.0"]
NOT_YET = "not yet implemented in paimon-lab"


def _git(repo: str, *args: str) -> str:
    out = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=False)
    return out.stdout if out.returncode == 0 else ""


def _source_text(repo: str, rev: str, paths: list[str]) -> str:
    for path in paths:
        text = _git(repo, "show", f"{rev}:{path}")
        if text:
            return text
    return ""


_DECL = re.compile(r"ConfigOption<[^=]+?>\s+\w+\s*=\s*(?:ConfigOptions\.)?key\(\s*\"([^\"]+)\"\s*\)(.*?);\s*\n",
                   re.DOTALL)


def _default(chain: str, consts: dict[str, str]) -> str | None:
    m = re.search(r"\.defaultValue\((.*?)\)\s*\.with", chain, re.DOTALL) or \
        re.search(r"\.defaultValue\((.*)\)\s*$", chain.strip(), re.DOTALL)
    if not m:
        return None
    expr = " ".join(m.group(1).split())
    if expr.startswith('"') and expr.endswith('"'):
        return expr[1:-1]
    mem = re.fullmatch(r"(?:MemorySize\.)?(?:parse\(\"(.+)\"\)|ofMebiBytes\((\d+)\)|ofKibiBytes\((\d+)\))", expr)
    if mem:
        return mem.group(1) or (f"{mem.group(2)} mb" if mem.group(2) else f"{mem.group(3)} kb")
    const = re.fullmatch(r"(?:MemorySize\.)?VALUE_(\d+)_([KMG])B", expr)
    if const:
        return f"{const.group(1)} {const.group(2).lower()}b"
    dur = re.fullmatch(r"Duration\.of(Millis|Seconds|Minutes|Hours|Days)\((\d+)\)", expr)
    if dur:
        unit = {"Millis": "ms", "Seconds": "s", "Minutes": "min", "Hours": "h", "Days": "d"}[dur.group(1)]
        return f"{dur.group(2)} {unit}"
    enum = re.fullmatch(r"[A-Z]\w*\.([A-Z][A-Z0-9_]*)", expr)
    if enum and not expr.startswith(("Integer.", "Long.", "MemorySize.")):
        return enum.group(1).lower().replace("_", "-")
    if re.fullmatch(r"-?[\d_.]+[LF]?", expr):
        return expr.rstrip("LF").replace("_", "")
    if expr in consts:
        return consts[expr]
    return {"Integer.MAX_VALUE": "2147483647", "Long.MAX_VALUE": "9223372036854775807",
            "MemorySize.MAX_VALUE": "unlimited", "Integer.MIN_VALUE": "-2147483648", "new HashMap<>()": "{}"}.get(expr, expr)


def _type(chain: str) -> str:
    m = re.search(r"\.(\w+)Type\(", chain)
    return m.group(1) if m else "string"


def parse_options(text: str) -> dict[str, dict]:
    """key -> {type, default, fallback} of every ConfigOption declared in one Java class."""
    out = {}
    consts = dict(re.findall(r"static final String (\w+)\s*=\s*\"([^\"]*)\";", text))
    for m in _DECL.finditer(text):
        key, chain = m.group(1), m.group(2)
        fallback = re.findall(r"\"([^\"]+)\"", " ".join(re.findall(
            r"\.with(?:Fallback|Deprecated)Keys\(([^)]*)\)", chain)))
        out[key] = {"type": _type(chain), "default": _default(chain, consts), "fallback": fallback}
    return out


def java_options(repo: str) -> dict[str, dict]:
    """Every option of the releases and HEAD: the newest declaration, the first release that has
    it ("since") and, for one HEAD no longer has, the last release that had it ("until")."""
    found: dict[str, dict] = {}
    for rev in RELEASES + ["HEAD"]:
        for source, paths in SOURCES.items():
            for key, spec in parse_options(_source_text(repo, rev, paths)).items():
                first = found.get(key, {}).get("since", rev.removeprefix("release-") if rev != "HEAD" else "after 2.0")
                found[key] = {**spec, "source": source, "since": first, "last": rev}
    for spec in found.values():
        last = spec.pop("last")
        if last != "HEAD":
            spec["until"] = last.removeprefix("release-")
    return found


def main(repo: str) -> None:
    old = json.loads(OUT.read_text()) if OUT.exists() else {"options": [], "patterns": []}
    kept = {o["key"]: o for o in old["options"]}
    java = java_options(repo)
    rows = []
    for key in sorted(set(java) | set(kept)):
        prev = kept.get(key, {})
        row = {"key": key}
        if key in java:
            spec = java[key]
            row.update(source=spec["source"], type=spec["type"], default=spec["default"], since=spec["since"])
            if "until" in spec:
                row["until"] = spec["until"]
            if spec["fallback"]:
                row["fallback"] = spec["fallback"]
        else:   # paimon-lab's own, a pass-through format key, or one Java dropped: keep as is
            row.update({k: prev[k] for k in ("source", "type", "default", "since", "until", "fallback") if k in prev})
        row["status"] = prev.get("status", "refused")
        row["reason"] = prev.get("reason", "" if row["status"] == "implemented" else NOT_YET)
        row["reads"] = prev.get("reads", True)
        row["description"] = prev.get("description", "")
        rows.append(row)
    write(rows, old.get("patterns", []), repo_head=_git(repo, "rev-parse", "HEAD").strip())


def write(rows: list[dict], patterns: list[dict], repo_head: str) -> None:
    lines = ["{", f'"java_commit": {json.dumps(repo_head)},', '"options": [']
    lines += [json.dumps(r, ensure_ascii=False) + ("," if i < len(rows) - 1 else "") for i, r in enumerate(rows)]
    lines += ["],", '"patterns": [']
    lines += [json.dumps(p, ensure_ascii=False) + ("," if i < len(patterns) - 1 else "")
              for i, p in enumerate(patterns)]
    lines += ["]", "}"]
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
