"""Pins for the lowest versions paimon-lab claims: every core and [notebook]/[postgres] dependency
at the lower bound pyproject.toml declares. `python scripts/lowest.py > constraints.txt`, then
`pip install -c constraints.txt -e '.[notebook,postgres]'` (CI runs the suite in such a venv)."""

from __future__ import annotations

import os
import re
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
EXTRAS = ("notebook", "postgres", "hive")


def lower_bounds(project: dict) -> list[str]:
    reqs = list(project["dependencies"])
    for extra in EXTRAS:
        reqs += project["optional-dependencies"][extra]
    pins = []
    for req in reqs:
        spec, _, marker = req.partition(";")
        m = re.match(r"\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*>=\s*([^,\s]+)", spec)
        if not m:
            raise SystemExit(f"no lower bound in requirement {req!r}")
        pins.append(f"{m.group(1)}=={m.group(3)}" + (f"; {marker.strip()}" if marker else ""))
    return pins


def main() -> int:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    print("\n".join(lower_bounds(project)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
