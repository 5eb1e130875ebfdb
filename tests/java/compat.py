"""What the Java-oracle suite found, for the README's compatibility table (issue #17, item 6).

A test declares its row with ``@pytest.mark.compat(table, feature, direction)``; ``feature`` may
name the test's parameters (``"every type ({fmt})"``, ``"{case.id}"``). With
``PAIMON_JAVA_COMPAT_OUT=path`` set, every such test's outcome is recorded with the version it ran
against (its ``version``/``java`` parameter, the ``java09`` fixture, or pypaimon) and merged into
that JSON file at the end of the session (rows of versions or tests not run this time are kept).
``scripts/compat_table.py`` renders the README section from the file.
"""

from __future__ import annotations

import json
import os

ENV = "PAIMON_JAVA_COMPAT_OUT"
JAVA_LABELS = {"0.9": "Java 0.9.0", "1.0": "Java 1.0-SNAPSHOT"}
PYPAIMON_LABEL = "pypaimon 2.1"
# how one (row, version) cell sums up several tests: the worst outcome wins
RANK = {"failed": 0, "xfailed": 1, "passed": 2, "skipped": 3}


def _version(item) -> str | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    for name in ("version", "java"):
        if name in params:
            return JAVA_LABELS.get(params[name], f"Java {params[name]}")
    if "java09" in getattr(item, "fixturenames", ()):
        return JAVA_LABELS["0.9"]
    if item.get_closest_marker("pypaimon") is not None or "pypaimon" in getattr(item, "fixturenames", ()):
        return PYPAIMON_LABEL
    return None


def row_of(item) -> dict | None:
    """The compat row of a collected test, or None for a test without a ``compat`` marker."""
    mark = item.get_closest_marker("compat")
    if mark is None:
        return None
    table, feature, direction = mark.args
    params = getattr(getattr(item, "callspec", None), "params", {})
    version = _version(item)
    if version is None:
        raise ValueError(f"{item.nodeid}: a compat row needs a version parameter, java09 or pypaimon")
    return {"table": table.format(**params), "feature": feature.format(**params), "direction": direction,
            "version": version}


def outcome(report) -> str | None:
    """The outcome a report settles, or None when a later phase decides."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "passed"  # (a strict xfail that passes is a failure)
    if report.when == "call" or report.failed or report.skipped:
        return report.outcome
    return None


class Recorder:
    def __init__(self, path: str):
        self.path = path
        self.results: dict[tuple, str] = {}

    def add(self, row: dict, result: str) -> None:
        key = (row["table"], row["feature"], row["direction"], row["version"])
        old = self.results.get(key)
        self.results[key] = result if old is None or RANK[result] < RANK[old] else old

    def save(self) -> None:
        rows = {}
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                for r in json.load(f):
                    rows[(r["table"], r["feature"], r["direction"], r["version"])] = r
        for (table, feature, direction, version), result in self.results.items():
            rows[(table, feature, direction, version)] = {"table": table, "feature": feature, "direction": direction,
                                                          "version": version, "outcome": result}
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump([rows[k] for k in sorted(rows)], f, indent=1, ensure_ascii=False)
            f.write("\n")
