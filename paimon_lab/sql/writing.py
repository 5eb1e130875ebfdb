"""Writing query results into Paimon tables: rows cast to the table's types with SQL CAST
semantics (DuckDB), then written (the snapshot id recorded in the session)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.sql.duck import connect, duckdb_error, fetch_arrow
from paimon_lab.sql.spelling import duck_type

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext


def cast_rows(data: pa.Table, fields: list[T.DataField], constants: dict[str, Any] | None = None,
              statement: str | None = None) -> pa.Table:
    """Cast ``data`` (columns matched to ``fields`` by position; ``constants`` fill named fields,
    missing ones are NULL) to the fields' types with SQL CAST semantics (DuckDB)."""
    constants = constants or {}
    src = data.rename_columns([f"c{i}" for i in range(data.num_columns)])
    given_fields = [f for f in fields if f.name not in constants]
    for i, f in enumerate(given_fields[:src.num_columns]):
        col = src.column(i)
        if isinstance(f.type, T.RowType) and pa.types.is_struct(col.type) and \
                col.type.num_fields == len(f.type.fields) and \
                [col.type.field(j).name for j in range(col.type.num_fields)] != [x.name for x in f.type.fields]:
            names = [x.name for x in f.type.fields]  # ROW(...) values are positional
            chunks = [pa.StructArray.from_arrays([c.field(j) for j in range(len(names))], names=names,
                                                 mask=c.is_null()) for c in col.chunks]
            src = src.set_column(i, f"c{i}", pa.chunked_array(chunks) if chunks else col)
    exprs = []
    positions = {f.name: i for i, f in enumerate(given_fields)} if data.num_columns else {}
    for f in fields:
        name = '"' + f.name.replace('"', '""') + '"'
        if f.name in constants:
            v = constants[f.name]
            lit = "NULL" if v is None else "'" + str(v).replace("'", "''") + "'"
            exprs.append(f"CAST({lit} AS {duck_type(f.type)}) AS {name}")
        elif f.name in positions and positions[f.name] < data.num_columns:
            source = f"c{positions[f.name]}"
            if getattr(src.schema.field(source).type, "tz", None) is not None and f.type.root == "TIMESTAMP":
                source = f"CAST({source} AS TIMESTAMP)"  # DuckDB < 2 casts TIMESTAMPTZ to TIMESTAMP only
            exprs.append(f"CAST({source} AS {duck_type(f.type)}) AS {name}")
        else:
            exprs.append(f"CAST(NULL AS {duck_type(f.type)}) AS {name}")
    con = connect()
    try:
        con.register("__src", src)
        out = fetch_arrow(con, f"SELECT {', '.join(exprs)} FROM __src")
    except Exception as e:
        import duckdb  # heavy, imported when a query runs

        if isinstance(e, duckdb.Error):
            raise duckdb_error(e, statement or "") from None
        raise
    finally:
        con.close()
    target = T.arrow_schema(fields)
    cols = []
    for f in target:
        c = out.column(f.name)
        if c.type != f.type:
            try:
                c = c.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                c = c.cast(f.type, safe=False)
        cols.append(c)
    return pa.Table.from_arrays(cols, schema=target.with_metadata(None)) if cols else out


def write_rows(ctx: SessionContext, table, data: pa.Table, overwrite: Any = False,
               row_kinds: list[str] | None = None) -> int | None:
    """Write rows already shaped like the table (names in schema order)."""
    fields = list(table.schema.fields)
    if data.column_names != [f.name for f in fields] or data.schema != T.arrow_schema(fields):
        data = cast_rows(data, fields)
    if overwrite is False and data.num_rows == 0:
        return None
    snap = table.write(data, overwrite=overwrite, row_kinds=row_kinds) if row_kinds else \
        table.write(data, overwrite=overwrite)
    ctx.last_snapshot_id = snap
    return snap
