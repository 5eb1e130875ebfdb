"""Table identifiers and the warehouse layout: ``db.table``, ``db.table$branch_b``, and
``{warehouse}/{db}.db/{table}`` directories."""

from __future__ import annotations

from paimon_lab.errors import InvalidIdentifierError
from paimon_lab.io.file_io import check_name

DB_SUFFIX = ".db"
DEFAULT_DATABASE = "default"


def split_branch(identifier: str) -> tuple[str, str]:
    """'db.t$branch_b' -> ('db.t', 'b'); without a branch suffix the branch is 'main'."""
    if isinstance(identifier, str) and "$branch_" in identifier:
        table, branch = identifier.split("$branch_", 1)
        return table, branch
    return identifier, "main"


def split_identifier(identifier: str, default_db: str = DEFAULT_DATABASE) -> tuple[str, str]:
    """'db.table' -> ('db', 'table'); a bare 'table' is in the default database."""
    if not isinstance(identifier, str) or not identifier:
        raise InvalidIdentifierError(f"Invalid table identifier {identifier!r}")
    parts = [p.strip("`") for p in identifier.split(".")]
    if len(parts) == 1:
        return default_db, check_name("table", parts[0])
    if len(parts) == 2:
        return check_name("database", parts[0]), check_name("table", parts[1])
    raise InvalidIdentifierError(f"Invalid table identifier '{identifier}': use 'database.table'")


def table_of_warehouse_path(warehouse: str | None, path: str) -> tuple[str, str] | None:
    """(database, table) of a path inside ``{warehouse}/{db}.db/{table}``, else None."""
    if not warehouse or not path.startswith(warehouse + "/"):
        return None
    parts = path[len(warehouse) + 1:].split("/")
    if len(parts) >= 2 and parts[0].endswith(DB_SUFFIX) and len(parts[0]) > len(DB_SUFFIX):
        return parts[0][: -len(DB_SUFFIX)], parts[1]
    return None


__all__ = ["DB_SUFFIX", "DEFAULT_DATABASE", "split_branch", "split_identifier", "table_of_warehouse_path"]
