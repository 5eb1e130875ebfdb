"""Object tables: a Paimon table listing the files under an 'object-location' (path, name,
length, times, owner), rewritten by ``CALL sys.refresh_object_table``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs

from paimon_lab.core import types as T
from paimon_lab.io.file_io import FileIO
from paimon_lab.sql.clauses import ColumnDef, TableDef
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.lexer import TokenStream
from paimon_lab.sql.schemas import create_paimon_table

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext

OBJECT_FIELDS = [("path", "STRING"), ("name", "STRING"), ("length", "BIGINT"), ("mtime", "BIGINT"),
                 ("atime", "BIGINT"), ("owner", "STRING")]


def create_object_table(ts: TokenStream, d: TableDef, entry, db: str, name: str) -> None:
    """CREATE TABLE ... WITH ('type' = 'object-table', 'object-location' = ...)."""
    if d.columns:
        raise ts.error("An object table has a fixed schema; give no columns", d.token)
    if not d.options.get("object-location"):
        raise ts.error("An object table needs 'object-location'", d.token)
    if entry.catalog.table_exists(f"{db}.{name}"):
        if d.if_not_exists:
            return None
        raise ts.error(f"Table '{entry.name}.{db}.{name}' already exists", d.token)
    cols = [ColumnDef(n, T.parse_type(t)) for n, t in OBJECT_FIELDS]
    create_paimon_table(ts, entry, db, name, cols, [], [], dict(d.options), d.comment, d.token)
    return None


def refresh_object_table(ctx: SessionContext, table) -> int:
    """Overwrite the object table with a listing of the files under its location; returns their count."""
    if table.options.get("type") != "object-table":
        raise SqlError(f"'{table.identifier}' is not an object table")
    location = table.options["object-location"].rstrip("/")
    try:
        io = FileIO(location)
        root = io.arrow_path(location).rstrip("/")
        infos = io.fs.get_file_info(pafs.FileSelector(root, allow_not_found=True, recursive=True))
    except (OSError, ValueError, pa.ArrowException) as e:
        raise SqlError(f"Cannot list object-location '{location}': {e}") from None
    rows = []
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root) + 1:] if info.path.startswith(root + "/") else info.base_name
        mtime = int(info.mtime.timestamp() * 1000) if info.mtime is not None else None
        rows.append({"path": rel, "name": info.base_name, "length": info.size, "mtime": mtime, "atime": mtime,
                     "owner": None})
    rows.sort(key=lambda r: r["path"])
    data = pa.Table.from_pylist(rows, schema=table.schema.arrow_schema()) if rows else \
        table.schema.arrow_schema().empty_table()
    ctx.last_snapshot_id = table.write(data, overwrite=True)
    return len(rows)
