"""System table names: the ``$`` and ``sys.`` identifiers, which tables exist, which time travel."""

from __future__ import annotations



from paimon_lab.errors import InvalidIdentifierError



SYSTEM_TABLE_SPLITTER = "$"
BRANCH_PREFIX = "branch_"
SYSTEM_DATABASE = "sys"

SYSTEM_TABLES: tuple[str, ...] = (
    "snapshots", "schemas", "options", "audit_log", "binlog", "ro", "files", "tags", "branches",
    "consumers", "manifests", "aggregation_fields", "partitions", "buckets", "statistics",
    "table_indexes", "changelogs",
)
GLOBAL_SYSTEM_TABLES: tuple[str, ...] = ("all_table_options", "catalog_options")

# System tables that read one snapshot (default: the latest) and so accept snapshot_id / tag.
TIME_TRAVEL_TABLES = frozenset({"files", "manifests", "partitions", "buckets", "table_indexes", "statistics",
                                "audit_log", "binlog", "ro"})

# ---------------------------------------------------------------------------------- identifiers

def _split_dotted(identifier: str) -> list[str]:
    """Split on dots outside backticks; backticks are dropped."""
    parts, current, quoted = [], [], False
    for ch in identifier:
        if ch == "`":
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if quoted:
        raise InvalidIdentifierError(f"Unclosed backtick in identifier {identifier!r}")
    parts.append("".join(current))
    return parts


def parse_system_identifier(identifier: str) -> tuple[str | None, str | None]:
    """Split a possibly system-table identifier into (table identifier, system table name).

    ``db.t$snapshots`` -> ``('db.t', 'snapshots')``; ```db`.`t$files``` -> ``('db.t', 'files')``;
    ``t$branch_b1$snapshots`` -> ``('t$branch_b1', 'snapshots')`` (the branch stays on the table
    identifier, as :meth:`Catalog.get_table` understands it); ``db.t`` and ``db.t$branch_b1`` ->
    ``(identifier, None)``; the catalog-wide ``sys.all_table_options`` / ``sys.catalog_options``
    -> ``(None, 'all_table_options')``. System table names are case-insensitive.
    """
    if not isinstance(identifier, str) or not identifier.strip():
        raise InvalidIdentifierError(f"Invalid table identifier {identifier!r}")
    parts = _split_dotted(identifier.strip())
    if len(parts) > 2 or any(not p for p in parts):
        raise InvalidIdentifierError(f"Invalid table identifier {identifier!r}: use 'database.table'")
    if len(parts) == 2 and parts[0].lower() == SYSTEM_DATABASE and SYSTEM_TABLE_SPLITTER not in parts[1]:
        name = parts[1].lower()
        if name not in GLOBAL_SYSTEM_TABLES:
            raise InvalidIdentifierError(
                f"Unknown global system table '{parts[1]}'; known are {list(GLOBAL_SYSTEM_TABLES)}")
        return None, name
    db = parts[0] if len(parts) == 2 else None
    segments = parts[-1].split(SYSTEM_TABLE_SPLITTER)
    table, branch, system = segments[0], None, None
    if len(segments) == 2:
        if segments[1].startswith(BRANCH_PREFIX):
            branch = segments[1][len(BRANCH_PREFIX):]
        else:
            system = segments[1]
    elif len(segments) == 3:
        if not segments[1].startswith(BRANCH_PREFIX):
            raise InvalidIdentifierError(
                f"Invalid identifier {identifier!r}: a system table name has one '$' (or '$branch_NAME$')")
        branch, system = segments[1][len(BRANCH_PREFIX):], segments[2]
    elif len(segments) > 3:
        raise InvalidIdentifierError(f"Invalid identifier {identifier!r}: too many '$'")
    if not table or (branch is not None and not branch) or (system is not None and not system):
        raise InvalidIdentifierError(f"Invalid identifier {identifier!r}")
    if system is not None:
        system = system.lower()
        if system not in SYSTEM_TABLES:
            raise InvalidIdentifierError(f"Unknown system table '{system}'; known are {list(SYSTEM_TABLES)}")
    obj = table if branch is None else f"{table}{SYSTEM_TABLE_SPLITTER}{BRANCH_PREFIX}{branch}"
    return (obj if db is None else f"{db}.{obj}"), system
